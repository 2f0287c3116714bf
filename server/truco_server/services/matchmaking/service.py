"""The matchmaking service: pools, tickets, a ticket's stream, players' ratings, and the
queue reader that forms tables (docs/matchmaking.md).

A new ticket first makes its pool due in the matchmaking queue, then is stored (so a worker
that dies in between leaves a pool to look at, never a ticket nobody looks at); any worker's
reader then runs a pass over the pool (:mod:`.tables`).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Callable

import structlog

from truco_match import matchmaking as mm
from truco_match.create import PLAYER_ID, SpecError
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core.caller import Operator, TicketCredential
from truco_server.leagues import PlayerRating
from truco_server.ports.queues import MATCHMAKING, Claim, Queues
from truco_server.ports.tickets import CANCELLED, NewTicket, StoredTicket, Tickets
from truco_server.services.matchmaking import stored
from truco_server.services.matchmaking.pools import Pools, StoredPool
from truco_server.services.matchmaking.tables import CreateMatch, PoolPass, Publish
from truco_server.services.matchmaking.watch import TicketWatch
from truco_server.services.ratings import RatingBooks, check_family
from truco_server.services.scheduler import QueueReader
from truco_server.services.steps import spec_error

log = structlog.get_logger("truco.matchmaking")

MOST_WAITING = 100_000
"""Tickets that may wait in one pool."""
MAX_REQUEST_ID = 128


class TicketNotFound(E.ServiceError):
    default_code = E.Code.NOT_FOUND
    default_reason = "TICKET_NOT_FOUND"  # type: ignore[assignment]


class Matchmaking:
    """Pools, tickets and ratings (see the module docstring)."""

    def __init__(
        self,
        pools: Pools,
        tickets: Tickets,
        queues: Queues,
        ratings: RatingBooks,
        create_match: CreateMatch,
        publish: Publish,
        *,
        heartbeat_seconds: float = 5.0,
        stopping: asyncio.Event | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.pools = pools
        self.tickets = tickets
        self.queues = queues
        self.ratings = ratings
        self.heartbeat_seconds = heartbeat_seconds
        self.stopping = stopping
        self.now = clock
        self.watch = TicketWatch(tickets)
        self.tables = PoolPass(pools, tickets, create_match, publish, self.watch, clock=clock)

    def reader(self, *, tick: float = 0.25) -> QueueReader:
        """The reader of the matchmaking queue: a pass over each pool that is due."""

        async def handle(claim: Claim) -> tuple[int | None, bytes]:
            return await self.tables.run(claim.item), b""

        return QueueReader(self.queues, MATCHMAKING, handle, owned=False, tick=tick)

    # ------------------------------------------------------------------------- tickets
    async def create_ticket(
        self, operator: Operator, pool_id: str, spec: mm.TicketSpec, request_id: str | None
    ) -> tuple[mm.Ticket, str]:
        """Queue a ticket; the ticket and its holder's credential (a retried ``request_id``
        gets the same)."""
        if request_id is not None and len(request_id) > MAX_REQUEST_ID:
            raise E.InvalidArgument(
                "request_id: at most 128 characters",
                field_violations=[E.FieldViolation("request_id", "too long")],
            )
        pool = await self.pools.get(operator.name, pool_id)
        try:
            mm.check_ticket(pool.pool, spec)
        except SpecError as exc:
            raise spec_error(exc) from None
        players = [p.player_id for p in spec.players]
        rating = 0.0
        if pool.pool.spec.window is not None:
            found = await self.ratings.ratings(operator.name, pool.pool.family, players)
            rating = sum(r.mu for r in found.values()) / len(found)
        now_ms = round(self.now() * 1000)
        ticket_id = mm.ticket_id_for(operator.name, pool_id, request_id, secrets.token_hex(10))
        data = stored.TicketData(
            players=tuple(mm.TicketPlayer(p.player_id, p.display_name) for p in spec.players),
            properties=dict(spec.properties),
            rating=rating,
            created_ms=now_ms,
            expires_ms=now_ms + pool.pool.spec.ticket_ttl_ms,
            fingerprint=stored.fingerprint(spec),
        )
        await self.queues.add(MATCHMAKING, pool.key, now_ms)  # first: see the module docstring
        new = NewTicket(ticket_id, players, stored.data_bytes(data), now_ms, data.expires_ms)
        added = await self.tickets.add(pool.key, new, MOST_WAITING)
        if added.existing is not None:
            if stored.data_of(added.existing.data).fingerprint != data.fingerprint:
                raise E.RequestIdReused("request_id was already used for another ticket")
            return stored.ticket_of(pool_id, added.existing), self._token(pool, ticket_id)
        if added.busy is not None:
            player, other = added.busy
            raise E.ServiceError(
                f"player {player!r} already has a ticket waiting in this pool",
                code=E.Code.FAILED_PRECONDITION,
                reason="PLAYER_WAITING",
                metadata={"player_id": player, "ticket_id": other},
            )
        if added.full:
            raise E.ResourceExhausted(f"{MOST_WAITING} tickets wait in this pool already; retry later")
        metrics.TICKETS.labels("created").inc()
        got = StoredTicket(ticket_id, "waiting", new.data)
        return stored.ticket_of(pool_id, got), self._token(pool, ticket_id)

    @staticmethod
    def _token(pool: StoredPool, ticket_id: str) -> str:
        return mm.ticket_token(pool.secret, pool.owner, pool.pool.pool_id, ticket_id)

    async def _holder(self, caller: Operator | TicketCredential, pool_id: str, ticket_id: str) -> StoredPool:
        """The pool of a ticket its caller may see: the operator's own, or the one the ticket
        credential was issued for (checked against the pool's key)."""
        if isinstance(caller, Operator):
            return await self.pools.get(caller.name, pool_id)
        if (caller.pool_id, caller.ticket_id) != (pool_id, ticket_id):
            raise E.PermissionDenied("this ticket credential is for another ticket")
        try:
            pool = await self.pools.get(caller.owner, pool_id)
        except E.ServiceError:
            raise E.Unauthenticated("invalid credential") from None
        expected = self._token(pool, ticket_id)
        if not secrets.compare_digest(expected.encode(), caller.token.encode()):
            raise E.Unauthenticated("invalid credential")
        return pool

    async def _stored(self, pool: StoredPool, ticket_id: str) -> StoredTicket:
        (found,) = await self.tickets.get(pool.key, [ticket_id]) if mm.TICKET_ID.match(ticket_id) else [None]
        if found is None:
            raise TicketNotFound(f"no ticket {ticket_id[:40]!r} in pool {pool.pool.pool_id!r}")
        return found

    async def get_ticket(
        self, caller: Operator | TicketCredential, pool_id: str, ticket_id: str
    ) -> mm.Ticket:
        pool = await self._holder(caller, pool_id, ticket_id)
        return stored.ticket_of(pool_id, await self._stored(pool, ticket_id))

    async def cancel_ticket(
        self, caller: Operator | TicketCredential, pool_id: str, ticket_id: str
    ) -> mm.Ticket:
        pool = await self._holder(caller, pool_id, ticket_id)
        ended = (
            await self.tickets.end(pool.key, ticket_id, CANCELLED) if mm.TICKET_ID.match(ticket_id) else None
        )
        if ended is None:
            raise TicketNotFound(f"no ticket {ticket_id[:40]!r} in pool {pool_id!r}")
        ticket = stored.ticket_of(pool_id, ended)
        if ticket.state is not mm.TicketState.CANCELLED:
            forming = ticket.state is mm.TicketState.FORMING
            raise E.ServiceError(
                f"the ticket is {'at a table, its match being made' if forming else ticket.state}",
                code=E.Code.FAILED_PRECONDITION,
                reason="TICKET_NOT_WAITING",
                metadata={"match_id": ticket.match_id} if ticket.match_id else {},
            )
        metrics.TICKETS.labels("cancelled").inc()
        self.watch.changed(pool.key, [ticket_id])
        return ticket

    async def follow(
        self, caller: Operator | TicketCredential, pool_id: str, ticket_id: str
    ) -> AsyncIterator[mm.Ticket | None]:
        """The ticket now, then each time it changes, ``None`` as a heartbeat meanwhile,
        until it is matched, cancelled or expired (the last message). Raises
        :class:`~truco_server.core.errors.ShuttingDown` when the worker stops."""
        pool = await self._holder(caller, pool_id, ticket_id)
        current = await self._stored(pool, ticket_id)
        yield stored.ticket_of(pool_id, current)
        if mm.TicketState(current.state).over:
            return
        wake = self.watch.follow(pool.key, ticket_id, current.state)
        try:
            while True:
                if self.stopping is not None and self.stopping.is_set():
                    raise E.ShuttingDown()
                try:
                    await asyncio.wait_for(wake.wait(), self.heartbeat_seconds)
                except TimeoutError:
                    yield None
                    continue
                wake.clear()
                found = await self._stored(pool, ticket_id)
                self.watch.seen(pool.key, ticket_id, found.state)
                if _shown(found.state) != _shown(current.state):  # forming is shown as waiting
                    yield stored.ticket_of(pool_id, found)
                current = found
                if mm.TicketState(current.state).over:
                    return
        finally:
            self.watch.unfollow(pool.key, ticket_id, wake)

    # ------------------------------------------------------------------------- ratings
    async def player_rating(self, operator: Operator, player_id: str, family: str) -> PlayerRating:
        check_family(family)
        if not PLAYER_ID.match(player_id):
            raise E.InvalidArgument(
                "player_id: 1 to 64 letters, digits and . _ : @ -",
                field_violations=[E.FieldViolation("player_id", "1 to 64 letters, digits and . _ : @ -")],
            )
        return (await self.ratings.ratings(operator.name, family, [player_id]))[player_id]

    async def close(self) -> None:
        await self.watch.close()


def _shown(state: str) -> str:
    return mm.TicketState.WAITING.value if state == mm.TicketState.FORMING.value else state
