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
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .base import (
    CommitResult,
    Event,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchNotFound,
    Snapshot,
    StoreSettings,
    VersionConflict,
    check_page_size,
    decode_page_token,
    encode_page_token,
    shard_of,
)
from .fanout import EventSubscription, MemoryFeed

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
        self._schedule: dict[int, dict[str, int]] = {}  # shard -> match id -> wakeup (ms)
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
    ) -> int:
        if index.match_id != match_id:
            raise ValueError("index.match_id must equal match_id")
        if self._get(match_id) is not None:
            raise MatchExists(match_id)
        if wake is not None:
            await self.wake(match_id, wake)
        log: deque[Event] = deque(maxlen=self.settings.max_events)
        log.extend((i + 1, e) for i, e in enumerate(events))
        index = replace(index, version=len(events), updated_at=index.created_at)
        m = _Match(meta=meta, state=state, version=len(events), index=index, events=log)
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
        if wake is not None:
            await self.wake(match_id, wake)
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

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def shards(self) -> int:
        return self.settings.schedule_shards

    def shard_of(self, match_id: str) -> int:
        return shard_of(match_id, self.settings.schedule_shards)

    async def wake(self, match_id: str, due: int) -> None:
        shard = self._schedule.setdefault(self.shard_of(match_id), {})
        cur = shard.get(match_id)
        if cur is None or due < cur:
            shard[match_id] = due

    async def claim(self, shard: int, now: int, lease: int, limit: int) -> list[tuple[str, int, int]]:
        entries = self._schedule.get(shard, {})
        due = sorted((score, m) for m, score in entries.items() if score <= now)[:limit]
        out = []
        for score, m in due:
            entries[m] = now + lease
            out.append((m, score, now + lease))
        return out

    async def reschedule(self, match_id: str, lease: int, due: int | None) -> None:
        entries = self._schedule.setdefault(self.shard_of(match_id), {})
        cur = entries.get(match_id)
        if cur is None or cur == lease:
            if due is None:
                entries.pop(match_id, None)
            else:
                entries[match_id] = due
        elif due is not None and due < cur:
            entries[match_id] = due

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        m = self._get(match_id)
        if m is not None:
            m.presence[seat] = now

    async def presence(self, match_id: str) -> dict[int, int]:
        m = self._get(match_id)
        return {} if m is None else dict(m.presence)

    async def read_record(self, match_id: str) -> list[bytes] | None:
        m = self._get(match_id)
        return None if m is None else list(m.record)

    async def close(self) -> None:
        self._matches.clear()
        self._owner_index.clear()
