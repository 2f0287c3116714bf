"""The player connection over WebSocket: ``GET /v1/connect`` on the REST port.

The same conversation as the gRPC ``MatchService.Connect`` stream, served by the same
:class:`~truco_server.api.connection.PlayerConnection` over the same API object: one
``ConnectRequest`` per client frame, one ``ConnectResponse`` per server frame, so every
promise of the gRPC connection holds here too (many seats, resume from a version, request
ids, typed errors per action, per-credential quotas, heartbeats, bounded queues, the drain).
This module only moves frames.

- **Subprotocols** (``Sec-WebSocket-Protocol``): ``truco.v1+proto`` -- binary frames, each
  one serialized message; ``truco.v1+json`` -- text frames, each one message in the proto3
  JSON mapping (the REST face's). A client that names neither gets JSON; one that names only
  others is refused (HTTP 400) before the upgrade.
- **Credentials** ride in the messages (each ``ConnectSubscribe`` carries its seat or
  spectator token), never in the URL: a query string that carries a credential is refused
  before the upgrade (URLs end up in logs and histories).
- **Heartbeats**: every subscription's heartbeat messages, as over gRPC; and a WebSocket ping
  every ``heartbeat_interval_seconds``: a peer that does not answer within half of that is
  gone, and the connection closes (its subscriptions and actions end with it).
- **Slow readers**: frames go out one at a time and wait while the socket's buffer is full;
  behind them the connection's bounded queue fills, then its subscriptions' queues, which
  resume with a snapshot -- the gRPC connection's rule.
- **The end**: an error that ends the connection (a malformed frame, a protocol error, the
  worker stopping) closes it with code ``4000 + the google.rpc.Code`` and the reason
  ``"<ErrorInfo.reason>: <message>"`` (at most 123 bytes): 4003 INVALID_ARGUMENT, 4014
  UNAVAILABLE (``SHUTTING_DOWN``: reconnect, to another worker, and resume). A client that
  closes ends its subscriptions and drops the answers of its unanswered actions (send them
  again with the same request ids on the next connection: each is applied once).

docs/api.md ("The player connection over WebSocket") is the client's side of this.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
import structlog
from aiohttp import WSMsgType, web
from google.protobuf.descriptor import ServiceDescriptor
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from prometheus_client import Counter, Gauge

from truco_contract.json_mapping import message_to_dict
from truco_contract.pb import match_service_pb2
from truco_server.api import limits
from truco_server.api.connection import PlayerConnection
from truco_server.api.matches import MatchApi
from truco_server.api.status import INTERNAL, as_service_error, to_status
from truco_server.core import errors as E
from truco_server.core.config import Settings
from truco_server.transports.rest.app import RestFace, error_response
from truco_server.transports.rest.routes import fill_message, parse_json

pb = match_service_pb2
_log = structlog.get_logger("truco_server.transports.websocket")

PATH = "/v1/connect"
PROTO = "truco.v1+proto"
JSON = "truco.v1+json"
SUBPROTOCOLS = (PROTO, JSON)
CLOSE_BASE = 4000
"""A connection ended by an error closes with this plus its ``google.rpc.Code``."""
REASON_BYTES = 123
"""The longest close reason a WebSocket close frame carries."""
URL_CREDENTIALS = ("access_token", "token", "api_key", "key", "authorization")
"""Query parameters refused on the upgrade: a credential does not belong in a URL."""

WS_CONNECTIONS = Gauge("truco_websocket_connections", "Open WebSocket player connections.")
WS_CLOSED = Counter(
    "truco_websocket_closed_total",
    "WebSocket player connections ended, by close code (1000: normal; 4000 + a google.rpc.Code: "
    "ended by that error; 1006: the peer vanished).",
    ("code",),
)
WS_FRAMES = Counter(
    "truco_websocket_frames_total", "Frames of WebSocket player connections, by direction.", ("direction",)
)
_RECEIVED = WS_FRAMES.labels("received")
_SENT = WS_FRAMES.labels("sent")


class _Gone(Exception):
    """The client closed the socket (``code``: its close code), or it broke (1006): the
    connection ends at once."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def close_code(status: status_pb2.Status) -> int:
    """The close code of a connection ended by ``status``."""
    return CLOSE_BASE + int(status.code)


def close_reason(status: status_pb2.Status) -> bytes:
    """``"<ErrorInfo.reason>: <message>"`` in at most :data:`REASON_BYTES` bytes of UTF-8."""
    reason = ""
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
    text = f"{reason}: {status.message}" if reason else status.message
    return text.encode()[:REASON_BYTES].decode("utf-8", "ignore").encode()


def _protocols(request: web.Request) -> list[str]:
    header = request.headers.get("Sec-WebSocket-Protocol", "")
    return [p.strip() for p in header.split(",") if p.strip()]


def _refusal(request: web.Request) -> E.ServiceError | None:
    """Why the upgrade request is refused before the upgrade, if it is."""
    found = [k for k in request.query if k.lower() in URL_CREDENTIALS]
    if found:
        return E.InvalidArgument(
            f"{E.quote(found[0], 24)} in the URL: send each credential in its subscribe message",
            field_violations=[E.FieldViolation(E.quote(found[0], 24), "credentials never go in a URL")],
        )
    offered = _protocols(request)
    if offered and not set(offered) & set(SUBPROTOCOLS):
        return E.InvalidArgument(
            f"no known subprotocol offered: use {PROTO} (binary frames) or {JSON} (text frames)",
            field_violations=[E.FieldViolation("Sec-WebSocket-Protocol", f"one of {PROTO}, {JSON}")],
        )
    return None


class _Frames:
    """How one subprotocol reads a client frame and writes a server message."""

    def __init__(self, binary: bool) -> None:
        self.binary = binary
        self.kind = WSMsgType.BINARY if binary else WSMsgType.TEXT
        self._read_proto = limits.tolerant(pb.ConnectRequest.FromString)

    def read(self, frame_type: WSMsgType, data: Any) -> Any:
        if frame_type != self.kind:
            want = "binary" if self.binary else "text"
            raise E.InvalidArgument(
                f"a {'text' if self.binary else 'binary'} frame on a {want}-frame subprotocol",
                field_violations=[E.FieldViolation("frame", f"{want} frames only")],
            )
        if self.binary:
            assert self._read_proto is not None
            return self._read_proto(data)  # MalformedRequest: the connection refuses it
        parsed = parse_json(data, "message")
        if not isinstance(parsed, dict):
            raise E.InvalidArgument(
                "a message must be a JSON object",
                field_violations=[E.FieldViolation("message", "not an object")],
            )
        message = pb.ConnectRequest()
        fill_message(parsed, message, "message")
        return message

    def write(self, message: bytes) -> bytes:
        """A frame of a serialized ``ConnectResponse`` (what the player connection yields):
        the bytes themselves, or the message's JSON mapping."""
        if self.binary:
            return message
        parsed = pb.ConnectResponse.FromString(message)
        return orjson.dumps(message_to_dict(parsed), option=orjson.OPT_NON_STR_KEYS)


class WebSocketConnect:
    """``GET /v1/connect``: the player connection of :class:`MatchApi` over WebSocket."""

    def __init__(self, api: MatchApi, *, heartbeat_seconds: float | None = None) -> None:
        self.api = api
        self.heartbeat_seconds = heartbeat_seconds

    def install(self, app: web.Application) -> None:
        app.router.add_get(PATH, self.handle, name="Connect")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = _refusal(request)
        if refused is not None:
            return error_response(to_status(refused))
        offered = _protocols(request)
        chosen = PROTO if PROTO in offered else JSON
        ws = web.WebSocketResponse(
            protocols=(chosen,) if offered else (),
            heartbeat=self.heartbeat_seconds,
            max_msg_size=limits.MAX_MESSAGE_BYTES,
            compress=False,  # per-message deflate costs more CPU than the bytes it saves here
            autoclose=False,  # a client's close frame is answered once its connection is wound up
        )
        if not ws.can_prepare(request).ok:
            return error_response(
                to_status(E.InvalidArgument(f"{PATH} speaks WebSocket only: send an Upgrade request"))
            )
        await ws.prepare(request)
        WS_CONNECTIONS.inc()
        code = 1006
        try:
            code = await self._serve(ws, _Frames(chosen == PROTO))
        finally:
            WS_CONNECTIONS.dec()
            WS_CLOSED.labels(str(code)).inc()
        return ws

    async def _serve(self, ws: web.WebSocketResponse, frames: _Frames) -> int:
        """Run the connection; close the socket; the close code."""
        status: status_pb2.Status | None = None
        write, kind, send = frames.write, frames.kind, ws.send_frame
        try:
            async for message in PlayerConnection(self.api, self.api.tickets).run(self._requests(ws, frames)):
                await send(write(message), kind)
                _SENT.inc()
        except _Gone as gone:
            with contextlib.suppress(ConnectionError):
                await ws.close()  # answers the client's close frame
            return gone.code
        except ConnectionError:  # the peer vanished while a frame was going out
            return 1006
        except Exception as exc:
            typed = as_service_error(exc)
            if typed is None:
                _log.exception("unexpected error on a WebSocket connection")
                typed = INTERNAL
            status = to_status(typed)
        if status is None:
            await ws.close()
            return 1000
        code = close_code(status)
        reason = close_reason(status)
        _log.info("websocket connection ended", close_code=code, reason=reason.decode())
        with contextlib.suppress(ConnectionError):
            await ws.close(code=code, message=reason)
        return code

    @staticmethod
    async def _requests(ws: web.WebSocketResponse, frames: _Frames) -> AsyncIterator[Any]:
        """The client's messages; raises :class:`_Gone` when the socket closes (a WebSocket
        has no half-close: a client that leaves takes its answers with it)."""
        read = frames.read
        while True:
            msg = await ws.receive()
            if msg.type is WSMsgType.TEXT or msg.type is WSMsgType.BINARY:
                _RECEIVED.inc()
                yield read(msg.type, msg.data)
            elif msg.type is WSMsgType.CLOSE:
                raise _Gone(int(msg.data or 1005))
            else:  # CLOSING, CLOSED, ERROR (a frame too big: closed with 1009 already)
                raise _Gone(ws.close_code or 1006)


def attach(face: RestFace, served: Sequence[tuple[ServiceDescriptor, object]], settings: Settings) -> None:
    """Serve the player connection over WebSocket on ``face``'s port, with the API object
    that serves ``Connect`` among ``served``."""
    for service, api in served:
        if "Connect" in service.methods_by_name and isinstance(api, MatchApi):
            face.installers.append(
                WebSocketConnect(api, heartbeat_seconds=settings.heartbeat_interval_seconds).install
            )


__all__ = [
    "JSON",
    "PATH",
    "PROTO",
    "SUBPROTOCOLS",
    "WebSocketConnect",
    "attach",
    "close_code",
    "close_reason",
]
