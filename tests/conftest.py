"""Shared fixtures.

``redis_url`` starts one real ``redis-server`` per test session on a free loopback port
(never a mock). If ``redis-server`` is missing the tests that need it FAIL, on purpose:
a skip would hide missing coverage.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `tests.helpers`

from tests.helpers.redis_proc import RedisServerMissing, start_redis

#: Fixtures of a local Redis Cluster and Sentinel group (started only by tests that use them).
pytest_plugins = ("tests.helpers.redis_cluster",)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to run on compiled modules older than their source (``make compiled``)."""
    from truco_server.core.build import stale_extensions, stale_message

    stale = stale_extensions()
    if stale:
        pytest.exit(stale_message(stale), returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_report_header() -> str:
    from truco_server.core.build import describe

    return f"build: {describe()}"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a session-wide ``redis-server`` (db 0), stopped by pid at the end."""
    try:
        proc = start_redis()
    except RedisServerMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield proc.url
    finally:
        proc.stop()


@pytest.fixture
def clean_redis_url(redis_url: str) -> Iterator[str]:
    """``redis_url`` with the database flushed before the test."""
    import redis

    with redis.Redis.from_url(redis_url) as client:
        client.flushdb()
    yield redis_url
