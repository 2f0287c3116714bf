"""A fault the player connection's transport did not type (a socket error of the WebSocket
library, a message the client cannot read) ends that connection, not the client: it connects
again, and once that keeps failing every seat gets the error. Its reading task used to end
silently on such a fault, and its seats waited for updates forever."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

import truco_engine as te
from truco_client import connection
from truco_client._core import RetryPolicy
from truco_client.connection import PlayerConnection
from truco_client.errors import TrucoApiError, Unavailable
from truco_contract.pb import match_service_pb2 as pb

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


class FaultyLink:
    """A link whose reading raises ``fault`` (after handing out ``messages``)."""

    def __init__(self, fault: Exception, messages: list[pb.ConnectResponse] | None = None) -> None:
        self.fault = fault
        self.sent = messages or []
        self.closed = False

    async def messages(self) -> AsyncIterator[pb.ConnectResponse]:
        for msg in self.sent:
            yield msg
        raise self.fault

    async def close(self) -> None:
        self.closed = True


def connect_with(links: list[Any], attempts: int) -> tuple[PlayerConnection, list[Any]]:
    conn = PlayerConnection(
        "127.0.0.1:1", retry=RetryPolicy(attempts=attempts, initial_backoff=0.001, max_backoff=0.002)
    )
    opened: list[Any] = []

    def open_next(box: connection.Box) -> Any:
        link = links.pop(0) if links else FaultyLink(OSError("connection reset"))
        opened.append(link)
        return link

    conn._open = open_next  # type: ignore[method-assign]
    return conn, opened


async def test_an_untyped_fault_that_keeps_happening_fails_every_seat() -> None:
    conn, opened = connect_with([], attempts=3)
    seat = await conn.seat("m1", "token", rules=te.get_rules("paulista"))
    with pytest.raises(Unavailable, match="connection reset"):
        async for _update in seat:
            pass
    assert len(opened) == 3 and all(link.closed for link in opened)
    await conn.close()


async def test_a_fault_once_is_followed_by_a_new_connection() -> None:
    """The second link serves: the seat's subscription is sent again on it."""
    served = asyncio.Event()

    class Serving:
        closed = False

        async def messages(self) -> AsyncIterator[pb.ConnectResponse]:
            served.set()
            await asyncio.Event().wait()  # an open connection that sends nothing yet
            yield pb.ConnectResponse()

        async def close(self) -> None:
            self.closed = True

    conn, opened = connect_with([FaultyLink(ValueError("unreadable message")), Serving()], attempts=3)
    await conn.seat("m1", "token", rules=te.get_rules("paulista"))
    await asyncio.wait_for(served.wait(), 10)
    assert conn.reconnects == 1 and len(opened) == 2
    await conn.close()


class Serving:
    """A link that stays open and sends nothing (it tells ``served`` it was opened)."""

    def __init__(self, served: asyncio.Event) -> None:
        self.served = served
        self.closed = False

    async def messages(self) -> AsyncIterator[pb.ConnectResponse]:
        self.served.set()
        await asyncio.Event().wait()
        yield pb.ConnectResponse()

    async def close(self) -> None:
        self.closed = True


async def test_an_internal_error_no_server_sent_is_a_lost_connection() -> None:
    """grpcio's asyncio client reports a write to a stream whose worker was killed as
    ``INTERNAL: Internal error from Core`` (no ErrorInfo): the connection reconnects, as after
    UNAVAILABLE. An INTERNAL the server sent (with its reason) still reaches every seat."""
    served = asyncio.Event()
    core = TrucoApiError(grpc.StatusCode.INTERNAL, "Internal error from Core")
    conn, opened = connect_with([FaultyLink(core), Serving(served)], attempts=3)
    await conn.seat("m1", "token", rules=te.get_rules("paulista"))
    await asyncio.wait_for(served.wait(), 10)
    assert conn.reconnects == 1 and len(opened) == 2
    await conn.close()

    answered = TrucoApiError(grpc.StatusCode.INTERNAL, "internal error", reason="INTERNAL")
    conn, opened = connect_with([FaultyLink(answered)], attempts=3)
    seat = await conn.seat("m1", "token", rules=te.get_rules("paulista"))
    with pytest.raises(TrucoApiError, match="internal error"):
        async for _update in seat:
            pass
    assert conn.reconnects == 0 and len(opened) == 1
    await conn.close()
