"""Seats the server plays, end to end: real workers on a real ``redis-server``.

Matches whose every seat is the server's bot finish on two workers, one of them a ``truco
serve`` process SIGKILLed mid-run: each decision is in the log once, the record verifies
(every step replays to its recorded version) and the stored log is the record's replay. A
4-player match whose players come and go: the seat of a player whose stream is gone is taken
over by a bot after the disconnect grace (every seat sees ``seat_taken_over``), the bot plays
it, and the player's credential takes it back with a JoinMatch (``seat_reclaimed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis.asyncio as aioredis
from google.protobuf.duration_pb2 import Duration

import truco_engine as te
from tests.e2e.client import Created, Tracker, act, bearer, create, get
from tests.e2e.conftest import WorkerFactory, serve_process
from tests.e2e.stalled import record_of, stored_log, wait_over
from truco_contract.pb import match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import match_service_pb2_grpc as MSG
from truco_match import records
from truco_match.events import SeatReclaimed, SeatTakenOver, entry_to_dict
from truco_match.verify import verify

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]

FAST = {"scheduler_tick_seconds": 0.05, "bot_think_ms": 200}
"""Workers that look for due matches every 50 ms and whose bots think 0.2 s on average."""
BOT_MATCHES = 4


def all_bots(levels: tuple[int, int]) -> list[match_pb2.SeatSpec]:
    return [match_pb2.SeatSpec(display_name=f"level {n}", bot_level=n) for n in levels]


async def bot_actions(r: Any, match_id: str) -> int:
    held = await stored_log(r, match_id)
    return sum(1 for _, e, _ in held if isinstance(e, te.Event) and e.kind in ("card_played", "call_made"))


@pytest.fixture
def serve(clean_redis_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``truco serve`` on the test's Redis (50 ms ticks, 0.2 s of thought), a child to SIGKILL."""
    with serve_process(clean_redis_url, tmp_path, "--scheduler-tick", "0.05", "--bot-think", "200") as served:
        yield served


async def check_finished(stub: Any, r: Any, m: Created) -> int:
    """The match finished; its record verifies; the stored log is the record's replay; every
    bot decision is one record step at its own version. Returns the bot decisions."""
    view = await get(stub, m.match_id, m.tokens[0])
    assert view.match.state == match_pb2.MATCH_STATE_FINISHED, view.match.state
    record = await record_of(stub, m)
    report = verify(record)
    assert report.ok, report.summary()
    replayed = [entry_to_dict(e) for step in records.replay_record(record) for e in step.entries]
    held = await stored_log(r, m.match_id)
    assert [v for v, _, _ in held] == list(range(1, len(held) + 1)), "versions contiguous"
    assert [entry_to_dict(e) for _, e, _ in held] == replayed, "the stored log is the record's replay"
    decisions = [s for s in record.steps if s.cause is records.StepCause.BOT]
    assert decisions and all(s.action is not None for s in decisions)
    assert len({s.version for s in decisions}) == len(decisions), "a decision recorded twice"
    moves = [s for s in record.steps if s.action is not None]
    assert moves == decisions, "every move of an all-bot match is a bot decision"
    return len(decisions)


async def test_bot_seats_finish_through_a_worker_kill_each_decision_once(
    make_worker: WorkerFactory, clean_redis_url: str, serve: tuple[subprocess.Popen[bytes], str]
) -> None:
    proc, address = serve
    r = aioredis.from_url(clean_redis_url)
    levels = [(1, 4), (3, 2), (4, 5), (2, 1)]
    async with grpc.aio.insecure_channel(address) as ch:
        stub = MSG.MatchServiceStub(ch)
        matches = [
            await create(stub, "paulista-2p", 0, seats=all_bots(levels[i % len(levels)]))
            for i in range(BOT_MATCHES)
        ]
        # the child alone makes the first decisions ...
        deadline = time.monotonic() + 60
        while sum([await bot_actions(r, m.match_id) for m in matches]) < BOT_MATCHES:
            assert time.monotonic() < deadline, "no bot decision made by the child worker"
            await asyncio.sleep(0.05)
    async with make_worker(**FAST) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        stub = MSG.MatchServiceStub(ch)
        # ... then races a second worker until both have decided, and is killed holding claims
        before = sum([await bot_actions(r, m.match_id) for m in matches])
        deadline = time.monotonic() + 60
        while sum([await bot_actions(r, m.match_id) for m in matches]) < before + 2 * BOT_MATCHES:
            assert time.monotonic() < deadline, "the bots stopped deciding with two workers"
            await asyncio.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        killed_at = sum([await bot_actions(r, m.match_id) for m in matches])
        await wait_over(stub, matches, 180, r)  # the survivor plays what the dead one held
        total = 0
        for m in matches:
            total += await check_finished(stub, r, m)
    await r.aclose()
    assert total > killed_at, "the survivor made no decision after the kill: the test did not test it"


async def test_takeover_and_reclaim_in_a_four_player_match_on_two_workers(make_worker: WorkerFactory) -> None:
    settings = match_pb2.MatchSettings(
        disconnect_grace=Duration(seconds=1),
        abandonment=match_pb2.ABANDONMENT_POLICY_BOT_TAKEOVER,
        takeover_level=2,
        bot_think_time=Duration(nanos=200_000_000),
    )
    fast = {**FAST, "heartbeat_interval_seconds": 0.3}
    async with (
        make_worker(**fast) as w1,
        make_worker(**fast) as w2,
        grpc.aio.insecure_channel(w1.grpc_address) as ch1,
        grpc.aio.insecure_channel(w2.grpc_address) as ch2,
    ):
        stubs = [MSG.MatchServiceStub(ch1), MSG.MatchServiceStub(ch2)]
        m = await create(stubs[0], "paulista", 4, settings=settings)
        # every seat watches its stream on one worker or the other, but the one that goes away
        first = (await get(stubs[0], m.match_id, m.tokens[0])).observation.awaited[0]
        away = (first + 1) % 4
        trackers = {s: Tracker(stubs[s % 2], m.match_id, m.tokens[s]).start() for s in range(4) if s != away}

        async def play_present(until: Any, timeout: float = 60) -> None:
            """The present seats play their first legal action when awaited, until ``until()``."""
            deadline = time.monotonic() + timeout
            while not await until():
                assert time.monotonic() < deadline, "the match did not get there"
                view = await get(stubs[0], m.match_id, m.tokens[0])
                if view.match.state != match_pb2.MATCH_STATE_ACTIVE:
                    return
                awaited = list(view.observation.awaited)
                seat = awaited[0] if awaited else None
                if seat is not None and seat in trackers:
                    mine = await get(stubs[seat % 2], m.match_id, m.tokens[seat])
                    if mine.observation.legal_actions:
                        with contextlib.suppress(grpc.aio.AioRpcError):  # the match moved on first
                            await act(
                                stubs[seat % 2],
                                m.match_id,
                                m.tokens[seat],
                                mine.observation.legal_actions[0],
                                expected_version=mine.observation.version,
                            )
                        continue
                await asyncio.sleep(0.05)

        watchers = list(trackers.values())

        def seen(kind: str, seat: int) -> bool:
            """Every present seat's stream showed ``kind`` for ``seat``."""
            return all(
                any(
                    ev.WhichOneof("payload") == kind and getattr(ev, kind).seat == seat
                    for ev in t.events.values()
                )
                for t in watchers
            )

        async def taken() -> bool:
            return seen("seat_taken_over", away)

        gone = time.monotonic()
        await play_present(taken)
        assert time.monotonic() - gone >= 1.0  # never before the grace
        view = await get(stubs[1], m.match_id, m.tokens[away])
        assert list(view.observation.taken_over) == [away]

        # the bot plays the seat: wait for its first decision
        async def bot_decided() -> bool:
            v = await get(stubs[0], m.match_id, m.tokens[0])
            return (
                any(
                    ev.WhichOneof("payload") == "card_played" and ev.card_played.seat == away
                    for t in trackers.values()
                    for ev in t.events.values()
                )
                or v.match.state != match_pb2.MATCH_STATE_ACTIVE
            )

        await play_present(bot_decided)
        # the player is back: a stream again, and its credential takes the seat back
        trackers[away] = Tracker(stubs[away % 2], m.match_id, m.tokens[away]).start()
        await stubs[1].JoinMatch(MS.JoinMatchRequest(match_id=m.match_id), metadata=bearer(m.tokens[away]))
        back = await get(stubs[1], m.match_id, m.tokens[away])
        assert list(back.observation.taken_over) == []

        async def over() -> bool:
            v = await get(stubs[0], m.match_id, m.tokens[0])
            return v.match.state != match_pb2.MATCH_STATE_ACTIVE

        await play_present(over, 180)  # the four players finish the match
        assert seen("seat_reclaimed", away)
        for t in trackers.values():
            await t.close()
        record = await record_of(stubs[0], m)
    assert (await asyncio.to_thread(verify, record)).ok
    taken = [s for s in record.steps if s.take_over is not None]
    assert [(s.take_over.seat, s.take_over.bot_level) for s in taken if s.take_over] == [(away, 2)]
    rejoined = [s for s in record.steps if s.join is not None and s.join.seat == away]
    assert len(rejoined) == 1 and rejoined[0].version > taken[0].version
    bot_moves = [s for s in record.steps if s.cause is records.StepCause.BOT]
    assert bot_moves and {s.seat for s in bot_moves} == {away}
    assert all(taken[0].version < s.version < rejoined[0].version for s in bot_moves)
    log = [e for step in records.replay_record(record) for e in step.entries]
    marks = [type(e) for e in log if isinstance(e, SeatTakenOver | SeatReclaimed)]
    assert marks == [SeatTakenOver, SeatReclaimed]
