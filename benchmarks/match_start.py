"""What a new match costs the worker before its first move: ``POST /v1/matches`` and the
subscriptions of its seats over the WebSocket player connection, each to its first message.

The peer benchmark (``benchmarks/peers/run.py``) counts these in its CPU per move: its bots
replace each finished match at once, every 80-100 moves of paulista. This measures them
alone: a fresh worker (``truco serve``, one process; on a fresh ``redis-server`` or the
in-memory store) gets ``--matches`` new matches from ``--concurrency`` clients at once, then
the two seats of each are subscribed on WebSocket connections (binary frames, at most 200
matches a connection) until every seat has its snapshot (the operator's quota of creations
raised so that it spends but never refuses). The worker's CPU time (user +
system, from ``/proc``) over each phase, divided by the matches, is printed per round, then
the medians; the first round warms the worker up and is not counted. The connections close
after each round, which ends their subscriptions::

    python benchmarks/match_start.py                          # 300 matches, 3 rounds, Redis
    python benchmarks/match_start.py --matches 600 --rounds 5
    python benchmarks/match_start.py --store memory

The worker's CPU is counted in clock ticks (10 ms): a phase of a few hundred matches takes a
few hundred milliseconds, so a figure is good to about 0.05 ms a match; more matches narrow
it. Not part of the test suite (``tests/tools/test_match_start.py`` runs it briefly);
everything it starts it stops, by pid, and nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
from pathlib import Path

import aiohttp

from truco_contract.pb import match_service_pb2 as pb
from truco_tools.bench_processes import HOST, cpu_seconds
from truco_tools.redis_proc import start_redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import service_compare  # noqa: E402 (a sibling script: the worker it starts)

PER_CONNECTION = 200
"""Matches subscribed on one WebSocket connection (two subscriptions each: well within the
connection's bound of 1,000)."""


async def _create(http: aiohttp.ClientSession, base: str, preset: str) -> tuple[str, list[str]]:
    body = {"rules": {"preset": preset}, "players": 2}
    async with http.post(f"{base}/v1/matches", json=body) as resp:
        created = await resp.json()
        if resp.status != 200:
            raise RuntimeError(f"CreateMatch refused ({resp.status}): {created}")
    seats = sorted(created["seatCredentials"], key=lambda c: c.get("seat", 0))
    return created["match"]["matchId"], [c["token"] for c in seats]


async def _subscribe(http: aiohttp.ClientSession, base: str, matches: list[tuple[str, list[str]]]) -> None:
    """Subscribe every seat of ``matches`` on one connection; return once each has its first
    message (a refused subscription is an error)."""
    ws = await http.ws_connect(f"{base}/v1/connect", protocols=("truco.v1+proto",))
    try:
        ids = itertools.count(1)
        waiting: set[int] = set()
        for match_id, tokens in matches:
            for token in tokens:
                sid = next(ids)
                waiting.add(sid)
                sub = pb.ConnectSubscribe(subscription_id=sid, token=token, match_id=match_id)
                await ws.send_bytes(pb.ConnectRequest(subscribe=sub).SerializeToString())
        async for frame in ws:
            msg = pb.ConnectResponse.FromString(frame.data)
            if msg.HasField("ended"):
                raise RuntimeError(f"a subscription was refused: {msg.ended.status}")
            if msg.HasField("update"):
                waiting.discard(msg.update.subscription_id)
                if not waiting:
                    return
        raise RuntimeError("the connection closed before every seat had its first message")
    finally:
        await ws.close()


async def _round(base: str, pid: int, args: argparse.Namespace) -> tuple[float, float]:
    """One round: (worker CPU ms a match of the creations, of the subscriptions)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        todo = iter(range(args.matches))
        made: list[tuple[str, list[str]]] = []

        async def client() -> None:
            for _ in todo:
                made.append(await _create(http, base, args.preset))

        cpu = cpu_seconds(pid)
        await asyncio.gather(*(client() for _ in range(args.concurrency)))
        created = cpu_seconds(pid) - cpu
        chunks = [made[i : i + PER_CONNECTION] for i in range(0, len(made), PER_CONNECTION)]
        cpu = cpu_seconds(pid)
        await asyncio.gather(*(_subscribe(http, base, chunk) for chunk in chunks))
        subscribed = cpu_seconds(pid) - cpu
    return 1000 * created / args.matches, 1000 * subscribed / args.matches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=300, help="new matches a round (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--concurrency", type=int, default=20, help="clients creating at once (default 20)")
    parser.add_argument("--store", choices=("redis", "memory"), default="redis", help="default redis")
    parser.add_argument("--preset", default="paulista", help="two-player preset (default paulista)")
    args = parser.parse_args(argv)
    # the quota of creations stays on, high enough not to refuse the rounds' bursts
    os.environ["TRUCO_QUOTA_MATCHES_PER_MINUTE"] = str(max(6000, 600 * args.matches))
    redis = start_redis(host=HOST) if args.store == "redis" else None
    got: list[tuple[float, float]] = []
    try:
        with service_compare._worker(ROOT, redis.url if redis else None) as (pid, _port, http_port):
            base = f"http://{HOST}:{http_port}"
            for r in range(args.rounds + 1):
                create_ms, subscribe_ms = asyncio.run(_round(base, pid, args))
                label = "warm-up" if r == 0 else f"round {r}/{args.rounds}"
                print(
                    f"# {label}: create {create_ms:.3f} ms, subscribe both seats {subscribe_ms:.3f} ms"
                    " of worker CPU a match",
                    flush=True,
                )
                if r:
                    got.append((create_ms, subscribe_ms))
    finally:
        if redis is not None:
            redis.stop()
    create_ms = statistics.median(c for c, _ in got)
    subscribe_ms = statistics.median(s for _, s in got)
    print(
        f"{args.preset}, {args.store}, {args.matches} matches a round, {args.rounds} rounds, medians:"
        f" create {create_ms:.3f} ms + subscribe both seats {subscribe_ms:.3f} ms ="
        f" {create_ms + subscribe_ms:.3f} ms of worker CPU a match"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
