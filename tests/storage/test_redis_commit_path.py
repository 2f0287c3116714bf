"""The Redis commit's hot path: its own command packing, and the fallbacks it relies on."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from tests.storage.test_store_contract import new_match, play
from truco_server.storage import RedisMatchStore
from truco_server.storage.redis_store import pack_command


def test_pack_command_matches_redis_py() -> None:
    args = ("EVALSHA", "abc123", 3, "k1", "k{m}:2", b"\x00\r\nbinary\xff", 0, -17, "", b"", "ümlaut")
    ours = pack_command(*args)
    theirs = b"".join(Connection().pack_command(*args))
    assert ours == theirs


async def test_commit_reloads_the_script_after_a_script_flush(redis_store: RedisMatchStore) -> None:
    version = await new_match(redis_store)
    version = await play(redis_store, "m1", version, 2)
    await redis_store.client.script_flush()  # as after a restart or a failover
    assert await play(redis_store, "m1", version, 1) == version + 1
    loaded = await redis_store.load("m1")
    assert loaded is not None and loaded.version == version + 1


async def test_commit_recovers_when_its_connection_was_killed(
    redis_store: RedisMatchStore, clean_redis_url: str
) -> None:
    version = await new_match(redis_store)
    version = await play(redis_store, "m1", version, 1)
    admin = aioredis.Redis.from_url(clean_redis_url)
    try:
        killed = await admin.client_kill_filter(_type="normal", skipme=True)
        assert killed >= 1  # the store's pooled connection is gone
    finally:
        await admin.aclose()
    assert await play(redis_store, "m1", version, 1) == version + 1
    events = await redis_store.read_events("m1", 0, 100)
    assert isinstance(events, list)
    assert [v for v, _ in events] == list(range(1, version + 2))  # nothing lost, nothing doubled


@pytest.mark.parametrize("n_events", [0, 1, 5])
async def test_commit_with_any_number_of_events(redis_store: RedisMatchStore, n_events: int) -> None:
    version = await new_match(redis_store)
    res = await redis_store.commit(
        "m1",
        expected_version=version,
        state=b"s",
        events=[b"e%d" % i for i in range(n_events)],
        request_id="r",
        reply=b"ok",
    )
    assert res.version == version + n_events
