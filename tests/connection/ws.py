"""A wire-level client of the WebSocket player connection for the tests: send
``ConnectRequest`` messages, read ``ConnectResponse`` messages, in either subprotocol."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from google.protobuf import json_format

from truco_contract.pb import match_service_pb2
from truco_server.transports.grpc.server import Worker
from truco_server.transports.websocket import JSON, PATH, PROTO

pb = match_service_pb2
__all__ = ["JSON", "PROTO", "RawWs", "ws_url"]


def ws_url(worker: Worker) -> str:
    return f"http://127.0.0.1:{worker.http_port}{PATH}"


class RawWs:
    """One WebSocket player connection: ``send`` requests, ``next`` responses (of a kind;
    the others wait in a backlog), ``closed`` for the close code and reason. In the JSON
    subprotocol every frame is also kept as parsed JSON (``frames``)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, binary: bool) -> None:
        self.ws = ws
        self.binary = binary
        self.backlog: list[pb.ConnectResponse] = []
        self.frames: list[Any] = []

    @classmethod
    async def open(
        cls, http: aiohttp.ClientSession, worker: Worker, protocol: str | None = PROTO, **kwargs: Any
    ) -> RawWs:
        protocols = (protocol,) if protocol else ()
        ws = await http.ws_connect(ws_url(worker), protocols=protocols, **kwargs)
        return cls(ws, ws.protocol == PROTO)

    async def send(self, msg: pb.ConnectRequest) -> None:
        if self.binary:
            await self.ws.send_bytes(msg.SerializeToString())
        else:
            await self.ws.send_str(json_format.MessageToJson(msg))

    async def subscribe(self, sid: int, token: str, match_id: str, from_version: int | None = None) -> None:
        sub = pb.ConnectSubscribe(subscription_id=sid, token=token, match_id=match_id)
        if from_version is not None:
            sub.from_version = from_version
        await self.send(pb.ConnectRequest(subscribe=sub))

    async def act(self, sid: int, aid: int, request: pb.SubmitActionRequest) -> None:
        await self.send(
            pb.ConnectRequest(action=pb.ConnectAction(subscription_id=sid, action_id=aid, request=request))
        )

    async def read(self, timeout: float = 10) -> pb.ConnectResponse:
        """The next message; ``ConnectionError`` (with the close code) when the socket closes."""
        msg = await asyncio.wait_for(self.ws.receive(), timeout)
        if msg.type == aiohttp.WSMsgType.BINARY:
            assert self.binary, "a binary frame on the JSON subprotocol"
            return pb.ConnectResponse.FromString(msg.data)
        if msg.type == aiohttp.WSMsgType.TEXT:
            assert not self.binary, "a text frame on the proto subprotocol"
            data = json.loads(msg.data)
            self.frames.append(data)
            out = pb.ConnectResponse()
            json_format.ParseDict(data, out)
            return out
        raise ConnectionError(f"closed: {self.ws.close_code} {msg.extra!r}")

    async def next(self, kind: str | None = None, *, skip_heartbeats: bool = True) -> pb.ConnectResponse:
        for i, msg in enumerate(self.backlog):
            if kind is None or msg.WhichOneof("message") == kind:
                return self.backlog.pop(i)
        while True:
            msg = await self.read()
            if (
                skip_heartbeats
                and msg.WhichOneof("message") == "update"
                and msg.update.message.HasField("heartbeat")
            ):
                continue
            if kind is None or msg.WhichOneof("message") == kind:
                return msg
            self.backlog.append(msg)

    async def closed(self, timeout: float = 10) -> tuple[int | None, str]:
        """Read until the server closes; its close code and reason."""
        while True:
            msg = await asyncio.wait_for(self.ws.receive(), timeout)
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                return self.ws.close_code, str(msg.extra or "")
            if msg.type == aiohttp.WSMsgType.ERROR:
                return self.ws.close_code, str(msg.data)
