"""Fixtures of the SDK tests: an in-process worker on a real Redis (loopback only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from truco_client import TrucoClient
from truco_server.app.embedded import EmbeddedServer


@pytest.fixture
def server(clean_redis_url: str) -> Iterator[EmbeddedServer]:
    """A worker (``Worker(Settings(redis_url=..., grpc_port=0, metrics_port=0), service_factory)``)
    on its own event-loop thread, stopped at the end."""
    srv = EmbeddedServer(redis_url=clean_redis_url, heartbeat_interval_seconds=1.0).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def client(server: EmbeddedServer) -> Iterator[TrucoClient]:
    with TrucoClient(server.address, timeout=5.0) as c:
        yield c
