"""A subscription unsubscribed in the same read as its subscribe (both messages already
buffered): its end is still sent, and the connection still ends when the client has
half-closed."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from truco_contract.pb import match_service_pb2 as pb
from truco_server.api.connection import PlayerConnection

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


class _WaitingApi:
    """The API's side of a subscription that has not delivered its first message yet (its
    first load from the store still under way)."""

    tracker = None

    def __init__(self) -> None:
        self.streams = SimpleNamespace(stopping=asyncio.Event())
        self.opened = 0

    async def stream_updates(self, creds: Any, request: Any, delivered: Any = None) -> AsyncIterator[Any]:
        self.opened += 1
        await asyncio.Event().wait()
        yield None  # never reached


async def _burst(*messages: pb.ConnectRequest) -> AsyncIterator[pb.ConnectRequest]:
    for msg in messages:  # no await between them: read in one step of the reader
        yield msg


async def test_a_subscription_unsubscribed_before_it_started_sends_its_end() -> None:
    api = _WaitingApi()
    conn = PlayerConnection(api)  # type: ignore[arg-type]
    requests = _burst(
        pb.ConnectRequest(subscribe=pb.ConnectSubscribe(subscription_id=1, match_id="m", token="t")),
        pb.ConnectRequest(unsubscribe=pb.ConnectUnsubscribe(subscription_id=1)),
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        async with asyncio.timeout(10):  # the connection ends: the client half-closed, nothing left
            out = [msg async for msg in conn.run(requests)]
        gc.collect()
    assert [m.WhichOneof("message") for m in out] == ["ended"]
    assert out[0].ended.subscription_id == 1 and out[0].ended.status.code == 0
    assert api.opened == 1  # its stream was opened, then closed by the unsubscribe
    assert not [w for w in seen if "never awaited" in str(w.message)]
