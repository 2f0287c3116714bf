"""A server that speaks the match service's protocol and does no work: the floor of a transport.

It answers ``CreateMatch``, ``SubmitAction`` and ``StreamObservations`` over gRPC, the same
three routes over REST/JSON (NDJSON streams), and the player connection over WebSocket
(``GET /v1/connect``, binary protobuf frames: subscribe, act), with canned messages of a real
match's sizes: no game, no storage, no credentials, no encoding per message (each message is
built once, at start; a WebSocket frame encodes only its subscription id and prepends it). Every action
answers its caller and sends one update to each seat's stream, the next seat's showing its
turn, as the real service does (on the player connection the actor's result stands for its
update: one frame to the actor, one to every other seat); a "match" ends after
:data:`ACTIONS_PER_MATCH` actions, so matches are created at the real rate too. The same bots
that drive a real worker (``truco bench service``'s) drive it unchanged, so its CPU per action
is what the transport alone costs for the same calls and messages: the floor under the
service's own work.

    python -m truco_tools.floor_server --grpc-port 50061 --http-port 8091
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
from collections.abc import AsyncIterator
from typing import Any

import grpc
from aiohttp import web

import truco_engine as te
from truco_contract import codec
from truco_contract.json_mapping import message_to_dict
from truco_contract.pb import match_pb2, match_service_pb2, observation_pb2
from truco_match.events import EventView

MS = match_service_pb2
HOST = "127.0.0.1"
ACTIONS_PER_MATCH = 60
"""Actions of a canned match: about a two-player paulista match's."""
PLAYERS = 2


def _observation(version: int, seat: int, awaited: int, over: bool) -> observation_pb2.Observation:
    """An observation of a real match's size (a hand of three, a trick, a few legal actions)."""
    obs = observation_pb2.Observation(
        version=version,
        match_state=match_pb2.MATCH_STATE_FINISHED if over else match_pb2.MATCH_STATE_ACTIVE,
        seat=seat,
        phase=observation_pb2.PHASE_PLAY,
        game_number=1,
        hand_number=3,
        dealer=1,
        mano=0,
        turn_up="5C",
        hand=["3E", "7O", "1B"],
        hand_sizes=[3, 2],
        seat_teams=[0, 1],
        scores=[4, 6],
        games_won=[0, 0],
        hand_value=1,
        awaited=[] if over else [awaited],
        decision=version,
    )
    obs.tricks.add(leader=1).plays.add(seat=1, card="4C")
    if not over and seat == awaited:
        for card in obs.hand:
            obs.legal_actions.add().play_card.card = card
        obs.legal_actions.add().call_truco.SetInParent()
    obs.rules.preset, obs.rules.players, obs.rules.target_points = "paulista", PLAYERS, 12
    return obs


class Canned:
    """Every message a canned match sends, built once: by version and seat."""

    def __init__(self) -> None:
        played = te.CardPlayed(seat=0, card="4C", face_down=False, trick_index=0)
        self.updates: dict[tuple[int, int], MS.StreamObservationsResponse] = {}
        self.replies: dict[tuple[int, int], MS.SubmitActionResponse] = {}
        for version in range(1, ACTIONS_PER_MATCH + 2):
            over = version > ACTIONS_PER_MATCH
            for seat in range(PLAYERS):
                obs = _observation(version, seat, version % PLAYERS, over)
                ev = codec.event_to_proto(EventView(version, played, 0.0))
                self.updates[version, seat] = MS.StreamObservationsResponse(
                    update=MS.ObservationUpdate(version=version, events=[ev], observation=obs)
                )
                self.replies[version, seat] = MS.SubmitActionResponse(
                    version=version, events=[ev], observation=obs
                )
        self.ws_updates = {k: _wrap(1, 2, v.SerializeToString()) for k, v in self.updates.items()}
        self.ws_replies = {k: _wrap(2, 3, v.SerializeToString()) for k, v in self.replies.items()}
        self.json_updates = {
            k: json.dumps(message_to_dict(v)).encode() + b"\n" for k, v in self.updates.items()
        }
        self.json_replies = {k: json.dumps(message_to_dict(v)).encode() for k, v in self.replies.items()}


def _wrap(outer: int, inner: int, body: bytes) -> bytes:
    """``body`` as field ``inner`` of the message in field ``outer`` of a ``ConnectResponse``
    (serialized protobuf messages concatenated merge: a frame is an id's prefix + this)."""
    field = _key(inner, 2) + _varint(len(body)) + body
    return _key(outer, 2) + _varint(len(field)) + field


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _ids(outer: int, *numbered: tuple[int, int]) -> bytes:
    """The ``ConnectResponse`` whose field ``outer`` holds the given (field, varint) pairs."""
    inner = b"".join(_key(number, 0) + _varint(value) for number, value in numbered)
    return _key(outer, 2) + _varint(len(inner)) + inner


class Matches:
    """The canned matches in play: each seat's stream queue and the version."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.queues: dict[str, list[asyncio.Queue[tuple[int, int]]]] = {}
        self.versions: dict[str, int] = {}

    def create(self) -> str:
        match_id = f"f{next(self.ids)}"
        self.queues[match_id] = [asyncio.Queue() for _ in range(PLAYERS)]
        self.versions[match_id] = 1
        return match_id

    def act(self, match_id: str, actor: int = -1) -> int:
        """The version the action of seat ``actor`` makes; every seat's stream gets it."""
        version = self.versions[match_id] = self.versions[match_id] + 1
        for queue in self.queues[match_id]:
            queue.put_nowait((version, actor))
        return version

    def created_response(self, match_id: str) -> MS.CreateMatchResponse:
        resp = MS.CreateMatchResponse(match=match_pb2.Match(match_id=match_id))
        for seat in range(PLAYERS):
            resp.seat_credentials.add(seat=seat, token=f"tc1.{match_id}.{seat}.x")
        return resp


def _seat_of(token: str) -> int:
    return int(token.rsplit(".", 2)[-2]) if token.count(".") >= 3 else 0


async def serve_grpc(port: int, canned: Canned, matches: Matches) -> grpc.aio.Server:
    async def create(request: Any, context: Any) -> Any:
        return matches.created_response(matches.create())

    async def submit(request: Any, context: Any) -> Any:
        seat = _seat_of(dict(context.invocation_metadata()).get("authorization", ""))
        return canned.replies[min(matches.act(request.match_id), ACTIONS_PER_MATCH + 1), seat]

    async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
        seat = _seat_of(dict(context.invocation_metadata()).get("authorization", ""))
        yield canned.updates[1, seat]
        queue = matches.queues[request.match_id][seat]
        while True:
            version, _ = await queue.get()
            version = min(version, ACTIONS_PER_MATCH + 1)
            yield canned.updates[version, seat]
            if version > ACTIONS_PER_MATCH:
                return

    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "CreateMatch": grpc.unary_unary_rpc_method_handler(
            create, MS.CreateMatchRequest.FromString, MS.CreateMatchResponse.SerializeToString
        ),
        "SubmitAction": grpc.unary_unary_rpc_method_handler(
            submit, MS.SubmitActionRequest.FromString, MS.SubmitActionResponse.SerializeToString
        ),
        "StreamObservations": grpc.unary_stream_rpc_method_handler(
            stream, MS.StreamObservationsRequest.FromString, MS.StreamObservationsResponse.SerializeToString
        ),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("truco.v1.MatchService", handlers),)
    )
    server.add_insecure_port(f"{HOST}:{port}")
    await server.start()
    return server


def rest_app(canned: Canned, matches: Matches) -> web.Application:
    async def create(request: web.Request) -> web.Response:
        await request.read()
        body = json.dumps(message_to_dict(matches.created_response(matches.create())))
        return web.Response(text=body, content_type="application/json")

    async def submit(request: web.Request) -> web.Response:
        await request.read()
        seat = _seat_of(request.headers.get("Authorization", ""))
        version = min(matches.act(request.match_info["match_id"]), ACTIONS_PER_MATCH + 1)
        return web.Response(body=canned.json_replies[version, seat], content_type="application/json")

    async def stream(request: web.Request) -> web.StreamResponse:
        seat = _seat_of(request.headers.get("Authorization", ""))
        queue = matches.queues[request.match_info["match_id"].removesuffix(":streamObservations")][seat]
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        await response.write(canned.json_updates[1, seat])
        while True:
            version, _ = await queue.get()
            version = min(version, ACTIONS_PER_MATCH + 1)
            await response.write(canned.json_updates[version, seat])
            if version > ACTIONS_PER_MATCH:
                return response

    app = web.Application()
    app.router.add_get("/v1/connect", lambda request: connect(request, canned, matches))
    app.router.add_post("/v1/matches", create)
    app.router.add_post("/v1/matches/{match_id}/actions", submit)
    app.router.add_get("/v1/matches/{match_id}", stream)
    return app


async def connect(request: web.Request, canned: Canned, matches: Matches) -> web.WebSocketResponse:
    """The player connection's frames: a subscription gets the match's first update, an
    action its result and every other seat's subscription on any connection its update."""
    ws = web.WebSocketResponse(protocols=("truco.v1+proto",), compress=False)
    await ws.prepare(request)
    out: asyncio.Queue[bytes] = asyncio.Queue()
    mine: list[tuple[str, int]] = []

    async def follow(sid: int, match_id: str, seat: int) -> None:
        queue = matches.queues[match_id][seat]
        out.put_nowait(_ids(1, (1, sid)) + canned.ws_updates[1, seat])
        while True:
            version, actor = await queue.get()
            version = min(version, ACTIONS_PER_MATCH + 1)
            if actor != seat:
                out.put_nowait(_ids(1, (1, sid)) + canned.ws_updates[version, seat])
            if version > ACTIONS_PER_MATCH:
                return

    async def write() -> None:
        while True:
            await ws.send_bytes(await out.get())

    writer = asyncio.ensure_future(write())
    followers: list[asyncio.Task[None]] = []
    subs: dict[int, tuple[str, int]] = {}
    try:
        async for msg in ws:
            req = MS.ConnectRequest.FromString(msg.data)
            if req.HasField("subscribe"):
                sub = req.subscribe
                seat = _seat_of(sub.token)
                subs[sub.subscription_id] = (sub.match_id, seat)
                mine.append((sub.match_id, seat))
                followers.append(asyncio.ensure_future(follow(sub.subscription_id, sub.match_id, seat)))
            elif req.HasField("action"):
                act = req.action
                match_id, seat = subs[act.subscription_id]
                version = min(matches.act(match_id, seat), ACTIONS_PER_MATCH + 1)
                ids = _ids(2, (1, act.subscription_id), (2, act.action_id))
                out.put_nowait(ids + canned.ws_replies[version, seat])
    finally:
        for task in (writer, *followers):
            task.cancel()
    return ws


async def main_async(grpc_port: int, http_port: int) -> None:
    canned, matches = Canned(), Matches()
    server = await serve_grpc(grpc_port, canned, matches)
    runner = web.AppRunner(rest_app(canned, matches), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, HOST, http_port).start()
    print(f"floor listening: gRPC {HOST}:{grpc_port}, HTTP {HOST}:{http_port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    await server.stop(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.grpc_port, args.http_port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
