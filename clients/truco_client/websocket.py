"""The player connection's WebSocket transport (``GET /v1/connect`` on the server's HTTP
port, subprotocol ``truco.v1+proto``), for :class:`truco_client.connection.PlayerConnection`
given a ``ws://`` / ``wss://`` (or ``http://`` / ``https://``) address.

Frames carry the same ``ConnectRequest`` / ``ConnectResponse`` messages as the gRPC stream; a
connection that the server ends with an error closes with code ``4000 + google.rpc.Code`` and
the reason ``"<ErrorInfo.reason>: <message>"``, which :func:`closed_error` turns into the SDK's
typed error (4014 ``SHUTTING_DOWN`` is an :class:`~truco_client.errors.Unavailable`: the
connection reconnects and resumes). The match's rules are read once per match with
``GET /v1/matches/{id}`` over the same HTTP port.

Needs ``aiohttp`` (``pip install 'truco-service[websocket]'``); the gRPC transport does not.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from truco_client.errors import InvalidArgument, TrucoApiError, Unavailable, from_status
from truco_contract.pb import match_service_pb2

pb = match_service_pb2
PATH = "/v1/connect"
PROTO = "truco.v1+proto"
CLOSE_BASE = 4000
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""Largest server message read (an observation of a 12-seat table is far below it)."""
SCHEMES = {"ws": "http", "wss": "https", "http": "http", "https": "https"}


def _aiohttp() -> Any:
    try:
        import aiohttp
    except ImportError:  # pragma: no cover - the extra is part of the dev install
        raise ImportError(
            "the WebSocket transport needs aiohttp: pip install 'truco-service[websocket]'"
        ) from None
    return aiohttp


def is_websocket(target: str) -> bool:
    """Whether ``target`` names the WebSocket transport (a URL) rather than a gRPC address."""
    return urlsplit(target).scheme in SCHEMES and "//" in target


def http_base(target: str) -> str:
    """``ws://host:port/...`` as the HTTP base ``http://host:port`` (path dropped)."""
    parts = urlsplit(target)
    return urlunsplit((SCHEMES[parts.scheme], parts.netloc, "", "", ""))


def closed_error(code: int | None, reason: str) -> TrucoApiError:
    """The typed error of a connection the server closed with ``code`` and ``reason``."""
    if code is not None and CLOSE_BASE < code < CLOSE_BASE + 100:
        why, sep, message = reason.partition(": ")
        if not sep:
            why, message = "", reason
        status = status_pb2.Status(code=code - CLOSE_BASE, message=message)
        if why:
            status.details.add().Pack(error_details_pb2.ErrorInfo(reason=why, domain="truco.v1"))
        return from_status(status)
    return Unavailable(
        grpc.StatusCode.UNAVAILABLE, f"connection closed ({code}{': ' if reason else ''}{reason})"
    )


class WebSocketLink:
    """One WebSocket connection: the messages of ``box`` out, the server's messages in."""

    def __init__(self, session: Any, target: str, box: asyncio.Queue[pb.ConnectRequest | None]) -> None:
        self.session = session
        self.url = http_base(target) + PATH
        self.box = box
        self.ws: Any = None
        self._writer: asyncio.Task[None] | None = None

    async def _open(self) -> None:
        aiohttp = _aiohttp()
        try:
            self.ws = await self.session.ws_connect(
                self.url, protocols=(PROTO,), max_msg_size=MAX_MESSAGE_BYTES, autoping=True
            )
        except aiohttp.WSServerHandshakeError as exc:
            if exc.status in (400, 404):
                raise InvalidArgument(
                    grpc.StatusCode.INVALID_ARGUMENT, f"{self.url}: {exc.message}"
                ) from None
            raise Unavailable(grpc.StatusCode.UNAVAILABLE, f"{self.url}: HTTP {exc.status}") from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise Unavailable(grpc.StatusCode.UNAVAILABLE, f"{self.url}: {exc}") from None
        self._writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        ws, box = self.ws, self.box
        with contextlib.suppress(ConnectionError):
            while (msg := await box.get()) is not None:
                await ws.send_bytes(msg.SerializeToString())

    async def messages(self) -> AsyncIterator[pb.ConnectResponse]:
        """The server's messages; ends when the server closes normally; raises the typed
        error of an error close (:func:`closed_error`)."""
        aiohttp = _aiohttp()
        await self._open()
        ws, read = self.ws, pb.ConnectResponse.FromString
        kinds = aiohttp.WSMsgType
        while True:
            msg = await ws.receive()
            if msg.type is kinds.BINARY:
                yield read(msg.data)
            elif msg.type in (kinds.CLOSE, kinds.CLOSING, kinds.CLOSED, kinds.ERROR):
                code = ws.close_code
                if code == 1000:
                    return
                raise closed_error(code, str(msg.extra or "") if msg.type is kinds.CLOSE else "")
            # TEXT frames are not sent on this subprotocol; pings are answered by aiohttp

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()


async def get_match(session: Any, target: str, match_id: str, token: str) -> pb.GetMatchResponse:
    """``GetMatch`` over the HTTP port (``GET /v1/matches/{id}``), as a message."""
    aiohttp = _aiohttp()
    url = f"{http_base(target)}/v1/matches/{quote(match_id, safe='')}"
    try:
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
            data = await resp.json(content_type=None)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise Unavailable(grpc.StatusCode.UNAVAILABLE, f"{url}: {exc}") from None
    if resp.status != 200:
        status = status_pb2.Status()
        json_format.ParseDict(data, status, ignore_unknown_fields=True)
        raise from_status(status)
    out = pb.GetMatchResponse()
    json_format.ParseDict(data, out, ignore_unknown_fields=True)
    return out


async def join_match(session: Any, target: str, match_id: str, token: str, client_seed: bytes) -> None:
    """``JoinMatch`` over the HTTP port (``POST /v1/matches/{id}:join``)."""
    aiohttp = _aiohttp()
    url = f"{http_base(target)}/v1/matches/{quote(match_id, safe='')}:join"
    body = json_format.MessageToDict(pb.JoinMatchRequest(client_seed=client_seed))
    try:
        async with session.post(url, json=body, headers={"Authorization": f"Bearer {token}"}) as resp:
            data = await resp.json(content_type=None)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise Unavailable(grpc.StatusCode.UNAVAILABLE, f"{url}: {exc}") from None
    if resp.status != 200:
        status = status_pb2.Status()
        json_format.ParseDict(data, status, ignore_unknown_fields=True)
        raise from_status(status)


def new_session() -> Any:
    aiohttp = _aiohttp()
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=10, sock_connect=10))
