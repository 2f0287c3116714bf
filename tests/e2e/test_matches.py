"""Whole matches over real gRPC against a real redis-server: every preset and player
count, several workers on one Redis, a worker killed mid-match, graceful shutdown,
idempotency, stale versions, stream resume, credential isolation and the no-leak rule."""

from __future__ import annotations

import os
import random
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis.asyncio as aioredis

from tests.e2e.client import (
    MATCH_OVER,
    MS,
    Created,
    Player,
    Stub,
    Tracker,
    act,
    bearer,
    create,
    get,
    leaks_in_events,
    leaks_in_observation,
    play_with_streams,
    rich,
    server_state,
    stored_events,
)
from tests.e2e.conftest import WorkerFactory, serve_process
from truco_contract.pb import action_pb2, match_pb2
from truco_server.core.config import ApiKey
from truco_server.transports.grpc.server import Worker

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


def trackers_for(stub: Stub, m: Created, from_version: int | None = 0) -> dict[int, Tracker]:
    return {s: Tracker(stub, m.match_id, t, from_version).start() for s, t in enumerate(m.tokens)}


async def close_all(*trackers: Tracker) -> None:
    for t in trackers:
        await t.close()


@pytest.mark.parametrize(
    ("preset", "players"),
    [
        ("paulista", 2),
        ("paulista", 4),
        ("paulista", 6),
        ("mineiro", 2),
        ("mineiro", 4),
        ("argentine", 2),
        ("argentine", 4),
        ("argentine", 6),
        ("uruguayan", 2),
    ],
)
async def test_full_match_random_play_no_leaks(worker: Worker, preset: str, players: int) -> None:
    """Random legal play from each seat's own stream to the end; every stream gets every
    event once, and nothing a seat or the spectator receives shows a card hidden from it."""
    r = aioredis.Redis.from_url(worker.settings.redis_url or "")
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, preset, players)
        assert len(m.tokens) == players
        seats = trackers_for(stub, m)
        spectator = Tracker(stub, m.match_id, m.spectator, 0).start()
        n, last = await play_with_streams(
            stub,
            m,
            seats,
            random.Random(f"{preset}{players}"),
            version=m.version,
            redis=r,
            spectator=spectator,
        )
        assert n > 0
        for t in [*seats.values(), spectator]:
            await t.wait_done()
            assert t.error is None
            t.assert_contiguous(1, last)
            assert t.snapshots == 0
        final = await get(stub, m.match_id, m.spectator)
        assert final.match.state == match_pb2.MATCH_STATE_FINISHED
        assert final.match.version == last and final.observation.match_state == MATCH_OVER
        assert final.match.result.winner_team >= 0
        assert spectator.events[last].kind == "match_revealed"
        # the spectator never holds a hand and never sees a dealt card
        for msg in spectator.messages:
            if msg.HasField("update"):
                assert not msg.update.observation.hand
                for ev in msg.update.events:
                    if ev.HasField("cards_dealt"):
                        assert not ev.cards_dealt.cards and ev.cards_dealt.count > 0
    await r.aclose()


async def test_two_workers_serve_one_match_alternately(make_worker: WorkerFactory) -> None:
    """Actions alternate between two workers; every seat streams from the other one."""
    async with make_worker() as a, make_worker() as b:
        assert a.grpc_port != b.grpc_port
        async with (
            grpc.aio.insecure_channel(a.grpc_address) as ca,
            grpc.aio.insecure_channel(b.grpc_address) as cb,
        ):
            sa, sb = Stub(ca), Stub(cb)
            m = await create(sa, "paulista", 4)
            on_b = trackers_for(sb, m)
            on_a = trackers_for(sa, m)
            rng = random.Random(3)
            version, total = m.version, 0
            while True:
                stub_act, streams = (sa, on_b) if total % 2 == 0 else (sb, on_a)
                n, version = await play_with_streams(
                    stub_act, m, streams, rng, version=version, max_actions=1, start_n=total
                )
                total += n
                if n == 0:
                    break
            for t in [*on_a.values(), *on_b.values()]:
                await t.wait_done()
                assert t.error is None
                t.assert_contiguous(1, version)
            assert (await get(sb, m.match_id, m.spectator)).match.state == match_pb2.MATCH_STATE_FINISHED
            assert total > 4


@pytest.fixture
def serve_subprocess(clean_redis_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``truco serve`` as a child process on a free loopback port (open mode)."""
    with serve_process(clean_redis_url, tmp_path) as served:
        yield served


async def test_worker_killed_mid_match_another_finishes_it(
    serve_subprocess: tuple[subprocess.Popen[bytes], str], make_worker: WorkerFactory
) -> None:
    proc, address = serve_subprocess
    async with grpc.aio.insecure_channel(address) as c1:
        s1 = Stub(c1)
        m = await create(s1, "argentine", 2)
        watcher = Tracker(s1, m.match_id, m.spectator, 0).start()
        seats = trackers_for(s1, m)
        n, version = await play_with_streams(
            s1, m, seats, random.Random(11), version=m.version, max_actions=6
        )
        await watcher.wait_version(version)
        assert n == 6 and watcher.version == version
        # the action the client was about to send when the worker died
        seat = seats[0].obs.awaited[0]  # type: ignore[union-attr]
        pending_action = random.Random(5).choice(list(seats[seat].obs.legal_actions))  # type: ignore[union-attr]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await watcher.wait_done()
        assert watcher.error is not None and watcher.error.code() == grpc.StatusCode.UNAVAILABLE
        await close_all(*seats.values())
    seen = watcher.version
    async with make_worker() as w2, grpc.aio.insecure_channel(w2.grpc_address) as c2:
        s2 = Stub(c2)
        resumed = Tracker(s2, m.match_id, m.spectator, seen).start()
        first = await act(
            s2, m.match_id, m.tokens[seat], pending_action, rid="after-kill", expected_version=seen
        )
        again = await act(
            s2, m.match_id, m.tokens[seat], pending_action, rid="after-kill", expected_version=seen
        )
        assert again.version == first.version and list(again.events) == list(first.events)
        seats2 = trackers_for(s2, m, from_version=first.version)
        _, last = await play_with_streams(
            s2, m, seats2, random.Random(12), version=first.version, spectator=resumed, start_n=100
        )
        await resumed.wait_done()
        assert resumed.error is None and resumed.snapshots == 0
        resumed.assert_contiguous(seen + 1, last)
        # old stream + resumed stream: every version exactly once
        assert sorted([*watcher.events, *resumed.events]) == list(range(1, last + 1))
        info = await get(s2, m.match_id, m.spectator)
        assert info.match.state == match_pb2.MATCH_STATE_FINISHED and info.match.version == last
        await close_all(*seats2.values())


async def test_graceful_shutdown_ends_streams_unavailable_and_client_resumes(
    make_worker: WorkerFactory,
) -> None:
    async with make_worker() as b:
        a_cm = make_worker()
        a = await a_cm.__aenter__()
        stopped = False
        try:
            async with (
                grpc.aio.insecure_channel(a.grpc_address) as ca,
                grpc.aio.insecure_channel(b.grpc_address) as cb,
            ):
                sa, sb = Stub(ca), Stub(cb)
                m = await create(sa, "paulista", 2)
                seats = trackers_for(sa, m)
                _, version = await play_with_streams(
                    sa, m, seats, random.Random(2), version=m.version, max_actions=4
                )
                await a_cm.__aexit__(None, None, None)
                stopped = True
                for t in seats.values():
                    await t.wait_done(5)
                    assert t.error is not None and t.error.code() == grpc.StatusCode.UNAVAILABLE
                    assert rich(t.error).reason == "SHUTTING_DOWN"
                resumed = {
                    s: Tracker(sb, m.match_id, m.tokens[s], t.version).start() for s, t in seats.items()
                }
                _, last = await play_with_streams(
                    sb, m, resumed, random.Random(4), version=version, start_n=50
                )
                for s, t in resumed.items():
                    await t.wait_done()
                    t.assert_contiguous(version + 1, last)
                    assert sorted([*seats[s].events, *t.events]) == list(range(1, last + 1))
        finally:
            if not stopped:
                await a_cm.__aexit__(None, None, None)


async def test_retry_same_request_id_applies_once(worker: Worker) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, "paulista", 2)
        player = Player(stub, m, random.Random(1))
        view = await get(stub, m.match_id, m.tokens[0])
        seat = view.observation.awaited[0]
        mine = await get(stub, m.match_id, m.tokens[seat])
        action = mine.observation.legal_actions[0]
        first = await act(stub, m.match_id, m.tokens[seat], action, rid="same")
        second = await act(stub, m.match_id, m.tokens[seat], action, rid="same")
        assert second.version == first.version
        assert list(second.events) == list(first.events)
        after = await get(stub, m.match_id, m.spectator)
        assert after.match.version == first.version  # applied once
        # still true after the match moved on
        await player.step()
        third = await act(stub, m.match_id, m.tokens[seat], action, rid="same")
        assert third.version == first.version and list(third.events) == list(first.events)
        # the same id for another action is refused, nothing applied
        moved = (await get(stub, m.match_id, m.spectator)).match.version
        other = next(
            (a for a in mine.observation.legal_actions if a != action), mine.observation.legal_actions[0]
        )
        if other != action:
            with pytest.raises(grpc.aio.AioRpcError) as exc:
                await act(stub, m.match_id, m.tokens[seat], other, rid="same")
            assert exc.value.code() == grpc.StatusCode.ALREADY_EXISTS
            assert rich(exc.value).reason == "REQUEST_ID_REUSED"
        assert (await get(stub, m.match_id, m.spectator)).match.version == moved


async def test_stale_expected_version_refused(worker: Worker) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, "mineiro", 2)
        await Player(stub, m, random.Random(2)).step()
        view = await get(stub, m.match_id, m.tokens[0])
        seat = view.observation.awaited[0]
        mine = await get(stub, m.match_id, m.tokens[seat])
        v = mine.observation.version
        for stale in (v - 1, v + 1, 0):
            with pytest.raises(grpc.aio.AioRpcError) as exc:
                await act(
                    stub,
                    m.match_id,
                    m.tokens[seat],
                    mine.observation.legal_actions[0],
                    expected_version=stale,
                )
            e = rich(exc.value)
            assert e.code == grpc.StatusCode.ABORTED and e.reason == "STALE_VERSION"
            assert e.illegal is not None and e.illegal.current_version == v
        assert (await get(stub, m.match_id, m.spectator)).match.version == v
        ok = await act(
            stub, m.match_id, m.tokens[seat], mine.observation.legal_actions[0], expected_version=v
        )
        assert ok.version > v


async def test_resume_from_old_version_gets_exactly_the_missing_events(worker: Worker) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, "argentine", 2)
        player = Player(stub, m, random.Random(9))
        for _ in range(8):
            await player.step()
        now = (await get(stub, m.match_id, m.spectator)).match.version
        for seat, token in enumerate(m.tokens):
            for old in (0, 1, m.version, now - 2, now):
                t = Tracker(stub, m.match_id, token, old).start()
                await t.wait_version(now)
                assert t.versions == list(range(old + 1, now + 1)), (seat, old)
                assert t.snapshots == 0 and t.messages[0].update.version == now
                await t.close()
        # no from_version: one snapshot of the current view
        t = Tracker(stub, m.match_id, m.tokens[0]).start()
        await t.wait_version(now)
        assert t.messages[0].update.snapshot and not t.messages[0].update.events
        await t.close()


async def test_seat_credential_cannot_act_for_or_see_another_seat(worker: Worker) -> None:
    r = aioredis.Redis.from_url(worker.settings.redis_url or "")
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, "paulista", 4)
        player = Player(stub, m, random.Random(4))
        for _ in range(12):
            version, state = await server_state(r, m.match_id)
            stored = await stored_events(r, m.match_id)
            assert state.hand is not None
            to_act = (await get(stub, m.match_id, m.spectator)).observation.awaited
            for seat, token in enumerate(m.tokens):
                view = await get(stub, m.match_id, token)
                assert view.observation.seat == seat
                assert not leaks_in_observation(view.observation, state, seat)
                assert sorted(view.observation.hand) == sorted(state.hand.cards[seat])
                t = Tracker(stub, m.match_id, token, 0).start()
                await t.wait_version(version)
                assert not leaks_in_events(t.events.values(), stored, seat)
                await t.close()
                if seat not in to_act:
                    # acting out of turn with any card of one's own hand, or of another hand
                    for card in [*state.hand.cards[seat][:1], *state.hand.cards[to_act[0]][:1]]:
                        with pytest.raises(grpc.aio.AioRpcError) as exc:
                            await act(stub, m.match_id, token, _play(card))
                        assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
                        assert rich(exc.value).reason in ("NOT_YOUR_TURN", "ILLEGAL_ACTION")
                        # the error never names the other seat's card
                        assert card not in exc.value.details() or card in state.hand.cards[seat]
            assert (await get(stub, m.match_id, m.spectator)).match.version == version
            await player.step()
    await r.aclose()


def _play(card: str) -> action_pb2.Action:
    return action_pb2.Action(play_card=action_pb2.PlayCard(card=card))


async def test_spectator_stream_of_whole_match_shows_no_hidden_card(worker: Worker) -> None:
    r = aioredis.Redis.from_url(worker.settings.redis_url or "")
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, "mineiro", 4)
        spectator = Tracker(stub, m.match_id, m.spectator, 0).start()
        seats = trackers_for(stub, m, None)
        _, last = await play_with_streams(
            stub, m, seats, random.Random(8), version=m.version, redis=r, spectator=spectator
        )
        await spectator.wait_done()
        spectator.assert_contiguous(1, last)
        stored = await stored_events(r, m.match_id)
        assert not leaks_in_events(spectator.events.values(), stored, None)
        every_card = {c for e in stored.values() if e["kind"] == "cards_dealt" for c in e["cards"]}
        for msg in spectator.messages:
            if msg.HasField("update"):
                assert not msg.update.observation.hand
                for ev in msg.update.events:
                    if ev.HasField("cards_dealt"):
                        assert not set(ev.cards_dealt.cards) & every_card
                    if ev.HasField("card_played") and ev.card_played.face_down:
                        assert not ev.card_played.card
    await r.aclose()


async def test_operator_sees_spectator_view(make_worker: WorkerFactory) -> None:
    keys = (ApiKey("acme", "acme-key"),)
    async with make_worker(api_keys=keys) as worker, grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, "paulista", 2, api_key="acme-key")
        view = await stub.GetMatch(MS.GetMatchRequest(match_id=m.match_id), metadata=bearer("acme-key"))
        assert not view.observation.HasField("seat") and not view.observation.hand
