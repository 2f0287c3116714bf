"""One subscriber of a match's events, and the feed of the in-memory store.

A streaming RPC wants "every event after version V, as it happens". :class:`EventSubscription`
is that, for one subscriber:

* it owns a *bounded* queue (a client that does not read must not make the server's memory
  grow): a feed offers batches without ever blocking, and a batch that does not fit marks
  the subscription as overflowed instead;
* it catches up from the log itself (``read_events``) when it starts (unless its feed
  already follows the match from exactly its starting version: then the feed offers it
  everything after, as to the match's other subscriptions), after an overflow and after a
  gap in what was offered (a missed wake-up), from the last version it delivered;
* it delivers contiguous batches only, dropping what it already delivered; only when the log
  no longer holds the version it needs does it answer :class:`LogTrimmed`, and the caller
  sends a snapshot and calls :meth:`EventSubscription.resume_from`;
* a batch offered by a local commit carries that commit's ``note`` (:attr:`Batch.note`) when
  it is delivered exactly as offered, and when it was among the first :data:`NOTES_KEPT` in
  the queue: a note holds the whole match after its commit (states, views, encodings), so a
  subscriber that does not read would otherwise pin as many versions of its match as its
  queue holds (256 by default); a batch without its note is decoded from its events.

A *feed* offers it what was committed: :class:`MemoryFeed` (the memory adapter, at every
commit), or a Redis stream hub (:mod:`truco_server.stores.redis.feed`,
:mod:`truco_server.stores.redis.cluster_feed`). A subscription attaches to its feed before
its first catch-up read, so catch-up and feed together cover every event (the ordering
argument is in :mod:`truco_server.stores.redis.hub`).

Waiting costs one future per wait and a ``loop.call_later`` for its timeout: no task, no
``asyncio.wait``, nothing per batch that is already queued.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from typing import Protocol

from truco_server.ports.matches import Batch, Event, LogTrimmed, SubscriptionClosed

__all__ = ["NOTES_KEPT", "EventReader", "EventSubscription", "Feed", "MemoryFeed"]

NOTES_KEPT = 4
"""Queued batches that keep their commit's note; later ones keep only their events."""


class EventReader(Protocol):
    """What a subscription reads its catch-up from (the adapter's match log)."""

    async def read_events(
        self, match_id: str, after_version: int, limit: int
    ) -> list[Event] | LogTrimmed: ...


class Feed(Protocol):
    """Offers new events to attached subscriptions (:meth:`EventSubscription.offer`)."""

    def attach(self, sub: EventSubscription) -> bool:
        """Follow ``sub``; ``True`` when every event after its starting version is yet to be
        offered to it (its first catch-up read would find nothing the feed does not bring)."""
        ...

    def detach(self, sub: EventSubscription) -> None: ...

    def read_from_log(self, match_id: str, events: list[Event]) -> None:
        """An attached subscription's catch-up read ``events`` from the log itself."""


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class EventSubscription:
    """The :class:`~truco_server.ports.matches.Subscription` of every adapter: a resumable
    live feed of one match's events from ``after_version`` on (see the module docstring)."""

    __slots__ = (
        "_attached",
        "_batch_limit",
        "_closed",
        "_feed",
        "_gap",
        "_items",
        "_last",
        "_need_catchup",
        "_overflowed",
        "_queue_size",
        "_reader",
        "_trimmed",
        "_waiter",
        "match_id",
    )

    def __init__(
        self,
        reader: EventReader,
        feed: Feed,
        match_id: str,
        after_version: int,
        *,
        queue_size: int = 256,
        batch_limit: int = 1000,
    ) -> None:
        if after_version < 0:
            raise ValueError("after_version must be >= 0")
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.match_id = match_id
        self._reader = reader
        self._feed = feed
        self._last = after_version
        self._items: deque[tuple[list[Event], object]] = deque()
        self._queue_size = queue_size
        self._batch_limit = batch_limit
        self._waiter: asyncio.Future[None] | None = None
        self._overflowed = False
        self._need_catchup = True
        self._attached = False
        self._trimmed = False
        self._gap = False
        self._closed = False

    # -- called by feeds ----------------------------------------------------------------

    def offer(self, events: list[Event], note: object = None) -> None:
        """Queue a batch (contiguous events) without blocking; on a full queue remember the
        overflow, after which everything is dropped until the subscriber re-reads the log."""
        if self._closed or self._overflowed or not events:
            return
        if len(self._items) >= self._queue_size:
            self._overflowed = True
            self._items.clear()  # all of it is in the log
        else:
            self._items.append((events, note if len(self._items) < NOTES_KEPT else None))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def report_gap(self) -> None:
        """The log no longer continues what was delivered (events lost or rewritten by a
        failover): the next answer is :class:`LogTrimmed`, so the consumer sends a snapshot
        and calls :meth:`resume_from`."""
        if self._closed:
            return
        self._gap = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the consumer's side ------------------------------------------------------------

    @property
    def last_version(self) -> int:
        """The version of the last event delivered (or the starting version)."""
        return self._last

    @property
    def closed(self) -> bool:
        return self._closed

    def resume_from(self, version: int) -> None:
        """Continue after a :class:`LogTrimmed` from ``version`` (the snapshot sent)."""
        self._last = version
        self._trimmed = False
        self._need_catchup = True

    async def next(self, timeout: float) -> Batch | LogTrimmed | None:
        """The next batch, :class:`LogTrimmed`, or ``None`` when nothing came within
        ``timeout`` seconds (``math.inf``: wait as long as it takes; 0: only what is ready).
        Raises :class:`SubscriptionClosed` once :meth:`close` was called."""
        if self._closed:
            raise SubscriptionClosed(self.match_id)
        if self._trimmed:
            raise RuntimeError("log trimmed: call resume_from(snapshot_version) first")
        if self._waiter is not None:
            raise RuntimeError("next() is already waiting on this subscription")
        if not self._attached:
            if self._feed.attach(self):
                self._need_catchup = False  # the feed brings everything after its start
            self._attached = True
        loop: asyncio.AbstractEventLoop | None = None
        deadline = 0.0
        while True:
            got = await self._ready()
            if got is not None:
                return got
            if loop is None:
                if timeout <= 0:
                    return None
                loop = asyncio.get_running_loop()
                deadline = loop.time() + timeout
            elif loop.time() >= deadline:
                return None
            await self._wait(loop, deadline)

    async def _ready(self) -> Batch | LogTrimmed | None:
        """What can be answered without waiting (a catch-up read is no wait), else None."""
        while True:
            if self._closed:
                raise SubscriptionClosed(self.match_id)
            if self._gap:
                self._gap = False
                self._items.clear()
                self._trimmed = True
                return LogTrimmed()
            if self._need_catchup or self._overflowed:
                caught = await self._catch_up()
                if caught is not None:
                    return caught
                continue  # nothing new in the log: what was offered meanwhile is queued
            if not self._items:
                return None
            events, note = self._items.popleft()
            last = self._last
            if events[0][0] <= last:
                events = [e for e in events if e[0] > last]
                note = None  # not exactly what the commit wrote
                if not events:
                    continue
            if events[0][0] != last + 1 or events[-1][0] - events[0][0] != len(events) - 1:
                self._need_catchup = True  # a gap: repair from the log
                continue
            self._last = events[-1][0]
            return Batch(events, note)

    async def _catch_up(self) -> Batch | LogTrimmed | None:
        self._need_catchup = False
        self._overflowed = False
        self._items.clear()  # all of it is in the log too
        got = await self._reader.read_events(self.match_id, self._last, self._batch_limit)
        if self._closed:
            raise SubscriptionClosed(self.match_id)
        if self._gap:
            return None  # reported by the caller's next turn
        if isinstance(got, LogTrimmed):
            self._trimmed = True
            return got
        if not got:
            return None
        self._last = got[-1][0]
        self._feed.read_from_log(self.match_id, got)
        if len(got) >= self._batch_limit:
            self._need_catchup = True
        return Batch(got)

    async def _wait(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        """Wait for an offer, a gap, :meth:`close` or the deadline: one future, and a timer
        unless the deadline is infinite."""
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        timer = None if deadline == math.inf else loop.call_at(deadline, _wake, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def close(self) -> None:
        """Stop following: a waiting :meth:`next` raises :class:`SubscriptionClosed`."""
        if self._closed:
            return
        self._closed = True
        self._items.clear()
        if self._attached:
            self._feed.detach(self)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(SubscriptionClosed(self.match_id))


class MemoryFeed:
    """The in-memory adapter's feed: every commit's events are offered to the match's
    subscriptions as it is made (with the commit's note)."""

    def __init__(self) -> None:
        self._subs: dict[str, set[EventSubscription]] = {}

    def attach(self, sub: EventSubscription) -> bool:
        self._subs.setdefault(sub.match_id, set()).add(sub)
        return False  # a read of the log in memory costs less than telling

    def detach(self, sub: EventSubscription) -> None:
        subs = self._subs.get(sub.match_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.match_id]

    def read_from_log(self, match_id: str, events: list[Event]) -> None:
        """Nothing to do: every commit is offered to every subscription at once."""

    def publish(self, match_id: str, events: list[Event], note: object = None) -> None:
        for sub in list(self._subs.get(match_id, ())):
            sub.offer(events, note)

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._subs.values())
