"""Pytest fixtures: a local Redis Cluster and a local Sentinel group (real processes).

Registered for the whole suite by ``tests/conftest.py`` (``pytest_plugins``). Each topology
is started once per test session, on the first test that asks for it, and stopped by pid at
the end. Tests take the function-scoped fixtures, which hand the session's topology over
whole and empty: a node a previous test killed is restarted, the fixture waits until every
node runs and every replica is in sync, then every primary is flushed.

``redis-server`` is a CI dependency: without it these fixtures FAIL, never skip (as
``redis_url`` in ``tests/conftest.py``). The failure timings are short for fast tests:
``cluster-node-timeout`` 1 s, sentinel ``down-after-milliseconds`` 1 s; a failover takes
a few seconds.

The implementation is :mod:`truco_tools.redis_cluster`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from truco_tools.redis_cluster import (
    LocalRedisCluster,
    LocalSentinelGroup,
    start_cluster,
    start_sentinel_group,
)
from truco_tools.redis_proc import RedisServerMissing

#: Failure detection of the test topologies, milliseconds.
TEST_NODE_TIMEOUT_MS = 1000
TEST_DOWN_AFTER_MS = 1000
#: How long a fixture waits for a topology to be whole again, seconds.
HEAL_TIMEOUT = 30.0


@pytest.fixture(scope="session")
def redis_cluster_session() -> Iterator[LocalRedisCluster]:
    """The session's Redis Cluster: 3 primaries and 3 replicas on loopback."""
    try:
        cluster = start_cluster(node_timeout_ms=TEST_NODE_TIMEOUT_MS)
    except RedisServerMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def redis_cluster(redis_cluster_session: LocalRedisCluster) -> LocalRedisCluster:
    """The session's cluster, every node running and in sync, every primary empty."""
    cluster = redis_cluster_session
    for node in cluster.nodes:
        if not node.running():
            node.process.restart()
    cluster.wait_healthy(HEAL_TIMEOUT)
    cluster.flushall()
    return cluster


@pytest.fixture(scope="session")
def redis_sentinel_session() -> Iterator[LocalSentinelGroup]:
    """The session's Sentinel group: 1 primary, 1 replica, 3 sentinels on loopback."""
    try:
        group = start_sentinel_group(down_after_ms=TEST_DOWN_AFTER_MS)
    except RedisServerMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield group
    finally:
        group.stop()


@pytest.fixture
def redis_sentinel(redis_sentinel_session: LocalSentinelGroup) -> LocalSentinelGroup:
    """The session's Sentinel group, every process running and in sync, the primary empty."""
    group = redis_sentinel_session
    for sentinel in group.sentinels:
        if not sentinel.running():
            sentinel.restart()
    for server in group.servers:
        if not server.running():
            group.restart(server, HEAL_TIMEOUT)
    group.wait_healthy(HEAL_TIMEOUT)
    group.flushall()
    return group
