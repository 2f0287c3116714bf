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
            out = [pb.ConnectResponse.FromString(data) async for data in conn.run(requests)]
        gc.collect()
    assert [m.WhichOneof("message") for m in out] == ["ended"]
    assert out[0].ended.subscription_id == 1 and out[0].ended.status.code == 0
    assert api.opened == 1  # its stream was opened, then closed by the unsubscribe
    assert not [w for w in seen if "never awaited" in str(w.message)]


class _ActingApi(_WaitingApi):
    """A subscription that waits, and actions that are applied at once."""

    def __init__(self) -> None:
        super().__init__()
        self.applied: list[tuple[Any, str]] = []

    async def submit(self, creds: Any, request: pb.SubmitActionRequest) -> Any:
        self.applied.append((creds, request.match_id))
        return SimpleNamespace(version=5, events=(), view=SimpleNamespace(version=5))

    @staticmethod
    def result_bytes(result: Any) -> bytes:
        return pb.SubmitActionResponse(version=result.version).SerializeToString()


def _subscribe(sid: int) -> pb.ConnectRequest:
    return pb.ConnectRequest(subscribe=pb.ConnectSubscribe(subscription_id=sid, match_id="m", token="t"))


def _action(sid: int, aid: int) -> pb.ConnectRequest:
    return pb.ConnectRequest(action=pb.ConnectAction(subscription_id=sid, action_id=aid))


def _unsubscribe(sid: int) -> pb.ConnectRequest:
    return pb.ConnectRequest(unsubscribe=pb.ConnectUnsubscribe(subscription_id=sid))


async def test_an_action_read_before_its_subscriptions_unsubscribe_is_applied() -> None:
    """The client acted, then unsubscribed (a last move, then leaving), both in one read: the
    action belongs to the subscription as it was when the action was read."""
    api = _ActingApi()
    requests = _burst(_subscribe(1), _action(1, 7), _unsubscribe(1))
    async with asyncio.timeout(10):
        out = [pb.ConnectResponse.FromString(data) async for data in PlayerConnection(api).run(requests)]  # type: ignore[arg-type]
    kinds = {m.WhichOneof("message"): m for m in out}
    assert set(kinds) == {"result", "ended"}, out
    assert kinds["result"].result.action_id == 7 and kinds["result"].result.response.version == 5
    assert len(api.applied) == 1 and api.applied[0][1] == "m"  # the subscription's match, its credential


async def test_the_connection_ends_after_an_action_on_a_closed_subscription_and_the_half_close() -> None:
    """Subscribe, unsubscribe, act on the id just closed, half-close: the action's refusal and
    the subscription's end are sent and the connection ends (however the refused action's task
    and the ending subscription's task finish against each other)."""
    for _ in range(20):
        api = _ActingApi()
        requests = _burst(_subscribe(1), _unsubscribe(1), _action(1, 1), _unsubscribe(1))
        async with asyncio.timeout(10):
            out = [pb.ConnectResponse.FromString(data) async for data in PlayerConnection(api).run(requests)]  # type: ignore[arg-type]
        assert sorted(m.WhichOneof("message") for m in out) == ["ended", "error"], out
        (error,) = [m.error for m in out if m.HasField("error")]
        assert error.status.code == 3 and "no open subscription 1" in error.status.message
        assert not api.applied
