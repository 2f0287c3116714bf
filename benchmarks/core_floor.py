"""What a move's own work costs, alone in this process: the floor under the worker's CPU per
move that no transport, store or scheduling change goes below.

The peer benchmark (``benchmarks/peers/run.py``) measures the whole worker. This plays the
same kind of moves (paulista, two players, the ``cards`` policy) with the functions the
worker calls for each move and nothing around them -- no event loop, no store, no socket --
and prints the CPU each stage adds, cumulatively:

- ``step``: the match table's step (``Match.act``: the rules engine, the lifecycle, the deal
  of a new hand), the match after it and its ``Moment``, and the acting seat's view, which
  the bot reads to choose its move;
- ``views``: + both seats' views after the move;
- ``events``: + the move's events encoded for both seats (a public event once for both, as
  the worker keeps it on the ``Moment``);
- ``observations``: + both seats' observations encoded;
- ``messages``: + what the player connection sends for the move: the acting seat's action
  result and the other seat's update, each serialized in its ``ConnectResponse``
  (``MatchApi.result_bytes`` / ``update_bytes`` in ``result_frame`` / ``update_frame``);
- ``state``: + the state's bytes the commit writes;
- ``entries``: + each log entry's bytes (its mapping, canonical JSON, deflated);
- ``record``: + the record's step and the idempotency reply;
- ``operator``: + the commit's operator events (``match.turn`` and the others), encoded as
  the operator's stream stores them.

Every stage plays the same moves (the same matches from the same seeds, the bots drawing
from the same seed), restarting a match from its start when it ends. Stages alternate in
rounds (A B C ..., A B C ..., ...); the first round warms up and is not counted; medians::

    python benchmarks/core_floor.py                        # 40 matches, 20,000 moves a stage, 3 rounds
    python benchmarks/core_floor.py --moves 50000 --rounds 5
    PYTHONPATH=build/mypyc:$PYTHONPATH python benchmarks/core_floor.py   # the compiled engine

Nothing here is timed by the suite (``tests/tools/test_core_floor.py`` runs it briefly).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import statistics
import sys
import time
from typing import Any

STAGES = ("step", "views", "events", "observations", "messages", "state", "entries", "record", "operator")


async def _matches(count: int, preset: str) -> tuple[list[Any], Any]:
    """``count`` new matches (created by the service on its in-memory store), and the
    service's operator-event relay."""
    from truco_contract.pb import match_pb2, match_service_pb2
    from truco_server.api.auth import Authenticator
    from truco_server.app.wiring import apis, build_services
    from truco_server.core.caller import Credentials
    from truco_server.core.config import Settings
    from truco_server.core.logging import configure_logging

    configure_logging("warning")
    settings = Settings(redis_url=None)
    svc = build_services(settings, asyncio.Event())
    api: Any = apis(svc, Authenticator(settings))[0][1]
    request = match_service_pb2.CreateMatchRequest(rules=match_pb2.RuleSet(preset=preset), players=2)
    out = []
    for _ in range(count):
        created = await api.CreateMatch(Credentials(), request)
        out.append(await svc.matches.load(created.match.match_id, fresh=True))
    return out, svc.relay


def _fresh(match: Any) -> Any:
    """The same match version with nothing derived from it kept (its views, encodings)."""
    return dataclasses.replace(match, memo={}, verified={})


async def _stage(stage: str, starts: list[Any], relay: Any, moves: int, seed: int) -> tuple[float, int]:
    """CPU seconds of ``moves`` moves played with ``stage``'s work (module docstring), and
    where the moves left the matches (the matches restarted, plus each one's version: equal
    for stages that played the same moves)."""
    import truco_engine as te
    from truco_match import records
    from truco_match.events import MatchStatus
    from truco_match.match import Moment
    from truco_server.api.connection import result_frame, update_frame
    from truco_server.api.matches import MatchApi, events, observation
    from truco_server.core import requests as T
    from truco_server.services import stored
    from truco_tools.bench_policy import choose

    level = STAGES.index(stage)
    rng = random.Random(seed)
    live = [_fresh(m) for m in starts]
    now = time.time()
    done = restarts = 0
    cpu = time.process_time()
    while done < moves:
        for i, match in enumerate(live):
            if not match.active:
                live[i] = _fresh(starts[i])
                restarts += 1
                continue
            awaited = match.life.awaited
            legal = match.view(awaited, now).observation.legal_actions
            action = choose(rng, legal, "cards", lambda a: a.kind == "play")
            step = match.act(awaited, action, now)
            status = MatchStatus.FINISHED if te.is_over(step.state) else None
            after = match.after(step, match.version + len(step.entries), status, now)
            moment = Moment(after, step.entries, match.version + 1, [now] * len(step.entries))
            if level >= 1:
                views = [after.view(seat, now) for seat in (0, 1)]
            if level >= 2:
                for seat in (0, 1):
                    events(moment.events_for(seat), moment)
            if level >= 3:
                for seat in (0, 1):
                    observation(views[seat], after.rules, seat, after)
            if level >= 4:
                result = T.SubmitActionResponse(
                    after.match_id, awaited, after.version, moment.events_for(awaited), views[awaited],
                    after.rules, match=after, moment=moment,
                )  # fmt: skip
                result_frame(1, done, MatchApi.result_bytes(result))
                other = 1 - awaited
                follow = T.StreamUpdate(
                    after.version, moment.events_for(other), views[other], after.rules, viewer=other,
                    match=after, moment=moment,
                )  # fmt: skip
                update_frame(2, MatchApi.update_bytes(follow))
            if level >= 5:
                stored.state_bytes(step.state, step.life)
            if level >= 6:
                ms = after.meta.at(now)
                [stored.entry_bytes(e, ms) for e in step.entries]
            if level >= 7:
                record = records.RecordStep(version=0, time=0.0, seat=awaited, action=action)
                records.pack_stamped(record, after.version, now, step.clock_ms, after.meta.created_at)
                stored.action_reply(awaited, stored.action_fingerprint(action), len(step.entries))
            if level >= 8:
                await relay.outgoing(after, step.entries, match.version + 1, match.life)
            live[i] = after
            done += 1
    seconds = time.process_time() - cpu
    return seconds, restarts * 1_000_003 + sum(m.version * (i + 1) for i, m in enumerate(live))


async def _run(args: argparse.Namespace) -> dict[str, list[float]]:
    starts, relay = await _matches(args.matches, args.preset)
    per_move: dict[str, list[float]] = {s: [] for s in STAGES}
    ends: set[int] = set()
    for round_no in range(args.rounds + 1):
        for stage in STAGES:
            seconds, end = await _stage(stage, starts, relay, args.moves, args.seed)
            ends.add(end)
            if round_no:  # the first round warms caches and the allocator
                per_move[stage].append(1e6 * seconds / args.moves)
        if round_no:
            print(f"# round {round_no}/{args.rounds} done", file=sys.stderr, flush=True)
    if len(ends) != 1:  # a stage changed what is played: its figure would not compare
        raise SystemExit("the stages did not play the same moves")
    return per_move


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=40, help="matches played side by side (default 40)")
    parser.add_argument("--moves", type=int, default=20000, help="moves per stage and round (default 20000)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--preset", default="paulista", help="two-player preset (default paulista)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    per_move = asyncio.run(_run(args))
    print(
        f"{args.preset}, 2 players, the cards policy: {args.moves} moves a stage (the same moves in"
        f" each), {args.rounds} rounds, medians"
    )
    before = 0.0
    for stage in STAGES:
        value = statistics.median(per_move[stage])
        low, high = min(per_move[stage]), max(per_move[stage])
        added = value - before
        print(f"{stage:12s} {value:7.1f} us CPU per move (+{added:6.1f}; range {low:.1f}-{high:.1f})")
        before = value
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
