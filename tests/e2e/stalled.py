"""Stalled clocked matches and the checks that their expiries were applied exactly once: the
stored log of each equals, entry for entry, the log the pure table computes from the revealed
seed (:func:`truco_match.table.expire` at each deadline), and no expiry came early.

Used by the lifecycle tests (two workers, a worker SIGKILLed) and the cluster tests (across a
failover)."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from google.protobuf.duration_pb2 import Duration

import truco_engine as te
from tests.e2e.client import Created, Stub, bearer, get
from truco_contract import codec
from truco_contract.pb import match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_match import records, table
from truco_match.events import LogEntry, MatchForfeited, TimeoutCause, TurnTimedOut, entry_to_dict
from truco_server.ports.queues import CLOCK
from truco_server.ports.settings import StoreSettings
from truco_server.services.stored import entry_of
from truco_server.stores.redis import ShardedQueue

FORFEIT_AFTER = 3


def clocked(
    per_decision_s: int = 1, forfeit_after: int = FORFEIT_AFTER, **more: Any
) -> match_pb2.MatchSettings:
    tc = match_pb2.TimeControl(per_decision=Duration(seconds=per_decision_s), forfeit_after=forfeit_after)
    return match_pb2.MatchSettings(time_control=tc, **more)


async def stored_log(r: Any, match_id: str) -> list[tuple[int, LogEntry, int]]:
    """(version, entry, ms after creation) of every entry the server holds for a match."""
    out = []
    for eid, fields in await r.xrange(f"truco:{{{match_id}}}:events"):
        entry, ms = entry_of(fields[b"e"])
        out.append((int(eid.split(b"-")[0]), entry, ms))
    return out


async def record_of(stub: Stub, m: Created) -> records.MatchRecord:
    resp = await stub.GetMatchRecord(
        MS.GetMatchRecordRequest(match_id=m.match_id), metadata=bearer(m.tokens[0])
    )
    return codec.record_from_proto(resp.record)


def expected_log(record: records.MatchRecord) -> list[LogEntry]:
    """The log of a match nobody plays, computed by the pure table from the record's setup
    (its seed is in the reveal): each expiry applied at its deadline, until the match ends."""
    setup = records.setup_of(record)
    step = table.start(setup, record.match.seats, records.creator_seed_of(record), now=0)
    state, life, log = step.state, step.life, list(step.entries)
    while not te.is_over(state):
        due = table.due(setup, state, life)
        assert due is not None, "a clocked match always has a deadline"
        nxt = table.expire(setup, state, life, TimeoutCause.CLOCK, due)
        assert nxt is not None, "an expiry at its deadline always applies"
        state, life = nxt.state, nxt.life
        log.extend(nxt.entries)
    return log


async def any_expiry(r: Any, matches: list[Created]) -> bool:
    logs = [await stored_log(r, m.match_id) for m in matches]
    return any(isinstance(e, TurnTimedOut) for held in logs for _, e, _ in held)


async def diagnose(r: Any, match_id: str) -> str:
    """What the store holds of a match that should have moved on: its version and status, its
    last log entries and its wake-up in the clock queue."""
    version, status = await r.hmget(f"truco:{{{match_id}}}:match", ["version", "status"])
    due = await r.zscore(
        ShardedQueue(CLOCK, StoreSettings().queue_shards).key_for(match_id, ":due"), match_id
    )
    last = [f"{v}:{type(e).__name__}@{ms}" for v, e, ms in (await stored_log(r, match_id))[-3:]]
    now = round(time.time() * 1000)
    wake = "none" if due is None else f"{int(due) - now:+d} ms from now"
    return f"{match_id}: version {version!r} status {status!r}, last {last}, clock wake-up {wake}"


async def wait_over(stub: Stub, matches: list[Created], timeout: float, r: Any = None) -> None:
    """Until every match has ended (``r``, a Redis client, for a diagnosis on a timeout)."""
    deadline = time.monotonic() + timeout
    pending = list(matches)
    while pending:
        if time.monotonic() >= deadline:
            why = [await diagnose(r, m.match_id) for m in pending] if r is not None else []
            raise AssertionError(f"{len(pending)} matches still active after {timeout} s: {why}")
        views = [await get(stub, m.match_id, m.tokens[0]) for m in pending]
        pending = [
            m for m, v in zip(pending, views, strict=True) if v.match.state == match_pb2.MATCH_STATE_ACTIVE
        ]
        await asyncio.sleep(0.2)


async def check_stalled(stub: Stub, r: Any, matches: list[Created], per_decision_ms: int = 1000) -> int:
    """Every match ended by forfeit, its log the pure table's, each expiry once and never
    before its deadline (``r``: a Redis or Redis Cluster client). Returns the expiries."""
    total = 0
    for m in matches:
        record = await record_of(stub, m)
        held = await stored_log(r, m.match_id)
        assert [v for v, _, _ in held] == list(range(1, len(held) + 1)), "versions contiguous"
        want = [entry_to_dict(e) for e in expected_log(record)]
        got = [entry_to_dict(e) for _, e, _ in held]
        assert got == want, f"{m.match_id}: the stored log is not the pure table's"
        timeouts = [(v, e, ms) for v, e, ms in held if isinstance(e, TurnTimedOut)]
        forfeits = [e for _, e, _ in held if isinstance(e, MatchForfeited)]
        assert len(forfeits) == 1 and forfeits[0].expiries == FORFEIT_AFTER
        clock_steps = [s for s in record.steps if s.cause is records.StepCause.CLOCK]
        assert len(clock_steps) == len(timeouts), "one record step per expiry"
        assert len({s.version for s in clock_steps}) == len(clock_steps), "no expiry recorded twice"
        # each decision ran its full time: an expiry never comes before its deadline
        times = [0] + [ms for _, _, ms in timeouts]
        assert all(b - a >= per_decision_ms for a, b in itertools.pairwise(times)), times
        result = record.match.result
        assert result is not None and result.winner_team != forfeits[0].team
        total += len(timeouts)
    return total
