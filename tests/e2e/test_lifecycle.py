"""The match lifecycle end to end: real workers on a real ``redis-server``.

Turn clocks of one second on matches whose players never act: every expiry is applied exactly
once -- the stored log equals, entry for entry, the log the pure table
(:func:`truco_match.table.expire`) computes from the revealed seed -- with two workers racing
for the wake-ups, and with a ``truco serve`` worker SIGKILLed mid-run. Then the other ways a
match ends or changes outside the game: an unjoined match aborted, an idle match aborted, a
resignation scored, an away seat defaulted after its grace, an operator adding time and
awarding the match, spectators kept some actions behind and shown each finished hand.
"""

from __future__ import annotations

import asyncio
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
from tests.e2e.client import Tracker, act, bearer, create, get, rich
from tests.e2e.conftest import WorkerFactory, serve_process
from tests.e2e.stalled import (
    FORFEIT_AFTER,
    any_expiry,
    check_stalled,
    clocked,
    record_of,
    stored_log,
    wait_over,
)
from truco_contract.pb import action_pb2, match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import match_service_pb2_grpc as MSG
from truco_match import records
from truco_match.events import (
    MatchAborted,
    MatchAdjudicated,
    TimeAdded,
    TimeoutCause,
    TurnTimedOut,
)
from truco_server.core.config import ApiKey

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

FAST = {"scheduler_tick_seconds": 0.05}
"""Workers that look for due matches every 50 ms (the default is 250 ms)."""
RESIGN = action_pb2.Action(resign=action_pb2.Resign())
OPERATOR_KEY = "ops-key"
STALLED_MATCHES = 6


async def test_stalled_matches_time_out_exactly_once_with_two_workers_racing(
    make_worker: WorkerFactory, clean_redis_url: str
) -> None:
    r = aioredis.from_url(clean_redis_url)
    async with (
        make_worker(**FAST) as w1,
        make_worker(**FAST) as w2,
        grpc.aio.insecure_channel(w1.grpc_address) as ch1,
        grpc.aio.insecure_channel(w2.grpc_address) as ch2,
    ):
        stubs = [MSG.MatchServiceStub(ch1), MSG.MatchServiceStub(ch2)]
        matches = [
            await create(stubs[i % 2], "paulista", 2, settings=clocked()) for i in range(STALLED_MATCHES)
        ]
        view = await get(stubs[0], matches[0].match_id, matches[0].tokens[0])
        clock = view.observation.clock
        assert clock.HasField("deadline") and 0 < clock.remaining_ms <= 1000, clock
        assert list(view.observation.awaited) == [clock.seat]
        await wait_over(stubs[0], matches, 60)
        total = await check_stalled(stubs[1], r, matches)
    await r.aclose()
    assert total >= STALLED_MATCHES * FORFEIT_AFTER


@pytest.fixture
def serve(clean_redis_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``truco serve`` on the test's Redis (50 ms scheduler ticks), a child process to SIGKILL."""
    with serve_process(clean_redis_url, tmp_path, "--scheduler-tick", "0.05") as served:
        yield served


async def test_expiries_are_applied_once_when_a_worker_is_killed_mid_run(
    make_worker: WorkerFactory, clean_redis_url: str, serve: tuple[subprocess.Popen[bytes], str]
) -> None:
    proc, address = serve
    r = aioredis.from_url(clean_redis_url)
    async with grpc.aio.insecure_channel(address) as ch:
        stub = MSG.MatchServiceStub(ch)
        matches = [await create(stub, "paulista", 2, settings=clocked()) for _ in range(STALLED_MATCHES)]
        # the child alone applies the first expiries ...
        deadline = time.monotonic() + 20
        while not await any_expiry(r, matches):
            assert time.monotonic() < deadline, "no expiry applied by the child worker"
            await asyncio.sleep(0.05)
    async with make_worker(**FAST) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        # ... then races a second worker for a while, and is killed holding its claims
        await asyncio.sleep(1.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        stub = MSG.MatchServiceStub(ch)
        await wait_over(stub, matches, 60)  # the survivor claims what the dead one held
        total = await check_stalled(stub, r, matches)
    await r.aclose()
    assert total >= STALLED_MATCHES * FORFEIT_AFTER


async def test_an_expiry_racing_the_seats_own_move_applies_one_of_them(
    worker: Any, clean_redis_url: str
) -> None:
    """A seat that answers just at its deadline: either its move or the default move is
    applied at that version, never both (the version check fences the late one)."""
    r = aioredis.from_url(clean_redis_url)
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = MSG.MatchServiceStub(ch)
        outcomes = []
        for _ in range(4):
            m = await create(stub, "paulista", 2, settings=clocked(forfeit_after=0))
            view = await get(stub, m.match_id, m.tokens[0])
            seat = view.observation.awaited[0]
            mine = await get(stub, m.match_id, m.tokens[seat])
            move = next(a for a in mine.observation.legal_actions if a.WhichOneof("action") == "play_card")
            await asyncio.sleep(max(0.0, mine.observation.clock.remaining_ms / 1000 - 0.02))
            try:
                await act(stub, m.match_id, m.tokens[seat], move, expected_version=mine.observation.version)
                outcomes.append("move")
            except grpc.aio.AioRpcError as exc:
                assert rich(exc).reason in ("STALE_VERSION", "NOT_YOUR_TURN"), rich(exc)
                outcomes.append("expired")
            await asyncio.sleep(0.3)
            held = await stored_log(r, m.match_id)
            at = [e for v, e, _ in held if v > mine.observation.version]
            first = at[0]
            if outcomes[-1] == "move":
                assert isinstance(first, te.Event) and first.kind == "card_played", first
                assert first.payload.seat == seat  # type: ignore[attr-defined]
            else:
                assert isinstance(first, TurnTimedOut) and first.seat == seat
            plays = [e for e in at[:3] if isinstance(e, te.Event) and e.kind == "card_played"]
            assert len([p for p in plays if p.payload.seat == seat]) == 1  # type: ignore[attr-defined]
    await r.aclose()


# ----------------------------------------------------------------- abandonment
async def test_an_unjoined_match_is_aborted_without_a_result(worker: Any, clean_redis_url: str) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = MSG.MatchServiceStub(ch)
        m = await create(
            stub, "paulista", 2, settings=match_pb2.MatchSettings(join_window=Duration(seconds=1))
        )
        await stub.JoinMatch(MS.JoinMatchRequest(match_id=m.match_id), metadata=bearer(m.tokens[0]))
        view = await get(stub, m.match_id, m.tokens[0])
        assert list(view.observation.not_joined) == [1] and view.observation.joined
        await wait_over(stub, [m], 10)
        view = await get(stub, m.match_id, m.tokens[0])
        assert view.match.state == match_pb2.MATCH_STATE_ABORTED and not view.match.HasField("result")
    r = aioredis.from_url(clean_redis_url)
    held = await stored_log(r, m.match_id)
    await r.aclose()
    aborted = [(e, ms) for _, e, ms in held if isinstance(e, MatchAborted)]
    assert len(aborted) == 1 and aborted[0][0].reason == "not_joined" and aborted[0][0].seats == (1,)
    assert aborted[0][1] >= 1000
    assert not any(isinstance(e, te.Event) and e.kind == "hand_started" for _, e, _ in held)


async def test_an_idle_match_is_aborted_after_its_idle_time(worker: Any, clean_redis_url: str) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = MSG.MatchServiceStub(ch)
        m = await create(
            stub, "paulista", 2, settings=match_pb2.MatchSettings(idle_timeout=Duration(seconds=1))
        )
        view = await get(stub, m.match_id, m.tokens[0])
        seat = view.observation.awaited[0]
        mine = await get(stub, m.match_id, m.tokens[seat])
        await act(stub, m.match_id, m.tokens[seat], mine.observation.legal_actions[0])
        await wait_over(stub, [m], 10)
        assert (await get(stub, m.match_id, m.tokens[0])).match.state == match_pb2.MATCH_STATE_ABORTED
    r = aioredis.from_url(clean_redis_url)
    held = await stored_log(r, m.match_id)
    await r.aclose()
    last_move = max(ms for _, e, ms in held if isinstance(e, te.Event) and e.kind == "card_played")
    aborted = [(e, ms) for _, e, ms in held if isinstance(e, MatchAborted)]
    assert len(aborted) == 1 and aborted[0][0].reason == "idle" and aborted[0][1] - last_move >= 1000


async def test_a_resignation_is_scored_for_the_other_team(worker: Any) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = MSG.MatchServiceStub(ch)
        m = await create(stub, "paulista", 4)
        seat_teams = list((await get(stub, m.match_id, m.tokens[0])).observation.seat_teams)
        # a seat may resign at any time, its turn or not
        view = await get(stub, m.match_id, m.tokens[0])
        resigner = next(s for s in range(4) if s not in view.observation.awaited)
        await act(stub, m.match_id, m.tokens[resigner], RESIGN)
        match = (await get(stub, m.match_id, m.tokens[0])).match
        assert match.state == match_pb2.MATCH_STATE_FINISHED
        assert match.result.winner_team == 1 - seat_teams[resigner]
        tracker = Tracker(stub, m.match_id, m.tokens[2], from_version=0).start()
        await tracker.wait_done()
        kinds = [tracker.events[v].kind for v in sorted(tracker.events)]
        assert kinds[-3:] == ["match_resigned", "match_ended", "match_revealed"], kinds[-4:]
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await act(stub, m.match_id, m.tokens[0], RESIGN)
        assert rich(exc.value).reason == "MATCH_NOT_ACTIVE"


async def test_an_away_seat_gets_its_default_move_after_the_grace(
    make_worker: WorkerFactory, clean_redis_url: str
) -> None:
    async with (
        make_worker(heartbeat_interval_seconds=0.3, **FAST) as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
    ):
        stub = MSG.MatchServiceStub(ch)
        settings = match_pb2.MatchSettings(disconnect_grace=Duration(seconds=1))
        m = await create(stub, "paulista", 2, settings=settings)
        seat = (await get(stub, m.match_id, m.tokens[0])).observation.awaited[0]
        present = Tracker(stub, m.match_id, m.tokens[seat]).start()
        await asyncio.sleep(2.5)  # the seat's stream is open: no default move however long it thinks
        r = aioredis.from_url(clean_redis_url)
        assert not any(isinstance(e, TurnTimedOut) for _, e, _ in await stored_log(r, m.match_id))
        await present.close()  # the seat goes away
        gone = time.monotonic()
        deadline = gone + 10
        while True:
            timed = [e for _, e, _ in await stored_log(r, m.match_id) if isinstance(e, TurnTimedOut)]
            if timed:
                break
            assert time.monotonic() < deadline, "the away seat never got its default move"
            await asyncio.sleep(0.05)
        await r.aclose()
        assert time.monotonic() - gone >= 0.9  # the presence timeout and the grace first
        assert timed[0].seat == seat and timed[0].cause is TimeoutCause.DISCONNECTED
        assert timed[0].action is not None and timed[0].action.kind == "play"


# ----------------------------------------------------------- operator actions
async def test_the_operator_adds_time_and_awards_the_match(make_worker: WorkerFactory) -> None:
    async with (
        make_worker(api_keys=(ApiKey(name="ops", secret=OPERATOR_KEY),)) as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
    ):
        stub = MSG.MatchServiceStub(ch)
        ops = bearer(OPERATOR_KEY)
        settings = clocked(per_decision_s=2, forfeit_after=0)
        m = await create(stub, "paulista", 2, settings=settings, api_key=OPERATOR_KEY)
        before = (await get(stub, m.match_id, m.tokens[0])).observation.clock
        await stub.AddTime(MS.AddTimeRequest(match_id=m.match_id, added=Duration(seconds=30)), metadata=ops)
        after = (await get(stub, m.match_id, m.tokens[0])).observation.clock
        assert after.remaining_ms > before.remaining_ms + 25_000  # the decision being timed got it
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await stub.AddTime(
                MS.AddTimeRequest(match_id=m.match_id, added=Duration(seconds=5)),
                metadata=bearer(m.tokens[0]),
            )
        assert exc.value.code() == grpc.StatusCode.UNAUTHENTICATED  # a seat's credential may not
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await stub.AdjudicateMatch(
                MS.AdjudicateMatchRequest(match_id=m.match_id, winner_team=7), metadata=ops
            )
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        resp = await stub.AdjudicateMatch(
            MS.AdjudicateMatchRequest(match_id=m.match_id, winner_team=1, reason="ruled by the arbiter"),
            metadata=ops,
        )
        assert resp.match.state == match_pb2.MATCH_STATE_FINISHED and resp.match.result.winner_team == 1
        record = await record_of(stub, m)
        assert [s.add_time for s in record.steps if s.add_time] == [TimeAdded(seat=None, added=30_000)]
        awarded = [s.adjudicate for s in record.steps if s.adjudicate]
        assert awarded == [MatchAdjudicated(winner_team=1, reason="ruled by the arbiter")]
        # the record replays to the same end through the pure table
        *_, last = records.replay_record(record)
        assert te.is_over(last.state) and last.state.winner == 1


# --------------------------------------------------------------------- spectators
async def test_spectators_are_kept_behind_and_shown_each_finished_hand(worker: Any) -> None:
    delay = 3
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = MSG.MatchServiceStub(ch)
        settings = match_pb2.MatchSettings(spectator_delay_actions=delay, show_hands_to_spectators=True)
        m = await create(stub, "paulista", 2, settings=settings)
        played = 0
        hands_over = 0
        while hands_over < 1:
            view = await get(stub, m.match_id, m.tokens[0])
            seat = view.observation.awaited[0]
            mine = await get(stub, m.match_id, m.tokens[seat])
            plays = [
                a
                for a in mine.observation.legal_actions
                if a.WhichOneof("action") == "play_card" and not a.play_card.face_down
            ]
            resp = await act(stub, m.match_id, m.tokens[seat], plays[0])
            played += 1
            hands_over = resp.observation.hand_number - 1
            spectator = await get(stub, m.match_id, m.spectator)
            if played >= delay:
                assert spectator.observation.version < resp.observation.version
                assert spectator.observation.decision == resp.observation.decision - delay
            assert not spectator.observation.hand  # a spectator holds no cards
        tracker = Tracker(stub, m.match_id, m.spectator, from_version=0).start()
        await asyncio.sleep(0.5)
        await tracker.close()
        shown = [e for e in tracker.events.values() if e.kind == "hand_cards_shown"]
        # the finished hand is shown only once the spectator has reached its end
        assert tracker.version < resp.observation.version
        seen_end = any(e.kind == "hand_ended" for e in tracker.events.values())
        assert bool(shown) == seen_end
        await stub.CancelMatch(MS.CancelMatchRequest(match_id=m.match_id))
        tracker = Tracker(stub, m.match_id, m.spectator, from_version=0).start()
        await tracker.wait_done()
        shown = [e for e in tracker.events.values() if e.kind == "hand_cards_shown"]
        assert len(shown) >= 1 and all(len(cl.cards) == 3 for cl in shown[0].hand_cards_shown.hands)
