"""The match log: create, load, commit atomically, read, follow, list. A match is stored as
opaque bytes the match service chooses; the store knows nothing of Truco:

* ``meta`` -- written once at creation (rules, seats, owner data, secrets);
* ``state`` -- replaced by every commit;
* events -- an append-only log; every event has a contiguous integer *version*;
* the record -- one entry per commit, kept for the match's whole life (replays, audits);
* the listing row -- what an owner's listing shows without loading the match.

Version 0 is "before the first event". A match created with ``n`` events is at version ``n``;
a commit of ``k`` events moves it from ``expected_version`` to ``expected_version + k``.

Every adapter passes one contract suite (``tests/storage/test_match_log.py``), on memory,
Redis, a Redis Cluster and a Sentinel group:

* :meth:`MatchLog.commit` is atomic: version check, state, events, record, idempotency record,
  status and retention all happen together or not at all;
* a commit whose ``request_id`` is already recorded writes nothing and returns the first
  reply (checked *before* the version, so a retry after a lost reply gets its first answer);
* the log keeps the last ``StoreSettings.max_events`` events: reading from a version it no
  longer holds answers :class:`LogTrimmed`, and the caller falls back to a snapshot;
* a commit that sets a terminal status starts the retention time of every key of the match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from truco_engine._fast import fast_init
from truco_server.ports.documents import DocRef
from truco_server.ports.queues import RelayWake
from truco_server.ports.quotas import RateCharge
from truco_server.ports.settings import StoreSettings

Event = tuple[int, bytes]
"""One logged event: ``(version, payload)``."""


@dataclass(frozen=True, slots=True)
class LogTrimmed:
    """Instead of events: the log no longer holds the wanted version (trimmed, or lost by a
    failover). The caller sends a snapshot (:meth:`MatchLog.load`) and resumes from it.
    ``first_version`` is the oldest version still held (0 if unknown)."""

    first_version: int = 0


LOG_TRIMMED: Final = LogTrimmed()
"""A ready-made :class:`LogTrimmed` (compare with ``isinstance``, not identity)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What :meth:`MatchLog.load` returns: the latest state and its version."""

    version: int
    state: bytes
    meta: bytes
    status: str
    updated_at: float = 0.0
    """Unix time of the last commit (the creation for a match never acted on)."""


@fast_init
@dataclass(frozen=True, slots=True)
class CommitResult:
    """What a commit did: ``version`` is the match's version after it. For a ``duplicate``
    (its ``request_id`` was recorded) it is the version right after the *first* commit with
    that id, and ``reply`` the reply recorded then."""

    version: int
    reply: bytes
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class MatchIndexEntry:
    """One row of an owner's listing: ``created_at`` (Unix seconds) orders it, newest first
    (ties by id); ``summary`` is what the service shows without loading the match; ``version``
    and ``updated_at`` are the match's current ones when the row comes from a listing."""

    match_id: str
    owner: str
    status: str
    created_at: float
    summary: bytes = b""
    version: int = 0
    updated_at: float = 0.0

    @property
    def sort_key(self) -> str:
        """What orders the listing: zero-padded creation time in ms, then the id."""
        return f"{round(self.created_at * 1000):015d}:{self.match_id}"


@fast_init
@dataclass(frozen=True, slots=True)
class FeedAppend:
    """Operator events that a create or commit appends to their owner's stream itself, in its
    own atomic step, in order, after the stream's last (only on a store whose
    :attr:`MatchLog.appends_feed` is true): the events' bodies as the stream stores them."""

    owner: str
    events: Sequence[bytes]


@dataclass(frozen=True, slots=True)
class NewMatch:
    """A match to create, at version ``len(events)``."""

    index: MatchIndexEntry
    """Its listing row (id, owner, initial status, creation time, summary)."""
    meta: bytes
    state: bytes
    events: Sequence[bytes] = ()
    wake: int | None = None
    """Register a clock wakeup no later than this (ms since the epoch) first."""
    outbox: Sequence[bytes] = ()
    """Operator events to relay (:mod:`truco_server.ports.operators`), written with the match."""
    relay: RelayWake | None = None
    """Queue the match in the relay queue first (the safety net of the relay after the commit)."""
    feed: FeedAppend | None = None
    """Operator events appended to their owner's stream with the match (:class:`FeedAppend`)."""
    requires: Sequence[DocRef] = ()
    """Documents the match belongs to (a league's match: its league): it is created only if
    each exists, else :class:`~truco_server.ports.errors.ParentMissing` and nothing written,
    its wakeups and listing row included (:mod:`truco_server.ports.documents`)."""

    @property
    def match_id(self) -> str:
        return self.index.match_id


@fast_init
@dataclass(frozen=True, slots=True)
class Commit:
    """One step of a match, committed atomically (:meth:`MatchLog.commit`)."""

    match_id: str
    expected_version: int
    state: bytes
    events: Sequence[bytes]
    request_id: str | None = None
    """The caller's idempotency key: recorded with ``reply`` for ``request_ttl_seconds``."""
    reply: bytes = b""
    status: str | None = None
    """The status the commit sets (a terminal one starts the retention time), or unchanged."""
    updated_at: float | None = None
    """The caller's clock (Unix seconds); the store's when absent."""
    summary: bytes | None = None
    """A new listing summary, or unchanged."""
    record: bytes | None = None
    """The record entry of this step."""
    wake: int | None = None
    outbox: Sequence[bytes] = ()
    relay: RelayWake | None = None
    feed: FeedAppend | None = None
    """Operator events appended to their owner's stream by the commit (:class:`FeedAppend`)."""
    charge: RateCharge | None = None
    """A rate the commit spends when it writes, else refuses with
    :class:`~truco_server.ports.errors.RateExceeded` (only where :attr:`MatchLog.charges`)."""
    note: object = None
    """Handed, never stored, to this worker's subscriptions of the match with the committed
    events (:attr:`Batch.note`): the committer's decoded form of them, so that following its
    own commits costs a worker no decoding."""


@fast_init
@dataclass(frozen=True, slots=True)
class Batch:
    """Contiguous events continuing a subscription, oldest first."""

    events: list[Event]
    note: object = None
    """:attr:`Commit.note` of the local commit that wrote exactly these events, else ``None``."""


class SubscriptionClosed(Exception):
    """:meth:`Subscription.next` after :meth:`Subscription.close`."""


class Subscription(Protocol):
    """A live, resumable feed of one match's events after a version. It never loses an
    event: a subscriber that falls behind its bounded queue is repaired from the log, and when
    the log no longer holds what it needs it gets :class:`LogTrimmed` (then
    :meth:`resume_from` the version of the snapshot it sent)."""

    @property
    def last_version(self) -> int:
        """The version of the last event delivered (or the starting version)."""
        ...

    def resume_from(self, version: int) -> None: ...

    async def next(self, timeout: float) -> Batch | LogTrimmed | None:
        """The next batch, :class:`LogTrimmed`, or ``None`` when nothing came within
        ``timeout`` seconds; raises :class:`SubscriptionClosed` once closed."""
        ...

    def close(self) -> None:
        """Stop following (a waiting :meth:`next` raises :class:`SubscriptionClosed`)."""
        ...


class MatchLog(Protocol):
    """Matches as opaque bytes, committed atomically (see the module docstring)."""

    settings: StoreSettings
    appends_feed: bool
    """Whether a create or commit can append its ``feed`` to the owner's operator stream in its
    own atomic step (one process, one Redis server or a Sentinel group's primary: not a Redis
    Cluster, where the owner's stream is in another slot). Where it cannot, ``feed`` must be
    ``None`` and every operator event goes through the outbox."""
    charges: bool
    """Whether a commit can spend its ``charge`` in its own atomic step (one Redis server or a
    Sentinel group's primary); where it cannot, ``charge`` must be ``None``."""

    async def create(self, new: NewMatch) -> int:
        """Create a match; its version (``len(new.events)``). Raises
        :class:`~truco_server.ports.errors.MatchExists` when the id is taken."""
        ...

    async def load(self, match_id: str) -> Snapshot | None:
        """The latest snapshot, or ``None`` when the match does not exist."""
        ...

    async def commit(self, commit: Commit) -> CommitResult:
        """Apply one step atomically:

        1. ``request_id`` recorded: ``CommitResult(duplicate=True)`` with the first reply;
           nothing written;
        2. stored version != ``expected_version``:
           :class:`~truco_server.ports.errors.VersionConflict`; nothing written;
        3. else write the state, append the events and the record entry, record the request
           id, set status, ``updated_at`` and summary when given, append the outbox and the
           ``feed`` (to the owner's operator stream), spend the ``charge`` (refused with
           ``RateExceeded``, nothing written, when its rate is spent; checked after 1 and 2); first
           register the wakeup and the relay safety net (the same round trip as the commit,
           except on a cluster, where the queues are other slots).

        Raises :class:`~truco_server.ports.errors.MatchNotFound` for a match that does not
        exist. Commits of many matches made at once may share one round trip."""
        ...

    async def lookup_request(self, match_id: str, request_id: str) -> CommitResult | None:
        """The recorded outcome of an earlier commit with ``request_id`` (``duplicate=True``),
        or ``None``: answers a retry whose action is no longer legal without a read on the
        happy path. Raises ``MatchNotFound``."""
        ...

    async def read_events(self, match_id: str, after_version: int, limit: int) -> list[Event] | LogTrimmed:
        """Up to ``limit`` events after ``after_version``, oldest first; :class:`LogTrimmed`
        when version ``after_version + 1`` exists but is no longer held. Raises
        ``MatchNotFound``."""
        ...

    async def read_record(self, match_id: str) -> list[bytes] | None:
        """Every record entry of the match, oldest first; ``None`` when it does not exist."""
        ...

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> Subscription:
        """A live feed of the events after ``after_version`` (this worker's commits with
        their notes, other workers' as the adapter learns of them)."""
        ...

    async def list_matches(
        self, owner: str, status: str | None, page_size: int, page_token: str | None
    ) -> tuple[list[MatchIndexEntry], str | None]:
        """One page of the owner's matches, newest first, optionally of one status, and the
        next page's token (``None`` on the last page). Raises
        :class:`~truco_server.ports.errors.InvalidPageToken`."""
        ...

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        """Record that ``seat`` was seen (an open stream) at ``now`` (ms since the epoch)."""
        ...

    async def presence(self, match_id: str) -> dict[int, int]:
        """When each seat was last seen (ms since the epoch)."""
        ...
