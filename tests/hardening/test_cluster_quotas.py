"""Quotas hold for a group of workers, not per worker: three workers on one Redis give one
credential its quota once (gRPC and REST), and an operator beyond its live-match or
stored-bytes bound is refused."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import aiohttp
import grpc
import pytest

from tests.e2e.client import Stub, bearer, create
from tests.e2e.conftest import WorkerFactory
from tests.hardening.helpers import details
from truco_contract.pb import action_pb2, match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_server.app.wiring import build_services
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.core.config import Settings
from truco_server.stores import MemoryStore
from truco_server.transports.grpc.server import Worker

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]
G = grpc.StatusCode


@asynccontextmanager
async def group(make_worker: WorkerFactory, **limits: float) -> AsyncIterator[list[tuple[Worker, Stub, str]]]:
    """Three workers on one Redis, each with its gRPC stub and REST base URL."""
    async with AsyncExitStack() as stack:
        out = []
        for _ in range(3):
            w = await stack.enter_async_context(make_worker(**limits))
            ch = await stack.enter_async_context(grpc.aio.insecure_channel(w.grpc_address))
            out.append((w, Stub(ch), f"http://127.0.0.1:{w.http_port}"))
        yield out


def _quota(err: grpc.aio.AioRpcError) -> list[str]:
    d = details(err)
    assert d.code == G.RESOURCE_EXHAUSTED and d.reason == "QUOTA_EXCEEDED"
    assert d.retry_ms is not None and d.retry_ms > 0
    return d.quota


async def test_a_credential_gets_its_quota_once_over_three_workers(make_worker: WorkerFactory) -> None:
    limits = {"quota_streams": 2, "quota_actions_per_second": 0.5, "quota_matches_per_minute": 3}
    async with group(make_worker, **limits) as ws, aiohttp.ClientSession() as http:
        (_, s1, _), (_, s2, r2), (_, s3, r3) = ws
        # matches: a burst of one for the operator, wherever it asks
        made = await create(s1, "paulista", 2)
        for stub in (s2, s3):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.CreateMatch(MS.CreateMatchRequest())
            assert _quota(caught.value) == ["matches_created_per_minute"]
        async with http.post(r2 + "/v1/matches", json={}) as resp:
            assert resp.status == 429 and int(resp.headers["Retry-After"]) >= 1

        # actions: a burst of one per seat credential, then one every 2 s
        fold = MS.SubmitActionRequest(
            match_id=made.match_id, action=action_pb2.Action(fold=action_pb2.Fold())
        )
        with pytest.raises(grpc.aio.AioRpcError) as first:
            await s1.SubmitAction(fold, metadata=bearer(made.tokens[1]))  # refused by the rules
        assert first.value.code() != G.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await s2.SubmitAction(fold, metadata=bearer(made.tokens[1]))
        assert _quota(caught.value) == ["actions_per_second"]
        url = f"{r3}/v1/matches/{made.match_id}/actions"
        headers = {"Authorization": f"Bearer {made.tokens[1]}"}
        async with http.post(url, json={"action": {"fold": {}}}, headers=headers) as resp:
            assert resp.status == 429 and int(resp.headers["Retry-After"]) >= 1

        # streams: two open for the credential in the whole group
        token = made.tokens[0]
        request = MS.StreamObservationsRequest(match_id=made.match_id)
        held = [stub.StreamObservations(request, metadata=bearer(token)) for stub in (s1, s2)]
        for s in held:
            await s.read()
        third = s3.StreamObservations(request, metadata=bearer(token))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await third.read()
        assert _quota(caught.value) == ["open_streams"]
        sse = f"{r3}/v1/matches/{made.match_id}:streamObservations"
        async with http.get(sse, headers={"Authorization": f"Bearer {token}"}) as resp:
            assert resp.status == 429
        # a closed stream frees its slot for any worker (released as the stream ends)
        held[0].cancel()
        deadline = asyncio.get_running_loop().time() + 20
        while True:
            again = s3.StreamObservations(request, metadata=bearer(token))
            try:
                await again.read()
                break
            except grpc.aio.AioRpcError as exc:
                assert _quota(exc) == ["open_streams"]
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.05)  # poll: the release is on its way to Redis
        again.cancel()
        held[1].cancel()


async def test_an_operator_beyond_its_live_matches_is_refused(make_worker: WorkerFactory) -> None:
    limits = {"quota_live_matches": 2, "quota_matches_per_minute": 0}
    async with group(make_worker, **limits) as ws, aiohttp.ClientSession() as http:
        (_, s1, _), (_, s2, _), (_, s3, r3) = ws
        first = await create(s1, "paulista", 2)
        await create(s2, "paulista", 2)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await create(s3, "paulista", 2)
        assert _quota(caught.value) == ["live_matches"]
        async with http.post(
            r3 + "/v1/matches", json={"rules": {"preset": "paulista"}, "players": 2}
        ) as resp:
            assert resp.status == 429 and int(resp.headers["Retry-After"]) >= 1
        # a match that ends frees its place, whichever worker ends it
        await s2.CancelMatch(MS.CancelMatchRequest(match_id=first.match_id))
        await create(s3, "paulista", 2)


async def test_an_operator_beyond_its_stored_bytes_is_refused(make_worker: WorkerFactory) -> None:
    # the largest labels, not compressible: about 13.6 KB stored a match
    labels = {f"k{i}": secrets.token_urlsafe(188)[:250] for i in range(32)}
    limits = {"quota_stored_bytes_per_day": 40_000, "quota_matches_per_minute": 0}
    async with group(make_worker, **limits) as ws, aiohttp.ClientSession() as http:
        made = 0
        for i in range(10):
            stub = ws[i % 3][1]
            try:
                await create(stub, "paulista", 2, settings=match_pb2.MatchSettings(labels=labels))
            except grpc.aio.AioRpcError as exc:
                assert _quota(exc) == ["stored_bytes_per_day"]
                break
            made += 1
        assert made == 2  # 40,000 bytes of 13.6 KB matches, over all three workers
        body = {"rules": {"preset": "paulista"}, "players": 2, "settings": {"labels": labels}}
        async with http.post(ws[2][2] + "/v1/matches", json=body) as resp:
            assert resp.status == 429 and int(resp.headers["Retry-After"]) >= 1


async def test_a_match_that_ended_untold_frees_its_place_when_the_bound_is_reached() -> None:
    """A worker that died between ending a match and releasing its place: the next create at
    the bound looks at the held matches and drops the ended one."""
    svc = build_services(Settings(quota_live_matches=2), asyncio.Event(), MemoryStore())
    op = Operator("op")
    spec = T.CreateMatchRequest(preset="paulista-2p")
    a = await svc.steps.create_match(op, spec)
    await svc.steps.create_match(op, spec)
    svc.matches.on_end.clear()  # nobody is told of the end
    await svc.steps.cancel_match(op, T.CancelMatchRequest(a.match.match_id, "gone"))
    created = await svc.steps.create_match(op, spec)  # rechecked: one place was free
    with pytest.raises(E.QuotaExceeded):
        await svc.steps.create_match(op, spec)  # two live now, rechecked a moment ago
    assert created.match.match_id != a.match.match_id
    await svc.store.close()
