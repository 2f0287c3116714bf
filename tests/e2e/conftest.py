"""End-to-end fixtures: real gRPC workers (in-process or ``truco serve`` subprocesses) on a
real ``redis-server`` (the session server from ``tests/conftest.py``, flushed per test).

Everything a test does to a match goes through the public API; the only back door is
:func:`tests.e2e.client.server_state`/``stored_events``, which read what the server holds
so a test can compare it with what a client was sent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.helpers.serve import listening
from truco_server.app.wiring import service_factory
from truco_server.core.config import Settings
from truco_server.transports.grpc.server import Worker
from truco_tools.redis_proc import STARTUP_TIMEOUT


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
    worker = Worker(settings, service_factory)
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


def serve_log(log_dir: Path) -> str:
    """What :func:`serve_process`'s worker has written so far."""
    return (log_dir / "serve.log").read_text(errors="replace")


@contextmanager
def serve_process(redis_url: str, log_dir: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``truco serve --workers 1`` (open mode, plus ``args``) as a child process on free loopback
    ports (port 0: :func:`tests.helpers.serve.listening` reads them from its banner), for tests
    that SIGKILL a worker; yields the process and its gRPC address (its REST base URL:
    ``listening(serve_log(log_dir))``). Its output goes to ``log_dir/serve.log``; it is killed
    at the end if still running."""
    log_path = log_dir / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    cmd = [
        sys.executable, "-m", "truco_cli.main", "serve",
        "--redis", redis_url, "--grpc-port", "0", "--metrics-port", "0",
        "--http-port", "0", "--host", "127.0.0.1", "--log-level", "warning",
        "--workers", "1", *args,  # one worker process: the one a test kills
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT  # a bound: the wait ends at the banner
            while (found := listening(serve_log(log_dir))) is None:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("truco serve did not start: " + serve_log(log_dir))
                time.sleep(0.05)
            yield proc, found[0]
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
