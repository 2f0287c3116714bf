"""The Redis stream hub of one server: a worker's own commits reach its subscriptions
without being read back from Redis (with their notes), commits from another worker still
arrive, and a new subscription interrupts the hub's blocked read."""

from __future__ import annotations

import asyncio

import pytest

from tests.storage.support import collect, new_match, play, step
from truco_server.ports.matches import Batch
from truco_server.stores.redis import open_redis
from truco_server.stores.redis.feed import RedisStreamHub

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def test_own_commits_are_delivered_locally_and_remote_ones_still_arrive(clean_redis_url: str) -> None:
    a = open_redis(clean_redis_url, hub_block_ms=30_000)
    b = open_redis(clean_redis_url)
    try:
        await new_match(a, "m1")
        sub = a.matches.subscribe("m1", 2)
        task = asyncio.ensure_future(collect(sub, 2 + 5 + 3 + 4))
        await asyncio.sleep(0.1)  # attached, caught up
        hub = a.matches.hub
        assert isinstance(hub, RedisStreamHub)
        await play(a, "m1", 2, 5)  # five local commits: delivered locally, match turns local
        assert hub.local_batches >= 4 and hub.is_local("m1")
        await play(b, "m1", 7, 3)  # another worker commits: found by the poll, match remote again
        for _ in range(100):
            if not hub.is_local("m1"):
                break
            await asyncio.sleep(0.02)
        assert not hub.is_local("m1")
        await play(a, "m1", 10, 4)  # back to local commits
        assert await task == list(range(3, 15))  # everything, once, in order
        sub.close()
    finally:
        await a.close()
        await b.close()


async def test_local_commit_with_cursor_behind_is_read_from_redis(clean_redis_url: str) -> None:
    a = open_redis(clean_redis_url, hub_block_ms=30_000)
    b = open_redis(clean_redis_url)
    try:
        await new_match(a, "m1")
        sub = a.matches.subscribe("m1", 2)
        task = asyncio.ensure_future(collect(sub, 2 + 2 + 2))
        await asyncio.sleep(0.1)
        await play(b, "m1", 2, 2)  # remote, maybe not read yet by a's hub
        await play(a, "m1", 4, 2)  # local commits on top: must not jump the remote ones
        assert await task == [3, 4, 5, 6]
        sub.close()
    finally:
        await a.close()
        await b.close()


async def test_redis_hub_picks_up_new_subscription_at_once(clean_redis_url: str) -> None:
    """A new subscription interrupts the hub's blocked XREAD (CLIENT UNBLOCK)."""
    writer = open_redis(clean_redis_url)
    reader = open_redis(clean_redis_url, hub_block_ms=30_000)
    try:
        await new_match(writer, "m1")
        await new_match(writer, "m2")
        sub1 = reader.matches.subscribe("m1", 2)
        t1 = asyncio.create_task(collect(sub1, 3, timeout=20))
        await asyncio.sleep(0.2)  # the hub is now blocked on m1 only
        sub2 = reader.matches.subscribe("m2", 2)
        t2 = asyncio.create_task(collect(sub2, 3, timeout=20))
        await asyncio.sleep(0.1)
        await play(writer, "m2", 2, 1)
        assert await asyncio.wait_for(t2, 3) == [3]
        await play(writer, "m1", 2, 1)
        assert await asyncio.wait_for(t1, 3) == [3]
        sub1.close()
        sub2.close()
    finally:
        await reader.close()
        await writer.close()


async def test_the_note_survives_the_hub_reading_the_commit_first(topology_url: str) -> None:
    """The stream hub may read a local commit's events (a blocking XREAD, a doorbell) before
    the commit's own reply arrives: it holds them until the commit returns, so the batch is
    delivered once, by the commit, with its note -- commit after commit."""
    store = open_redis(topology_url)
    try:
        version = await new_match(store, "m1")
        sub = store.matches.subscribe("m1", version)
        assert await sub.next(0.3) is None  # caught up, followed by the hub
        for i in range(30):
            await store.matches.commit(step("m1", version, note=i))
            got = await sub.next(5)
            assert isinstance(got, Batch) and got.events[0][0] == version + 1 and got.note == i, got
            version += 1
        assert await sub.next(0.1) is None  # nothing twice
        sub.close()
    finally:
        await store.close()
