"""A stream hub outlives a bug in its own loop: the error is logged and counted
(``truco_stream_hub_failures_total``), the loop starts again, every followed stream is checked,
and delivery goes on -- on one Redis, a Sentinel group and a cluster. Without the restart the
worker's streams would all stay silent until it was restarted."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import pytest

from tests.helpers.proxy import Proxy
from tests.storage.support import Follower, new_match, play
from truco_server.core import metrics
from truco_server.stores.redis import RedisStore
from truco_server.stores.redis.cluster_feed import ClusterStreamHub
from truco_server.stores.redis.feed import RedisStreamHub

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]


def failures() -> float:
    return metrics.STREAM_HUB_FAILURES._value.get()


def break_once(hub: RedisStreamHub | ClusterStreamHub, tripped: asyncio.Event) -> None:
    """Make the hub's loop raise an error no Redis fault explains: the hook the hub counts its
    round trips with (``on_round_trip``) raises the first time it is called, by the loop at
    its first read or check of the streams."""
    count = hub._on_round_trip

    def broken(n: int) -> None:
        if not tripped.is_set():
            tripped.set()
            raise RuntimeError("a bug in the hub's loop")
        count(n)

    hub._on_round_trip = broken


async def test_a_hub_whose_loop_fails_restarts_it_and_delivery_goes_on(
    topology_url: str, redis_stores: Callable[..., RedisStore], caplog: pytest.LogCaptureFixture
) -> None:
    writer, reader = redis_stores(topology_url), redis_stores(topology_url)
    start = version = await play(writer, "m1", await new_match(writer, "m1"), 2)
    sub = reader.matches.subscribe("m1", version)  # made with the worker's hub, not yet attached
    hub = reader.matches.hub
    assert isinstance(hub, RedisStreamHub | ClusterStreamHub)
    tripped = asyncio.Event()
    break_once(hub, tripped)
    before = failures()
    with caplog.at_level(logging.ERROR, logger="truco_server.stores.redis.hub"):
        follower = Follower(reader, sub)
        await asyncio.wait_for(tripped.wait(), 20)
        for _ in range(3):  # commits by another worker reach the reader only through its hub
            version = await play(writer, "m1", version, 1)
            await follower.wait_for(version)
    assert failures() == before + 1
    assert any("restarting it" in r.getMessage() and r.exc_info for r in caplog.records)
    assert follower.gaps == []
    follower.assert_contiguous_or_reported(start)
    await follower.close()


@pytest.mark.parametrize("topology_url", ["redis", "sentinel"], indirect=True)
async def test_a_stream_left_while_the_hub_connects_is_not_read(
    topology_url: str, redis_stores: Callable[..., RedisStore], caplog: pytest.LogCaptureFixture
) -> None:
    """The hub's first read asks Redis for its connection's id first (``CLIENT ID``). A
    subscription that ends meanwhile leaves no stream to read: the hub plans again instead of
    sending an ``XREAD`` of no stream (a syntax error for Redis, logged as a failed read and
    answered by reconnecting), and the next subscription is served as usual."""
    writer, reader = redis_stores(topology_url), redis_stores(topology_url)
    version = await new_match(writer, "m1")
    sub = reader.matches.subscribe("m1", version)  # made with the worker's hub, not yet attached
    hub = reader.matches.hub
    assert isinstance(hub, RedisStreamHub)
    client = hub._reader
    await client.initialize()
    connection = client.connection
    assert connection is not None
    asking, answer = asyncio.Event(), asyncio.Event()

    async def held_command(*args: object, **kwargs: object) -> None:  # CLIENT ID, the first time
        if " ".join(map(str, args)) == "CLIENT ID" and not answer.is_set():
            asking.set()
            await answer.wait()
        await connection.send_command(*args, **kwargs)

    client.connection = Proxy(connection, send_command=held_command)  # type: ignore[assignment]

    def failed() -> list[str]:
        return [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]

    try:
        with caplog.at_level(logging.WARNING, logger="truco_server.stores.redis"):
            follower = Follower(reader, sub)
            await asyncio.wait_for(asking.wait(), 20)
            await follower.close()  # the only stream is left while the hub waits for its id
            answer.set()
            deadline = time.monotonic() + 20
            while hub.reader_id is None and not failed():  # the id answered (or a read failed)
                assert time.monotonic() < deadline, "the hub never had its id"
                await asyncio.sleep(0.01)
            later = reader.matches.subscribe("m1", version)
            again = Follower(reader, later)
            await again.wait_for(version)  # following, and caught up
            version = await play(writer, "m1", version, 2)
            await again.wait_for(version)
            await again.close()
    finally:
        client.connection = connection  # the pool takes back only the connection it gave
    assert failed() == []
