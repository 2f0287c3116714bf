"""Matchmaking tickets: each pool's tickets, its waiting line and the tables formed from it,
all in one place per pool (on Redis: one slot), so that forming a table is one atomic step.
Contract suite: ``tests/storage/test_tickets.py``.

A ticket is ``waiting`` (in the pool's line, until it expires), then ``forming`` (taken by
a formation), then ``matched``; or ``cancelled`` or ``expired`` while it waits. A player has
at most one ticket waiting or forming per pool.

* :meth:`Tickets.form` takes a table's tickets out of the line and records the formation,
  atomically: every ticket was waiting and unexpired, or nothing happens (it answers which
  were not) -- so no ticket is in two formations;
* the formation stays *pending* until :meth:`Tickets.settle` marks its tickets matched with
  their results and drops it, atomically: a worker that dies in between leaves it pending,
  and whoever reads :meth:`Tickets.pending` next finishes it (the match is created
  idempotently, keyed by the formation) -- so no formed ticket is lost.

``pool`` is the pool's storage key (:func:`truco_match.matchmaking.pool_key`); ticket and
formation data are opaque bytes the service chooses. Times are ms since the epoch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

WAITING = "waiting"
FORMING = "forming"
MATCHED = "matched"
CANCELLED = "cancelled"
EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class StoredTicket:
    """A ticket as stored: its state, its data, and once matched its result."""

    ticket_id: str
    state: str
    data: bytes
    result: bytes = b""
    formation: str = ""
    """The formation that took it (forming or matched)."""


@dataclass(frozen=True, slots=True)
class NewTicket:
    ticket_id: str
    players: Sequence[str]
    data: bytes
    created: int
    expires: int


@dataclass(frozen=True, slots=True)
class Added:
    """What :meth:`Tickets.add` did: added it, or found the id taken (``existing``), a
    player with a live ticket in the pool (``busy``: the player and that ticket), or the
    line full."""

    added: bool
    existing: StoredTicket | None = None
    busy: tuple[str, str] | None = None
    full: bool = False


@dataclass(frozen=True, slots=True)
class Formation:
    """A formed table whose match is not made yet."""

    formation_id: str
    data: bytes
    formed: int


class Tickets(Protocol):
    """The pools' tickets (see the module docstring)."""

    async def add(self, pool: str, ticket: NewTicket, most_waiting: int) -> Added:
        """Queue a new ticket: refused when its id exists, a player of it already has a live
        ticket in the pool, or ``most_waiting`` tickets wait already."""
        ...

    async def get(self, pool: str, ticket_ids: Sequence[str]) -> list[StoredTicket | None]:
        """The tickets, in one round trip (``None``: no such ticket, or no longer kept)."""
        ...

    async def waiting(self, pool: str, limit: int) -> list[StoredTicket]:
        """The oldest ``limit`` waiting tickets, oldest first."""
        ...

    async def expiring(self, pool: str, now: int, limit: int) -> list[str]:
        """Up to ``limit`` waiting tickets whose expiry is ``now`` or earlier."""
        ...

    async def end(self, pool: str, ticket_id: str, state: str, now: int | None = None) -> StoredTicket | None:
        """End a waiting ticket as ``state`` (``cancelled``, or ``expired``: only when its
        expiry is ``now`` or earlier); a ticket not waiting is left as it is. The ticket
        afterwards (``None``: no such ticket)."""
        ...

    async def form(self, pool: str, formation: Formation, ticket_ids: Sequence[str], now: int) -> list[str]:
        """Take the tickets out of the line into ``formation`` (pending), if every one waits
        unexpired at ``now`` (or is already in this formation: a repeated call); else change
        nothing and return those that do not."""
        ...

    async def pending(self, pool: str, limit: int) -> list[Formation]:
        """Up to ``limit`` pending formations, oldest first."""
        ...

    async def settle(self, pool: str, formation_id: str, results: Mapping[str, bytes]) -> bool:
        """Mark the formation's tickets matched with their results and drop the formation
        (``False``, and nothing changed, when it was settled already)."""
        ...
