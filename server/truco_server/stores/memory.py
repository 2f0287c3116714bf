"""In-memory :class:`~.base.MatchStore`: the embedded default for a single process.

Same contract as the Redis store (same test suite), kept in plain Python objects:

* atomicity comes from the event loop: :meth:`MemoryMatchStore.commit` never awaits
  between its check and its writes, so no other task can interleave;
* the event log of a match is a ``deque(maxlen=settings.max_events)`` -- the same trimming
  rule as the Redis stream's ``MAXLEN``;
* retention and request-id expiry are applied lazily against ``clock()`` whenever a match
  is touched (inject a fake clock in tests);
* :meth:`wait_events` waits on one :class:`asyncio.Condition` notified at every commit;
  :meth:`subscribe` uses a :class:`~.fanout.MemoryFeed` published at every commit.

Nothing survives a restart: use Redis for anything that must.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from truco_server.ports.store import (
    CLOCK,
    RELAY,
    Claim,
    CommitResult,
    Event,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchNotFound,
    RelayWake,
    Snapshot,
    StoreSettings,
    VersionConflict,
    check_page_size,
    decode_page_token,
    encode_page_token,
)
from truco_server.stores.fanout import EventSubscription, MemoryFeed

__all__ = ["MemoryMatchStore"]


@dataclass(slots=True)
class _Match:
    meta: bytes
    state: bytes
    version: int
    index: MatchIndexEntry
    events: deque[Event]
    requests: dict[str, tuple[float, int, bytes]] = field(default_factory=dict)
    """request_id -> (expires_at, version after that commit, reply)"""
    expires_at: float | None = None
    record: list[bytes] = field(default_factory=list)
    presence: dict[int, int] = field(default_factory=dict)
    outbox: list[bytes] = field(default_factory=list)
    relay: tuple[str, float] | None = None
    """The relay lock: (token, expiry on the store's clock)."""


@dataclass(slots=True)
class _Operator:
    events: list[tuple[int, bytes]] = field(default_factory=list)
    """(sequence number, event); the cursor of number n is ``"n-0"``."""
    next: int = 1
    webhooks: dict[str, bytes] = field(default_factory=dict)
    deliveries: dict[str, dict[str, tuple[int, bytes]]] = field(default_factory=dict)
    """webhook id -> delivery id -> (event time ms, state)"""


class MemoryMatchStore:
    """A :class:`~.base.MatchStore` held in this process's memory."""

    def __init__(
        self,
        settings: StoreSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings or StoreSettings()
        self._clock = clock
        self._matches: dict[str, _Match] = {}
        self._owner_index: dict[str, list[str]] = {}  # owner -> sorted sort_keys
        self._queues: dict[str, dict[str, tuple[int, bytes]]] = {}  # queue -> item -> (due, data)
        self._operators: dict[str, _Operator] = {}
        self._docs: dict[tuple[str, str], tuple[int, bytes]] = {}
        self._doc_index: dict[tuple[str, str], dict[str, int]] = {}
        self._assignments: dict[str, dict[str, bytes]] = {}
        self._changed = asyncio.Condition()
        self._feed = MemoryFeed()

    # -- helpers ------------------------------------------------------------------

    def _get(self, match_id: str) -> _Match | None:
        m = self._matches.get(match_id)
        if m is not None and m.expires_at is not None and self._clock() >= m.expires_at:
            self._drop(match_id, m)
            return None
        return m

    def _require(self, match_id: str) -> _Match:
        m = self._get(match_id)
        if m is None:
            raise MatchNotFound(match_id)
        return m

    def _drop(self, match_id: str, m: _Match) -> None:
        del self._matches[match_id]
        keys = self._owner_index.get(m.index.owner, [])
        i = bisect.bisect_left(keys, m.index.sort_key)
        if i < len(keys) and keys[i] == m.index.sort_key:
            del keys[i]

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- MatchStore ---------------------------------------------------------------

    async def create(
        self,
        match_id: str,
        meta: bytes,
        state: bytes,
        events: list[bytes],
        index: MatchIndexEntry,
        *,
        wake: int | None = None,
        outbox: Sequence[bytes] = (),
        relay: RelayWake | None = None,
    ) -> int:
        if index.match_id != match_id:
            raise ValueError("index.match_id must equal match_id")
        if self._get(match_id) is not None:
            raise MatchExists(match_id)
        self._queue_first(match_id, wake, relay)
        log: deque[Event] = deque(maxlen=self.settings.max_events)
        log.extend((i + 1, e) for i, e in enumerate(events))
        index = replace(index, version=len(events), updated_at=index.created_at)
        m = _Match(meta=meta, state=state, version=len(events), index=index, events=log)
        m.outbox.extend(outbox)
        if index.status in self.settings.terminal_statuses:
            m.expires_at = self._clock() + self.settings.retention_seconds
        self._matches[match_id] = m
        bisect.insort(self._owner_index.setdefault(index.owner, []), index.sort_key)
        if events:
            self._feed.publish(match_id, list(log))
            await self._notify()
        return m.version

    async def load(self, match_id: str) -> Snapshot | None:
        m = self._get(match_id)
        if m is None:
            return None
        return Snapshot(
            version=m.version,
            state=m.state,
            meta=m.meta,
            status=m.index.status,
            updated_at=m.index.updated_at,
        )

    async def commit(
        self,
        match_id: str,
        *,
        expected_version: int,
        state: bytes,
        events: list[bytes],
        request_id: str | None,
        reply: bytes,
        status: str | None = None,
        updated_at: float | None = None,
        summary: bytes | None = None,
        record: bytes | None = None,
        wake: int | None = None,
        outbox: Sequence[bytes] = (),
        relay: RelayWake | None = None,
    ) -> CommitResult:
        m = self._require(match_id)
        now = self._clock()
        if request_id is not None:
            prev = m.requests.get(request_id)
            if prev is not None and prev[0] > now:
                return CommitResult(version=prev[1], reply=prev[2], duplicate=True)
        if m.version != expected_version:
            raise VersionConflict(match_id, expected_version, m.version)
        # -- from here on no await: the commit is atomic within the event loop
        new_events = [(m.version + i + 1, e) for i, e in enumerate(events)]
        m.events.extend(new_events)
        m.version += len(events)
        m.state = state
        if record is not None:
            m.record.append(record)
        m.outbox.extend(outbox)
        self._queue_first(match_id, wake, relay)
        if request_id is not None:
            expiry = now + self.settings.request_ttl_seconds
            m.requests = {k: v for k, v in m.requests.items() if v[0] > now}
            m.requests[request_id] = (expiry, m.version, reply)
        m.index = replace(
            m.index,
            status=m.index.status if status is None else status,
            version=m.version,
            updated_at=time.time() if updated_at is None else updated_at,
            summary=m.index.summary if summary is None else summary,
        )
        if status is not None and status in self.settings.terminal_statuses:
            m.expires_at = now + self.settings.retention_seconds
        if new_events:
            self._feed.publish(match_id, new_events)
        await self._notify()
        return CommitResult(version=m.version, reply=reply)

    async def lookup_request(self, match_id: str, request_id: str) -> CommitResult | None:
        m = self._require(match_id)
        prev = m.requests.get(request_id)
        if prev is None or prev[0] <= self._clock():
            return None
        return CommitResult(version=prev[1], reply=prev[2], duplicate=True)

    async def read_events(self, match_id: str, after_version: int, limit: int) -> list[Event] | LogTrimmed:
        if after_version < 0 or limit < 1:
            raise ValueError("after_version must be >= 0 and limit >= 1")
        m = self._require(match_id)
        if after_version >= m.version:
            return []
        first = m.events[0][0]
        if after_version + 1 < first:
            return LogTrimmed(first_version=first)
        start = after_version + 1 - first
        return [m.events[i] for i in range(start, min(start + limit, len(m.events)))]

    async def wait_events(
        self, match_id: str, after_version: int, timeout: float, limit: int = 1000
    ) -> list[Event] | LogTrimmed:
        got = await self.read_events(match_id, after_version, limit)
        if got or isinstance(got, LogTrimmed):
            return got

        def ready() -> bool:
            m = self._get(match_id)
            return m is None or m.version > after_version

        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(ready), timeout)
            except TimeoutError:
                return []
        return await self.read_events(match_id, after_version, limit)

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> EventSubscription:
        return EventSubscription(self, self._feed, match_id, after_version, queue_size=queue_size)

    async def list_matches(
        self,
        owner: str,
        status: str | None,
        page_size: int,
        page_token: str | None,
    ) -> tuple[list[MatchIndexEntry], str | None]:
        check_page_size(page_size)
        keys = self._owner_index.get(owner, [])
        # newest first: walk the ascending list backwards from just below the cursor
        end = len(keys)
        if page_token:
            end = bisect.bisect_left(keys, decode_page_token(owner, page_token))
        found: list[MatchIndexEntry] = []
        i = end - 1
        while i >= 0 and len(found) <= page_size:
            match_id = keys[i].split(":", 1)[1]
            m = self._get(match_id)  # may drop an expired match (and its key at i)
            if m is not None and (status is None or m.index.status == status):
                found.append(m.index)
            i -= 1
        if len(found) > page_size:
            page = found[:page_size]
            return page, encode_page_token(owner, page[-1].sort_key)
        return found, None

    # -- sharded queues (one dict per queue: the shards matter only to Redis) ---------

    def queue_shards(self, queue: str) -> int:
        return 1

    def _queue_lower(self, queue: str, item: str, due: int, data: bytes = b"") -> None:
        q = self._queues.setdefault(queue, {})
        cur = q.get(item)
        if cur is None:
            q[item] = (due, data)
        else:
            q[item] = (min(cur[0], due), data or cur[1])

    def _queue_first(self, match_id: str, wake: int | None, relay: RelayWake | None) -> None:
        if wake is not None:
            self._queue_lower(CLOCK, match_id, wake)
        if relay is not None:
            self._queue_lower(RELAY, match_id, relay.at, relay.token)

    async def queue_add(
        self, queue: str, item: str, due: int, data: bytes = b"", *, only_new: bool = False
    ) -> bool:
        q = self._queues.setdefault(queue, {})
        if only_new:
            if item in q:
                return False
            q[item] = (due, data)
            return True
        self._queue_lower(queue, item, due, data)
        return True

    async def queue_due(self, queue: str, now: int) -> list[int]:
        return [0] if any(d <= now for d, _ in self._queues.get(queue, {}).values()) else []

    async def queue_claim(self, queue: str, shard: int, now: int, lease: int, limit: int) -> list[Claim]:
        q = self._queues.get(queue, {})
        due = sorted((d, item) for item, (d, _) in q.items() if d <= now)[:limit]
        out = []
        for d, item in due:
            data = q[item][1]
            q[item] = (now + lease, data)
            out.append(Claim(item, d, now + lease, data))
        return out

    async def queue_finish(
        self,
        queue: str,
        item: str,
        lease: int,
        due: int | None,
        data: bytes = b"",
        *,
        owned: bool = False,
    ) -> bool:
        q = self._queues.setdefault(queue, {})
        cur = q.get(item)
        if cur is None or cur[0] != lease:
            if not owned and due is not None:
                self._queue_lower(queue, item, due)
            return False
        if due is None:
            del q[item]
        else:
            q[item] = (due, data or cur[1])
        return True

    async def queue_release(self, queue: str, item: str, data: bytes) -> bool:
        q = self._queues.setdefault(queue, {})
        cur = q.get(item)
        if cur is None or cur[1] != data:
            return False
        del q[item]
        return True

    async def queue_release_many(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        return [await self.queue_release(queue, item, data) for item, data in items]

    # -- presence, records, the outbox -----------------------------------------------

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        m = self._get(match_id)
        if m is not None:
            m.presence[seat] = now

    async def presence(self, match_id: str) -> dict[int, int]:
        m = self._get(match_id)
        return {} if m is None else dict(m.presence)

    async def outbox_take(self, match_id: str, token: str, lease: int, limit: int) -> list[bytes] | None:
        m = self._get(match_id)
        if m is None:
            return []
        now = self._clock()
        if m.relay is not None and m.relay[1] > now:
            return None
        if not m.outbox:
            return []
        m.relay = (token, now + lease / 1000)
        return m.outbox[:limit]

    async def outbox_take_many(
        self, match_ids: Sequence[str], token: str, lease: int, limit: int
    ) -> list[list[bytes] | None]:
        return [await self.outbox_take(m, token, lease, limit) for m in match_ids]

    async def outbox_done(self, match_id: str, token: str, count: int) -> bool:
        m = self._get(match_id)
        if m is None or m.relay is None or m.relay[0] != token:
            return False
        del m.outbox[:count]
        m.relay = None
        return True

    async def outbox_done_many(self, done: Sequence[tuple[str, int]], token: str) -> list[bool]:
        return [await self.outbox_done(m, token, count) for m, count in done]

    # -- operators ----------------------------------------------------------------------

    # -- leagues: documents, indexes, bot assignments ------------------------------

    async def doc_get(self, kind: str, doc_id: str) -> tuple[int, bytes] | None:
        return self._docs.get((kind, doc_id))

    async def doc_put(self, kind: str, doc_id: str, expected_version: int, data: bytes) -> bool:
        current = self._docs.get((kind, doc_id))
        if (current[0] if current is not None else 0) != expected_version:
            return False
        self._docs[(kind, doc_id)] = (expected_version + 1, bytes(data))
        return True

    async def doc_index_add(self, owner: str, kind: str, doc_id: str, time_ms: int) -> None:
        self._doc_index.setdefault((owner, kind), {}).setdefault(doc_id, time_ms)

    async def doc_index(self, owner: str, kind: str, limit: int) -> list[str]:
        found = self._doc_index.get((owner, kind), {})
        return sorted(found, key=lambda d: (-found[d], d))[:limit]

    async def assignment_put(self, bot_id: str, match_id: str, data: bytes) -> None:
        self._assignments.setdefault(bot_id, {})[match_id] = bytes(data)

    async def assignment_delete(self, bot_id: str, match_id: str) -> bool:
        return self._assignments.get(bot_id, {}).pop(match_id, None) is not None

    async def assignments(self, bot_id: str) -> dict[str, bytes]:
        return dict(self._assignments.get(bot_id, {}))

    def _operator(self, owner: str) -> _Operator:
        return self._operators.setdefault(owner, _Operator())

    async def operator_append(self, owner: str, events: Sequence[bytes]) -> list[str]:
        op = self._operator(owner)
        cursors = []
        for raw in events:
            op.events.append((op.next, raw))
            cursors.append(f"{op.next}-0")
            op.next += 1
        del op.events[: max(0, len(op.events) - self.settings.operator_events_max_len)]
        await self._notify()
        return cursors

    async def operator_read(
        self, owner: str, after: str, limit: int, block: float = 0.0
    ) -> list[tuple[str, bytes]]:
        start = int((after or "0-0").split("-")[0])

        def ready() -> list[tuple[str, bytes]]:
            op = self._operators.get(owner)
            if op is None:
                return []
            return [(f"{n}-0", raw) for n, raw in op.events if n > start][:limit]

        got = ready()
        if got or block <= 0:
            return got
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: bool(ready())), block)
            except TimeoutError:
                return []
        return ready()

    async def operator_last(self, owner: str) -> str:
        op = self._operators.get(owner)
        return f"{op.events[-1][0]}-0" if op is not None and op.events else "0-0"

    async def webhook_put(self, owner: str, webhook_id: str, data: bytes, limit: int) -> bool:
        hooks = self._operator(owner).webhooks
        if webhook_id not in hooks and len(hooks) >= limit:
            return False
        hooks[webhook_id] = data
        return True

    async def webhook_get(self, owner: str, webhook_id: str) -> bytes | None:
        return self._operator(owner).webhooks.get(webhook_id)

    async def webhook_list(self, owner: str) -> dict[str, bytes]:
        return dict(self._operator(owner).webhooks)

    async def webhook_delete(self, owner: str, webhook_id: str) -> bool:
        op = self._operator(owner)
        op.deliveries.pop(webhook_id, None)
        return op.webhooks.pop(webhook_id, None) is not None

    async def delivery_log_put(
        self, owner: str, webhook_id: str, delivery_id: str, data: bytes, time_ms: int, keep: int
    ) -> None:
        log = self._operator(owner).deliveries.setdefault(webhook_id, {})
        t = log[delivery_id][0] if delivery_id in log else time_ms
        log[delivery_id] = (t, data)
        if len(log) > keep:
            for old in sorted(log, key=lambda d: log[d][0])[: len(log) - keep]:
                del log[old]

    async def delivery_log(self, owner: str, webhook_id: str, limit: int) -> list[bytes]:
        log = self._operator(owner).deliveries.get(webhook_id, {})
        newest = sorted(log.values(), key=lambda v: v[0], reverse=True)[:limit]
        return [raw for _, raw in newest]

    async def read_record(self, match_id: str) -> list[bytes] | None:
        m = self._get(match_id)
        return None if m is None else list(m.record)

    async def ping(self, timeout: float) -> None:
        return None  # in the worker's own memory: always there

    async def close(self) -> None:
        self._matches.clear()
        self._owner_index.clear()
