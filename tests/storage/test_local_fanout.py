"""The Redis stream hub of one server: a worker's own commits reach its subscriptions
without being read back from Redis (with their notes), commits from another worker still
arrive, a match starts local (polled) and turns remote (the blocking read) when another
worker commits on it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.proxy import Proxy
from tests.storage.support import collect, new_match, play, step
from truco_server.ports.matches import Batch
from truco_server.stores.redis import open_redis
from truco_server.stores.redis.feed import RedisStreamHub
from truco_server.stores.subscription import EventSubscription

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


def _counted(sub: EventSubscription, reads: list[tuple[str, int]]) -> EventSubscription:
    """``sub``, its reads of the log (its catch-up) recorded in ``reads`` as ``(match id,
    after version)``: it reads through a stand-in for the store's log."""
    log = sub._reader

    async def read_events(match_id: str, after_version: int, limit: int) -> Any:
        reads.append((match_id, after_version))
        return await log.read_events(match_id, after_version, limit)

    sub._reader = Proxy(log, read_events=read_events)
    return sub


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def _count_unblocks(hub: RedisStreamHub) -> list[int]:
    """The client ids the hub's ``CLIENT UNBLOCK`` calls name, from now on."""
    calls: list[int] = []
    unblock = hub._waker.client_unblock

    async def counted(client_id: int, *args: Any, **kwargs: Any) -> Any:
        calls.append(client_id)
        return await unblock(client_id, *args, **kwargs)

    hub._waker.client_unblock = counted  # type: ignore[method-assign]
    return calls


async def test_new_subscriptions_start_local_and_cost_no_unblock(clean_redis_url: str) -> None:
    """A match starts local: following it only adds it to the poll, so new subscriptions
    interrupt no read (before, each one cost a CLIENT UNBLOCK and a blocking read of every
    stream), and another worker's first commit on it is found by the poll, which makes it
    remote: the next arrive through the blocking read."""
    writer = open_redis(clean_redis_url)
    reader = open_redis(clean_redis_url, hub_block_ms=30_000)
    try:
        mids = [f"m{i}" for i in range(20)]
        for mid in mids:
            await new_match(writer, mid)
        subs = [reader.matches.subscribe(mids[0], 2)]
        assert await subs[0].next(0.2) is None  # caught up, followed
        hub = reader.matches.hub
        assert isinstance(hub, RedisStreamHub)
        unblocks = _count_unblocks(hub)
        subs += [reader.matches.subscribe(mid, 2) for mid in mids[1:]]
        assert await asyncio.gather(*(sub.next(0.2) for sub in subs)) == [None] * len(subs)
        assert all(hub.is_local(mid) for mid in mids) and unblocks == []
        await play(writer, "m3", 2, 1)  # another worker: found by the poll
        assert await collect(subs[3], 3, timeout=3) == [3]
        await _until(lambda: not hub.is_local("m3"))
        reads = hub.reads
        await play(writer, "m3", 3, 2)  # remote now: the blocking read brings them
        assert await collect(subs[3], 5, timeout=3) == [4, 5]
        assert hub.reads > reads
        for sub in subs:
            sub.close()
    finally:
        await reader.close()
        await writer.close()


async def test_a_new_subscription_is_polled_in_time_while_the_hub_blocks_long(clean_redis_url: str) -> None:
    """With only remote streams followed the hub blocks ``block_ms`` (30 s here) on them: a
    new subscription interrupts that read once, so its stream is polled within ``poll_ms``."""
    writer = open_redis(clean_redis_url)
    reader = open_redis(clean_redis_url, hub_block_ms=30_000)
    try:
        await new_match(writer, "m1")
        await new_match(writer, "m2")
        sub1 = reader.matches.subscribe("m1", 2)
        assert await sub1.next(0.2) is None
        hub = reader.matches.hub
        assert isinstance(hub, RedisStreamHub)
        await play(writer, "m1", 2, 1)
        assert await collect(sub1, 3, timeout=3) == [3]
        await _until(lambda: not hub.is_local("m1"))  # the hub now blocks 30 s on m1 alone
        unblocks = _count_unblocks(hub)
        sub2 = reader.matches.subscribe("m2", 2)
        assert await sub2.next(0.2) is None
        await play(writer, "m2", 2, 1)
        assert await collect(sub2, 3, timeout=3) == [3]
        assert unblocks  # the long read was interrupted
        await play(writer, "m1", 3, 1)
        assert await collect(sub1, 4, timeout=3) == [4]
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


async def test_a_second_subscription_at_the_cursor_reads_no_catch_up(clean_redis_url: str) -> None:
    """A match's second subscription on a worker that starts where the hub's cursor is (the
    other seat, at the same version) makes no catch-up read: the hub offers it everything
    after, local commits and another worker's alike; one that starts behind the cursor still
    reads what it missed."""
    a = open_redis(clean_redis_url, hub_block_ms=30_000)
    b = open_redis(clean_redis_url)
    reads: list[tuple[str, int]] = []
    try:
        await new_match(a, "m1")
        first = _counted(a.matches.subscribe("m1", 2), reads)
        hub = a.matches.hub
        assert isinstance(hub, RedisStreamHub)
        first_task = asyncio.ensure_future(collect(first, 2 + 3 + 2 + 3))
        await _until(lambda: hub.cursor("m1") == 2 and len(reads) == 1)
        second = _counted(a.matches.subscribe("m1", 2), reads)
        second_task = asyncio.ensure_future(collect(second, 2 + 3 + 2 + 3))
        await asyncio.sleep(0)  # attached: its first next() runs
        await play(a, "m1", 2, 3)  # local commits
        await play(b, "m1", 5, 2)  # another worker's: the hub reads them for both
        late = _counted(a.matches.subscribe("m1", 4), reads)  # behind the cursor: reads 5.. itself
        late_task = asyncio.ensure_future(collect(late, 2 + 3 + 2 + 3))
        await _until(lambda: ("m1", 4) in reads)
        await play(a, "m1", 7, 3)
        assert await first_task == list(range(3, 11))
        assert await second_task == list(range(3, 11))  # everything, once, in order
        assert await late_task == list(range(5, 11))
        assert reads.count(("m1", 2)) == 1  # the first subscription's only
        for sub in (first, second, late):
            sub.close()
    finally:
        await a.close()
        await b.close()
