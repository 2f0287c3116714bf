"""The SDK against a real worker on a real Redis."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import grpc
import pytest

from truco_client import (
    AsyncTrucoClient,
    IllegalAction,
    InvalidArgument,
    RetryPolicy,
    TrucoClient,
    Unauthenticated,
    Update,
)
from truco_client import actions as A
from truco_server.app.embedded import EmbeddedServer

pytestmark = pytest.mark.timeout(120)


def drive_to_end(
    client: TrucoClient,
    match_id: str,
    tokens: tuple[str, ...],
    seed: int = 1,
    pause: threading.Event | None = None,
    max_actions: int = 2000,
    hold_after: int | None = None,
) -> int:
    """Play random legal actions for every seat until the match ends; returns actions played.
    ``pause``: play only while it is set; ``hold_after``: clear it after that many actions."""
    rng = random.Random(seed)
    n = 0
    while n < max_actions:
        if pause is not None:
            if n == hold_after:
                pause.clear()
            pause.wait()
        try:
            view = client.get_match(match_id, token=tokens[0])
            obs = view.observation
            assert obs is not None
            if obs.is_over:
                return n
            seat = obs.whose_turn
            assert seat is not None
            mine = client.get_match(match_id, token=tokens[seat]).observation
            assert mine is not None and mine.is_my_turn
            client.submit_action(
                match_id, rng.choice(mine.legal_actions), token=tokens[seat], expected_version=mine.version
            )
            n += 1
        except Exception as exc:  # the worker may be restarting: the client retries, then try again
            if "UNAVAILABLE" not in str(exc) and "STALE" not in str(exc):
                raise
            time.sleep(0.05)
    raise AssertionError("match did not end")


def test_create_get_list_cancel(client: TrucoClient) -> None:
    m = client.create_match("argentine", seats=["ana", ("bot", "bot")])
    assert len(m.seat_tokens) == 2 and m.spectator_token
    assert m.rules is not None and m.rules.envido
    view = client.get_match(m.match_id, token=m.seat_tokens[0])
    obs = view.observation
    assert obs is not None and obs.seat == 0 and len(obs.my_cards) == 3
    assert obs.rules is not None and obs.deck_style == "spanish"
    assert obs.is_my_turn == (obs.whose_turn == 0)
    matches, _ = client.list_matches()
    assert m.match_id in [x.match_id for x in matches]
    assert m.match_id in [x.match_id for x in client.iter_matches(state="active")]
    cancelled = client.cancel_match(m.match_id, "test over")
    assert cancelled.state == "cancelled"
    with pytest.raises(Unauthenticated) as missing:  # an open server: reading takes a match credential
        client.get_match(m.match_id)
    assert missing.value.reason == "MISSING_CREDENTIAL"
    forged = f"tc1.m-does-not-exist.0.{'0' * 40}"
    with pytest.raises(Unauthenticated) as unknown:  # a match credential never tells an unknown match
        client.get_match("m-does-not-exist", token=forged)
    assert unknown.value.reason == "INVALID_CREDENTIAL"


def test_illegal_action_is_typed(client: TrucoClient) -> None:
    m = client.create_match("argentine")
    obs = client.get_match(m.match_id, token=m.seat_tokens[0]).observation
    assert obs is not None
    seat = obs.whose_turn
    assert seat is not None
    other = 1 - seat
    with pytest.raises(IllegalAction) as info:
        client.submit_action(m.match_id, A.truco(), token=m.seat_tokens[other])
    assert info.value.reason == "NOT_YOUR_TURN"
    with pytest.raises(InvalidArgument) as bad:
        client.submit_action(m.match_id, A.play("4C"), token=m.seat_tokens[seat])  # French card, Spanish deck
    assert bad.value.reason == "INVALID_REQUEST"
    mine = client.get_match(m.match_id, token=m.seat_tokens[seat]).observation
    assert mine is not None and mine.rules is not None
    not_mine = next(c for c in mine.rules.deck_cards if c not in mine.my_cards)
    with pytest.raises(IllegalAction) as info2:
        client.submit_action(m.match_id, A.play(not_mine), token=m.seat_tokens[seat])
    assert info2.value.reason == "ILLEGAL_ACTION"
    assert set(info2.value.legal_actions) == set(mine.legal_actions)
    assert info2.value.current_version == mine.version


def test_submit_is_idempotent_on_request_id(client: TrucoClient) -> None:
    m = client.create_match("argentine")
    obs = client.get_match(m.match_id, token=m.seat_tokens[0]).observation
    assert obs is not None and obs.whose_turn is not None
    tok = m.seat_tokens[obs.whose_turn]
    mine = client.get_match(m.match_id, token=tok).observation
    assert mine is not None
    first = client.submit_action(m.match_id, mine.legal_actions[0], token=tok, request_id="same-id")
    again = client.submit_action(m.match_id, mine.legal_actions[0], token=tok, request_id="same-id")
    # One action may produce several events (a flor resolves at once, a hand may end and the
    # next be dealt); the retry must answer with the first result and write nothing.
    assert first.version == mine.version + len(first.events)
    assert again.version == first.version
    assert [e.version for e in again.events] == [e.version for e in first.events]
    after = client.get_match(m.match_id, token=tok).observation
    assert after is not None and after.version == first.version


class _Flaky:
    """Wraps a stub: the first SubmitAction reaches the server, then 'loses' the response."""

    def __init__(self, stub: Any) -> None:
        self.stub = stub
        self.request_ids: list[str] = []
        self.failed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stub, name)

    def SubmitAction(self, req: Any, **kw: Any) -> Any:
        self.request_ids.append(req.request_id)
        resp = self.stub.SubmitAction(req, **kw)
        if not self.failed:
            self.failed = True
            raise _Unavailable()
        return resp


class _Unavailable(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "connection reset (simulated)"

    def trailing_metadata(self) -> tuple[()]:
        return ()


def test_submit_retry_reuses_request_id(client: TrucoClient, monkeypatch: pytest.MonkeyPatch) -> None:
    m = client.create_match("argentine")
    obs = client.get_match(m.match_id, token=m.seat_tokens[0]).observation
    assert obs is not None and obs.whose_turn is not None
    tok = m.seat_tokens[obs.whose_turn]
    mine = client.get_match(m.match_id, token=tok).observation
    assert mine is not None
    flaky = _Flaky(client._channels.stub())
    monkeypatch.setattr(client._channels, "stub", lambda: flaky)
    client.retry = RetryPolicy(attempts=3, initial_backoff=0.01)
    res = client.submit_action(m.match_id, mine.legal_actions[0], token=tok)
    assert len(flaky.request_ids) == 2 and flaky.request_ids[0] == flaky.request_ids[1] == res.request_id
    # applied once: the retry was answered with the first application's events (an action
    # may make several, e.g. a flor sung and scored), and nothing was committed after them
    assert res.events[0].version == mine.version + 1
    assert [e.version for e in res.events] == list(range(mine.version + 1, res.version + 1))
    monkeypatch.undo()
    after = client.get_match(m.match_id, token=tok)
    assert after.match.version == res.version


def _collect(
    client: TrucoClient, match_id: str, token: str, out: list[Update], errors: list[BaseException]
) -> None:
    try:
        for upd in client.with_token(token).stream(match_id):
            out.append(upd)
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def _check_contiguous(updates: list[Update], final_version: int) -> None:
    versions = [e.version for u in updates for e in u.events]
    assert versions == list(range(1, final_version + 1)), "every event exactly once, in order"
    assert updates[-1].observation.is_over
    assert updates[-1].version == final_version


def test_stream_full_match_no_loss(client: TrucoClient) -> None:
    m = client.create_match("argentine")
    got: list[Update] = []
    errors: list[BaseException] = []
    t = threading.Thread(
        target=_collect, args=(client, m.match_id, m.seat_tokens[0], got, errors), daemon=True
    )
    t.start()
    drive_to_end(client, m.match_id, m.seat_tokens)
    t.join(30)
    assert not errors
    final = client.get_match(m.match_id, token=m.seat_tokens[0]).match.version
    _check_contiguous(got, final)


def test_stream_survives_worker_restart(clean_redis_url: str) -> None:
    """Cut the stream mid-match by stopping the worker; a new worker on the same port (same
    Redis) takes over; the client resumes with no duplicate or lost event."""
    srv = EmbeddedServer(redis_url=clean_redis_url, heartbeat_interval_seconds=1.0).start()
    port = int(srv.address.rsplit(":", 1)[1])
    client = TrucoClient(
        srv.address, timeout=5.0, retry=RetryPolicy(attempts=30, initial_backoff=0.05, max_backoff=0.5)
    )
    spectator = TrucoClient(
        srv.address,
        timeout=5.0,
        heartbeat_timeout=5.0,
        retry=RetryPolicy(attempts=30, initial_backoff=0.05, max_backoff=0.5),
    )
    srv2: EmbeddedServer | None = None
    try:
        m = client.create_match("argentine", seed=b"stream-survives-restart")  # the same match every run
        got: list[Update] = []
        errors: list[BaseException] = []
        t = threading.Thread(
            target=_collect, args=(spectator, m.match_id, m.seat_tokens[0], got, errors), daemon=True
        )
        t.start()
        go = threading.Event()
        go.set()
        driver_done: list[int] = []
        d = threading.Thread(  # it stops playing by itself after 10 actions, mid-match
            target=lambda: driver_done.append(
                drive_to_end(client, m.match_id, m.seat_tokens, pause=go, hold_after=10)
            ),
            daemon=True,
        )
        d.start()
        deadline = time.time() + 60
        while time.time() < deadline:  # held, and everything played so far seen by the stream
            now = client.get_match(m.match_id, token=m.seat_tokens[0]).match.version
            if not go.is_set() and got and got[-1].version == now:
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the driver did not hold, or the stream did not catch up")
        seen_before = sum(len(u.events) for u in got)  # then cut the stream, play on a new worker
        srv.stop(grace=0.2)
        srv2 = EmbeddedServer(
            redis_url=clean_redis_url, grpc_port=port, heartbeat_interval_seconds=1.0
        ).start()
        go.set()
        d.join(90)
        t.join(60)
        assert not errors, errors
        assert driver_done, "the driver finished the match"
        final = client.get_match(m.match_id, token=m.seat_tokens[0]).match.version
        assert seen_before < final
        _check_contiguous(got, final)
    finally:
        client.close()
        spectator.close()
        if srv2 is not None:
            srv2.stop()
        srv.stop()


def test_stream_resumes_after_channel_cancel(client: TrucoClient) -> None:
    """Cancel the underlying call from under the stream (as a dead connection would): the
    SDK reconnects from the last version and delivers each event once."""
    m = client.create_match("argentine")
    c = client.with_token(m.seat_tokens[0])
    c.heartbeat_timeout = 0.3  # the watchdog cuts a quiet stream quickly
    c.retry = RetryPolicy(attempts=50, initial_backoff=0.01, max_backoff=0.05)
    got: list[Update] = []
    errors: list[BaseException] = []
    t = threading.Thread(target=_collect, args=(c, m.match_id, m.seat_tokens[0], got, errors), daemon=True)
    t.start()
    rng = random.Random(5)
    # Play slowly so the watchdog cancels the call between actions several times.
    n = 0
    while True:
        obs = client.get_match(m.match_id, token=m.seat_tokens[0]).observation
        assert obs is not None
        if obs.is_over:
            break
        seat = obs.whose_turn
        assert seat is not None
        mine = client.get_match(m.match_id, token=m.seat_tokens[seat]).observation
        assert mine is not None
        client.submit_action(m.match_id, rng.choice(mine.legal_actions), token=m.seat_tokens[seat])
        n += 1
        if n % 10 == 0:
            time.sleep(0.5)
    t.join(30)
    assert not errors
    final = client.get_match(m.match_id, token=m.seat_tokens[0]).match.version
    _check_contiguous(got, final)


class _EndSpy:
    """Wraps a stream call: whether the SDK had read it to its end (the server's status) when it
    cancelled it."""

    def __init__(self, call: Any, log: list[bool]) -> None:
        self.call, self.log, self.ended = call, log, False
        self.it: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.call, name)

    def __iter__(self) -> _EndSpy:
        return self

    def __next__(self) -> Any:
        try:
            return next(self.call)
        except StopIteration:
            self.ended = True
            raise

    def __aiter__(self) -> _EndSpy:
        if self.it is None:
            self.it = self.call.__aiter__()
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.it.__anext__()
        except StopAsyncIteration:
            self.ended = True
            raise

    def cancel(self) -> bool:
        self.log.append(self.ended)
        return bool(self.call.cancel())


class _StreamSpy:
    """Wraps a stub: its StreamObservations calls are :class:`_EndSpy` ones."""

    def __init__(self, stub: Any) -> None:
        self.stub = stub
        self.ended_at_cancel: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stub, name)

    def StreamObservations(self, req: Any, **kw: Any) -> Any:
        return _EndSpy(self.stub.StreamObservations(req, **kw), self.ended_at_cancel)


def test_stream_is_read_to_its_end(client: TrucoClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a stream shows the match is over the SDK reads it until the server ends it, and
    does not cancel it under the server (a grpc.aio server then leaks the batch it was
    completing: docs/operations.md, "Memory")."""
    m = client.create_match("argentine")
    client.cancel_match(m.match_id)
    spy = _StreamSpy(client._channels.stub())
    monkeypatch.setattr(client._channels, "stub", lambda: spy)
    updates = list(client.with_token(m.seat_tokens[0]).stream(m.match_id))
    assert updates[-1].observation.is_over
    assert spy.ended_at_cancel == [True]


async def test_async_stream_is_read_to_its_end(
    server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with AsyncTrucoClient(server.address, timeout=5.0) as ac:
        m = await ac.create_match("argentine")
        await ac.cancel_match(m.match_id)
        spy = _StreamSpy(ac._channels.stub())
        monkeypatch.setattr(ac._channels, "stub", lambda: spy)
        updates = [u async for u in ac.with_token(m.seat_tokens[0]).stream(m.match_id)]
        assert updates[-1].observation.is_over
        assert spy.ended_at_cancel == [True]


async def test_async_client_plays_a_match(server: EmbeddedServer) -> None:
    async with AsyncTrucoClient(server.address, timeout=5.0) as ac:
        m = await ac.create_match("argentine")
        seats = [ac.with_token(t) for t in m.seat_tokens]
        rng = random.Random(3)
        versions: list[int] = []
        async for upd in seats[0].stream(m.match_id):
            versions.extend(e.version for e in upd.events)
            obs = upd.observation
            if obs.is_over:
                break
            seat = obs.whose_turn
            if seat is None:
                continue
            mine = (await seats[seat].get_match(m.match_id)).observation
            assert mine is not None
            if mine.version != obs.version:
                continue
            await seats[seat].submit_action(
                m.match_id, rng.choice(mine.legal_actions), expected_version=obs.version
            )
        assert versions == list(range(1, versions[-1] + 1))
        page, _ = await ac.list_matches()
        assert any(x.match_id == m.match_id for x in page)
