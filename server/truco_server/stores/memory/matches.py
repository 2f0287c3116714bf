"""The in-memory :class:`~truco_server.ports.matches.MatchLog`.

* atomicity comes from the event loop: :meth:`MemoryMatchLog.commit` and
  :meth:`MemoryMatchLog.create` never await between their checks and their writes, so no
  other task interleaves;
* a match's event log is a ``deque(maxlen=settings.max_events)``: the trimming rule of the
  Redis stream's ``MAXLEN``;
* retention and request-id expiry are applied lazily against ``clock()`` whenever a match is
  touched (tests inject a fake clock);
* :meth:`MemoryMatchLog.subscribe` follows a :class:`~..subscription.MemoryFeed` to which
  every commit offers its events and its note.
"""

from __future__ import annotations

import bisect
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from truco_server.ports.errors import MatchExists, MatchNotFound, VersionConflict
from truco_server.ports.matches import (
    Commit,
    CommitResult,
    Event,
    FeedAppend,
    LogTrimmed,
    MatchIndexEntry,
    NewMatch,
    Snapshot,
)
from truco_server.ports.queues import CLOCK, RELAY, RelayWake
from truco_server.ports.settings import StoreSettings
from truco_server.stores.memory.documents import MemoryDocuments
from truco_server.stores.memory.queues import MemoryQueues
from truco_server.stores.paging import check_page_size, decode_page_token, encode_page_token
from truco_server.stores.subscription import EventSubscription, MemoryFeed

__all__ = ["MemoryMatchLog", "StoredMatch"]


@dataclass(slots=True)
class StoredMatch:
    """One match as the memory adapter holds it."""

    meta: bytes
    state: bytes
    version: int
    index: MatchIndexEntry
    events: deque[Event]
    requests: dict[str, tuple[float, int, bytes]] = field(default_factory=dict)
    """request_id -> (expires at, version after that commit, reply)"""
    expires_at: float | None = None
    record: list[bytes] = field(default_factory=list)
    presence: dict[int, int] = field(default_factory=dict)
    outbox: list[bytes] = field(default_factory=list)
    relay: tuple[str, float] | None = None
    """The relay lock: (token, expiry on the store's clock)."""


class MemoryMatchLog:
    """Matches held in this process's memory (see the module docstring)."""

    def __init__(
        self,
        settings: StoreSettings,
        queues: MemoryQueues,
        clock: Callable[[], float],
        documents: MemoryDocuments,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self._queues = queues
        self._documents = documents
        self._matches: dict[str, StoredMatch] = {}
        self._owner_index: dict[str, list[str]] = {}  # owner -> sorted sort keys
        self.feed = MemoryFeed()
        self.appends_feed = True
        self.charges = False  # the quota counters are another object: the service spends apart
        self.operator_sink: Callable[[str, Sequence[bytes]], object] | None = None
        """Appends operator events to their owner's stream (the operator feed sets it)."""

    # -- the matches ------------------------------------------------------------------

    def get(self, match_id: str) -> StoredMatch | None:
        """The match, or ``None`` when it never existed or its retention time is over."""
        m = self._matches.get(match_id)
        if m is not None and m.expires_at is not None and self.clock() >= m.expires_at:
            self._drop(match_id, m)
            return None
        return m

    def _require(self, match_id: str) -> StoredMatch:
        m = self.get(match_id)
        if m is None:
            raise MatchNotFound(match_id)
        return m

    def _drop(self, match_id: str, m: StoredMatch) -> None:
        del self._matches[match_id]
        keys = self._owner_index.get(m.index.owner, [])
        i = bisect.bisect_left(keys, m.index.sort_key)
        if i < len(keys) and keys[i] == m.index.sort_key:
            del keys[i]

    def _append_feed(self, feed: FeedAppend | None) -> None:
        if feed is not None and feed.events:
            assert self.operator_sink is not None, "a feed needs the operator feed beside the matches"
            self.operator_sink(feed.owner, feed.events)

    def _queue_first(self, match_id: str, wake: int | None, relay: RelayWake | None) -> None:
        if wake is not None:
            self._queues.lower(CLOCK, match_id, wake)
        if relay is not None:
            self._queues.lower(RELAY, match_id, relay.at, relay.token)

    # -- MatchLog ---------------------------------------------------------------------

    async def create(self, new: NewMatch) -> int:
        match_id = new.match_id
        self._documents.require(new.requires)
        if self.get(match_id) is not None:
            raise MatchExists(match_id)
        self._queue_first(match_id, new.wake, new.relay)
        log: deque[Event] = deque(maxlen=self.settings.max_events)
        log.extend((i + 1, e) for i, e in enumerate(new.events))
        n = len(new.events)
        index = replace(new.index, version=n, updated_at=new.index.created_at)
        m = StoredMatch(meta=new.meta, state=new.state, version=n, index=index, events=log)
        m.outbox.extend(new.outbox)
        self._append_feed(new.feed)
        if index.status in self.settings.terminal_statuses:
            m.expires_at = self.clock() + self.settings.retention_seconds
        self._matches[match_id] = m
        bisect.insort(self._owner_index.setdefault(index.owner, []), index.sort_key)
        if n:
            self.feed.publish(match_id, list(log))
        return n

    async def load(self, match_id: str) -> Snapshot | None:
        m = self.get(match_id)
        if m is None:
            return None
        return Snapshot(m.version, m.state, m.meta, m.index.status, m.index.updated_at)

    async def commit(self, commit: Commit) -> CommitResult:
        if commit.charge is not None:
            raise ValueError("the in-memory store does not spend a rate in a commit")
        match_id = commit.match_id
        m = self._require(match_id)
        now = self.clock()
        rid = commit.request_id
        if rid is not None:
            prev = m.requests.get(rid)
            if prev is not None and prev[0] > now:
                return CommitResult(version=prev[1], reply=prev[2], duplicate=True)
        if m.version != commit.expected_version:
            raise VersionConflict(match_id, commit.expected_version, m.version)
        # from here on no await: the commit is atomic within the event loop
        self._queue_first(match_id, commit.wake, commit.relay)
        new_events = [(m.version + i, e) for i, e in enumerate(commit.events, 1)]
        m.events.extend(new_events)
        m.version += len(new_events)
        m.state = commit.state
        if commit.record is not None:
            m.record.append(commit.record)
        m.outbox.extend(commit.outbox)
        self._append_feed(commit.feed)
        if rid is not None:
            m.requests = {k: v for k, v in m.requests.items() if v[0] > now}
            m.requests[rid] = (now + self.settings.request_ttl_seconds, m.version, commit.reply)
        status = commit.status
        m.index = replace(
            m.index,
            status=m.index.status if status is None else status,
            version=m.version,
            updated_at=time.time() if commit.updated_at is None else commit.updated_at,
            summary=m.index.summary if commit.summary is None else commit.summary,
        )
        if status is not None and status in self.settings.terminal_statuses:
            m.expires_at = now + self.settings.retention_seconds
        if new_events:
            self.feed.publish(match_id, new_events, commit.note)
        return CommitResult(version=m.version, reply=commit.reply)

    async def lookup_request(self, match_id: str, request_id: str) -> CommitResult | None:
        m = self._require(match_id)
        prev = m.requests.get(request_id)
        if prev is None or prev[0] <= self.clock():
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

    async def read_record(self, match_id: str) -> list[bytes] | None:
        m = self.get(match_id)
        return None if m is None else list(m.record)

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> EventSubscription:
        return EventSubscription(self, self.feed, match_id, after_version, queue_size=queue_size)

    async def list_matches(
        self, owner: str, status: str | None, page_size: int, page_token: str | None
    ) -> tuple[list[MatchIndexEntry], str | None]:
        check_page_size(page_size)
        keys = self._owner_index.get(owner, [])
        end = len(keys)  # newest first: walk the ascending keys backwards from the token
        if page_token:
            end = bisect.bisect_left(keys, decode_page_token(owner, page_token))
        found: list[MatchIndexEntry] = []
        i = end - 1
        while i >= 0 and len(found) <= page_size:
            m = self.get(keys[i].split(":", 1)[1])  # may drop an expired match (its key at i)
            if m is not None and (status is None or m.index.status == status):
                found.append(m.index)
            i -= 1
        if len(found) > page_size:
            page = found[:page_size]
            return page, encode_page_token(owner, page[-1].sort_key)
        return found, None

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        m = self.get(match_id)
        if m is not None:
            m.presence[seat] = now

    async def presence(self, match_id: str) -> dict[int, int]:
        m = self.get(match_id)
        return {} if m is None else dict(m.presence)

    def clear(self) -> None:
        self._matches.clear()
        self._owner_index.clear()
