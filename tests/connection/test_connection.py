"""The player connection (``MatchService.Connect``) against real workers on a real Redis: the
same guarantees as the unary path (request ids, expected versions, typed errors, resume,
heartbeats), many seats on one connection, and the SDK's bot runner over it. The SDK's tests
run over both transports: gRPC and the WebSocket (``ws://``, the worker's HTTP port)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2

from tests.e2e.conftest import WorkerFactory, serve_log, serve_process
from tests.helpers.serve import listening
from truco_bots.random_bot import RandomBot
from truco_client import AsyncTrucoClient
from truco_client.connection import PlayerConnection
from truco_client.errors import IllegalAction, StaleVersion
from truco_client.runner import play_seat
from truco_contract.pb import error_details_pb2 as truco_error_details_pb2
from truco_contract.pb import match_service_pb2, match_service_pb2_grpc
from truco_server.transports.grpc.server import Worker

pb = match_service_pb2
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]
TRANSPORTS = ("grpc", "websocket")


def target(worker: Worker, transport: str) -> str:
    """The worker's address for the SDK's player connection over ``transport``."""
    return worker.grpc_address if transport == "grpc" else f"ws://127.0.0.1:{worker.http_port}"


class Raw:
    """The Connect stream at the wire level: send requests, read responses."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = match_service_pb2_grpc.MatchServiceStub(channel)
        self.box: asyncio.Queue[pb.ConnectRequest | None] = asyncio.Queue()
        self.call: Any = self.stub.Connect(self._requests())  # type: ignore[arg-type]
        self.backlog: list[pb.ConnectResponse] = []

    async def _requests(self) -> AsyncIterator[pb.ConnectRequest]:
        while (msg := await self.box.get()) is not None:
            yield msg

    def subscribe(self, sid: int, token: str, match_id: str, from_version: int | None = None) -> None:
        sub = pb.ConnectSubscribe(subscription_id=sid, token=token, match_id=match_id)
        if from_version is not None:
            sub.from_version = from_version
        self.box.put_nowait(pb.ConnectRequest(subscribe=sub))

    def act(self, sid: int, aid: int, request: pb.SubmitActionRequest) -> None:
        action = pb.ConnectAction(subscription_id=sid, action_id=aid, request=request)
        self.box.put_nowait(pb.ConnectRequest(action=action))

    async def next(self, kind: str | None = None, *, skip_heartbeats: bool = True) -> pb.ConnectResponse:
        """The next message of ``kind``; messages of other kinds wait in a backlog."""
        for i, msg in enumerate(self.backlog):
            if kind is None or msg.WhichOneof("message") == kind:
                return self.backlog.pop(i)
        while True:
            msg = await asyncio.wait_for(self.call.read(), 10)
            if (
                skip_heartbeats
                and msg.WhichOneof("message") == "update"
                and msg.update.message.HasField("heartbeat")
            ):
                continue
            if kind is None or msg.WhichOneof("message") == kind:
                return msg
            self.backlog.append(msg)


async def _create(worker: Worker, players: int = 2, preset: str = "paulista") -> tuple[str, list[str]]:
    async with AsyncTrucoClient(worker.grpc_address) as client:
        m = await client.create_match(preset, players=players)
        return m.match_id, list(m.seat_tokens)


def _details(status: Any) -> tuple[str, truco_error_details_pb2.IllegalActionDetail | None]:
    reason, ill = "", None
    for d in status.details:
        if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            d.Unpack(info)
            reason = info.reason
        elif d.Is(truco_error_details_pb2.IllegalActionDetail.DESCRIPTOR):
            ill = truco_error_details_pb2.IllegalActionDetail()
            d.Unpack(ill)
    return reason, ill


async def test_typed_errors_are_messages_and_the_connection_goes_on(worker: Worker) -> None:
    mid, tokens = await _create(worker)
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        raw = Raw(ch)
        raw.subscribe(1, tokens[0], mid, from_version=None)
        raw.subscribe(2, tokens[1], mid, from_version=None)
        first = {}
        for _ in range(2):
            msg = await raw.next("update")
            first[msg.update.subscription_id] = msg.update.message.update
        assert first[1].snapshot and first[2].snapshot
        version = first[1].version
        turn = first[1].observation.awaited[0]
        sid, other = (1, 2) if turn == 0 else (2, 1)
        legal = list(first[sid].observation.legal_actions)

        # not your turn: FAILED_PRECONDITION with the reason, as a message
        raw.act(other, 10, pb.SubmitActionRequest(request_id="x1", expected_version=version, action=legal[0]))
        err = (await raw.next("error")).error
        assert (err.subscription_id, err.action_id) == (other, 10)
        assert err.status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
        assert _details(err.status)[0] == "NOT_YOUR_TURN"

        # a stale expected_version: ABORTED STALE_VERSION with the current version
        raw.act(
            sid, 11, pb.SubmitActionRequest(request_id="x2", expected_version=version + 5, action=legal[0])
        )
        err = (await raw.next("error")).error
        reason, ill = _details(err.status)
        assert err.status.code == grpc.StatusCode.ABORTED.value[0] and reason == "STALE_VERSION"
        assert ill is not None and ill.current_version == version

        # an unknown subscription: INVALID_ARGUMENT, nothing applied
        raw.act(99, 12, pb.SubmitActionRequest(request_id="x3", action=legal[0]))
        err = (await raw.next("error")).error
        assert err.status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0] and err.subscription_id == 99

        # the connection still works: a legal action, then its retry returns the first result
        req = pb.SubmitActionRequest(request_id="ok-1", expected_version=version, action=legal[0])
        raw.act(sid, 13, req)
        res = (await raw.next("result")).result
        assert res.action_id == 13 and res.response.version > version
        raw.act(sid, 14, req)
        again = (await raw.next("result")).result
        assert again.action_id == 14 and again.response.version == res.response.version
        assert list(again.response.events) == list(res.response.events)

        # a bad credential ends only its subscription, with the status StreamObservations ends with
        raw.subscribe(3, tokens[0][:-4] + "0000", mid)
        ended = (await raw.next("ended")).ended
        assert ended.subscription_id == 3 and ended.status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
        raw.subscribe(4, tokens[0], "no-such-match")
        ended = (await raw.next("ended")).ended
        assert ended.subscription_id == 4 and ended.status.code != 0
        # the other seat gets the update of the applied action; for the actor the result
        # continued what its subscription delivered, so it stood for the update
        upd = (await raw.next("update")).update
        while upd.message.update.version != res.response.version:
            upd = (await raw.next("update")).update
        assert upd.subscription_id == other
        assert res.response.events[0].version == version + 1
        assert res.response.observation.version == res.response.version
        # a duplicate subscription id is a protocol error: the connection ends INVALID_ARGUMENT
        raw.subscribe(1, tokens[0], mid)
        rest: list[pb.ConnectResponse] = []
        with pytest.raises(grpc.aio.AioRpcError) as info:
            while True:
                rest.append(await raw.next())
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        # nothing else came for the actor at the result's version (nor anything earlier)
        assert not [
            m
            for m in rest
            if m.WhichOneof("message") == "update"
            and m.update.subscription_id == sid
            and m.update.message.update.version <= res.response.version
        ]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_resume_heartbeats_and_unsubscribe(make_worker: WorkerFactory, transport: str) -> None:
    async with make_worker(heartbeat_interval_seconds=0.3) as worker:
        mid, tokens = await _create(worker)
        async with PlayerConnection(target(worker, transport)) as conn:
            seats = [await conn.seat(mid, t) for t in tokens]
            # play six actions over the connection
            versions: list[int] = []
            its = [s.__aiter__() for s in seats]
            ups = [await it.__anext__() for it in its]
            for _ in range(6):
                obs = ups[0].observation
                mover = obs.awaited[0]
                res = await seats[mover].submit(
                    ups[mover].observation.legal_actions[0], expected_version=ups[mover].version
                )
                versions.append(res.version)
                ups = [await it.__anext__() for it in its]
                assert all(u.version == res.version for u in ups)
            mover = ups[0].observation.awaited[0]
            with pytest.raises(StaleVersion):
                await seats[mover].submit(ups[mover].observation.legal_actions[0], expected_version=1)
            with pytest.raises(IllegalAction) as refused:
                await seats[1 - mover].submit(ups[mover].observation.legal_actions[0])
            assert refused.value.reason == "NOT_YOUR_TURN"
        # resume from version 2 on a new connection: every later event once, in order
        async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
            raw = Raw(ch)
            raw.subscribe(7, tokens[0], mid, from_version=2)
            upd = (await raw.next("update")).update
            assert not upd.message.update.snapshot
            assert [e.version for e in upd.message.update.events] == list(range(3, versions[-1] + 1))
            # heartbeats of the subscription, with its version
            beat = await raw.next("update", skip_heartbeats=False)
            while beat.update.message.WhichOneof("message") != "heartbeat":
                beat = await raw.next("update", skip_heartbeats=False)
            assert beat.update.subscription_id == 7 and beat.update.message.heartbeat.version == versions[-1]
            raw.box.put_nowait(pb.ConnectRequest(unsubscribe=pb.ConnectUnsubscribe(subscription_id=7)))
            ended = (await raw.next("ended")).ended
            assert ended.subscription_id == 7 and ended.status.code == 0
            raw.box.put_nowait(None)  # half-close: nothing open, the server ends the call OK
            assert await asyncio.wait_for(raw.call.read(), 5) is grpc.aio.EOF
            assert await raw.call.code() == grpc.StatusCode.OK


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_many_seats_of_many_matches_on_one_connection(worker: Worker, transport: str) -> None:
    games = [await _create(worker, preset="argentine") for _ in range(12)]
    async with PlayerConnection(target(worker, transport)) as conn:
        finals = await asyncio.gather(
            *(
                play_seat(conn, RandomBot(seed=i * 10 + s), mid, tok, log=lambda _m: None)
                for i, (mid, tokens) in enumerate(games)
                for s, tok in enumerate(tokens)
            )
        )
        assert conn.reconnects == 0
    assert all(f.is_over for f in finals)
    async with AsyncTrucoClient(worker.grpc_address) as client:
        for i, (mid, tokens) in enumerate(games):
            view = await client.get_match(mid, token=tokens[0])
            assert view.match.state.value == "finished"
            # both seats ended at the match's last version
            assert finals[2 * i].version == finals[2 * i + 1].version == view.observation.version


async def test_connection_limits(worker: Worker, monkeypatch: pytest.MonkeyPatch) -> None:
    from truco_server.api import connection

    monkeypatch.setattr(connection, "MAX_SUBSCRIPTIONS", 2)
    mid, tokens = await _create(worker)
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        raw = Raw(ch)
        for sid in (1, 2, 3):
            raw.subscribe(sid, tokens[sid % 2], mid)
        ended = (await raw.next("ended")).ended
        assert ended.subscription_id == 3
        assert ended.status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]


async def _play(conn: PlayerConnection, mid: str, tokens: list[str], on_action: Any) -> list[list[int]]:
    """Both seats play random legal actions over ``conn`` until the match ends; returns each
    seat's delivered event versions. ``on_action(n)`` runs after the n-th applied action."""
    rng = random.Random(3)
    seen: list[list[int]] = [[] for _ in tokens]
    count = 0

    async def seat_loop(s: int) -> None:
        nonlocal count
        seat = await conn.seat(mid, tokens[s])
        async for upd in seat:
            seen[s] += [e.version for e in upd.events]
            obs = upd.observation
            if obs.is_over or not obs.is_my_turn:
                continue
            try:
                await seat.submit(
                    rng.choice(obs.legal_actions),
                    request_id=f"{s}:{upd.version}",
                    expected_version=upd.version,
                )
            except StaleVersion:
                continue
            count += 1
            await on_action(count)

    await asyncio.wait_for(asyncio.gather(*(seat_loop(s) for s in range(len(tokens)))), 40)
    return seen


async def _stored_version(worker: Worker, mid: str, token: str) -> int:
    async with AsyncTrucoClient(worker.grpc_address) as client:
        view = await client.get_match(mid, token=token)
        assert view.match.state.value == "finished"
        return view.observation.version


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_worker_sigkill_mid_stream_the_connection_resumes_on_another(
    clean_redis_url: str, tmp_path: Path, worker: Worker, transport: str
) -> None:
    with serve_process(clean_redis_url, tmp_path) as (proc, address):
        if transport == "websocket":
            found = listening(serve_log(tmp_path))
            assert found is not None
            address = "ws://" + found[1].removeprefix("http://")
        await _killed_mid_stream(proc, address, worker, transport)


async def _killed_mid_stream(
    proc: subprocess.Popen[bytes], address: str, worker: Worker, transport: str
) -> None:
    mid, tokens = await _create(worker, preset="argentine")
    killed = False

    async def kill_at(n: int) -> None:
        nonlocal killed
        if n == 5 and not killed:
            killed = True
            os.kill(proc.pid, signal.SIGKILL)

    async with PlayerConnection([address, target(worker, transport)], heartbeat_timeout=5) as conn:
        seen = await _play(conn, mid, tokens, kill_at)
        assert killed and conn.reconnects >= 1
    last = await _stored_version(worker, mid, tokens[0])
    # every version delivered to each seat exactly once, in order, across the cut
    for versions in seen:
        assert versions == list(range(1, last + 1))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_graceful_shutdown_ends_the_connection_unavailable_and_it_resumes(
    make_worker: WorkerFactory, transport: str
) -> None:
    async with make_worker() as stays:
        leaving = await make_worker().__aenter__()
        mid, tokens = await _create(stays, preset="argentine")
        stopped: asyncio.Task[None] | None = None

        async def stop_at(n: int) -> None:
            nonlocal stopped
            if n == 4 and stopped is None:
                stopped = asyncio.ensure_future(leaving.stop())

        try:
            async with PlayerConnection([target(leaving, transport), target(stays, transport)]) as conn:
                seen = await _play(conn, mid, tokens, stop_at)
                assert stopped is not None and conn.reconnects >= 1
        finally:
            await leaving.stop()
        last = await _stored_version(stays, mid, tokens[0])
        for versions in seen:
            assert versions == list(range(1, last + 1))
