"""The local Redis Cluster and Sentinel group (``truco_tools.redis_cluster``) really are what
the storage layer is tested on (tests/storage, tests/e2e/test_cluster.py): every slot
served, writes on every primary through redis-py's own cluster client, a primary killed
(SIGKILL) and its replica promoted with the acknowledged writes intact, a sentinel failover
that ``Sentinel.master_for`` follows.

Real ``redis-server`` processes on loopback, no mock. Each test takes a few seconds (a
failover is detected after the 1 s node timeout of the test fixtures).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from truco_tools.redis_cluster import (
    ClusterNode,
    LocalRedisCluster,
    LocalSentinelGroup,
    parse_cluster_nodes,
)
from truco_tools.redis_proc import start_redis

HOST_PORT = r"127\.0\.0\.1:\d{1,5}"
CLUSTER_URL = re.compile(rf"^redis\+cluster://{HOST_PORT}(?:,{HOST_PORT})*$")
SENTINEL_URL = re.compile(rf"^redis\+sentinel://{HOST_PORT}(?:,{HOST_PORT})*/[A-Za-z0-9_.-]+$")

pytestmark = pytest.mark.timeout(60)


def keys_on(cluster: LocalRedisCluster, primary: ClusterNode, count: int, prefix: str) -> list[str]:
    """`count` key names whose slots `primary` serves."""
    ranges = next(v.slots for v in cluster.topology() if v.node_id == primary.node_id)
    found: list[str] = []
    i = 0
    while len(found) < count:
        key = f"{prefix}:{i}"
        slot = key_slot(key.encode())
        if any(first <= slot <= last for first, last in ranges):
            found.append(key)
        i += 1
    return found


def write_acknowledged(client: redis.Redis, items: dict[str, str], replicas: int = 1) -> int:
    """SET every item, then WAIT on the same connection (a pipeline holds one connection;
    WAIT counts the replicas that acknowledged this connection's writes)."""
    pipe = client.pipeline(transaction=False)
    for key, value in items.items():
        pipe.set(key, value)
    pipe.execute_command("WAIT", replicas, 5000)
    replies: list[Any] = pipe.execute()
    assert all(r is True for r in replies[:-1])
    return int(replies[-1])


# ------------------------------------------------------------------------------ cluster
def test_parse_cluster_nodes() -> None:
    text = (
        "07c3 127.0.0.1:30004@31004 slave e7d1 0 1426238317239 4 connected\n"
        "e7d1 127.0.0.1:30001@31001,host-a myself,master - 0 0 1 connected 0-5460 7000 [5461->-67ed]\n"
        "6ec2 127.0.0.1:30002@31002 master,fail - 1426238316232 1426238315232 2 disconnected\n"
    )
    replica, primary, failed = parse_cluster_nodes(text)
    assert (replica.node_id, replica.port, replica.primary_id, replica.is_primary) == (
        "07c3",
        30004,
        "e7d1",
        False,
    )
    assert primary.is_primary and primary.slots == ((0, 5460), (7000, 7000)) and not primary.failing
    assert primary.host == "127.0.0.1" and primary.port == 30001
    assert failed.failing and failed.slots == ()


def test_cluster_serves_every_slot_from_three_primaries_each_with_a_replica(
    redis_cluster: LocalRedisCluster,
) -> None:
    cluster = redis_cluster
    assert len(cluster.nodes) == 6
    assert len({n.pid for n in cluster.nodes}) == 6 and all(n.running() for n in cluster.nodes)
    dirs = {n.process.workdir for n in cluster.nodes}
    assert len(dirs) == 6 and all(d is not None and (d / "nodes.conf").exists() for d in dirs)

    for node in cluster.nodes:  # every node's own view, not only one
        views = node.view()
        primaries = [v for v in views if v.is_primary]
        assert len(primaries) == 3 and not any(v.failing for v in views)
        served = sorted(r for v in primaries for r in v.slots)
        covered = [slot for first, last in served for slot in range(first, last + 1)]
        assert covered == list(range(REDIS_CLUSTER_HASH_SLOTS)), "a slot is missing or served twice"
        followers = sorted(v.primary_id for v in views if not v.is_primary if v.primary_id)
        assert followers == sorted(v.node_id for v in primaries), "each primary has exactly one replica"
        with node.client() as c:
            info = c.execute_command("CLUSTER", "INFO")
        assert "cluster_state:ok" in info and "cluster_known_nodes:6" in info

    assert CLUSTER_URL.match(cluster.url), cluster.url
    assert cluster.url.removeprefix("redis+cluster://").split(",") == [n.address for n in cluster.nodes]


def test_cluster_client_writes_on_every_primary(redis_cluster: LocalRedisCluster) -> None:
    cluster = redis_cluster
    primaries = cluster.primaries()
    assert len(primaries) == 3
    with cluster.client(decode_responses=True) as rc:
        for primary in primaries:
            for key in keys_on(cluster, primary, 5, f"every-primary-{primary.index}"):
                assert rc.set(key, primary.address)
        # A hash tag keeps keys on one slot: a multi-key command on them is accepted.
        assert rc.mset({"{match-1}:a": "1", "{match-1}:b": "2"})
        assert rc.mget(["{match-1}:a", "{match-1}:b"]) == ["1", "2"]
    tagged_owner = cluster.primary_for_key("{match-1}:a")
    for primary in primaries:
        with primary.client() as c:
            expected = 5 + (2 if primary is tagged_owner else 0)
            assert c.dbsize() == expected, f"node {primary.index} holds {c.dbsize()} keys"
            stored = {c.get(k) for k in c.scan_iter(match="every-primary-*")}
            assert stored == {primary.address}, "a key landed on a primary that does not serve its slot"


def test_primary_kill_promotes_its_replica_and_acknowledged_writes_survive(
    redis_cluster: LocalRedisCluster,
) -> None:
    cluster = redis_cluster
    victim = cluster.primaries()[0]
    (replica,) = cluster.replicas_of(victim)
    rc = cluster.client(decode_responses=True)
    try:
        written: dict[str, str] = {}
        for primary in cluster.primaries():
            items = {k: f"v-{k}" for k in keys_on(cluster, primary, 20, f"kept-{primary.index}")}
            node_client = rc.get_redis_connection(rc.get_node_from_key(next(iter(items))))
            assert write_acknowledged(node_client, items) == 1, "WAIT 1: the replica acknowledged"
            written |= items

        failover = cluster.kill_primary(victim)
        assert failover.killed is victim and failover.promoted is replica
        assert not victim.running() and replica.role() == "master"
        assert failover.seconds < 20

        # A new client finds the new primary, and so does the old one once it refreshes.
        with cluster.client(decode_responses=True) as fresh:
            assert {k: fresh.get(k) for k in written} == written
            assert fresh.set("after-failover", "1")
        assert {k: rc.get(k) for k in written} == written
    finally:
        rc.close()

    cluster.restart(victim)
    assert victim.role() == "slave"
    assert [r.node_id for r in cluster.replicas_of(replica)] == [victim.node_id]
    victim_keys = {k: v for k, v in written.items() if cluster.primary_for_key(k) is replica}
    assert victim_keys
    with victim.client() as c:  # the restarted node resynced the data it lost on SIGKILL
        pipe = c.pipeline(transaction=False)
        pipe.execute_command("READONLY")
        for key in victim_keys:
            pipe.get(key)
        assert pipe.execute()[1:] == list(victim_keys.values())


# ------------------------------------------------------------------------------ sentinel
def test_sentinel_failover_promotes_the_replica_and_master_for_follows(
    redis_sentinel: LocalSentinelGroup,
) -> None:
    group = redis_sentinel
    assert len(group.servers) == 2 and len(group.sentinels) == 3
    assert SENTINEL_URL.match(group.url), group.url
    assert group.url.endswith("/truco")
    primary = group.current_primary()
    (replica,) = [s for s in group.servers if s is not primary]

    master = group.master_client(decode_responses=True, socket_timeout=2)
    try:
        items = {f"sentinel:{i}": f"v{i}" for i in range(20)}
        assert write_acknowledged(master, items) == 1
        assert master.connection_pool.get_master_address() == (primary.host, primary.port)  # type: ignore[attr-defined]

        failover = group.kill_primary()
        assert failover.killed is primary and failover.promoted is replica
        assert failover.seconds < 20
        with replica.client() as c:
            assert c.info("replication")["role"] == "master"

        # The same master_for client: its next command goes to the promoted replica.
        assert {k: master.get(k) for k in items} == items
        assert master.connection_pool.get_master_address() == (replica.host, replica.port)  # type: ignore[attr-defined]
        assert master.set("after-failover", "1")
    finally:
        master.close()

    group.restart(primary)
    with primary.client() as c:
        info = c.info("replication")
    assert info["role"] == "slave" and int(info["master_port"]) == replica.port
    assert group.current_primary() is replica


# ------------------------------------------------------------------------------ processes
def test_append_only_server_keeps_its_data_across_a_kill_and_restart() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # fsync always: with everysec Redis may hold a write back for up to 2 s while an
        # earlier fsync is slow (a loaded disk), so a SIGKILL could lose an acknowledged write
        proc = start_redis(workdir=Path(tmp), appendonly=True, extra_args=("--appendfsync", "always"))
        try:
            with proc.client() as c:
                c.set("kept", "yes")  # in the append-only file, fsynced, before the reply
            old_pid = proc.pid
            proc.kill()
            proc.restart()
            assert proc.pid != old_pid and proc.running()
            with proc.client() as c:
                assert c.get("kept") == b"yes"
            assert (Path(tmp) / "redis.log").exists()
        finally:
            proc.stop()


def test_command_line_starts_reports_and_stops_a_cluster() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "truco_tools.redis_cluster", "cluster", "--duration", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    nodes = [
        line for line in lines if re.match(r"^node \d (primary|replica) 127\.0\.0\.1:\d+ pid=\d+ dir=", line)
    ]
    assert len(nodes) == 6 and sum(" primary " in line for line in nodes) == 3
    (url,) = [line.removeprefix("url ") for line in lines if line.startswith("url ")]
    assert CLUSTER_URL.match(url)
    assert lines[-1] == "stopped"
    pids = [int(re.search(r"pid=(\d+)", line).group(1)) for line in nodes]  # type: ignore[union-attr]
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )
