"""What both Redis stream hubs share: the subscriptions of this worker, the *cursor* of each
subscribed match, delivery (local fan-out included) and the check of the streams after a
reconnect.

A blocking ``XREAD`` holds a connection, so a worker must not run one per open stream: it
multiplexes its subscriptions on one hub -- :class:`~.feed.RedisStreamHub` on one server or a
Sentinel group (``XREAD BLOCK`` over many streams on one connection), or
:class:`~.cluster_feed.ClusterStreamHub` on a cluster (sharded pub/sub doorbells, one
subscriber connection per primary). Commits made by *this* worker are delivered without
Redis at all (``committed``, "local fan-out"), with the commit's note.

Ordering argument (why nothing is lost): the hub keeps one cursor per subscribed match with
this invariant: every event with a version up to the cursor that is newer than a
subscription's attach-time cursor has been offered to that subscription. A subscription
attaches before its catch-up read; the cursor is never ahead of the newest event at attach
time, and the catch-up read starts at the subscriber's version and ends at or after that
newest event, so catch-up plus feed cover everything (duplicates are dropped by version).
The cursor moves in exactly three ways, all keeping the invariant:

1. a read of the stream from the cursor returns the next events, which are offered;
2. a local commit of versions ``v+1..v+k`` made when the cursor is exactly ``v``: those are
   all the events between ``v`` and ``v+k`` (the commit's version check proves nothing else
   was written in between), so they are offered and the cursor moves to ``v+k``. When the
   cursor is behind ``v`` (another worker committed versions this hub has not read yet)
   nothing is offered locally and the next read delivers everything in order;
3. a subscription's own catch-up read (:meth:`HubCore.read_from_log`) returned versions that
   continue the cursor: they are the stream's next events, so they are offered to the
   match's other subscriptions and the cursor moves over them. This keeps the cursor at or
   past whatever any subscription was shown, which the failover check relies on.

**Failover.** Replication is asynchronous, so a promoted replica may lack the last events a
worker already delivered; the next commits then reuse those versions for other events.
After every reconnect both hubs check each subscribed stream against what they delivered
(:meth:`HubCore._check`: the entry at the cursor must still be there with the same bytes);
when it is not -- lost, rewritten, or trimmed away meanwhile -- the subscriptions are told
(:meth:`~..subscription.EventSubscription.report_gap`) and answer ``LogTrimmed``, so the
service sends a snapshot and the client's view is right again (``truco_stream_gaps_total``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from truco_server.core import metrics
from truco_server.ports.matches import Event
from truco_server.stores.redis.replies import EVENT_FIELD, version_of
from truco_server.stores.subscription import EventSubscription

__all__ = ["HubCore"]

log = logging.getLogger("truco_server.stores.redis.hub")


class HubCore:
    """The subscriptions and cursors of a hub, delivery, and the check after a reconnect."""

    def __init__(
        self,
        stream_key: Callable[[str], str],
        *,
        count: int,
        timeout: float,
        on_round_trip: Callable[[int], None] | None,
    ) -> None:
        self._stream_key = stream_key
        self._count = count
        self._timeout = timeout
        """Seconds a read of the hub's own (no ``XREAD BLOCK``) may take."""
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
        self._inflight: dict[str, int] = {}
        """Commits of this worker in flight, per followed match."""
        self._held: dict[str, list[list[Event]]] = {}
        """Events read from Redis while a local commit on the match was in flight: most
        likely that commit's own, delivered by it with its note; the rest when it returns."""
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

    def attach(self, sub: EventSubscription) -> bool:
        """Follow ``sub``. ``True`` when the match was followed already, its cursor exactly
        at ``sub``'s starting version and its stream not waiting for the check after a
        reconnect: every later event is then offered to ``sub`` as to the match's other
        subscriptions (the invariant of the module docstring), and its catch-up read is
        skipped (a match's second seat on a worker). Events of another worker reach it when
        they reach them: at once for a remote match, at the next poll for a local one."""
        if self._closed:
            raise RuntimeError("hub is closed")
        mid = sub.match_id
        self._subs.setdefault(mid, set()).add(sub)
        cursor = self._cursors.get(mid)
        if cursor is not None:
            return cursor == sub.last_version and mid not in self._unverified
        self._cursors[mid] = sub.last_version
        key = self._stream_key(mid).encode()
        self._keys[mid] = key
        self._key_to_match[key] = mid
        self._followed(mid)
        return False

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
            self._inflight.pop(mid, None)
            self._held.pop(mid, None)
            key = self._keys.pop(mid, None)
            if key is not None:
                self._key_to_match.pop(key, None)
            self._unfollowed(mid)

    async def _supervised(self, loop: Callable[[], Awaitable[None]], name: str) -> None:
        """Run the hub's loop until the hub closes. An error that escapes it is a bug, not a
        Redis fault (the loops handle those): it is logged with its traceback and counted
        (``truco_stream_hub_failures_total``), and the loop starts again after a pause with
        every followed stream to be checked -- a hub that stopped would leave every stream of
        the worker silent."""
        backoff = 0.05
        while not self._closed:
            try:
                await loop()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                metrics.STREAM_HUB_FAILURES.inc()
                log.exception("stream hub %s stopped on an unexpected error; restarting it", name)
                self._unverified.update(self._cursors)
                self._recheck_all()
            await asyncio.sleep(backoff)  # not in the handler (docs/engine.md, "Compiled build")
            backoff = min(backoff * 2, 2.0)

    def _recheck_all(self) -> None:
        """Have the loop check every followed stream before delivering more (hook)."""

    def _followed(self, mid: str) -> None:
        """A first subscription for ``mid`` (hook)."""

    def _unfollowed(self, mid: str) -> None:
        """The last subscription for ``mid`` went away (hook)."""

    def _moved(self, mid: str) -> None:
        """``mid``'s cursor moved (hook; not called when it is first set: see
        :meth:`_followed`)."""

    def begin_commit(self, match_id: str) -> None:
        """This worker is about to commit on ``match_id`` (pair with :meth:`end_commit`,
        called after :meth:`committed`)."""
        if match_id in self._cursors:
            self._inflight[match_id] = self._inflight.get(match_id, 0) + 1

    def end_commit(self, match_id: str) -> None:
        """The commit announced by :meth:`begin_commit` returned (or failed): what was read
        from Redis meanwhile and not delivered by the commit itself is delivered now."""
        n = self._inflight.get(match_id)
        if n is None:
            return
        if n > 1:
            self._inflight[match_id] = n - 1
            return
        del self._inflight[match_id]
        for batch in self._held.pop(match_id, ()):
            cursor = self._cursors.get(match_id)
            fresh = [e for e in batch if cursor is not None and e[0] > cursor]
            if fresh:
                self._deliver(match_id, fresh)

    def _deliver_read(self, mid: str, batch: list[Event]) -> None:
        """Deliver events read from Redis (beyond the cursor), or hold them while a local
        commit on the match is in flight (see ``_held``)."""
        if mid in self._inflight:
            self._held.setdefault(mid, []).append(batch)
        else:
            self._deliver(mid, batch)

    def committed(self, match_id: str, base_version: int, events: list[bytes], note: object = None) -> None:
        """This worker committed ``events`` as versions ``base_version + 1 ..`` (hook)."""

    def conflicted(self, match_id: str) -> None:
        """A commit on ``match_id`` lost to another writer (hook)."""

    def _deliver(self, mid: str, batch: list[Event], note: object = None) -> None:
        """Offer ``batch`` (contiguous, right after the cursor) and move the cursor."""
        self._cursors[mid] = batch[-1][0]
        self._moved(mid)
        self._payloads[mid] = batch[-1][1]
        for sub in list(self._subs.get(mid, ())):
            sub.offer(batch, note)

    def read_from_log(self, match_id: str, events: list[Event]) -> None:
        """A subscription's own catch-up read ``events`` (contiguous) from the log: what
        continues the cursor is offered to the match's other subscriptions and moves the
        cursor (3. in the module docstring). Were the cursor left behind, a failover that
        lost those events would go unnoticed: the stream would still continue the cursor,
        and the new history's next versions would follow the lost ones on the view."""
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

    def _offer_read(self, mid: str, base_version: int, events: list[bytes]) -> bool:
        """Deliver events read from Redis (versions ``base_version + 1 ..``) beyond the
        cursor (:meth:`_deliver_read`). False when they do not reach back to it (events in
        between are missing here)."""
        cursor = self._cursors.get(mid)
        if cursor is None or not events:
            return True
        if base_version > cursor:
            return False
        fresh = [(base_version + i, e) for i, e in enumerate(events, 1) if base_version + i > cursor]
        if fresh:
            self._deliver_read(mid, fresh)
        return True

    async def _check(self, client: Any, mids: Iterable[str]) -> list[str]:
        """Read each match's stream from its cursor (inclusive) and its last entry; deliver
        what is new; report a gap where the stream no longer continues the cursor
        (:meth:`_reconcile`); mark the others checked. Returns the matches to read again: a
        full batch came back, or the cursor moved during the read."""
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
            async with asyncio.timeout(self._timeout):
                replies = await pipe.execute()
            for i, mid in enumerate(chunk):
                if mid not in self._cursors:
                    continue  # detached meanwhile
                if self._cursors[mid] != cursors[i]:
                    more.append(mid)  # moved on meanwhile: read again
                    continue
                if self._reconcile(mid, replies[2 * i], replies[2 * i + 1]):
                    more.append(mid)
        return more

    def _reconcile(self, mid: str, forward: Any, last: Any) -> bool:
        cursor = self._cursors[mid]
        entries = [(version_of(eid), fields[EVENT_FIELD]) for eid, fields in forward]
        known = self._payloads.get(mid)
        if cursor == 0 or (entries and entries[0][0] > cursor):
            # from the start, or the entry at the cursor was trimmed away meanwhile: what
            # follows is offered as it is, and a subscription that misses the events in
            # between repairs from the log (and gets LogTrimmed there)
            fresh = entries
        elif entries and entries[0][0] == cursor and (known is None or entries[0][1] == known):
            fresh = entries[1:]
        else:
            self._report_gap(mid, cursor, last)
            return False
        if not known and entries and entries[0][0] == cursor:
            self._payloads[mid] = entries[0][1]
        if fresh:
            self._deliver(mid, fresh)
        if len(entries) >= self._count:
            return True
        self._unverified.discard(mid)
        return False

    def _report_gap(self, mid: str, cursor: int, last: Any) -> None:
        """The stream ends before the cursor (rolled back by a failover, or deleted), or the
        entry at the cursor was rewritten: start again from the stream's end and have every
        subscriber resynchronize."""
        if last:
            eid, fields = last[0]
            self._cursors[mid] = version_of(eid)
            self._payloads[mid] = fields[EVENT_FIELD]
        else:
            self._cursors[mid] = 0
            self._payloads.pop(mid, None)
        self._moved(mid)
        self._held.pop(mid, None)
        self.gaps += 1
        metrics.STREAM_GAPS.inc()
        log.warning("stream of match %s does not continue version %d: resynchronizing", mid, cursor)
        for sub in list(self._subs.get(mid, ())):
            sub.report_gap()
        self._unverified.discard(mid)

    async def close(self) -> None:
        self._closed = True
