"""End-to-end fixtures: real gRPC workers (in-process or ``truco serve`` subprocesses) on a
real ``redis-server`` (the session server from ``tests/conftest.py``, flushed per test).

Everything a test does to a match goes through the public API; the only back door is
:func:`tests.e2e.client.server_state`/``stored_events``, which read what the server holds
so a test can compare it with what a client was sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
import pytest_asyncio

from truco_server.config import Settings
from truco_server.grpc_server import Worker
from truco_server.service_wiring import servicer_factory


def e2e_settings(redis_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_url": redis_url,
        "grpc_port": 0,
        "metrics_port": 0,
        "http_port": 0,
        "shutdown_grace_seconds": 1.0,
        "heartbeat_interval_seconds": 2.0,
        # the leak checks compare what clients got with the whole stored log
        "event_log_max_len": 100_000,
    }
    values.update(overrides)
    return Settings(**values)


@asynccontextmanager
async def running_worker(settings: Settings) -> AsyncIterator[Worker]:
    worker = Worker(settings, servicer_factory)
    await worker.start()
    try:
        yield worker
    finally:
        await worker.stop()


WorkerFactory = Callable[..., AbstractAsyncContextManager[Worker]]


@pytest.fixture
def make_worker(clean_redis_url: str) -> WorkerFactory:
    """``async with make_worker(**settings_overrides) as worker`` on the test's Redis."""

    def make(**overrides: Any) -> AbstractAsyncContextManager[Worker]:
        return running_worker(e2e_settings(clean_redis_url, **overrides))

    return make


@pytest_asyncio.fixture
async def worker(make_worker: WorkerFactory) -> AsyncIterator[Worker]:
    async with make_worker() as w:
        yield w
