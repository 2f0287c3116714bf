"""Fan-out of match events to many live subscribers.

A streaming RPC wants "every event after version V, as it happens". Doing that with one
blocking ``XREAD`` per stream would pin one Redis connection per open stream, so a worker
multiplexes all its subscriptions:

* :class:`EventSubscription` -- one subscriber. It owns a *bounded* queue (a client that
  does not read must not make the server's memory grow), does its own catch-up from the
  store, delivers contiguous batches and repairs any gap (queue overflow, missed wake-up)
  by re-reading the log from the last version it delivered. Only when the log no longer
  holds that version does it yield :class:`~.base.LogTrimmed`, and the caller sends a
  full snapshot and calls :meth:`EventSubscription.resume_from`.
* A *feed* pushes freshly committed events into subscriptions, never blocking:

  - :class:`MemoryFeed` -- the in-memory store calls :meth:`MemoryFeed.publish` at commit.
  - :class:`RedisStreamHub` (one Redis server, or a Sentinel group's primary) -- one
    background task per worker runs ``XREAD BLOCK`` over the streams of subscribed matches
    on one dedicated connection; a new subscription interrupts the blocked read with
    ``CLIENT UNBLOCK`` so the new stream is included at once (``block_ms`` bounds the delay
    if that wake-up races with the read).
  - :class:`ClusterStreamHub` (Redis Cluster) -- one subscriber connection per primary node,
    fed by the commits' doorbells (below).

  In both, commits made by *this* worker are delivered without Redis at all
  (``committed``, "local fan-out"): the store hands the hub the events it just wrote.

Ordering argument (why nothing is lost): the hub keeps one *cursor* per subscribed match
with this invariant: every event with a version up to the cursor that is newer than a
subscription's attach-time cursor has been offered to that subscription. A subscription
attaches to the feed *before* its catch-up read; the cursor is never ahead of the newest
event at attach time, and the catch-up read starts at the subscriber's version and ends at
or after that newest event, so catch-up plus feed cover everything (duplicates are dropped
by version). The cursor moves in exactly three ways, all keeping the invariant:

1. an ``XREAD`` from the cursor returns the next events of the stream, which are offered;
2. a local commit of versions ``v+1..v+k`` made when the cursor is exactly ``v``: those are
   all the events between ``v`` and ``v+k`` (the commit's version check proves nothing else
   was written in between), so they are offered and the cursor moves to ``v+k``. When the
   cursor is behind ``v`` (another worker committed versions this hub has not read yet)
   nothing is offered locally and the next ``XREAD`` delivers everything in order;
3. a subscription's own catch-up read (``read_from_log``) returned versions that continue
   the cursor: they are the stream's next events, so they are offered to the match's
   other subscriptions and the cursor moves over them. This keeps the cursor at or past
   whatever any subscription was shown, which the failover check below relies on.

And every subscribed stream is read from its cursor again within ``poll_ms``, so events
committed elsewhere always arrive. To keep a busy worker from re-reading streams that
only it writes, matches are in one of two classes: *remote* matches (the default, and any
match where an ``XREAD`` found events this worker did not commit, or a local commit found
the cursor behind) are in every blocking ``XREAD``; a match whose last ``local_after``
commits were all local and contiguous becomes *local* and is read only by a non-blocking
``XREAD`` every ``poll_ms`` (a remote commit on it is then delivered within ``poll_ms``
and turns it back to remote). Without this split every local commit would wake the
blocked read over all streams, and those re-issued reads were a quarter of a busy
worker's CPU. Gap repair stays as before: a subscription that sees a gap (queue
overflow, a missed wake-up) re-reads the log from the last version it delivered.

On Redis Cluster a multi-stream ``XREAD`` is refused unless every key is in one slot --
even when the slots are on the same node (``CROSSSLOT``) -- and every match is its own
slot, so one blocking read cannot cover many matches there. :class:`ClusterStreamHub`
therefore follows the streams with *doorbells*: each commit also publishes its events on
the match's sharded pub/sub channel (``SPUBLISH`` inside the commit script, same slot as the
match's keys), and the hub holds one subscriber connection per primary node
(``SSUBSCRIBE`` of the channels of the subscribed matches whose slots that node serves).
A doorbell that continues a match's cursor is delivered as it is; one that does not (a
missed message) makes the hub read the stream from the cursor. Pub/sub is only the wake-up:
the stream stays the record, and whenever a subscription is (re)established -- a new
subscription, a reconnect after a failover, a slot that moved -- the hub reads the stream
from the cursor again, so nothing published while it was not subscribed is missed.

**Failover.** Replication is asynchronous, so a promoted replica may lack the last events a
worker already delivered; the next commits then reuse those versions for other events.
After every reconnect both hubs check each subscribed stream against what they delivered
(the entry at the cursor must still be there with the same bytes; since a subscription's own
catch-up moves the cursor, see 3. above, that covers every event shown); when it is not -- lost,
rewritten, or trimmed away meanwhile -- the subscriptions are told with
:meth:`EventSubscription.report_gap` and yield :class:`~.base.LogTrimmed`, so the service
sends a snapshot and the client's view is right again (counted in
``truco_stream_gaps_total``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import MovedError, RedisClusterException, RedisError

from truco_server.core import metrics
from truco_server.ports.store import Event, LogTrimmed

__all__ = [
    "ClusterStreamHub",
    "EventReader",
    "EventSubscription",
    "LiveFeed",
    "MemoryFeed",
    "RedisStreamHub",
    "pack_doorbell",
    "parse_doorbell",
]

log = logging.getLogger(__name__)


class EventReader(Protocol):
    """The part of a store a subscription needs for catch-up."""

    async def read_events(
        self, match_id: str, after_version: int, limit: int
    ) -> list[Event] | LogTrimmed: ...


class LiveFeed(Protocol):
    """Pushes new events into attached subscriptions via :meth:`EventSubscription.offer`."""

    def attach(self, sub: EventSubscription) -> None: ...

    def detach(self, sub: EventSubscription) -> None: ...

    def read_from_log(self, match_id: str, events: list[Event]) -> None:
        """An attached subscription's catch-up read ``events`` from the log itself."""


class EventSubscription:
    """Resumable live feed of one match's events, from ``after_version`` on.

    Use as an async iterator (``async for batch in sub``) and close it with
    :meth:`aclose` (or ``async with``). Each item is a non-empty list of contiguous
    ``(version, payload)`` events continuing from :attr:`last_version`, or a
    :class:`LogTrimmed` marker.
    """

    def __init__(
        self,
        reader: EventReader,
        feed: LiveFeed,
        match_id: str,
        after_version: int,
        *,
        queue_size: int = 256,
        batch_limit: int = 1000,
    ) -> None:
        if after_version < 0:
            raise ValueError("after_version must be >= 0")
        self.match_id = match_id
        self._reader = reader
        self._feed = feed
        self._last = after_version
        self._queue: asyncio.Queue[list[Event]] = asyncio.Queue(maxsize=queue_size)
        self._batch_limit = batch_limit
        self._overflowed = False
        self._need_catchup = True
        self._attached = False
        self._trimmed = False
        self._gap = False
        self._closed = False

    # -- called by feeds ----------------------------------------------------------

    def offer(self, events: list[Event]) -> None:
        """Enqueue a batch without blocking; on a full queue remember the overflow.

        After an overflow everything is dropped until the subscriber re-reads the log.
        """
        if self._closed or self._overflowed or not events:
            return
        try:
            self._queue.put_nowait(events)
        except asyncio.QueueFull:
            self._overflowed = True

    def report_gap(self) -> None:
        """The log no longer continues what was delivered (events lost or rewritten by a
        failover): the next item is a :class:`LogTrimmed` marker, so the consumer sends a
        snapshot and calls :meth:`resume_from`."""
        if self._closed:
            return
        self._gap = True
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait([])  # wakes a consumer waiting for the next batch

    # -- consumer API -------------------------------------------------------------

    @property
    def last_version(self) -> int:
        """Version of the last event delivered (or the starting version)."""
        return self._last

    def resume_from(self, version: int) -> None:
        """Continue after a :class:`LogTrimmed` from ``version`` (the snapshot sent)."""
        self._last = version
        self._trimmed = False
        self._need_catchup = True

    def __aiter__(self) -> EventSubscription:
        return self

    async def __anext__(self) -> list[Event] | LogTrimmed:
        if self._closed:
            raise StopAsyncIteration
        if self._trimmed:
            raise RuntimeError("log trimmed: call resume_from(snapshot_version) first")
        if not self._attached:
            self._feed.attach(self)
            self._attached = True
        while True:
            if self._gap:
                self._gap = False
                self._drain()
                self._trimmed = True
                return LogTrimmed()
            if self._need_catchup or self._overflowed:
                self._need_catchup = False
                self._overflowed = False
                self._drain()  # all of it is in the log too
                got = await self._reader.read_events(self.match_id, self._last, self._batch_limit)
                if self._gap:
                    continue
                if isinstance(got, LogTrimmed):
                    self._trimmed = True
                    return got
                if got:
                    self._last = got[-1][0]
                    self._feed.read_from_log(self.match_id, got)
                    if len(got) >= self._batch_limit:
                        self._need_catchup = True
                    return got
                continue
            batch = await self._queue.get()
            fresh = [e for e in batch if e[0] > self._last]
            if not fresh:
                continue
            if fresh[0][0] != self._last + 1 or fresh[-1][0] - fresh[0][0] != len(fresh) - 1:
                self._need_catchup = True  # a gap: repair from the log
                continue
            self._last = fresh[-1][0]
            return fresh

    def _drain(self) -> None:
        while not self._queue.empty():
            self._queue.get_nowait()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._attached:
            self._feed.detach(self)

    async def __aenter__(self) -> EventSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class MemoryFeed:
    """In-process feed: the memory store publishes each commit's events."""

    def __init__(self) -> None:
        self._subs: dict[str, set[EventSubscription]] = {}

    def attach(self, sub: EventSubscription) -> None:
        self._subs.setdefault(sub.match_id, set()).add(sub)

    def detach(self, sub: EventSubscription) -> None:
        subs = self._subs.get(sub.match_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.match_id]

    def read_from_log(self, match_id: str, events: list[Event]) -> None:
        """Nothing to do: every commit is published to every subscription at once."""

    def publish(self, match_id: str, events: list[Event]) -> None:
        for sub in list(self._subs.get(match_id, ())):
            sub.offer(events)

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._subs.values())


def _parse_xread(resp: Any) -> list[tuple[bytes, list[tuple[bytes, Mapping[bytes, bytes]]]]]:
    """Normalize an XREAD reply (RESP2 list or RESP3 dict) to ``[(key, entries)]``."""
    if not resp:
        return []
    if isinstance(resp, dict):
        out = []
        for key, val in resp.items():
            entries = val[0] if val and isinstance(val[0], list) else val
            out.append((key, entries))
        return out
    return [(key, entries) for key, entries in resp]


def version_of(entry_id: bytes | str) -> int:
    """Stream entry ids are ``<version>-0``."""
    raw = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(raw.split("-", 1)[0])


def pack_doorbell(base_version: int, events: list[bytes]) -> bytes:
    """The message a commit publishes on its match's channel: ``<base>:<len>,<len>...:``
    then the events' bytes (what ``COMMIT_LUA`` builds; this is its Python twin, for tests)."""
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


_Client = aioredis.Redis | RedisCluster


class _HubCore:
    """What both Redis hubs share: the subscriptions and the cursor of each subscribed
    match, delivery (local fan-out included), and the check of the subscribed streams
    after a reconnect (see "Failover" in the module docstring)."""

    def __init__(
        self,
        stream_key: Callable[[str], str],
        *,
        field: bytes,
        count: int,
        on_round_trip: Callable[[int], None] | None,
    ) -> None:
        self._stream_key = stream_key
        self._field = field
        self._count = count
        self._on_round_trip = on_round_trip or (lambda n: None)
        self._subs: dict[str, set[EventSubscription]] = {}
        self._cursors: dict[str, int] = {}
        self._payloads: dict[str, bytes] = {}
        """The bytes of the event at each cursor, when known (for the check)."""
        self._keys: dict[str, bytes] = {}
        self._key_to_match: dict[bytes, str] = {}
        self._unverified: set[str] = set()
        """Matches followed across a reconnect: nothing more is delivered for them until a
        read of the stream has checked it still continues what was delivered."""
        self._closed = False
        self.local_batches = 0
        """Batches delivered by local fan-out (for tests and benchmarks)."""
        self.gaps = 0
        """Streams found not to continue what was delivered (lost or rewritten events)."""

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._subs.values())

    def cursor(self, match_id: str) -> int | None:
        """The version up to which ``match_id``'s events were delivered (None: not followed)."""
        return self._cursors.get(match_id)

    def attach(self, sub: EventSubscription) -> None:
        if self._closed:
            raise RuntimeError("hub is closed")
        mid = sub.match_id
        self._subs.setdefault(mid, set()).add(sub)
        if mid not in self._cursors:
            self._cursors[mid] = sub.last_version
            key = self._stream_key(mid).encode()
            self._keys[mid] = key
            self._key_to_match[key] = mid
            self._followed(mid)

    def detach(self, sub: EventSubscription) -> None:
        subs = self._subs.get(sub.match_id)
        if subs is None:
            return
        subs.discard(sub)
        if not subs:
            mid = sub.match_id
            del self._subs[mid]
            del self._cursors[mid]
            self._payloads.pop(mid, None)
            self._unverified.discard(mid)
            key = self._keys.pop(mid, None)
            if key is not None:
                self._key_to_match.pop(key, None)
            self._unfollowed(mid)

    def _followed(self, mid: str) -> None:
        """A first subscription for ``mid`` (hook)."""

    def _unfollowed(self, mid: str) -> None:
        """The last subscription for ``mid`` went away (hook)."""

    def begin_commit(self, match_id: str) -> None:
        """The store is about to commit on ``match_id`` (pair with :meth:`end_commit`)."""

    def end_commit(self, match_id: str) -> None:
        """The commit announced by :meth:`begin_commit` returned (or failed)."""

    def conflicted(self, match_id: str) -> None:
        """A commit on ``match_id`` lost to another writer."""

    def _deliver(self, mid: str, batch: list[Event]) -> None:
        """Offer ``batch`` (contiguous, right after the cursor) and move the cursor."""
        self._cursors[mid] = batch[-1][0]
        self._payloads[mid] = batch[-1][1]
        for sub in list(self._subs.get(mid, ())):
            sub.offer(batch)

    def read_from_log(self, match_id: str, events: list[Event]) -> None:
        """A subscription's own catch-up read ``events`` (contiguous) from the log: what
        continues the cursor is offered to the match's other subscriptions and moves the
        cursor, so the check after a reconnect compares the stream with everything any
        subscriber was shown. Were the cursor left behind, a failover that lost those
        events would go unnoticed: the stream would still continue the cursor, and the
        new history's next versions would follow the lost ones on the subscriber's view."""
        cursor = self._cursors.get(match_id)
        if cursor is None or not events or events[-1][0] <= cursor or match_id in self._unverified:
            return  # (unverified: the check reads the stream from the cursor anyway)
        if events[0][0] > cursor + 1:
            self._read_soon(match_id)  # the events in between are not known here
            return
        self._deliver(match_id, [e for e in events if e[0] > cursor])

    def _read_soon(self, mid: str) -> None:
        """The stream of ``mid`` holds events beyond the cursor that were not delivered
        here: read it from the cursor without waiting for the next notice (hook)."""

    def _offer_from(self, mid: str, base_version: int, events: list[bytes]) -> bool:
        """Deliver ``events`` (versions ``base_version + 1 ..``) beyond the cursor. False
        when they do not reach back to it (events in between are missing here)."""
        cursor = self._cursors.get(mid)
        if cursor is None or not events:
            return True
        if base_version > cursor:
            return False
        fresh = [(base_version + i, e) for i, e in enumerate(events, 1) if base_version + i > cursor]
        if fresh:
            self._deliver(mid, fresh)
        return True

    async def _check(self, client: _Client, mids: Iterable[str]) -> list[str]:
        """Read each match's stream from its cursor (inclusive) and its last entry; deliver
        what is new; report a gap where the stream no longer continues the cursor (see
        :meth:`_reconcile`); mark the others checked (out of ``_unverified``). Returns the
        matches to read again: a full batch came back, or the cursor moved during the read."""
        more: list[str] = []
        pending = [m for m in mids if m in self._cursors]
        for start in range(0, len(pending), 200):
            chunk = [m for m in pending[start : start + 200] if m in self._cursors]
            if not chunk:
                continue
            pipe = client.pipeline(transaction=False)
            cursors = []
            for mid in chunk:
                cursor = self._cursors[mid]
                cursors.append(cursor)
                key = self._keys[mid]
                pipe.xrange(key, min=f"{max(cursor, 1)}-0", max="+", count=self._count)
                pipe.xrevrange(key, max="+", min="-", count=1)
            self._on_round_trip(1)
            replies = await pipe.execute()
            for i, mid in enumerate(chunk):
                if mid not in self._cursors:
                    continue  # detached meanwhile
                if self._cursors[mid] != cursors[i]:
                    more.append(mid)  # moved on meanwhile: read again
                    continue
                forward, last = replies[2 * i], replies[2 * i + 1]
                if self._reconcile(mid, forward, last):
                    more.append(mid)
        return more

    def _reconcile(self, mid: str, forward: Any, last: Any) -> bool:
        field = self._field
        cursor = self._cursors[mid]
        entries = [(version_of(eid), fields[field]) for eid, fields in forward]
        known = self._payloads.get(mid)
        if cursor == 0 or (entries and entries[0][0] > cursor):
            # from the start, or the entry at the cursor was trimmed away meanwhile: what
            # follows is offered as it is, and a subscription that misses the events in
            # between repairs from the log (and gets LogTrimmed there)
            fresh = entries
        elif entries and entries[0][0] == cursor and (known is None or entries[0][1] == known):
            fresh = entries[1:]
        else:
            # the stream ends before the cursor (rolled back by a failover, or deleted), or
            # the entry at the cursor was rewritten: start again from the stream's end and
            # have every subscriber resynchronize
            if last:
                eid, fields = last[0]
                self._cursors[mid] = version_of(eid)
                self._payloads[mid] = fields[field]
            else:
                self._cursors[mid] = 0
                self._payloads.pop(mid, None)
            self.gaps += 1
            metrics.STREAM_GAPS.inc()
            log.warning("stream of match %s does not continue version %d: resynchronizing", mid, cursor)
            for sub in list(self._subs.get(mid, ())):
                sub.report_gap()
            self._unverified.discard(mid)
            return False
        if not known and entries and entries[0][0] == cursor:
            self._payloads[mid] = entries[0][1]
        if fresh:
            self._deliver(mid, fresh)
        if len(entries) >= self._count:
            return True
        self._unverified.discard(mid)
        return False

    async def close(self) -> None:
        self._closed = True


class RedisStreamHub(_HubCore):
    """One ``XREAD BLOCK`` reader task serving every subscription of a worker.

    ``reader`` must be a client with a single dedicated connection (it is blocked most of
    the time); ``waker`` is any client (the store's pool) used for ``CLIENT UNBLOCK`` and
    for the check after a reconnect. ``stream_key(match_id)`` names the stream of a match;
    ``field`` is the entry field holding the payload. After a read that returned events
    the next one waits ``coalesce_ms`` so that several commits share one read (at the cost
    of at most that much extra delivery delay). The store calls :meth:`committed` after
    each of its own commits (local fan-out); ``poll_ms`` and ``local_after`` govern the
    local/remote split described in the module docstring.
    """

    def __init__(
        self,
        reader: aioredis.Redis,
        waker: aioredis.Redis,
        stream_key: Callable[[str], str],
        *,
        field: bytes = b"e",
        block_ms: int = 1000,
        count: int = 500,
        coalesce_ms: float = 2.0,
        poll_ms: float = 50.0,
        local_after: int = 3,
        on_round_trip: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(stream_key, field=field, count=count, on_round_trip=on_round_trip)
        self._reader = reader
        self._waker = waker
        self._block_ms = block_ms
        self._streak: dict[str, int] = {}
        self._local: set[str] = set()
        self._inflight: dict[str, int] = {}
        self._coalesce = coalesce_ms / 1000
        self._poll = poll_ms / 1000
        self._local_after = max(1, local_after)
        self._next_poll = 0.0
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._reader_id: int | None = None
        self._blocking = False
        self._blocking_on: frozenset[str] | None = None
        self._generation = 0
        self._wakers: set[asyncio.Task[None]] = set()
        self.reads = 0
        """``XREAD`` calls issued (for tests and benchmarks)."""

    def is_local(self, match_id: str) -> bool:
        """Whether ``match_id`` is in the local class (read only every ``poll_ms``)."""
        return match_id in self._local

    def _followed(self, mid: str) -> None:
        self._streak[mid] = 0
        self._make_remote(mid)

    def _unfollowed(self, mid: str) -> None:
        self._streak.pop(mid, None)
        self._inflight.pop(mid, None)
        self._local.discard(mid)

    def begin_commit(self, match_id: str) -> None:
        if match_id in self._cursors:
            self._inflight[match_id] = self._inflight.get(match_id, 0) + 1

    def end_commit(self, match_id: str) -> None:
        n = self._inflight.get(match_id)
        if n is not None:
            if n <= 1:
                del self._inflight[match_id]
            else:
                self._inflight[match_id] = n - 1

    def committed(self, match_id: str, base_version: int, events: list[bytes]) -> None:
        """This worker committed ``events`` as versions ``base_version + 1 ..``: deliver
        them to this worker's subscriptions now (see the module docstring)."""
        cursor = self._cursors.get(match_id)
        if cursor is None or not events or match_id in self._unverified:
            return
        if cursor == base_version:
            self._deliver(match_id, [(base_version + i, e) for i, e in enumerate(events, 1)])
            self.local_batches += 1
        elif cursor < base_version:
            self._read_soon(match_id)  # commits from elsewhere are waiting: read them now
            return
        # else an XREAD raced ahead of this reply and already delivered these events
        streak = self._streak[match_id] = self._streak.get(match_id, 0) + 1
        if streak >= self._local_after:
            self._local.add(match_id)  # left out of the blocking reads from the next one

    def conflicted(self, match_id: str) -> None:
        if match_id in self._cursors:
            self._make_remote(match_id)

    def _read_soon(self, mid: str) -> None:
        self._make_remote(mid)

    def _make_remote(self, mid: str) -> None:
        """Put ``mid`` in every blocking read from now on (interrupting the current one)."""
        self._streak[mid] = 0
        self._local.discard(mid)
        blocking_on = self._blocking_on
        if blocking_on is not None and mid in blocking_on:
            return
        self._generation += 1
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(
                self._run(), name="truco-stream-hub", context=contextvars.Context()
            )
        elif self._blocking:
            self._spawn(self._wake(self._generation))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._wakers.add(task)
        task.add_done_callback(self._wakers.discard)

    async def _wake(self, generation: int) -> None:
        """Interrupt the blocked XREAD so it restarts with the new set of streams."""
        for _ in range(5):
            reader_id = self._reader_id
            if reader_id is None or generation != self._generation or not self._blocking:
                return
            try:
                self._on_round_trip(1)
                if await self._waker.client_unblock(reader_id):
                    return
            except RedisError:
                return
            await asyncio.sleep(0.002)  # read not yet on the server: try again

    async def _run(self) -> None:
        backoff = 0.05
        loop = asyncio.get_running_loop()
        while not self._closed:
            if not self._cursors:
                self._changed.clear()
                await self._changed.wait()
                continue
            if self._unverified:
                # the read failed: Redis restarted or failed over; what was delivered may
                # be gone from its log, so check every stream before reading on
                try:
                    await self._check(self._waker, list(self._unverified))
                except RedisError as exc:
                    log.warning("stream hub check failed: %s; retrying", exc)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                if self._unverified:
                    continue
            self._changed.clear()
            now = loop.time()
            cursors = self._cursors
            block: int | None
            if self._local and now >= self._next_poll:
                # everything, without blocking (the local class is read only here)
                self._next_poll = now + self._poll
                mids = list(cursors)
                block = None
            else:
                mids = [mid for mid in cursors if mid not in self._local]
                wait = self._next_poll - now if self._local else self._block_ms / 1000
                if not mids:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), wait)
                    continue
                block = max(1, min(self._block_ms, int(wait * 1000) + 1))
            keys = self._keys
            streams: dict[Any, Any] = {keys[mid]: f"{cursors[mid]}-0" for mid in mids}
            try:
                if self._reader_id is None:
                    self._on_round_trip(1)
                    self._reader_id = int(await self._reader.client_id())
                    if self._changed.is_set():
                        continue  # the set of streams changed meanwhile
                self._on_round_trip(1)
                self.reads += 1
                if block is None:
                    resp = await self._reader.xread(streams, count=self._count)
                else:
                    self._blocking = True
                    self._blocking_on = frozenset(mids)
                    resp = await self._reader.xread(streams, count=self._count, block=block)
            except RedisError as exc:
                self._reader_id = None
                self._unverified.update(self._cursors)
                log.warning("stream hub read failed: %s; retrying", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            finally:
                self._blocking = False
                self._blocking_on = None
            backoff = 0.05
            if resp and block is not None and self._coalesce > 0:
                await asyncio.sleep(self._coalesce)  # see the class docstring
            for key, entries in _parse_xread(resp):
                mid = self._key_to_match.get(key if isinstance(key, bytes) else key.encode())
                if mid is None or not entries:
                    continue
                cursor = cursors.get(mid)
                if cursor is None:
                    continue
                field = self._field
                batch = [(v, fields[field]) for eid, fields in entries if (v := version_of(eid)) > cursor]
                if not batch:
                    continue  # already delivered by local fan-out
                if mid not in self._inflight and (mid in self._local or self._streak.get(mid)):
                    # events this worker did not commit (with a local commit in flight
                    # they are most likely that commit's, read before its reply arrived)
                    self._streak[mid] = 0
                    self._local.discard(mid)
                self._deliver(mid, batch)

    async def close(self) -> None:
        self._closed = True
        self._changed.set()
        for task in [self._task, *self._wakers]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, RedisError):
                    await task
        self._task = None
        await self._reader.aclose()


class _NodeFeed:
    """One subscriber connection to one primary node: the channels of the subscribed
    matches whose slots that node serves, and the task that reads their doorbells."""

    def __init__(self, name: str, client: aioredis.Redis) -> None:
        self.name = name
        self.client = client
        self.pubsub = client.pubsub()
        self.channels: dict[bytes, str] = {}
        """Channel -> match id of every channel wanted on this node."""
        self.task: asyncio.Task[None] | None = None
        self.dead = False


class ClusterStreamHub(_HubCore):
    """The stream hub of a Redis Cluster store: doorbells on sharded pub/sub, one
    subscriber connection per primary node, the streams as the record (module docstring).

    ``cluster`` is the store's :class:`~redis.asyncio.cluster.RedisCluster` (its slot map
    places each channel; its pipelines read the streams); ``channel_key(match_id)`` names
    a match's doorbell channel (same hash tag as its stream); ``node_client(host, port)``
    makes a client for one node's subscriber connection. One manager task (re)places
    channels on the node serving their slot, refreshes the slot map (after a failure and
    every ``check_s`` seconds, which also catches a failover that kept the connection) and
    reads streams whose doorbells were missed or whose subscription was (re)established.
    """

    def __init__(
        self,
        cluster: RedisCluster,
        stream_key: Callable[[str], str],
        channel_key: Callable[[str], str],
        node_client: Callable[[str, int], aioredis.Redis],
        *,
        field: bytes = b"e",
        count: int = 500,
        check_s: float = 5.0,
        on_round_trip: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(stream_key, field=field, count=count, on_round_trip=on_round_trip)
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

    # -- subscriptions -------------------------------------------------------------

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

    def committed(self, match_id: str, base_version: int, events: list[bytes]) -> None:
        """This worker committed ``events`` as versions ``base_version + 1 ..``: deliver
        them here now; their doorbell, when it comes back, is then a duplicate."""
        cursor = self._cursors.get(match_id)
        if cursor is None or not events:
            return
        if match_id not in self._unverified and cursor == base_version:
            self._deliver(match_id, [(base_version + i, e) for i, e in enumerate(events, 1)])
            self.local_batches += 1
        elif match_id in self._unverified or cursor < base_version:
            self._read_soon(match_id)

    def _read_soon(self, mid: str) -> None:
        self._catchup.add(mid)
        self._kick()

    # -- doorbells -------------------------------------------------------------------

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
            if mid in self._unverified or not events or not self._offer_from(mid, base, events):
                self._catchup.add(mid)  # something was missed: read the stream
                self._kick()
        elif kind == "ssubscribe":
            self._catchup.add(mid)  # (re)subscribed: read what was published before
            self._kick()
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
            if msg is not None:
                self._on_message(feed, msg)

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

    # -- the manager task ------------------------------------------------------------

    def _kick(self) -> None:
        if self._closed:
            return
        self._wake.set()
        if self._task is None:
            self._task = asyncio.create_task(
                self._run(), name="truco-cluster-stream-hub", context=contextvars.Context()
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
                    await asyncio.wait_for(self._wake.wait(), timeout)
                self._wake.clear()
            if self._cursors and loop.time() >= next_check:
                self._refresh = True
                next_check = loop.time() + self._check_s
            try:
                await self._rc.initialize()  # once (and after the client saw a failure)
                if self._refresh:
                    self._refresh = False
                    self._on_round_trip(1)
                    await self._rc.nodes_manager.initialize()
                    self._replace_moved()
                if self._unplaced:
                    await self._place()
                if self._catchup:
                    await self._catch_up()
                backoff = 0.05
            except asyncio.CancelledError:
                raise
            except (RedisError, RedisClusterException, OSError) as exc:
                log.warning("cluster stream hub: %s; retrying", exc)
                self._refresh = True
                await asyncio.sleep(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, 1.0)

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
                channel = self._channels.get(mid)
                if channel is None or mid not in self._unplaced:
                    continue
                feed.channels[channel] = mid
                self._where[mid] = name
                self._unplaced.discard(mid)
                try:
                    await feed.pubsub.ssubscribe(channel)
                except (RedisError, OSError) as exc:
                    self._feed_failed(feed, exc)
                    raise
                if feed.task is None:  # the connection exists from the first subscription on
                    feed.task = asyncio.create_task(
                        self._read(feed), name=f"truco-cluster-feed-{name}", context=contextvars.Context()
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
            with contextlib.suppress(RedisError, OSError):
                await feed.pubsub.sunsubscribe(channel)

        self._spawn(go())

    @staticmethod
    async def _close_feed(feed: _NodeFeed) -> None:
        feed.dead = True
        if feed.task is not None and feed.task is not asyncio.current_task():
            feed.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RedisError, OSError):
                await feed.task
        with contextlib.suppress(RedisError, OSError):
            await feed.pubsub.aclose()  # type: ignore[no-untyped-call]
        with contextlib.suppress(RedisError, OSError):
            await feed.client.aclose()

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RedisError):
                await self._task
            self._task = None
        for feed in list(self._feeds.values()):
            await self._close_feed(feed)
        self._feeds.clear()
        for task in list(self._spawned):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RedisError, OSError):
                await task
