"""The Redis commit's hot path: its own command packing, and the fallbacks it relies on."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from tests.storage.test_store_contract import new_match, play
from truco_server.stores import RedisMatchStore
from truco_server.stores.redis_store import pack_command


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


async def test_concurrent_commits_share_few_connections_and_close_leaves_none(clean_redis_url: str) -> None:
    """Commits keep a few connections between calls instead of handing each back to the
    pool; concurrent commits still each get one, and closing the store closes them all."""
    store = RedisMatchStore.from_url(clean_redis_url)
    admin = aioredis.Redis.from_url(clean_redis_url)
    try:
        ids = [f"m{i}" for i in range(12)]
        versions = [await new_match(store, m) for m in ids]
        done = await asyncio.gather(*(play(store, m, v, 5) for m, v in zip(ids, versions, strict=True)))
        assert done == [v + 5 for v in versions]
        for m, v in zip(ids, done, strict=True):
            events = await store.read_events(m, 0, 100)
            assert isinstance(events, list) and [x for x, _ in events] == list(range(1, v + 1))
        clients = await admin.client_list()
        assert 2 <= len(clients) <= 1 + 12 + 1  # the admin, the store's (at most one per flow + one)
        await store.close()
        me = [str(await admin.client_id())]
        for _ in range(100):  # the server sees the closes a moment later
            left = [c["id"] for c in await admin.client_list()]
            if left == me:
                break
            await asyncio.sleep(0.02)
        assert left == me
    finally:
        await admin.aclose()


async def test_commit_tokens_are_kept_for_live_matches_only(redis_store: RedisMatchStore) -> None:
    """The store remembers the head (commit token) of each match it committed or loaded, to
    check the next commit against it; an ended match takes no more commits, so a worker that
    ends or loads an ended match forgets its token (memory follows the matches in play)."""
    version = await play(redis_store, "m1", await new_match(redis_store), 2)
    assert "m1" in redis_store._heads
    done = await redis_store.commit(
        "m1", expected_version=version, state=b"end", events=[b"ev-end"], request_id="end",
        reply=b"r", status="finished",
    )  # fmt: skip
    assert done.version == version + 1 and "m1" not in redis_store._heads
    other = RedisMatchStore(redis_store.client)  # another worker, reading the ended match
    loaded = await other.load("m1")
    assert loaded is not None and loaded.status == "finished" and "m1" not in other._heads
    await play(redis_store, "m2", await new_match(redis_store, "m2"), 1)
    assert (await other.load("m2")) is not None and "m2" in other._heads
