"""Fixtures of the REST face tests: a real worker (gRPC + HTTP) on a real redis-server.

``rest_worker`` runs the worker in-process (the test's event loop), on free loopback ports,
with two operator API keys. ``served`` runs ``truco serve`` as a subprocess instead, for
synchronous clients (schemathesis, a browser) that must not block the test's loop.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from truco_contract.pb import match_service_pb2_grpc
from truco_server.app.wiring import service_factory
from truco_server.core.config import ApiKey, Settings
from truco_server.transports.grpc.server import Worker

ACME_KEY = "k-acme-secret"
OTHER_KEY = "k-other-secret"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class RestWorker:
    worker: Worker
    base: str
    http: aiohttp.ClientSession
    stub: match_service_pb2_grpc.MatchServiceStub


def worker_settings(redis_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "redis_url": redis_url,
        "grpc_port": 0,
        "http_port": 0,
        "metrics_port": 0,
        "heartbeat_interval_seconds": 0.3,
        "shutdown_grace_seconds": 1.0,
        "api_keys": (ApiKey("acme", ACME_KEY), ApiKey("other", OTHER_KEY)),
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
async def rest_worker(clean_redis_url: str) -> AsyncIterator[RestWorker]:
    worker = Worker(worker_settings(clean_redis_url), service_factory)
    await worker.start()
    assert worker.http_port
    channel = grpc.aio.insecure_channel(worker.grpc_address)
    timeout = aiohttp.ClientTimeout(total=30, sock_read=10)
    session = aiohttp.ClientSession(timeout=timeout)
    try:
        yield RestWorker(
            worker,
            f"http://127.0.0.1:{worker.http_port}",
            session,
            match_service_pb2_grpc.MatchServiceStub(channel),
        )
    finally:
        await session.close()
        await channel.close()
        await worker.stop()


@dataclass
class Served:
    base: str
    proc: subprocess.Popen[str]
    grpc_address: str = ""


def _drain(stream: Any, keep: list[str]) -> None:
    for line in stream:
        keep.append(line)
        del keep[:-200]


@pytest.fixture
def served(clean_redis_url: str) -> Iterator[Served]:
    """``truco serve`` in a subprocess (free ports), stopped with SIGTERM by its pid."""
    env = {
        **os.environ,
        "REDIS_URL": clean_redis_url,
        "TRUCO_API_KEYS": f"acme={ACME_KEY}",
        "TRUCO_LOG_LEVEL": "warning",
        "TRUCO_HEARTBEAT_INTERVAL_SECONDS": "1",
        "TRUCO_SHUTDOWN_GRACE_SECONDS": "1",
        "TRUCO_EPHEMERAL_STORE_OK": "1",  # the test's Redis keeps nothing, on purpose
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "truco_cli.main",
            "serve",
            "--grpc-port",
            "0",
            "--http-port",
            "0",
            "--metrics-port",
            "0",
            "--host",
            "127.0.0.1",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = None
    grpc_address = ""
    seen: list[str] = []
    deadline = time.monotonic() + 90  # a start on a loaded machine takes a while
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        g = re.search(r"gRPC listening on (\S+)", line)
        if g:
            grpc_address = g.group(1)
        m = re.search(r"REST/JSON listening on (http://\S+)", line)
        if m:
            base = m.group(1)
            break
    if base is not None:
        # Keep draining its output so a chatty server never blocks on a full pipe.
        threading.Thread(target=_drain, args=(proc.stdout, seen), daemon=True).start()
    if base is None:
        proc.kill()
        proc.wait(10)
        pytest.fail("truco serve did not announce its REST port:\n" + "".join(seen))
    try:
        yield Served(base, proc, grpc_address)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
