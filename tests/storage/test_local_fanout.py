"""Local fan-out of the Redis stream hub: a worker's own commits reach its subscriptions
without being read back from Redis, and commits from another worker still arrive."""

from __future__ import annotations

import asyncio

from tests.storage.test_store_contract import collect, new_match, play
from truco_server.stores import RedisMatchStore


async def test_own_commits_are_delivered_locally_and_remote_ones_still_arrive(clean_redis_url: str) -> None:
    a = RedisMatchStore.from_url(clean_redis_url, hub_block_ms=30_000)
    b = RedisMatchStore.from_url(clean_redis_url)
    try:
        await new_match(a, "m1")
        sub = a.subscribe("m1", 2)
        task = asyncio.ensure_future(collect(sub, 2 + 5 + 3 + 4))
        await asyncio.sleep(0.1)  # attached, caught up
        hub = a._hub
        assert hub is not None
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
        await sub.aclose()
    finally:
        await a.close()
        await b.close()


async def test_local_commit_with_cursor_behind_is_read_from_redis(clean_redis_url: str) -> None:
    a = RedisMatchStore.from_url(clean_redis_url, hub_block_ms=30_000)
    b = RedisMatchStore.from_url(clean_redis_url)
    try:
        await new_match(a, "m1")
        sub = a.subscribe("m1", 2)
        task = asyncio.ensure_future(collect(sub, 2 + 2 + 2))
        await asyncio.sleep(0.1)
        await play(b, "m1", 2, 2)  # remote, maybe not read yet by a's hub
        await play(a, "m1", 4, 2)  # local commits on top: must not jump the remote ones
        assert await task == [3, 4, 5, 6]
        await sub.aclose()
    finally:
        await a.close()
        await b.close()
