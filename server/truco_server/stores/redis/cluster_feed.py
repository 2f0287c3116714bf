"""The stream hub of a Redis Cluster: doorbells on sharded pub/sub, one subscriber connection
per primary node, the streams as the record (the ordering argument and the failover check
are in :mod:`.hub`).

A multi-stream ``XREAD`` is refused on a cluster unless every key is in one slot -- even
when one node serves all the slots (``CROSSSLOT``) -- and every match is its own slot, so
one blocking read cannot cover many matches. Instead each commit also publishes its events
on the match's sharded pub/sub channel (``SPUBLISH`` inside the commit script, same slot as
the match's keys: :func:`pack_doorbell`), and the hub holds one subscriber connection per
primary (``SSUBSCRIBE`` of the channels of the subscribed matches whose slots that node
serves). A doorbell that continues a match's cursor is delivered as it is; one that does not
(a missed message) makes the hub read the stream from the cursor. Whenever a subscription is
(re)established -- a new subscription, a reconnect after a failover, a slot that moved --
the hub reads the stream from the cursor again, so nothing published meanwhile is missed.
One manager task places channels on the node serving their slot (redis-py's slot map),
refreshes the slot map after a failure and every ``check_s`` seconds (which also catches a
failover that kept the connection), and reads the streams that need it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import MovedError, RedisClusterException, RedisError

from truco_server.core import metrics
from truco_server.stores.redis.hub import HubCore

__all__ = ["ClusterStreamHub", "pack_doorbell", "parse_doorbell"]

log = logging.getLogger("truco_server.stores.redis.cluster_feed")

_FAULTS = (RedisError, RedisClusterException, OSError, TimeoutError)


def pack_doorbell(base_version: int, events: list[bytes]) -> bytes:
    """The message a commit publishes on its match's channel: ``<base>:<len>,<len>...:``
    then the events' bytes (what the commit script builds; this is its Python twin)."""
    return b"%d:%b:%b" % (base_version, b",".join(b"%d" % len(e) for e in events), b"".join(events))


def parse_doorbell(data: bytes) -> tuple[int, list[bytes]]:
    """``(base_version, events)`` of a doorbell message (see :func:`pack_doorbell`)."""
    base, _, rest = data.partition(b":")
    lengths, _, body = rest.partition(b":")
    events: list[bytes] = []
    pos = 0
    for item in lengths.split(b",") if lengths else ():
        n = int(item)
        events.append(body[pos : pos + n])
        pos += n
    if pos != len(body):
        raise ValueError("malformed doorbell message")
    return int(base), events


class _NodeFeed:
    """One subscriber connection to one primary: the channels of the subscribed matches
    whose slots that node serves, and the task that reads their doorbells."""

    def __init__(self, name: str, client: aioredis.Redis) -> None:
        self.name = name
        self.client = client
        self.pubsub = client.pubsub()
        self.channels: dict[bytes, str] = {}
        """Channel -> match id of every channel wanted on this node."""
        self.task: asyncio.Task[None] | None = None
        self.dead = False


class ClusterStreamHub(HubCore):
    """The stream hub of a cluster (module docstring). ``cluster`` is the adapter's
    ``RedisCluster`` (its slot map places each channel; its pipelines read the streams);
    ``channel_key(match_id)`` names a match's doorbell channel; ``node_client(host, port)``
    makes a client for one node's subscriber connection."""

    def __init__(
        self,
        cluster: RedisCluster,
        stream_key: Callable[[str], str],
        channel_key: Callable[[str], str],
        node_client: Callable[[str, int], aioredis.Redis],
        *,
        count: int = 500,
        check_s: float = 5.0,
        timeout: float = 5.0,
        on_round_trip: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(stream_key, count=count, timeout=timeout, on_round_trip=on_round_trip)
        self._rc = cluster
        self._channel_key = channel_key
        self._node_client = node_client
        self._check_s = check_s
        self._channels: dict[str, bytes] = {}
        self._channel_to_match: dict[bytes, str] = {}
        self._feeds: dict[str, _NodeFeed] = {}
        self._where: dict[str, str] = {}
        """Match id -> name of the node feed its channel is subscribed on."""
        self._unplaced: set[str] = set()
        self._catchup: set[str] = set()
        self._refresh = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._spawned: set[asyncio.Task[Any]] = set()
        self.reads = 0
        """Stream checks issued (pipelines; for tests and benchmarks)."""
        self.doorbells = 0
        """Doorbell messages received (for tests and benchmarks)."""

    def node_of(self, match_id: str) -> str | None:
        """The name of the node feed ``match_id``'s channel is subscribed on, if any."""
        return self._where.get(match_id)

    def subscriber_client(self, match_id: str) -> aioredis.Redis | None:
        """The client of the subscriber connection ``match_id``'s channel is on, if any."""
        feed = self._feeds.get(self._where.get(match_id, ""))
        return None if feed is None else feed.client

    # -- subscriptions --------------------------------------------------------------------

    def _followed(self, mid: str) -> None:
        channel = self._channel_key(mid).encode()
        self._channels[mid] = channel
        self._channel_to_match[channel] = mid
        self._unplaced.add(mid)
        self._kick()

    def _unfollowed(self, mid: str) -> None:
        channel = self._channels.pop(mid, b"")
        self._channel_to_match.pop(channel, None)
        self._unplaced.discard(mid)
        self._unverified.discard(mid)
        self._catchup.discard(mid)
        feed = self._feeds.get(self._where.pop(mid, ""))
        if feed is not None and feed.channels.pop(channel, None) is not None:
            self._unsubscribe(feed, channel)

    def committed(self, match_id: str, base_version: int, events: list[bytes], note: object = None) -> None:
        """This worker committed ``events`` as versions ``base_version + 1 ..``: deliver them
        here now (with ``note``); their doorbell, when it comes back, is then a duplicate."""
        cursor = self._cursors.get(match_id)
        if cursor is None or not events:
            return
        if match_id not in self._unverified and cursor == base_version:
            self._deliver(match_id, [(base_version + i, e) for i, e in enumerate(events, 1)], note)
            self.local_batches += 1
        elif match_id in self._unverified or cursor < base_version:
            self._read_soon(match_id)

    def _read_soon(self, mid: str) -> None:
        self._catchup.add(mid)
        self._kick()

    def _recheck_all(self) -> None:
        self._refresh = True
        self._catchup.update(self._cursors)

    # -- doorbells ------------------------------------------------------------------------

    def _on_message(self, feed: _NodeFeed, msg: Mapping[str, Any]) -> None:
        kind = msg.get("type")
        channel = msg.get("channel")
        mid = self._channel_to_match.get(channel) if isinstance(channel, bytes) else None
        if mid is None or self._where.get(mid) != feed.name:
            return  # a match no longer followed here
        if kind == "smessage":
            self.doorbells += 1
            try:
                base, events = parse_doorbell(msg["data"])
            except ValueError:  # not one of ours: read the stream instead
                base, events = 1 << 62, []
            if mid in self._unverified or not events or not self._offer_read(mid, base, events):
                self._read_soon(mid)  # something was missed: read the stream
        elif kind == "ssubscribe":
            self._read_soon(mid)  # (re)subscribed: read what was published before
        elif kind == "sunsubscribe" and channel in feed.channels:
            # not asked for: the slot moved to another node
            del feed.channels[channel]
            del self._where[mid]
            self._unplaced.add(mid)
            self._refresh = True
            self._kick()

    async def _read(self, feed: _NodeFeed) -> None:
        while not self._closed and not feed.dead:
            try:
                msg = await feed.pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except MovedError as exc:
                # an SSUBSCRIBE reached a node that no longer serves that slot
                for channel, mid in list(feed.channels.items()):
                    if self._rc.keyslot(channel) == exc.slot_id:
                        del feed.channels[channel]
                        self._where.pop(mid, None)
                        self._unplaced.add(mid)
                self._refresh = True
                self._kick()
                continue
            except Exception as exc:  # a broken connection, or anything unexpected
                self._feed_failed(feed, exc)
                return
            if msg is None:
                continue
            try:
                self._on_message(feed, msg)
            except Exception as exc:  # a bug: this feed's matches are placed and checked again
                metrics.STREAM_HUB_FAILURES.inc()
                log.exception("cluster stream hub: a message from %s could not be handled", feed.name)
                self._feed_failed(feed, exc)
                return

    def _feed_failed(self, feed: _NodeFeed, exc: BaseException) -> None:
        if feed.dead:
            return
        feed.dead = True
        log.warning("stream hub: subscriber connection to %s failed: %s", feed.name, exc)
        if self._feeds.get(feed.name) is feed:
            del self._feeds[feed.name]
        for mid in feed.channels.values():
            if self._where.get(mid) == feed.name:
                del self._where[mid]
                self._unplaced.add(mid)
                self._unverified.add(mid)
        feed.channels.clear()
        self._refresh = True
        self._kick()
        self._spawn(self._close_feed(feed))

    # -- the manager task -------------------------------------------------------------------

    def _kick(self) -> None:
        if self._closed:
            return
        self._wake.set()
        if self._task is None:
            self._task = asyncio.create_task(
                self._supervised(self._run, "manager"),
                name="truco-cluster-stream-hub",
                context=contextvars.Context(),
            )

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        backoff = 0.05
        next_check = loop.time() + self._check_s
        while not self._closed:
            if not (self._unplaced or self._catchup or self._refresh):
                timeout = max(0.0, next_check - loop.time()) if self._cursors else None
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake.wait()
                self._wake.clear()
            if self._cursors and loop.time() >= next_check:
                self._refresh = True
                next_check = loop.time() + self._check_s
            try:
                await self._step()
                backoff = 0.05
                continue
            except asyncio.CancelledError:
                raise
            except _FAULTS as exc:
                log.warning("cluster stream hub: %s; retrying", exc)
                self._refresh = True
            # not in the handler (docs/engine.md, "Compiled build")
            await asyncio.sleep(backoff * (0.5 + random.random()))
            backoff = min(backoff * 2, 1.0)

    async def _step(self) -> None:
        async with asyncio.timeout(self._timeout):
            await self._rc.initialize()  # once (and after the client saw a failure)
        if self._refresh:
            self._refresh = False
            self._on_round_trip(1)
            async with asyncio.timeout(self._timeout):
                await self._rc.nodes_manager.initialize()
            self._replace_moved()
        if self._unplaced:
            await self._place()
        if self._catchup:
            await self._catch_up()

    def _replace_moved(self) -> None:
        """Matches subscribed on a node that no longer serves their slot go back to be placed."""
        for mid, name in list(self._where.items()):
            node = self._rc.get_node_from_key(self._channels[mid].decode())
            if node is not None and node.name != name:
                del self._where[mid]
                feed = self._feeds.get(name)
                channel = self._channels[mid]
                if feed is not None and feed.channels.pop(channel, None) is not None:
                    self._unsubscribe(feed, channel)
                self._unplaced.add(mid)
                self._unverified.add(mid)

    async def _place(self) -> None:
        """Subscribe every unplaced match's channel on the node that serves its slot."""
        groups: dict[str, list[str]] = {}
        hosts: dict[str, tuple[str, int]] = {}
        for mid in list(self._unplaced):
            node = self._rc.get_node_from_key(self._channels[mid].decode())
            if node is None:
                raise RedisClusterException(f"no node serves the slot of match {mid}")
            groups.setdefault(node.name, []).append(mid)
            hosts[node.name] = (node.host, int(node.port))
        for name, mids in groups.items():
            feed = self._feeds.get(name)
            if feed is None:
                feed = _NodeFeed(name, self._node_client(*hosts[name]))
                self._feeds[name] = feed
            for mid in mids:
                await self._subscribe(feed, mid)

    async def _subscribe(self, feed: _NodeFeed, mid: str) -> None:
        channel = self._channels.get(mid)
        if channel is None or mid not in self._unplaced:
            return
        feed.channels[channel] = mid
        self._where[mid] = feed.name
        self._unplaced.discard(mid)
        try:
            async with asyncio.timeout(self._timeout):
                await feed.pubsub.ssubscribe(channel)
        except _FAULTS as exc:
            self._feed_failed(feed, exc)
            raise
        if feed.task is None:  # the connection exists from the first subscription on
            feed.task = asyncio.create_task(
                self._read(feed), name=f"truco-cluster-feed-{feed.name}", context=contextvars.Context()
            )

    async def _catch_up(self) -> None:
        """Check the streams of the matches marked for it (pipelined, grouped by node)."""
        taken = list(self._catchup)[:1000]
        self._catchup.difference_update(taken)
        # one not placed yet is read when its subscription is confirmed
        batch = [m for m in taken if m in self._cursors and m in self._where]
        if not batch:
            return
        self.reads += 1
        try:
            more = await self._check(self._rc, batch)
        except BaseException:
            self._catchup.update(m for m in batch if m in self._cursors)
            raise
        self._catchup.update(more)

    def _unsubscribe(self, feed: _NodeFeed, channel: bytes) -> None:
        if feed.dead:
            return

        async def go() -> None:
            with contextlib.suppress(*_FAULTS):
                async with asyncio.timeout(self._timeout):
                    await feed.pubsub.sunsubscribe(channel)

        self._spawn(go())

    @staticmethod
    async def _close_feed(feed: _NodeFeed) -> None:
        feed.dead = True
        if feed.task is not None and feed.task is not asyncio.current_task():
            feed.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, *_FAULTS):
                await feed.task
        with contextlib.suppress(*_FAULTS):
            await feed.pubsub.aclose()
        with contextlib.suppress(*_FAULTS):
            await feed.client.aclose()

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, *_FAULTS):
                await self._task
            self._task = None
        for feed in list(self._feeds.values()):
            await self._close_feed(feed)
        self._feeds.clear()
        for task in list(self._spawned):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, *_FAULTS):
                await task
