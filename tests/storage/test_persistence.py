"""What a store says of its persistence (``Store.persistence``): each Redis primary's
append-only file and snapshot schedule, on one server, a Sentinel group and a Redis Cluster;
``unknown`` with the reason where ``CONFIG`` is renamed or the server does not answer, never
an error; the in-memory store has none. Real ``redis-server`` processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from truco_server.ports.persistence import NONE
from truco_server.stores import MemoryStore
from truco_server.stores.redis import RedisStore, open_redis
from truco_tools.redis_proc import RedisProcess, free_port, start_redis

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]


@pytest_asyncio.fixture
async def own_redis() -> AsyncIterator[Callable[..., tuple[RedisProcess, RedisStore]]]:
    """``own_redis(**start_redis options)``: a redis-server of the test's own, and a store on it."""
    started: list[tuple[RedisProcess, RedisStore]] = []

    def make(**options: object) -> tuple[RedisProcess, RedisStore]:
        proc = start_redis(**options)  # type: ignore[arg-type]
        store = open_redis(proc.url)
        started.append((proc, store))
        return proc, store

    yield make
    for proc, store in started:
        await store.close()
        proc.stop()


async def test_each_topology_reports_every_primary_without_persistence(topology_url: str) -> None:
    store = open_redis(topology_url)
    try:
        found = await store.persistence(5.0)
    finally:
        await store.close()
    assert found.state == "off"
    assert len(found.nodes) == (3 if store.kind == "cluster" else 1)  # every primary, no replica
    assert all(n.aof is False and n.snapshots == "" and n.problem == "" for n in found.nodes)
    assert found.nodes_in("off") == [n.node for n in found.nodes]


async def test_the_append_only_file_or_snapshots_count_as_persistence(
    own_redis: Callable[..., tuple[RedisProcess, RedisStore]], tmp_path: Path
) -> None:
    (tmp_path / "aof").mkdir()
    (tmp_path / "rdb").mkdir()
    _, aof = own_redis(workdir=tmp_path / "aof", appendonly=True)
    found = await aof.persistence(5.0)
    assert found.state == "on" and found.nodes[0].aof is True
    _, rdb = own_redis(workdir=tmp_path / "rdb", extra_args=("--save", "60 1000"))  # its dump goes there
    found = await rdb.persistence(5.0)
    assert found.state == "on" and found.nodes[0].aof is False and found.nodes[0].snapshots == "60 1000"


async def test_a_server_whose_config_command_is_renamed_is_unknown_or_read_from_info(
    own_redis: Callable[..., tuple[RedisProcess, RedisStore]], tmp_path: Path
) -> None:
    _, hidden = own_redis(extra_args=("--rename-command", "CONFIG", ""))
    found = await hidden.persistence(5.0)
    assert found.state == "unknown"
    assert "CONFIG GET refused" in found.nodes[0].problem and "snapshot" in found.nodes[0].problem
    # INFO still shows the append-only file
    _, hidden_aof = own_redis(
        workdir=tmp_path, appendonly=True, extra_args=("--rename-command", "CONFIG", "")
    )
    found = await hidden_aof.persistence(5.0)
    assert found.state == "on" and found.nodes[0].aof is True and found.nodes[0].snapshots is None


async def test_a_server_that_does_not_answer_is_unknown_not_an_error() -> None:
    store = open_redis(f"redis://127.0.0.1:{free_port()}/0")
    try:
        found = await store.persistence(1.0)
    finally:
        await store.close()
    assert found.state == "unknown" and found.nodes[0].problem.startswith("no answer")


async def test_the_memory_store_has_none() -> None:
    found = await MemoryStore().persistence(1.0)
    assert found is NONE and found.state == "off" and found.nodes_in("off") == ["memory"]
