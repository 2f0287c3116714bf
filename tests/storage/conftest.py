"""Fixtures for the storage contract suite: every test runs on every implementation --
memory, one Redis server, a Redis Cluster (3 primaries, 3 replicas) and a Sentinel group
(a primary, a replica, 3 sentinels), all real processes on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from tests.helpers.clock import FakeClock
from truco_server.stores import MatchStore, MemoryMatchStore, RedisMatchStore, StoreSettings

StoreFactory = Callable[..., Awaitable[MatchStore]]

#: Backends of the contract suite; the Redis ones are real servers (tests/helpers).
BACKENDS = ["memory", "redis", "cluster", "sentinel"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def backend_url(backend: str, request: pytest.FixtureRequest) -> str | None:
    """The Redis URL of a backend, its topology made whole and empty (None for memory)."""
    if backend == "redis":
        return str(request.getfixturevalue("clean_redis_url"))
    if backend == "cluster":
        return str(request.getfixturevalue("redis_cluster").url)
    if backend == "sentinel":
        return str(request.getfixturevalue("redis_sentinel").url)
    return None


@pytest_asyncio.fixture
async def make_store(
    backend: str, request: pytest.FixtureRequest, clock: FakeClock
) -> AsyncIterator[StoreFactory]:
    """``await make_store(settings=None)`` -> a fresh store of the current backend.

    For Redis every call opens a new client on the same (flushed) server, cluster or
    Sentinel group, like a second worker would; for memory every call returns a new,
    empty store.
    """
    url = backend_url(backend, request)
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
