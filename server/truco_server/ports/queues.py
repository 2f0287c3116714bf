"""Sharded work queues: work any worker may do and exactly one does.

A queue (:data:`CLOCK`, :data:`RELAY`, :data:`WEBHOOK`, :data:`LEAGUE`) is ``queue_shards``
sets of items ordered by due time (ms since the epoch), each item with optional data. A reader
claims due items of a shard (:meth:`Queues.claim`: each is leased, so no other reader takes
it meanwhile), does the work and ends the claim (:meth:`Queues.finish`: the next due time, or
done). A reader that dies leaves its claims to expire and be claimed again. Contract suite:
``tests/storage/test_queues.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from truco_server.ports.documents import DocRef

CLOCK = "clock"
"""Match wakeups (item: a match id). Every commit that makes a match due earlier registers
that time first, so a match's wakeup is never later than its due time."""
WEBHOOK = "webhook"
"""Webhook deliveries (item: ``<webhook id> <event id>``)."""
RELAY = "relay"
"""Outboxes that may be left to relay (item: a match id; data: the token of the last commit
that queued it): the safety net of the relay after a commit (:class:`RelayWake`)."""
LEAGUE = "league"
"""League jobs (item: a league id): pair a round, create its matches, collect results."""


@dataclass(frozen=True, slots=True)
class RelayWake:
    """What a commit with operator events queues in :data:`RELAY` first: the match is due at
    ``at`` (ms since the epoch) with ``token`` as its data. The relay right after the commit
    releases it with the same token; a later commit's token replaces it, so a slow relay never
    releases a newer commit's safety net."""

    at: int
    token: bytes


@dataclass(frozen=True, slots=True)
class Claim:
    """An item claimed until ``lease`` (ms since the epoch)."""

    item: str
    due: int
    """When it was due."""
    lease: int
    data: bytes = b""


class Queues(Protocol):
    """The sharded queues (see the module docstring)."""

    def shards(self, queue: str) -> int:
        """How many shards ``queue`` has."""
        ...

    async def add(
        self,
        queue: str,
        item: str,
        due: int,
        data: bytes = b"",
        *,
        only_new: bool = False,
        requires: Sequence[DocRef] = (),
    ) -> bool:
        """Queue ``item`` due at ``due``: its due time becomes at most ``due`` (never later)
        and ``data`` replaces its data when given. ``only_new``: only when the item has no data
        yet (``False`` when it had: queued once). ``requires``: the documents the work belongs
        to (a league's job: its league), without which nothing is queued
        (:class:`~truco_server.ports.errors.ParentMissing`; :mod:`truco_server.ports.documents`)."""
        ...

    async def due(self, queue: str, now: int) -> list[int]:
        """The shards of ``queue`` with an item due by ``now`` (one read: what a reader checks
        before claiming, so an idle tick costs one round trip and no script)."""
        ...

    async def claim(self, queue: str, shard: int, now: int, lease: int, limit: int) -> list[Claim]:
        """Up to ``limit`` items of ``shard`` due by ``now``, each claimed until ``now + lease``."""
        ...

    async def finish(
        self, queue: str, item: str, lease: int, due: int | None, data: bytes = b"", *, owned: bool = False
    ) -> bool:
        """End a claim: the next due time (and new data when given), or ``None``: done (the
        item and its data go). Without ``owned`` a due time lowered meanwhile stays (the lower
        wins) and a missing item is added again; with ``owned`` nothing happens unless the
        claim still holds. ``True`` when it did."""
        ...

    async def release(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        """Drop each ``(item, data)`` whose data is still ``data`` (nobody queued it again
        since, claimed or not), in one round trip where the adapter can; what each answered."""
        ...
