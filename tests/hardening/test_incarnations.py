"""Findings 3 and 8: a match id created again (its request id reused after the store lost the
match, or after it expired) is a new incarnation that no worker's cache confuses with the old
one; a stream on a match that vanished ends with a typed error instead of hanging.

Two workers on one real Redis: B serves the first incarnation (its caches hold it), Redis
loses everything (FLUSHDB, as a restart without persistence would), A creates the match again
with the same request id, and B must serve the new one exactly as A does."""

from __future__ import annotations

import asyncio

import grpc
import pytest
import redis.asyncio as aioredis

from tests.e2e.client import Stub, bearer, end_code
from tests.e2e.conftest import WorkerFactory
from truco_contract.pb import match_pb2
from truco_contract.pb import match_service_pb2 as MS

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def test_a_recreated_match_id_is_never_served_from_the_old_incarnation(
    make_worker: WorkerFactory, clean_redis_url: str
) -> None:
    create = MS.CreateMatchRequest(request_id="table-1", rules=match_pb2.RuleSet(preset="paulista"))
    async with (
        make_worker() as a,
        make_worker() as b,
        grpc.aio.insecure_channel(a.grpc_address) as cha,
        grpc.aio.insecure_channel(b.grpc_address) as chb,
    ):
        sa, sb = Stub(cha), Stub(chb)
        old = await sa.CreateMatch(create)
        match_id, old_token = old.match.match_id, old.seat_credentials[0].token
        get = MS.GetMatchRequest(match_id=match_id)
        old_view = await sb.GetMatch(get, metadata=bearer(old_token))
        stream = sb.StreamObservations(
            MS.StreamObservationsRequest(match_id=match_id), metadata=bearer(old_token)
        )
        first = await stream.read()
        assert first.update.observation.hand == old_view.observation.hand

        r = aioredis.Redis.from_url(clean_redis_url)
        try:
            await r.flushdb()  # the store lost the match
        finally:
            await r.aclose()

        # the open stream ends with a typed error within a heartbeat or two (2 s here)
        code = await asyncio.wait_for(end_code(stream), timeout=15)
        assert code == grpc.StatusCode.NOT_FOUND

        new = await sa.CreateMatch(create)
        assert new.match.match_id == match_id  # the same id: a new incarnation
        new_token = new.seat_credentials[0].token
        assert new_token != old_token
        truth = await sa.GetMatch(get, metadata=bearer(new_token))
        seen = await sb.GetMatch(get, metadata=bearer(new_token))
        assert seen.observation.hand == truth.observation.hand
        assert seen.match.fairness.seed_hash == truth.match.fairness.seed_hash
        fresh = sb.StreamObservations(
            MS.StreamObservationsRequest(match_id=match_id), metadata=bearer(new_token)
        )
        got = await fresh.read()
        assert got.update.observation.hand == truth.observation.hand
        fresh.cancel()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await sb.GetMatch(get, metadata=bearer(old_token))
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
