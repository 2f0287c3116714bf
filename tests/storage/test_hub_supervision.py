"""A stream hub outlives a bug in its own loop: the error is logged and counted
(``truco_stream_hub_failures_total``), the loop starts again, every followed stream is checked,
and delivery goes on -- on one Redis, a Sentinel group and a cluster. Without the restart the
worker's streams would all stay silent until it was restarted."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

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
