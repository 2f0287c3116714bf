"""Finding 1: a Redis that is paused, dead or restarted answers UNAVAILABLE with RetryInfo (gRPC)
and 503 with Retry-After (REST), never INTERNAL; readiness (the match service's health) goes
NOT_SERVING while the store does not answer and comes back by itself, the server's "" stays
SERVING (liveness); after a restart the calls go on without an error.

Each test starts its own ``redis-server`` (loopback, free port) and stops, pauses (SIGSTOP)
and resumes it by its pid."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator

import aiohttp
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.e2e.client import Stub, bearer, create, end_code
from tests.hardening.helpers import details, worker_on
from tests.helpers.redis_proc import RedisProcess, start_redis
from truco_contract.pb import match_service_pb2 as MS

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
FAST = {"redis_retry_seconds": 1.0, "readiness_interval_seconds": 0.2}


@pytest.fixture
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    # fsync always: with everysec Redis may hold a write back for up to 2 s while an earlier
    # fsync is slow (a loaded disk), and a SIGKILL then loses a write it already acknowledged;
    # these tests check that what was acknowledged survives a kill
    proc = start_redis(
        workdir=tmp_path_factory.mktemp("redis"), appendonly=True, extra_args=("--appendfsync", "always")
    )
    try:
        yield proc
    finally:
        if proc.running():
            os.kill(proc.pid, signal.SIGCONT)  # a paused server does not stop on SIGTERM
        proc.stop()


async def _health(ch: grpc.aio.Channel, service: str) -> int:
    resp = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service))
    return resp.status


async def _wait_health(ch: grpc.aio.Channel, service: str, want: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while (got := await _health(ch, service)) != want:
        assert time.monotonic() < deadline, f"health of {service!r} stayed {got}, wanted {want}"
        await asyncio.sleep(0.1)


async def test_a_paused_redis_is_unavailable_and_not_ready_then_recovers(own_redis: RedisProcess) -> None:
    async with worker_on(own_redis.url, **FAST) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        stub = Stub(ch)
        made = await create(stub, "paulista", 2)
        get = MS.GetMatchRequest(match_id=made.match_id)
        await stub.GetMatch(get, metadata=bearer(made.tokens[0]), timeout=10)
        assert await _health(ch, "truco.v1.MatchService") == SERVING
        os.kill(own_redis.pid, signal.SIGSTOP)
        try:
            await _wait_health(ch, "truco.v1.MatchService", NOT_SERVING)
            assert await _health(ch, "") == SERVING  # liveness: do not restart the worker
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.GetMatch(get, metadata=bearer(made.tokens[0]), timeout=30)
            d = details(caught.value)
            assert d.code == grpc.StatusCode.UNAVAILABLE, d
            assert d.reason == "STORE_UNAVAILABLE" and d.retry_ms is not None and d.retry_ms > 0
            url = f"http://127.0.0.1:{w.http_port}/v1/matches/{made.match_id}"
            async with (
                aiohttp.ClientSession() as http,
                http.get(url, headers={"Authorization": f"Bearer {made.tokens[0]}"}) as resp,
            ):
                body = await resp.json()
                assert resp.status == 503, body
                assert int(resp.headers["Retry-After"]) >= 1
                assert body["details"][0]["reason"] == "STORE_UNAVAILABLE"
        finally:
            os.kill(own_redis.pid, signal.SIGCONT)
        await _wait_health(ch, "truco.v1.MatchService", SERVING)
        got = await stub.GetMatch(get, metadata=bearer(made.tokens[0]), timeout=10)
        assert got.match.match_id == made.match_id


async def test_a_dead_redis_is_unavailable_and_a_restart_is_transparent(own_redis: RedisProcess) -> None:
    async with worker_on(own_redis.url, **FAST) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        stub = Stub(ch)
        made = await create(stub, "paulista", 2)
        get = MS.GetMatchRequest(match_id=made.match_id)
        own_redis.kill()
        await _wait_health(ch, "truco.v1.MatchService", NOT_SERVING)
        for call in (
            stub.GetMatch(get, metadata=bearer(made.tokens[0]), timeout=30),
            stub.CreateMatch(MS.CreateMatchRequest(request_id="while-down"), timeout=30),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
            assert details(caught.value).code == grpc.StatusCode.UNAVAILABLE, details(caught.value)
        own_redis.restart()  # the append-only file brings the match back
        await _wait_health(ch, "truco.v1.MatchService", SERVING)
        # every pooled connection is stale now: each first use must still succeed
        for _ in range(20):
            got = await stub.GetMatch(get, metadata=bearer(made.tokens[0]), timeout=10)
            assert got.match.match_id == made.match_id


async def test_open_streams_on_matches_a_data_loss_took_end_not_found(own_redis: RedisProcess) -> None:
    """Redis killed and started empty (its files gone) while streams are open: each stream
    ends NOT_FOUND, a typed end (here the next look at the match finds it gone; the path
    where the events reader finds it first is the test below)."""
    async with (
        worker_on(own_redis.url, **FAST, heartbeat_interval_seconds=30.0) as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
    ):
        stub = Stub(ch)
        made = [await create(stub, "paulista", 2) for _ in range(4)]
        streams = [
            stub.StreamObservations(
                MS.StreamObservationsRequest(match_id=m.match_id), metadata=bearer(m.tokens[0])
            )
            for m in made
        ]
        for s in streams:
            await s.read()  # each is open and past its snapshot
        own_redis.lose_data()

        codes = await asyncio.wait_for(asyncio.gather(*(end_code(s) for s in streams)), timeout=60)
        assert set(codes) == {grpc.StatusCode.NOT_FOUND}, codes


async def test_a_match_the_store_lost_under_a_call_is_not_found_not_internal() -> None:
    """The events reader of an open stream raises the store's own MatchNotFound when its
    catch-up after a reconnection finds the match gone (the long campaign saw two streams end
    INTERNAL that way); both transports classify it with ``as_service_error``."""
    from truco_server.api.status import as_service_error
    from truco_server.core import errors as E
    from truco_server.ports.errors import MatchNotFound as StoreMatchNotFound

    typed = as_service_error(StoreMatchNotFound("m-gone"))
    assert isinstance(typed, E.MatchNotFound) and typed.code is E.Code.NOT_FOUND
