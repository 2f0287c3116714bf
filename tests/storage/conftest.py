"""Fixtures of the storage suites: every contract test runs on every adapter -- memory, one
Redis server, a Redis Cluster (3 primaries, 3 replicas) and a Sentinel group (a primary, a
replica, 3 sentinels), all real processes on loopback, each topology started once per
session (tests/helpers/redis_cluster.py) and handed to each test whole and empty."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from tests.helpers.clock import FakeClock
from truco_server.ports import Store
from truco_server.ports.settings import StoreSettings
from truco_server.stores import MemoryStore
from truco_server.stores.redis import RedisStore, open_redis

StoreFactory = Callable[..., Awaitable[Store]]
"""``await make_store(settings=None)``: a store of the current backend."""

#: Backends of the contract suites; the Redis ones are real servers (tests/helpers).
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

    For Redis every call opens new clients on the same (flushed) server, cluster or Sentinel
    group, as a second worker would; for memory every call returns a new, empty store.
    """
    url = backend_url(backend, request)
    opened: list[Store] = []

    async def factory(settings: StoreSettings | None = None, **options: Any) -> Store:
        store: Store
        if url is not None:
            store = open_redis(url, settings, hub_block_ms=500, **options)
        else:
            store = MemoryStore(settings, clock=clock)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()


@pytest_asyncio.fixture
async def store(make_store: StoreFactory) -> Store:
    return await make_store()


@pytest_asyncio.fixture
async def two_workers(make_store: StoreFactory, backend: str) -> tuple[Store, Store]:
    """Two workers of one backend: on Redis two stores on the same data; in memory (one
    process) the same store twice."""
    first = await make_store()
    return first, first if backend == "memory" else await make_store()


@pytest.fixture(params=["redis", "cluster", "sentinel"])
def topology_url(request: pytest.FixtureRequest) -> str:
    """The URL of each Redis topology in turn, whole and empty."""
    url = backend_url(str(request.param), request)
    assert url is not None
    return url


@pytest_asyncio.fixture
async def redis_stores() -> AsyncIterator[Callable[..., RedisStore]]:
    """``redis_stores(url, **settings)`` -> a Redis store (closed at the end); settings are
    :class:`StoreSettings` fields (``max_events`` defaults to 10,000: checks compare whole
    logs), ``hub_block_ms`` may be given too."""
    opened: list[RedisStore] = []

    def make(url: str, *, hub_block_ms: int = 500, **settings: Any) -> RedisStore:
        settings.setdefault("max_events", 10_000)
        store = open_redis(url, StoreSettings(**settings), hub_block_ms=hub_block_ms)
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


@pytest_asyncio.fixture
async def redis_store(clean_redis_url: str) -> AsyncIterator[RedisStore]:
    """A Redis store on a flushed server, for the Redis-only tests."""
    store = open_redis(clean_redis_url)
    yield store
    await store.close()
