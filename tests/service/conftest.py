from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from truco_server.core.caller import Operator
from truco_server.services.matches import MatchService
from truco_server.stores import MemoryMatchStore, RedisMatchStore


@pytest.fixture(params=["memory", "redis"])
async def service(request: pytest.FixtureRequest) -> AsyncIterator[MatchService]:
    if request.param == "memory":
        store = MemoryMatchStore()
    else:
        url = request.getfixturevalue("clean_redis_url")
        store = RedisMatchStore.from_url(url)
    svc = MatchService(store, heartbeat_seconds=0.2)
    try:
        yield svc
    finally:
        await store.close()


@pytest.fixture
def operator() -> Operator:
    return Operator("acme")
