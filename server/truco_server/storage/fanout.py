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
  - :class:`RedisStreamHub` -- one background task per worker runs ``XREAD BLOCK`` over
    the streams of subscribed matches on one dedicated connection; a new subscription
    interrupts the blocked read with ``CLIENT UNBLOCK`` so the new stream is included at
    once (``block_ms`` bounds the delay if that wake-up races with the read). Commits made
    by *this* worker are delivered without Redis at all (:meth:`RedisStreamHub.committed`,
    "local fan-out"): the store hands the hub the events it just wrote.

Ordering argument (why nothing is lost): the hub keeps one *cursor* per subscribed match
with this invariant: every event with a version up to the cursor that is newer than a
subscription's attach-time cursor has been offered to that subscription. A subscription
attaches to the feed *before* its catch-up read; the cursor is never ahead of the newest
event at attach time, and the catch-up read starts at the subscriber's version and ends at
or after that newest event, so catch-up plus feed cover everything (duplicates are dropped
by version). The cursor moves in exactly two ways, both keeping the invariant:

1. an ``XREAD`` from the cursor returns the next events of the stream, which are offered;
2. a local commit of versions ``v+1..v+k`` made when the cursor is exactly ``v``: those are
   all the events between ``v`` and ``v+k`` (the commit's version check proves nothing else
   was written in between), so they are offered and the cursor moves to ``v+k``. When the
   cursor is behind ``v`` (another worker committed versions this hub has not read yet)
   nothing is offered locally and the next ``XREAD`` delivers everything in order.

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

Limitation: a multi-stream ``XREAD`` needs all keys in one slot on Redis Cluster, so the
hub as written serves a standalone Redis (or one primary); on a cluster run one hub per
shard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .base import Event, LogTrimmed

__all__ = ["EventReader", "EventSubscription", "LiveFeed", "MemoryFeed", "RedisStreamHub"]

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
            if self._need_catchup or self._overflowed:
                self._need_catchup = False
                self._overflowed = False
                while not self._queue.empty():  # all of it is in the log too
                    self._queue.get_nowait()
                got = await self._reader.read_events(self.match_id, self._last, self._batch_limit)
                if isinstance(got, LogTrimmed):
                    self._trimmed = True
                    return got
                if got:
                    self._last = got[-1][0]
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


class RedisStreamHub:
    """One ``XREAD BLOCK`` reader task serving every subscription of a worker.

    ``reader`` must be a client with a single dedicated connection (it is blocked most of
    the time); ``waker`` is any client (the store's pool) used for ``CLIENT UNBLOCK``.
    ``stream_key(match_id)`` names the stream of a match; ``field`` is the entry field
    holding the payload. After a read that returned events the next one waits
    ``coalesce_ms`` so that several commits share one read (at the cost of at most that
    much extra delivery delay). The store calls :meth:`committed` after each of its own
    commits (local fan-out); ``poll_ms`` and ``local_after`` govern the local/remote
    split described in the module docstring.
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
        self._reader = reader
        self._waker = waker
        self._stream_key = stream_key
        self._field = field
        self._block_ms = block_ms
        self._count = count
        self._on_round_trip = on_round_trip or (lambda n: None)
        self._subs: dict[str, set[EventSubscription]] = {}
        self._cursors: dict[str, int] = {}
        self._streak: dict[str, int] = {}
        self._local: set[str] = set()
        self._inflight: dict[str, int] = {}
        self._key_to_match: dict[bytes, str] = {}
        self._keys: dict[str, bytes] = {}
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
        self._closed = False
        self.local_batches = 0
        """Batches delivered by local fan-out (for tests and benchmarks)."""
        self.reads = 0
        """``XREAD`` calls issued (for tests and benchmarks)."""

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._subs.values())

    def is_local(self, match_id: str) -> bool:
        """Whether ``match_id`` is in the local class (read only every ``poll_ms``)."""
        return match_id in self._local

    def attach(self, sub: EventSubscription) -> None:
        if self._closed:
            raise RuntimeError("hub is closed")
        mid = sub.match_id
        self._subs.setdefault(mid, set()).add(sub)
        if mid not in self._cursors:
            self._cursors[mid] = sub.last_version
            self._streak[mid] = 0
            key = self._stream_key(mid).encode()
            self._keys[mid] = key
            self._key_to_match[key] = mid
            self._make_remote(mid)

    def detach(self, sub: EventSubscription) -> None:
        subs = self._subs.get(sub.match_id)
        if subs is None:
            return
        subs.discard(sub)
        if not subs:
            mid = sub.match_id
            del self._subs[mid]
            del self._cursors[mid]
            self._streak.pop(mid, None)
            self._inflight.pop(mid, None)
            self._local.discard(mid)
            key = self._keys.pop(mid, None)
            if key is not None:
                self._key_to_match.pop(key, None)

    def begin_commit(self, match_id: str) -> None:
        """The store is about to commit on ``match_id`` (pair with :meth:`end_commit`)."""
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
        if cursor is None or not events:
            return
        if cursor == base_version:
            batch = [(base_version + i, e) for i, e in enumerate(events, 1)]
            self._cursors[match_id] = batch[-1][0]
            self.local_batches += 1
            for sub in list(self._subs.get(match_id, ())):
                sub.offer(batch)
        elif cursor < base_version:
            self._make_remote(match_id)  # commits from elsewhere are waiting: read them now
            return
        # else an XREAD raced ahead of this reply and already delivered these events
        streak = self._streak[match_id] = self._streak.get(match_id, 0) + 1
        if streak >= self._local_after:
            self._local.add(match_id)  # left out of the blocking reads from the next one

    def conflicted(self, match_id: str) -> None:
        """A commit on ``match_id`` lost to another writer: treat the match as remote."""
        if match_id in self._cursors:
            self._make_remote(match_id)

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
            self._task = asyncio.create_task(self._run(), name="truco-stream-hub")
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
                cursors[mid] = batch[-1][0]
                if mid not in self._inflight and (mid in self._local or self._streak.get(mid)):
                    # events this worker did not commit (with a local commit in flight
                    # they are most likely that commit's, read before its reply arrived)
                    self._streak[mid] = 0
                    self._local.discard(mid)
                for sub in list(self._subs.get(mid, ())):
                    sub.offer(batch)

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
