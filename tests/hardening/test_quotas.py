"""Finding 6: per-credential quotas -- open streams, actions per second, matches created per
minute -- answer RESOURCE_EXHAUSTED with QuotaFailure and RetryInfo over gRPC, 429 with
Retry-After over REST, are counted in ``truco_quota_exceeded_total`` and change nothing."""

from __future__ import annotations

import aiohttp
import grpc
import pytest
from prometheus_client import REGISTRY

from tests.e2e.client import Stub, bearer, create
from tests.e2e.conftest import WorkerFactory
from tests.hardening.helpers import details
from truco_contract.pb import action_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_server.core.config import Settings
from truco_server.services.quotas import Quotas
from truco_server.stores.memory.quotas import MemoryQuotaCounters

pytestmark = [pytest.mark.timeout(60)]
G = grpc.StatusCode


def _refused(quota: str) -> float:
    return REGISTRY.get_sample_value("truco_quota_exceeded_total", {"quota": quota}) or 0.0


@pytest.mark.asyncio
async def test_quotas_over_grpc_and_rest(make_worker: WorkerFactory) -> None:
    limits = {"quota_streams": 2, "quota_actions_per_second": 0.5, "quota_matches_per_minute": 3}
    async with (
        make_worker(**limits) as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
        aiohttp.ClientSession() as http,
    ):
        stub = Stub(ch)
        base = f"http://127.0.0.1:{w.http_port}"
        made = await create(stub, "paulista", 2)  # the operator's one-match burst
        refused = _refused("matches_created_per_minute")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CreateMatch(MS.CreateMatchRequest())
        d = details(caught.value)
        assert d.code == G.RESOURCE_EXHAUSTED and d.reason == "QUOTA_EXCEEDED"
        assert d.quota == ["matches_created_per_minute"] and d.retry_ms is not None and d.retry_ms > 1000
        assert _refused("matches_created_per_minute") == refused + 1
        async with http.post(base + "/v1/matches", json={}) as resp:
            assert resp.status == 429 and int(resp.headers["Retry-After"]) >= 1

        token = made.tokens[0]
        request = MS.StreamObservationsRequest(match_id=made.match_id)
        open_streams = [stub.StreamObservations(request, metadata=bearer(token)) for _ in range(2)]
        for s in open_streams:
            await s.read()
        third = stub.StreamObservations(request, metadata=bearer(token))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await third.read()
        assert details(caught.value).quota == ["open_streams"]
        url = f"{base}/v1/matches/{made.match_id}:streamObservations"
        async with http.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
            assert resp.status == 429 and resp.headers["Retry-After"] == "1"
        # the spectator credential has its own slots
        spectate = stub.StreamObservations(request, metadata=bearer(made.spectator))
        await spectate.read()
        open_streams[0].cancel()
        spectate.cancel()

        # actions: a burst of 1, then one every 2 s
        fold = MS.SubmitActionRequest(
            match_id=made.match_id, action=action_pb2.Action(fold=action_pb2.Fold())
        )
        with pytest.raises(grpc.aio.AioRpcError) as first:
            await stub.SubmitAction(fold, metadata=bearer(made.tokens[1]))  # refused by the rules
        assert first.value.code() != G.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.SubmitAction(fold, metadata=bearer(made.tokens[1]))
        assert details(caught.value).quota == ["actions_per_second"]
        for s in open_streams[1:]:
            s.cancel()


@pytest.mark.asyncio
async def test_rates_refill_with_time() -> None:
    now = [0.0]
    q = Quotas(
        Settings(quota_actions_per_second=2, quota_matches_per_minute=60),
        MemoryQuotaCounters(lambda: now[0]),
    )
    await q.action("t")
    await q.action("t")
    with pytest.raises(Exception, match="actions_per_second"):
        await q.action("t")
    now[0] += 0.5  # one back
    await q.action("t")
    for _ in range(6):  # burst: a tenth of the per-minute figure
        await q.create("op")
    with pytest.raises(Exception, match="matches_created_per_minute"):
        await q.create("op")
    await q.create("other-op")  # per credential


@pytest.mark.asyncio
async def test_rates_of_quiet_credentials_are_forgotten() -> None:
    """A worker that sees thousands of seat credentials over a day remembers only the ones
    whose allowance has not come back whole (a few seconds' worth), and forgetting one changes
    nothing: a credential that comes back starts with its whole burst, as it would have."""
    now = [0.0]
    counters = MemoryQuotaCounters(lambda: now[0])
    q = Quotas(Settings(quota_actions_per_second=2), counters)
    for i in range(5_000):
        await q.action(f"seat-{i}")
        now[0] += 0.01  # 100 new credentials a second, each acting once
    # one action comes back in 0.5 s: about the last 50 credentials are remembered
    assert counters.tracked() <= 110
    await q.action("busy")
    await q.action("busy")
    now[0] += 0.1
    for i in range(50):  # others come and go; "busy" has not come back and stays refused
        await q.action(f"late-{i}")
    with pytest.raises(Exception, match="actions_per_second"):
        await q.action("busy")
    now[0] += 5
    await q.action("seat-0")  # long quiet: whole again
    await q.action("seat-0")
    with pytest.raises(Exception, match="actions_per_second"):
        await q.action("seat-0")
