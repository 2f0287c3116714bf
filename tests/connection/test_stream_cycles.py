"""A stream its client leaves (a WebSocket connection closed, a gRPC call cancelled, an event
stream's request closed) ends on the worker without leaving its frames in reference cycles:
what it held (its chain of frames, subscription, match) goes by reference counting, not at
the next full garbage collection (docs/benchmarks.md, "Where the paced tail comes from")."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import grpc
import pytest
import pytest_asyncio

from tests.connection.test_connection import _create
from tests.connection.test_websocket import _first_updates
from tests.connection.ws import PROTO, RawWs
from truco_contract.pb import match_service_pb2, match_service_pb2_grpc
from truco_server.transports.grpc.server import Worker

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


@pytest_asyncio.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


async def _left_in_cycles(worker: Worker, leave: Callable[[], Awaitable[object]]) -> list[str]:
    """The server's coroutines and generators the collector finds unreachable after
    ``leave()`` and the end of every stream it ended."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        await leave()
        while worker.streams.active:  # the worker has ended the streams
            await asyncio.sleep(0.01)
        gc.collect()
        return sorted(
            code.co_qualname
            for obj in gc.garbage
            if (code := getattr(obj, "cr_code", None) or getattr(obj, "ag_code", None)) is not None
            and "truco_server" in code.co_filename
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


async def test_a_websocket_connection_closed_mid_stream(worker: Worker, http: aiohttp.ClientSession) -> None:
    """Its subscriptions (and what they were doing) are cancelled with it."""
    mid, tokens = await _create(worker)
    raw = await RawWs.open(http, worker, PROTO)
    await raw.subscribe(1, tokens[0], mid)
    await raw.subscribe(2, tokens[1], mid)
    await _first_updates(raw, (1, 2))
    assert await _left_in_cycles(worker, raw.ws.close) == []


async def test_a_grpc_stream_cancelled_by_its_client(worker: Worker) -> None:
    mid, tokens = await _create(worker)
    async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
        call = match_service_pb2_grpc.MatchServiceStub(channel).StreamObservations(
            match_service_pb2.StreamObservationsRequest(match_id=mid),
            metadata=(("authorization", f"Bearer {tokens[0]}"),),
        )
        await call.read()

        async def cancel() -> None:
            call.cancel()

        assert await _left_in_cycles(worker, cancel) == []


async def test_an_event_stream_closed_by_its_client(worker: Worker, http: aiohttp.ClientSession) -> None:
    mid, tokens = await _create(worker)
    resp = await http.get(
        f"http://127.0.0.1:{worker.http_port}/v1/matches/{mid}:streamObservations",
        headers={"authorization": f"Bearer {tokens[0]}"},
    )
    assert resp.status == 200
    await resp.content.readline()

    async def close() -> None:
        resp.close()

    assert await _left_in_cycles(worker, close) == []
