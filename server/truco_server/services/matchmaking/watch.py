"""Who on this worker follows which ticket, and waking them when it changes.

A ticket changes on whichever worker forms its table (or cancels or expires it). The worker
that formed it wakes its own followers at once (:meth:`TicketWatch.changed`); for the rest,
one task per worker reads the state of every followed ticket every ``poll_seconds`` -- one
read per pool, whatever the number of followers -- and wakes those whose ticket moved.

A transport only consumes :meth:`truco_server.services.matchmaking.Matchmaking.follow`
(an async iterator of tickets and heartbeats): the gRPC server stream, REST's NDJSON/SSE and
the player connection's ticket subscriptions (gRPC ``Connect`` and the WebSocket).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from truco_server.ports.errors import StorageError
from truco_server.ports.tickets import Tickets

log = structlog.get_logger("truco.matchmaking")


@dataclass
class _Followed:
    state: str
    """The state the followers last saw."""
    wakes: set[asyncio.Event] = field(default_factory=set)


class TicketWatch:
    """This worker's followers of tickets (see the module docstring)."""

    def __init__(self, tickets: Tickets, *, poll_seconds: float = 0.5) -> None:
        self.tickets = tickets
        self.poll_seconds = poll_seconds
        self._followed: dict[tuple[str, str], _Followed] = {}
        self._task: asyncio.Task[None] | None = None

    def follow(self, pool: str, ticket_id: str, state: str) -> asyncio.Event:
        """Register a follower of a ticket last seen in ``state``: the event is set when it
        changes (the follower clears it, reads the ticket, and :meth:`seen` its new state)."""
        entry = self._followed.setdefault((pool, ticket_id), _Followed(state))
        wake = asyncio.Event()
        entry.wakes.add(wake)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._poll(), name="truco-ticket-watch")
        return wake

    def seen(self, pool: str, ticket_id: str, state: str) -> None:
        entry = self._followed.get((pool, ticket_id))
        if entry is not None:
            entry.state = state

    def unfollow(self, pool: str, ticket_id: str, wake: asyncio.Event) -> None:
        entry = self._followed.get((pool, ticket_id))
        if entry is not None:
            entry.wakes.discard(wake)
            if not entry.wakes:
                del self._followed[(pool, ticket_id)]

    def changed(self, pool: str, ticket_ids: Sequence[str]) -> None:
        """Tickets this worker just changed: wake their followers here now."""
        for t in ticket_ids:
            entry = self._followed.get((pool, t))
            if entry is not None:
                for wake in entry.wakes:
                    wake.set()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _poll(self) -> None:
        while self._followed:
            await asyncio.sleep(self.poll_seconds)
            by_pool: dict[str, list[str]] = {}
            for pool, ticket_id in list(self._followed):
                by_pool.setdefault(pool, []).append(ticket_id)
            for pool, ids in by_pool.items():
                try:
                    found = await self.tickets.get(pool, ids)
                except StorageError:
                    log.warning("ticket watch: the store did not answer; next time", exc_info=True)
                    continue
                for ticket_id, stored in zip(ids, found, strict=True):
                    entry = self._followed.get((pool, ticket_id))
                    if entry is not None and (stored is None or stored.state != entry.state):
                        for wake in entry.wakes:
                            wake.set()
