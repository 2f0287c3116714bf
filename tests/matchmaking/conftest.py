"""Fixtures of the matchmaking service tests: a worker's services (no transport) on memory and
on a real ``redis-server``, with a settable clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.helpers.clock import FakeClock
from truco_server.app.wiring import Services, build_services, store_settings
from truco_server.core.caller import Operator
from truco_server.core.config import Settings
from truco_server.ports import Store
from truco_server.stores import open_store

SETTINGS = Settings(heartbeat_interval_seconds=0.2)


def services_over(store: Store, clock: FakeClock) -> Services:
    return build_services(SETTINGS, asyncio.Event(), store, clock=clock)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture(params=["memory", "redis"])
async def svc(request: pytest.FixtureRequest, clock: FakeClock) -> AsyncIterator[Services]:
    url = None if request.param == "memory" else request.getfixturevalue("clean_redis_url")
    s = services_over(open_store(url, store_settings(SETTINGS)), clock)
    try:
        yield s
    finally:
        await s.relay.done()
        await s.matchmaking.close()
        s.streams.close()
        await s.store.close()


@pytest.fixture
def operator() -> Operator:
    return Operator("acme")
