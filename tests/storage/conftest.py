"""Fixtures for the storage contract suite: every test runs on both implementations."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from tests.helpers.clock import FakeClock
from truco_server.storage import MatchStore, MemoryMatchStore, RedisMatchStore, StoreSettings

StoreFactory = Callable[..., Awaitable[MatchStore]]


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest_asyncio.fixture
async def make_store(
    backend: str, request: pytest.FixtureRequest, clock: FakeClock
) -> AsyncIterator[StoreFactory]:
    """``await make_store(settings=None)`` -> a fresh store of the current backend.

    For Redis every call opens a new client on the same (flushed) server, like a second
    worker would; for memory every call returns a new, empty store.
    """
    url = request.getfixturevalue("clean_redis_url") if backend == "redis" else None
    opened: list[MatchStore] = []

    async def factory(settings: StoreSettings | None = None) -> MatchStore:
        store: MatchStore
        if url is not None:
            store = RedisMatchStore.from_url(url, settings, hub_block_ms=500)
        else:
            store = MemoryMatchStore(settings, clock=clock)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()


@pytest_asyncio.fixture
async def redis_store(clean_redis_url: str) -> AsyncIterator[RedisMatchStore]:
    """A Redis store on a flushed server, for the Redis-only tests."""
    store = RedisMatchStore.from_url(clean_redis_url)
    yield store
    await store.close()


@pytest_asyncio.fixture
async def store(make_store: StoreFactory) -> MatchStore:
    return await make_store()
