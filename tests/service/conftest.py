from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from truco_server.app.wiring import Services, build_services, store_settings
from truco_server.core.caller import Operator
from truco_server.core.config import Settings
from truco_server.stores import open_store

SETTINGS = Settings(heartbeat_interval_seconds=0.2)


def services(store_url: str | None = None, **kwargs: object) -> Services:
    """A worker's services (no transport) over a new store: memory, or ``store_url``."""
    store = open_store(store_url, store_settings(SETTINGS))
    return build_services(SETTINGS, asyncio.Event(), store, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "redis"])
async def service(request: pytest.FixtureRequest) -> AsyncIterator[Services]:
    url = None if request.param == "memory" else request.getfixturevalue("clean_redis_url")
    svc = services(url)
    try:
        yield svc
    finally:
        await svc.relay.done()
        svc.streams.close()
        await svc.store.close()


@pytest.fixture
def operator() -> Operator:
    return Operator("acme")
