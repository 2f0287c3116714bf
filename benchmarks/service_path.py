"""CPU per action of the service's own Python path, without the gRPC transport.

`truco bench service` measures the whole system (client, gRPC, worker, Redis) and moves by
10-15 % between runs on a shared 2-core machine, which hides changes of a few percent in
the worker's own code. This harness drives the API layer both transports call
(`truco_server.api.matches.MatchApi`: request decoding, auth, the service, the Redis store, the
codec building the replies and stream messages) directly,
one action at a time in a fixed order with fixed seeds, against a real `redis-server` on a
free loopback port, and reports the process CPU time per action. Every action is what a
worker does for one SubmitAction: the reply, then the next message of *both* seats'
observation streams (each serialized, as gRPC would). The work a worker does in the
background for those actions runs too: the operator-event relay after each commit that has
events, and the clock and relay queues' readers.

    python benchmarks/service_path.py                   # 100 matches, 4 x 6000 actions
    python benchmarks/service_path.py --against ../old-checkout
    python benchmarks/service_path.py --no-relay       # the relay queue moves every outbox

``--against DIR`` runs the harness of another checkout of the repository (its own
``benchmarks/service_path.py``, with its source folders on ``PYTHONPATH``) alternately with
this one, so a change can be compared with its parent in one run. The first round of each run is a
warm-up and is not counted; the median and range of the other rounds are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


async def _measure(
    matches: int, actions: int, rounds: int, preset: str, relay: bool = True
) -> tuple[list[float], float]:
    """CPU per action (us) of each measured round, and the Redis round trips per action over
    them (the store's own count: commands, stream reads, queue polls, relays). ``relay``
    False: no relay right after a commit, the relay queue's reader moves every outbox (as
    when the worker that committed died), to measure what the relay after the commit costs."""
    from truco_contract.pb import match_pb2, match_service_pb2
    from truco_server.api.auth import Authenticator
    from truco_server.app.wiring import apis, build_services
    from truco_server.core.caller import Credentials
    from truco_server.core.config import Settings
    from truco_server.core.logging import configure_logging
    from truco_tools.redis_proc import start_redis

    configure_logging("warning")
    redis = start_redis(host="127.0.0.1")
    try:
        settings = Settings(redis_url=redis.url)
        svc = build_services(settings, asyncio.Event())
        store = svc.store
        if not relay:
            svc.relay.move = None
        readers = svc.readers(settings.scheduler_tick_seconds)[:2]  # the clock and relay queues
        for reader in readers:
            await reader.start()
        api = apis(svc, Authenticator(settings))[0][1]
        rng = random.Random(7)

        async def new_match() -> dict[str, Any]:
            created = await api.CreateMatch(
                Credentials(),
                match_service_pb2.CreateMatchRequest(rules=match_pb2.RuleSet(preset=preset), players=2),
            )
            match_id = created.match.match_id
            tokens = [c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)]
            metadata = [Credentials.from_pairs((("authorization", f"Bearer {t}"),)) for t in tokens]
            streams = [
                api.StreamObservations(md, match_service_pb2.StreamObservationsRequest(match_id=match_id))
                for md in metadata
            ]
            last = [await s.__anext__() for s in streams]
            return {"id": match_id, "md": metadata, "streams": streams, "last": last, "n": 0}

        live = [await new_match() for _ in range(matches)]
        per_action: list[float] = []
        trips = 0
        for round_no in range(rounds + 1):
            done = 0
            cpu0 = time.process_time()
            trips0 = _round_trips(store)
            while done < actions:
                for i, m in enumerate(live):
                    obs = m["last"][0].update.observation
                    if obs.match_state != match_pb2.MATCH_STATE_ACTIVE or not obs.awaited:  # over
                        live[i] = await new_match()
                        continue
                    seat = obs.awaited[0]
                    action = rng.choice(m["last"][seat].update.observation.legal_actions)
                    reply = await api.SubmitAction(
                        m["md"][seat],
                        match_service_pb2.SubmitActionRequest(
                            match_id=m["id"],
                            request_id=f"{seat}-{m['n']}",
                            expected_version=obs.version,
                            action=action,
                        ),
                    )
                    reply.SerializeToString()
                    m["n"] += 1
                    done += 1
                    for k, stream in enumerate(m["streams"]):
                        msg = await stream.__anext__()
                        while not msg.HasField("update"):  # heartbeats
                            msg = await stream.__anext__()
                        msg.SerializeToString()
                        m["last"][k] = msg
            if round_no:  # round 0 warms caches and the allocator
                per_action.append(1e6 * (time.process_time() - cpu0) / done)
                trips += _round_trips(store) - trips0
        for reader in readers:
            await reader.stop()
        await store.close()
        return per_action, trips / (rounds * actions)
    finally:
        redis.stop()


def _round_trips(store: Any) -> int:
    """The Redis round trips the store has made so far."""
    return int(store.stats.round_trips)


def _summary(label: str, values: list[float], trips: list[float]) -> str:
    line = (
        f"{label}: CPU per action {statistics.median(values):.0f} us "
        f"(range {min(values):.0f}-{max(values):.0f}, {len(values)} rounds)"
    )
    if trips:
        line += f", Redis round trips per action {statistics.median(trips):.2f}"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=100, help="live matches (default 100)")
    parser.add_argument("--actions", type=int, default=6000, help="actions per round (default 6000)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--preset", default="paulista", help="two-player preset (default paulista)")
    parser.add_argument("--against", type=Path, help="another checkout to compare with, alternately")
    parser.add_argument("--pairs", type=int, default=3, help="with --against: alternations (default 3)")
    parser.add_argument(
        "--no-relay",
        action="store_true",
        help="no operator-event relay right after a commit (the relay queue's reader does it)",
    )
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.raw:  # one measurement: the values on a line, the round trips on the next (--against)
        values, trips = asyncio.run(
            _measure(args.matches, args.actions, args.rounds, args.preset, not args.no_relay)
        )
        print(" ".join(f"{v:.1f}" for v in values))
        print(f"{trips:.3f}")
        return 0
    if args.against is None:
        values, trips = asyncio.run(
            _measure(args.matches, args.actions, args.rounds, args.preset, not args.no_relay)
        )
        label = "this checkout, no relay after commits" if args.no_relay else "this checkout"
        print(_summary(label, values, [trips]))
        return 0
    if args.no_relay:
        parser.error("--no-relay measures this checkout alone (alternate it with a run without)")
    other = args.against.resolve()
    if not (other / "server" / "truco_server").is_dir():
        parser.error(f"{other} is not a checkout of this repository (no server/truco_server)")
    options = ["--raw", "--matches", str(args.matches), "--actions", str(args.actions)]
    options += ["--rounds", str(args.rounds), "--preset", args.preset]
    results: dict[str, list[float]] = {"this checkout": [], str(other): []}
    round_trips: dict[str, list[float]] = {"this checkout": [], str(other): []}
    for pair in range(args.pairs):
        for label, root in (("this checkout", ROOT), (str(other), other)):
            env = dict(os.environ)
            folders = ("contract", "server", "clients", "tools", "cli", ".")
            env["PYTHONPATH"] = os.pathsep.join(str(root / p) for p in folders if (root / p).is_dir())
            command = [sys.executable, str(root / "benchmarks" / "service_path.py"), *options]
            out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=True)
            lines = out.stdout.splitlines()
            values = [float(v) for v in lines[0].split()]
            results[label].extend(values)
            round_trips[label] += [float(lines[1])] if len(lines) > 1 else []  # older harnesses: none
            print(f"# pair {pair + 1}/{args.pairs}, {label}: {statistics.median(values):.0f} us", flush=True)
    for label, values in results.items():
        print(_summary(label, values, round_trips[label]))
    a, b = (statistics.median(v) for v in results.values())
    print(f"ratio this / other: {a / b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
