"""Time of the league job for a large Swiss, through the service on a real ``redis-server``.

``benchmarks/swiss_pairing.py`` times the pairing library alone. This harness runs what a
worker does for a round of a league of ``--entrants`` (default 1,000) entrants: the league
job's passes (:meth:`LeagueService.advance`) that pair the round (the library, plus the
league document's compare-and-set), create its matches (one CreateMatch each, idempotent by
league, round and table), and, once every match of the round is over, collect the results
(each match's record read and replayed) and rate them. Matches are ended at once by the
operator's AdjudicateMatch (a random winner), so only the league's own work is timed. The
store is a ``redis-server`` started on a free loopback port and stopped at the end.

    python benchmarks/league_round.py                   # 1,000 entrants, 3 rounds
    python benchmarks/league_round.py --entrants 200 --rounds 5

Prints, per round: the pass that pairs it and creates its matches, then the pass that
collects its results, rates its matches and pairs the next round, each with how much of it
was the pairing library (``Swiss.pairings``) and the match creations (``CreateMatch``); the
rest is collecting results, rating and the league document's reads and writes. Each pass
also prints how many bytes it wrote to the league document (only the parts that changed)
against the size of the whole document.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for part in ("server", "contract", "tools", "clients", "."):
    sys.path.insert(0, str(ROOT / part))

import structlog  # noqa: E402

from truco_contract.pb import match_pb2, match_service_pb2  # noqa: E402
from truco_server.app.wiring import build_services  # noqa: E402
from truco_server.core import requests as T  # noqa: E402
from truco_server.core.caller import Operator  # noqa: E402
from truco_server.core.config import Settings  # noqa: E402
from truco_server.leagues import Swiss  # noqa: E402
from truco_server.services.leagues import EntrantDoc, LeagueSpec  # noqa: E402
from truco_tools.redis_proc import start_redis  # noqa: E402

OPERATOR = Operator("bench")
SPENT = {"pairing": 0.0, "create": 0.0}
WRITTEN = {"bytes": 0, "writes": 0}


def _timed_pairings() -> None:
    pair = Swiss.pairings

    def timed(self: Swiss, *args: object, **kwargs: object) -> object:
        t = time.perf_counter()
        try:
            return pair(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            SPENT["pairing"] += time.perf_counter() - t

    Swiss.pairings = timed  # type: ignore[assignment,method-assign]


def _parts(total: float) -> str:
    p, c = SPENT["pairing"], SPENT["create"]
    w, n = WRITTEN["bytes"], WRITTEN["writes"]
    SPENT.update(pairing=0.0, create=0.0)
    WRITTEN.update(bytes=0, writes=0)
    return (
        f"{total:.2f} s (pairing {p:.2f} s, creating matches {c:.2f} s, the rest {total - p - c:.2f} s);"
        f" league document: {n} writes, {w:,} bytes written"
    )


def _count_writes(documents: object) -> None:
    put = documents.put_parts  # type: ignore[attr-defined]

    async def counted(
        kind: str, doc_id: str, version: int, changed: dict[str, bytes], removed: object = ()
    ) -> bool:
        if kind == "league":
            WRITTEN["writes"] += 1
            WRITTEN["bytes"] += sum(len(k) + len(v) for k, v in changed.items())
        return bool(await put(kind, doc_id, version, changed, removed))

    documents.put_parts = counted  # type: ignore[attr-defined]


async def run(entrants: int, rounds: int, seed: int) -> None:
    redis = start_redis()
    svc = build_services(Settings(redis_url=redis.url), asyncio.Event())
    try:
        leagues = svc.leagues
        create = leagues.job.create_match

        async def timed_create(op: Operator, req: T.CreateMatchRequest) -> T.CreateMatchResponse:
            t = time.perf_counter()
            try:
                return await create(op, req)
            finally:
                SPENT["create"] += time.perf_counter() - t

        leagues.job.create_match = timed_create
        _timed_pairings()
        _count_writes(svc.store.documents)
        template = match_service_pb2.CreateMatchRequest(rules=match_pb2.RuleSet(preset="argentine"))
        spec = LeagueSpec(
            name="bench",
            format="swiss",
            template=template,
            rounds=rounds,
            entrants=tuple(EntrantDoc(f"e{i:05d}", i) for i in range(1, entrants + 1)),
        )
        doc = await leagues.create_league(OPERATOR, spec)
        await leagues.start(OPERATOR, doc.league_id)
        rnd = random.Random(seed)
        t0 = time.perf_counter()
        await leagues.job.advance(doc.league_id)
        first = time.perf_counter() - t0
        print(f"{entrants} entrants, Swiss of {rounds} rounds, redis-server on loopback")
        print(f"round 1: pair + create {entrants // 2} matches: {_parts(first)}")
        for r in range(1, rounds + 1):
            current = await leagues.get_league(OPERATOR, doc.league_id)
            t_adj = time.perf_counter()
            for p in current.round_pairings(r):
                for key in p.tables:
                    mid = current.tables[key].match_id
                    await svc.steps.adjudicate_match(
                        OPERATOR, T.AdjudicateMatchRequest(mid, rnd.randrange(2))
                    )
            adjudicated = time.perf_counter() - t_adj
            t1 = time.perf_counter()
            await leagues.job.advance(doc.league_id)
            took = time.perf_counter() - t1
            nxt = "" if r == rounds else f", pair round {r + 1} + create its matches"
            print(f"round {r}: collect {entrants // 2} results + rate{nxt}: {_parts(took)}")
            print(
                f"  (ending the round's matches by AdjudicateMatch first, not counted: {adjudicated:.2f} s)"
            )
        done = await leagues.get_league(OPERATOR, doc.league_id)
        parts = done.to_parts()
        size = sum(len(k) + len(v) for k, v in parts.items())
        print(
            f"state {done.state}, {len(done.tables)} matches;"
            f" league document {size:,} bytes in {len(parts):,} parts"
        )
    finally:
        await svc.store.close()
        redis.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entrants", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings only
    asyncio.run(run(args.entrants, args.rounds, args.seed))


if __name__ == "__main__":
    main()
