"""The storage port: types, errors and the :class:`MatchStore` protocol.

The storage layer knows nothing about Truco. A match is stored as three opaque byte
strings chosen by the service layer:

* ``meta``  -- written once at creation (rule set, seats, owner data ...),
* ``state`` -- replaced on every commit (the serialized engine state),
* events    -- an append-only log; every event gets a contiguous integer *version*.

Version 0 means "before the first event". A match created with ``n`` initial events is
at version ``n``; a commit of ``k`` events moves it from ``expected_version`` to
``expected_version + k`` and the events get versions ``expected_version + 1 ..
expected_version + k``.

Both implementations (:mod:`.memory_store` and :mod:`.redis_store`) follow the same
contract, checked by one test suite (``tests/storage/test_store_contract.py``):

* :meth:`MatchStore.commit` is atomic: version check, state write, event append,
  idempotency record and status/retention update happen all together or not at all.
* A commit that carries a ``request_id`` already recorded for the match writes nothing and
  returns the first reply (``CommitResult.duplicate``) -- this is checked *before* the
  version, so a client retry after a lost reply gets its original answer even though the
  version has moved on.
* The event log keeps at most ``StoreSettings.max_events`` events; reading from a version
  that is no longer held returns :data:`LOG_TRIMMED` so the caller sends a full snapshot.
* When a commit sets a terminal status (``StoreSettings.terminal_statuses``) every key of
  the match gets a time to live of ``StoreSettings.retention_seconds``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

__all__ = [
    "CLOCK",
    "LEAGUE",
    "LOG_TRIMMED",
    "RELAY",
    "WEBHOOK",
    "Claim",
    "CommitResult",
    "Event",
    "InvalidPageToken",
    "LogTrimmed",
    "MatchExists",
    "MatchIndexEntry",
    "MatchNotFound",
    "MatchStore",
    "RelayWake",
    "Snapshot",
    "StorageError",
    "StoreSettings",
    "StoreUnavailable",
    "VersionConflict",
]

from truco_server.ports.errors import (
    InvalidPageToken,
    MatchExists,
    MatchNotFound,
    StorageError,
    StoreUnavailable,
    VersionConflict,
)
from truco_server.ports.matches import (
    LOG_TRIMMED,
    CommitResult,
    Event,
    LogTrimmed,
    MatchIndexEntry,
    Snapshot,
)
from truco_server.ports.settings import StoreSettings

# --------------------------------------------------------------------------- page tokens


def encode_page_token(owner: str, sort_key: str) -> str:
    """Opaque token: the sort key of the last row returned, bound to the owner."""
    raw = f"{owner}\n{sort_key}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(owner: str, token: str) -> str:
    """Return the sort key inside ``token``; raise :class:`InvalidPageToken` if malformed."""
    try:
        padded = token + "=" * (-len(token) % 4)
        raw = base64.urlsafe_b64decode(padded.encode()).decode()
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise InvalidPageToken("malformed page_token") from exc
    token_owner, sep, sort_key = raw.partition("\n")
    if not sep or token_owner != owner or not sort_key:
        raise InvalidPageToken("page_token does not belong to this listing")
    return sort_key


from truco_server.ports.queues import CLOCK, LEAGUE, RELAY, WEBHOOK, Claim, RelayWake  # noqa: E402


def check_page_size(page_size: int) -> None:
    if page_size < 1:
        raise ValueError("page_size must be at least 1")


# --------------------------------------------------------------------------- the port


@runtime_checkable
class Subscription(Protocol):
    """A live, resumable feed of one match's events (see :mod:`.fanout`).

    Iterating yields batches of contiguous events, or a :class:`LogTrimmed` marker when
    events were lost (log trimmed); after a marker call :meth:`resume_from` with the
    version of the snapshot the caller sent, or stop.
    """

    @property
    def last_version(self) -> int: ...

    def resume_from(self, version: int) -> None: ...

    def __aiter__(self) -> AsyncIterator[list[Event] | LogTrimmed]: ...

    async def aclose(self) -> None: ...


class MatchStore(Protocol):
    """Async storage of matches as opaque bytes. See the module docstring for semantics."""

    settings: StoreSettings

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
        """Create a match; return its version (``len(events)``). ``wake``: first register a
        wakeup in the clock queue no later than that (ms since the epoch); ``outbox``: operator
        events to relay (:meth:`outbox_take`), written with the match; ``relay``: first queue
        the match in the relay queue (:class:`RelayWake`).

        Raises :class:`MatchExists` if the id is taken. ``index.match_id`` must equal
        ``match_id``; ``index.status`` is the initial status.
        """
        ...

    async def load(self, match_id: str) -> Snapshot | None:
        """Latest snapshot, or ``None`` if the match does not exist."""
        ...

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
        """Atomically apply one action's outcome.

        1. ``request_id`` already recorded -> ``CommitResult(duplicate=True)`` with the
           first reply; nothing written.
        2. stored version != ``expected_version`` -> :class:`VersionConflict`; nothing
           written.
        3. otherwise write ``state``, append ``events``, remember ``request_id -> reply``
           for ``settings.request_ttl_seconds``, set ``status`` if given (a terminal status
           starts the retention TTL on all keys of the match), record ``updated_at`` (the
           caller's clock; now when absent), replace the listing ``summary`` if given, append
           ``record`` to the match's record and ``outbox`` to its outbox. ``wake``: before
           anything else, register a wakeup in the clock queue no later than that; ``relay``:
           before anything else, queue the match in the relay queue (:class:`RelayWake`). Both
           in the same round trip as the commit, except on a cluster, where the queues are in
           other slots.

        Raises :class:`MatchNotFound` if the match does not exist.
        """
        ...

    async def lookup_request(self, match_id: str, request_id: str) -> CommitResult | None:
        """The recorded outcome of an earlier commit with ``request_id`` (``duplicate=True``),
        or ``None``. Lets the service answer a retry whose action is no longer legal (it
        was applied the first time) without putting a read on the happy path.

        Raises :class:`MatchNotFound` if the match does not exist.
        """
        ...

    async def read_events(self, match_id: str, after_version: int, limit: int) -> list[Event] | LogTrimmed:
        """Up to ``limit`` events with version > ``after_version``, oldest first.

        Returns :class:`LogTrimmed` when version ``after_version + 1`` exists but is no
        longer held. Raises :class:`MatchNotFound` if the match does not exist.
        """
        ...

    async def wait_events(
        self, match_id: str, after_version: int, timeout: float, limit: int = 1000
    ) -> list[Event] | LogTrimmed:
        """Like :meth:`read_events`, but block up to ``timeout`` seconds until at least
        one event after ``after_version`` exists; ``[]`` on timeout.

        On Redis each waiting call holds a connection (``XREAD BLOCK``): a worker that
        serves many streams should use :meth:`subscribe` instead, which multiplexes all
        subscriptions on one reader task.
        """
        ...

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> Subscription:
        """Live feed of events after ``after_version`` (see :mod:`.fanout`)."""
        ...

    async def list_matches(
        self,
        owner: str,
        status: str | None,
        page_size: int,
        page_token: str | None,
    ) -> tuple[list[MatchIndexEntry], str | None]:
        """One page of the owner's matches, newest first, optionally filtered by status.

        Returns ``(entries, next_page_token)``; the token is ``None`` on the last page.
        Raises :class:`InvalidPageToken` for a token not handed out for this owner.
        """
        ...

    # -- sharded queues ----------------------------------------------------------------
    #
    # Work any worker may do and exactly one should: a queue (``CLOCK``, ``WEBHOOK``) is
    # ``queue_shards`` sorted sets of items by due time (ms since the epoch), each with a hash
    # of item data, each shard in its own slot. A reader claims due items of a shard
    # (``queue_claim``: each moves to a lease, so no other reader takes it meanwhile), does
    # the work, and ends the claim (``queue_finish``: the next due time, or done). A reader
    # that dies leaves its claims to expire and be claimed again.
    #
    # The clock queue holds every active match that will need the server at some time (a
    # clock deadline, a join window, an idle timeout). Every commit that makes the match due
    # earlier registers that time first (``commit(wake=)``, which only ever lowers a wakeup,
    # in the same round trip as the commit where the keys allow it), so a match's wakeup is
    # never later than its due time.

    def queue_shards(self, queue: str) -> int:
        """Number of shards of ``queue``."""
        ...

    async def queue_add(
        self, queue: str, item: str, due: int, data: bytes = b"", *, only_new: bool = False
    ) -> bool:
        """Queue ``item`` due at ``due``: its due time becomes at most ``due`` (a queued item
        is never made later) and ``data`` replaces its data when given. ``only_new``: only
        if the item has no data yet (returns ``False`` when it had: an item is queued once)."""
        ...

    async def queue_due(self, queue: str, now: int) -> list[int]:
        """The shards of ``queue`` with an item due by ``now`` (a read: what a reader checks
        before claiming, so an idle tick costs one round trip and no script)."""
        ...

    async def queue_claim(self, queue: str, shard: int, now: int, lease: int, limit: int) -> list[Claim]:
        """Up to ``limit`` items of ``shard`` due by ``now``, each claimed until ``now + lease``."""
        ...

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
        """End a claim: the next due time (and new data, if given), or ``None``: done (the
        item and its data go). Without ``owned``, a due time lowered meanwhile stays (the
        lower wins) and a missing item is re-added; with ``owned``, nothing happens unless the
        claim still holds. ``True`` when it did."""
        ...

    async def queue_release(self, queue: str, item: str, data: bytes) -> bool:
        """Drop ``item`` and its data if its data is still ``data`` (nobody queued it again
        since, claimed or not). ``True`` when it did."""
        ...

    async def queue_release_many(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        """:meth:`queue_release` of each ``(item, data)``, in one round trip where the store
        can (one server); what each answered, in order."""
        ...

    # -- presence, records, the outbox ---------------------------------------------

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        """Record that ``seat`` was seen (an open stream) at ``now`` (ms since the epoch)."""
        ...

    async def presence(self, match_id: str) -> dict[int, int]:
        """When each seat was last seen (ms since the epoch)."""
        ...

    async def outbox_take(self, match_id: str, token: str, lease: int, limit: int) -> list[bytes] | None:
        """The first ``limit`` operator events the match's commits left to relay, locked for
        ``token`` for ``lease`` ms; ``None`` when another relay holds the lock."""
        ...

    async def outbox_take_many(
        self, match_ids: Sequence[str], token: str, lease: int, limit: int
    ) -> list[list[bytes] | None]:
        """:meth:`outbox_take` of several matches with one token, in one round trip where the
        store can (one server); what each answered, in order."""
        ...

    async def outbox_done(self, match_id: str, token: str, count: int) -> bool:
        """Drop the first ``count`` outbox items and the lock, if ``token`` still holds it."""
        ...

    async def outbox_done_many(self, done: Sequence[tuple[str, int]], token: str) -> list[bool]:
        """:meth:`outbox_done` of each ``(match_id, count)`` taken with ``token``, in one round
        trip where the store can; what each answered, in order."""
        ...

    # -- operators ------------------------------------------------------------------

    async def operator_append(self, owner: str, events: Sequence[bytes]) -> list[str]:
        """Append to the owner's event stream (capped at ``operator_events_max_len``);
        returns the cursors."""
        ...

    async def operator_read(
        self, owner: str, after: str, limit: int, block: float = 0.0
    ) -> list[tuple[str, bytes]]:
        """Up to ``limit`` (cursor, event) after cursor ``after`` (``""``: from the oldest
        kept), waiting up to ``block`` seconds for one."""
        ...

    async def operator_last(self, owner: str) -> str:
        """The cursor of the owner's newest event (``"0-0"`` when none)."""
        ...

    async def webhook_put(self, owner: str, webhook_id: str, data: bytes, limit: int) -> bool:
        """Store a webhook; ``False`` when the owner already has ``limit`` others."""
        ...

    async def webhook_get(self, owner: str, webhook_id: str) -> bytes | None: ...

    async def webhook_list(self, owner: str) -> dict[str, bytes]: ...

    async def webhook_delete(self, owner: str, webhook_id: str) -> bool:
        """Remove a webhook and its delivery log; ``False`` when there was none."""
        ...

    async def delivery_log_put(
        self, owner: str, webhook_id: str, delivery_id: str, data: bytes, time_ms: int, keep: int
    ) -> None:
        """Record the state of a delivery (the newest ``keep`` per webhook are kept)."""
        ...

    async def delivery_log(self, owner: str, webhook_id: str, limit: int) -> list[bytes]:
        """The newest ``limit`` delivery states of a webhook, newest first."""
        ...

    # -- leagues: documents, indexes, bot assignments ------------------------------
    #
    # A league, a bot account and a rating family's book are each one *document*: opaque
    # bytes with a version, replaced only by a compare-and-set on that version, each in a
    # slot of its own (``{lg:<kind>:<id>}``). An operator's documents of a kind are listed in
    # an index in the operator's slot; a bot's current assignments are a hash in the bot's
    # slot. See docs/storage.md, "Leagues".

    async def doc_get(self, kind: str, doc_id: str) -> tuple[int, bytes] | None:
        """A document and its version (from 1), or ``None`` when there is none."""
        ...

    async def doc_put(self, kind: str, doc_id: str, expected_version: int, data: bytes) -> bool:
        """Replace the document if its version is ``expected_version`` (0: create it, only
        if there is none); the version becomes ``expected_version + 1``. ``False``, and
        nothing written, when the version differs."""
        ...

    async def doc_index_add(self, owner: str, kind: str, doc_id: str, time_ms: int) -> None:
        """List ``doc_id`` among the owner's documents of ``kind`` (ordered by ``time_ms``)."""
        ...

    async def doc_index(self, owner: str, kind: str, limit: int) -> list[str]:
        """The owner's newest ``limit`` document ids of ``kind``, newest first."""
        ...

    async def assignment_put(self, bot_id: str, match_id: str, data: bytes) -> None:
        """Record (or replace) an assignment of a bot to a match."""
        ...

    async def assignment_delete(self, bot_id: str, match_id: str) -> bool:
        """Remove a bot's assignment; ``False`` when there was none."""
        ...

    async def assignments(self, bot_id: str) -> dict[str, bytes]:
        """A bot's current assignments by match id."""
        ...

    async def read_record(self, match_id: str) -> list[bytes] | None:
        """Every record step of the match, oldest first; ``None`` if the match does not exist."""
        ...

    async def ping(self, timeout: float) -> None:
        """Return when the store answers within ``timeout`` seconds (one round trip, no
        retries); raise :class:`StoreUnavailable` otherwise. The worker's readiness probe."""
        ...

    async def close(self) -> None:
        """Release connections and background tasks."""
        ...
