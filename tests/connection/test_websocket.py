"""The player connection over WebSocket (``GET /v1/connect`` on the REST port) against real
workers on a real Redis: the gRPC connection's guarantees in both subprotocols (binary
protobuf frames, text JSON frames), what is refused before the upgrade, how a connection
ends (close codes), the heartbeats, the quotas, a slow reader's bounded queue and the drain."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from google.protobuf import json_format

from tests.connection.test_connection import _create, _details
from tests.connection.ws import JSON, PROTO, RawWs, ws_url
from tests.e2e.conftest import WorkerFactory
from truco_client import AsyncTrucoClient
from truco_contract.pb import match_service_pb2
from truco_server.api import connection
from truco_server.transports.grpc.server import Worker

pb = match_service_pb2
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]
INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT.value[0]


@pytest_asyncio.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


async def _first_updates(raw: RawWs, sids: tuple[int, ...]) -> dict[int, Any]:
    got = {}
    while len(got) < len(sids):
        msg = await raw.next("update")
        got[msg.update.subscription_id] = msg.update.message.update
    return got


@pytest.mark.parametrize("protocol", [PROTO, JSON])
async def test_typed_errors_per_action_and_the_connection_goes_on(
    worker: Worker, http: aiohttp.ClientSession, protocol: str
) -> None:
    mid, tokens = await _create(worker)
    raw = await RawWs.open(http, worker, protocol)
    assert raw.ws.protocol == protocol
    await raw.subscribe(1, tokens[0], mid)
    await raw.subscribe(2, tokens[1], mid)
    first = await _first_updates(raw, (1, 2))
    version = first[1].version
    turn = first[1].observation.awaited[0]
    sid, other = (1, 2) if turn == 0 else (2, 1)
    legal = list(first[sid].observation.legal_actions)

    # not your turn: FAILED_PRECONDITION with the reason, as a message
    await raw.act(
        other, 10, pb.SubmitActionRequest(request_id="x1", expected_version=version, action=legal[0])
    )
    err = (await raw.next("error")).error
    assert (err.subscription_id, err.action_id) == (other, 10)
    assert err.status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert _details(err.status)[0] == "NOT_YOUR_TURN"

    # a stale expected_version: ABORTED STALE_VERSION with the current version
    await raw.act(
        sid, 11, pb.SubmitActionRequest(request_id="x2", expected_version=version + 5, action=legal[0])
    )
    err = (await raw.next("error")).error
    reason, ill = _details(err.status)
    assert err.status.code == grpc.StatusCode.ABORTED.value[0] and reason == "STALE_VERSION"
    assert ill is not None and ill.current_version == version

    # an unknown subscription: INVALID_ARGUMENT, nothing applied
    await raw.act(99, 12, pb.SubmitActionRequest(request_id="x3", action=legal[0]))
    err = (await raw.next("error")).error
    assert err.status.code == INVALID_ARGUMENT and err.subscription_id == 99

    # a legal action, then its retry returns the first result (applied once)
    req = pb.SubmitActionRequest(request_id="ok-1", expected_version=version, action=legal[0])
    await raw.act(sid, 13, req)
    res = (await raw.next("result")).result
    assert res.action_id == 13 and res.response.version > version
    await raw.act(sid, 14, req)
    again = (await raw.next("result")).result
    assert again.action_id == 14 and again.response.version == res.response.version
    assert list(again.response.events) == list(res.response.events)

    # a bad credential ends only its subscription
    await raw.subscribe(3, tokens[0][:-4] + "0000", mid)
    ended = (await raw.next("ended")).ended
    assert ended.subscription_id == 3 and ended.status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    # the other seat gets the update of the applied action; the actor's result stood for its own
    upd = (await raw.next("update")).update
    while upd.message.update.version != res.response.version:
        upd = (await raw.next("update")).update
    assert upd.subscription_id == other

    # a duplicate subscription id is a protocol error: the socket closes 4003 with the reason
    await raw.subscribe(1, tokens[0], mid)
    rest: list[pb.ConnectResponse] = []
    with pytest.raises(ConnectionError):
        while True:
            rest.append(await raw.next())
    assert raw.ws.close_code == 4000 + INVALID_ARGUMENT
    assert not [
        m
        for m in rest
        if m.WhichOneof("message") == "update"
        and m.update.subscription_id == sid
        and m.update.message.update.version <= res.response.version
    ]


async def test_json_frames_are_the_proto_json_mapping_and_errors_the_rest_body(
    worker: Worker, http: aiohttp.ClientSession
) -> None:
    """A JSON client writes and reads plain objects (lowerCamelCase, 64-bit integers as
    strings or numbers), and a refused action carries the very ``google.rpc.Status`` object
    REST answers for the same refusal."""
    mid, tokens = await _create(worker)
    base = f"http://127.0.0.1:{worker.http_port}"
    async with http.ws_connect(ws_url(worker), protocols=(JSON,)) as ws:
        await ws.send_json({"subscribe": {"subscriptionId": "5", "token": tokens[0], "matchId": mid}})
        first = await ws.receive_json(timeout=10)
        obs = first["update"]["message"]["update"]["observation"]
        assert first["update"]["subscriptionId"] == "5" and obs["seat"] == 0
        mover = obs["awaited"][0]
        if mover == 0:
            await ws.send_json({"subscribe": {"subscriptionId": 6, "token": tokens[1], "matchId": mid}})
            upd = await ws.receive_json(timeout=10)
            while upd.get("update", {}).get("subscriptionId") != "6":
                upd = await ws.receive_json(timeout=10)
            waiting, sid = upd["update"]["message"]["update"]["observation"], 6
            token = tokens[1]
        else:
            waiting, sid, token = obs, 5, tokens[0]
        card = waiting["hand"][0]  # not this seat's turn: refused the same way by both
        action = {
            "requestId": "json-1",
            "expectedVersion": waiting["version"],
            "action": {"playCard": {"card": card}},
        }
        async with http.post(
            f"{base}/v1/matches/{mid}/actions", json=action, headers={"Authorization": f"Bearer {token}"}
        ) as resp:
            rest_status = await resp.json()
            assert resp.status == 400
        await ws.send_json({"action": {"subscriptionId": sid, "actionId": 7, "request": action}})
        msg = await ws.receive_json(timeout=10)
        while "error" not in msg:
            msg = await ws.receive_json(timeout=10)
        assert msg["error"]["subscriptionId"] == str(sid) and msg["error"]["actionId"] == "7"
        assert msg["error"]["status"] == rest_status
        assert rest_status["code"] == grpc.StatusCode.FAILED_PRECONDITION.value[0]


async def test_resume_from_a_version_heartbeats_and_unsubscribe(
    make_worker: WorkerFactory, http: aiohttp.ClientSession
) -> None:
    async with make_worker(heartbeat_interval_seconds=0.3) as worker:
        mid, tokens = await _create(worker)
        raw = await RawWs.open(http, worker, JSON)
        await raw.subscribe(1, tokens[0], mid)
        await raw.subscribe(2, tokens[1], mid)
        ups = await _first_updates(raw, (1, 2))
        last = 0
        for n in range(6):
            mover = ups[1].observation.awaited[0]
            sid = mover + 1
            req = pb.SubmitActionRequest(
                request_id=f"r{n}",
                expected_version=ups[sid].version,
                action=ups[sid].observation.legal_actions[0],
            )
            await raw.act(sid, n, req)
            res = (await raw.next("result")).result.response
            last = res.version
            ups[sid] = res  # the result stands for the actor's update
            other = 3 - sid
            while True:
                upd = (await raw.next("update")).update
                if upd.subscription_id == other and upd.message.update.version == last:
                    ups[other] = upd.message.update
                    break
        await raw.ws.close()

        resumed = await RawWs.open(http, worker, PROTO)
        await resumed.subscribe(7, tokens[0], mid, from_version=2)
        upd = (await resumed.next("update")).update
        assert not upd.message.update.snapshot
        assert [e.version for e in upd.message.update.events] == list(range(3, last + 1))
        beat = await resumed.next("update", skip_heartbeats=False)
        while beat.update.message.WhichOneof("message") != "heartbeat":
            beat = await resumed.next("update", skip_heartbeats=False)
        assert beat.update.subscription_id == 7 and beat.update.message.heartbeat.version == last
        await resumed.send(pb.ConnectRequest(unsubscribe=pb.ConnectUnsubscribe(subscription_id=7)))
        ended = (await resumed.next("ended")).ended
        assert ended.subscription_id == 7 and ended.status.code == 0
        await resumed.ws.close()
        assert resumed.ws.close_code == 1000


async def test_refused_before_the_upgrade(worker: Worker, http: aiohttp.ClientSession) -> None:
    mid, tokens = await _create(worker)
    url = ws_url(worker)
    # a credential in the URL (it would end up in logs and histories): 400 with the JSON Status
    for query in (f"?access_token={tokens[0]}", "?api_key=k-acme", "?token=x"):
        with pytest.raises(aiohttp.WSServerHandshakeError) as info:
            await http.ws_connect(url + query, protocols=(PROTO,))
        assert info.value.status == 400
    async with http.get(url + "?access_token=abc", headers={"Upgrade": "websocket"}) as resp:
        body = await resp.json()
        assert resp.status == 400 and "URL" in body["message"] and body["code"] == INVALID_ARGUMENT
    # only unknown subprotocols offered
    with pytest.raises(aiohttp.WSServerHandshakeError) as info:
        await http.ws_connect(url, protocols=("graphql-ws",))
    assert info.value.status == 400
    # not an upgrade at all
    async with http.get(url) as resp:
        assert resp.status == 400 and "WebSocket" in (await resp.json())["message"]
    # no subprotocol named: JSON frames
    async with http.ws_connect(url) as ws:
        assert ws.protocol is None
        await ws.send_str(
            json.dumps({"subscribe": {"subscriptionId": 1, "token": tokens[0], "matchId": mid}})
        )
        first = await ws.receive_json(timeout=10)
        assert first["update"]["message"]["update"]["observation"]["seat"] == 0


@pytest.mark.parametrize(
    ("protocol", "frame", "why"),
    [
        (PROTO, "text", "a text frame on a binary-frame subprotocol"),
        (JSON, b"\x0a\x02", "a binary frame on a text-frame subprotocol"),
        (PROTO, b"\xff\xff\xff", "not a valid protobuf message"),
        (JSON, "{not json", "not valid JSON"),
        (JSON, "[1, 2]", "must be a JSON object"),
        (JSON, '{"subscribe": {"tokn": "x"}}', "tokn"),
        (JSON, '{"subscribe": {"matchId": "' + "m" * 300 + '"}}', "at most 128 characters"),
        (JSON, "{}", "must set subscribe, action, unsubscribe or subscribe_ticket"),
    ],
)
async def test_a_malformed_frame_closes_the_connection_invalid_argument(
    worker: Worker, http: aiohttp.ClientSession, protocol: str, frame: str | bytes, why: str
) -> None:
    raw = await RawWs.open(http, worker, protocol)
    if isinstance(frame, bytes):
        await raw.ws.send_bytes(frame)
    else:
        await raw.ws.send_str(frame)
    code, reason = await raw.closed()
    assert code == 4000 + INVALID_ARGUMENT, (code, reason)
    assert reason.startswith("INVALID_REQUEST: ") and why in reason, reason
    assert len(reason.encode()) <= 123


async def test_an_oversized_frame_closes_the_connection(worker: Worker, http: aiohttp.ClientSession) -> None:
    raw = await RawWs.open(http, worker, PROTO)
    await raw.ws.send_bytes(b"\x00" * (256 * 1024 + 1))
    code, _ = await raw.closed()
    assert code == 1009  # "message too big"


async def test_quotas_per_credential(make_worker: WorkerFactory, http: aiohttp.ClientSession) -> None:
    async with make_worker(quota_actions_per_second=2, quota_streams=1) as worker:
        mid, tokens = await _create(worker)
        raw = await RawWs.open(http, worker, PROTO)
        await raw.subscribe(1, tokens[0], mid)
        await raw.subscribe(2, tokens[0], mid)  # the same credential's second stream
        ended = (await raw.next("ended")).ended
        assert ended.subscription_id == 2
        assert ended.status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
        assert _details(ended.status)[0] == "QUOTA_EXCEEDED"
        # actions (all stale): a burst of 2, then RESOURCE_EXHAUSTED with the quota named
        codes = []
        for aid in range(4):
            stale = pb.SubmitActionRequest(request_id=f"q{aid}", expected_version=10_000, action={"fold": {}})
            await raw.act(1, aid, stale)
            msg = await raw.next("error")
            codes.append((msg.error.status.code, _details(msg.error.status)[0]))
        exhausted = grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
        assert codes[-1] == (exhausted, "QUOTA_EXCEEDED"), codes
        assert sum(c == exhausted for c, _ in codes) >= 2, codes


async def test_a_peer_that_stops_answering_pings_is_closed(
    make_worker: WorkerFactory, http: aiohttp.ClientSession
) -> None:
    async with make_worker(heartbeat_interval_seconds=0.3) as worker:
        mid, tokens = await _create(worker)
        # the client does not answer pings (autoping off) and reads nothing but what comes
        raw = await RawWs.open(http, worker, PROTO, autoping=False)
        await raw.subscribe(1, tokens[0], mid)
        pings = 0
        while True:
            msg = await asyncio.wait_for(raw.ws.receive(), 10)
            if msg.type == aiohttp.WSMsgType.PING:
                pings += 1
            elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                break
        assert pings >= 1
        # and one that answers stays: three heartbeat intervals, still open, heartbeats flowing
        live = await RawWs.open(http, worker, PROTO)
        await live.subscribe(1, tokens[0], mid)
        beats = 0
        while beats < 4:
            msg = await live.next("update", skip_heartbeats=False)
            beats += msg.update.message.HasField("heartbeat")
        assert not live.ws.closed


async def test_a_slow_reader_is_bounded_and_catches_up_with_a_snapshot(
    make_worker: WorkerFactory, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client whose socket takes nothing: the server holds at most the connection's queue
    and each subscription's store queue for it (here 4 and 2), not every update; once it
    reads again it catches up to the latest version with nothing lost (the events it missed
    read again from the store, or a snapshot)."""
    monkeypatch.setattr(connection, "OUT_QUEUE", 4)
    sent = 0
    gate = asyncio.Event()
    real = aiohttp.web.WebSocketResponse.send_frame

    async def full_socket(self: Any, message: bytes, opcode: Any, compress: Any = None) -> None:
        nonlocal sent
        if sent >= 1:  # after the first frame, the socket is "full" until the gate opens
            await gate.wait()
        sent += 1
        await real(self, message, opcode, compress)

    monkeypatch.setattr(aiohttp.web.WebSocketResponse, "send_frame", full_socket)
    async with make_worker(subscriber_queue_size=2) as worker:
        mid, tokens = await _create(worker)
        raw = await RawWs.open(http, worker, PROTO)
        await raw.subscribe(1, tokens[0], mid)
        first = (await raw.next("update")).update.message.update
        # the other seats' client moves the match on over gRPC while this socket takes nothing
        async with AsyncTrucoClient(worker.grpc_address) as client:
            version, moved = first.version, 0
            while moved < 30:
                views = [await client.get_match(mid, token=t) for t in tokens]
                obs = views[0].observation
                if obs.is_over:
                    break
                mover = obs.awaited[0]
                mine = views[mover].observation
                res = await client.submit_action(
                    mid, mine.legal_actions[0], token=tokens[mover], expected_version=mine.version
                )
                version, moved = res.version, moved + 1
        await asyncio.sleep(0.2)
        held = sent
        gate.set()
        got: list[pb.ObservationUpdate] = []
        while not got or got[-1].version < version:
            msg = await raw.next("update")
            got.append(msg.update.message.update)
        # what waited for the socket was bounded: far fewer frames than versions moved
        assert held <= 2
        assert len(got) <= 4 + 2 + 2, [(u.version, u.snapshot) for u in got]
        assert got[-1].version == version and moved >= 20
        # and nothing was lost: each update continues the last (the events it missed were
        # read again from the store) or is a snapshot
        last = first.version
        for u in got:
            assert u.snapshot or [e.version for e in u.events] == list(range(last + 1, u.version + 1))
            last = u.version


async def test_graceful_shutdown_closes_4014_shutting_down(
    make_worker: WorkerFactory, http: aiohttp.ClientSession
) -> None:
    async with make_worker() as leaving:
        mid, tokens = await _create(leaving)
        raw = await RawWs.open(http, leaving, JSON)
        await raw.subscribe(1, tokens[0], mid)
        await raw.next("update")
        stopping = asyncio.ensure_future(leaving.stop())
        code, reason = await raw.closed()
        assert code == 4000 + grpc.StatusCode.UNAVAILABLE.value[0]
        assert reason.startswith("SHUTTING_DOWN: "), reason
        await stopping


async def test_close_reason_is_cut_to_123_bytes_of_utf8() -> None:
    from google.rpc import status_pb2

    from truco_server.transports.websocket import close_code, close_reason

    status = status_pb2.Status(code=3, message="ñ" * 200)
    reason = close_reason(status)
    assert len(reason) <= 123 and reason.decode() == "ñ" * len(reason.decode())
    assert close_code(status) == 4003
    assert json_format.MessageToDict(status)["code"] == 3
