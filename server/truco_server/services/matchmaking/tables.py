"""One pass over a pool, the matchmaking queue's work (any worker, one at a time per pool, by
its lease):

1. **finish** the pool's pending formations (this pass's, or those a worker left when it
   died): create the table's match -- idempotently, its ``request_id`` is the formation's id,
   so a second try gets the same match and credentials -- publish one ``ticket.matched`` per
   ticket (feed, listeners, webhooks; stable ids), then settle: the tickets matched with
   their seats, the formation gone, in one store step;
2. **expire** the tickets whose time is up;
3. **form** tables from the oldest waiting tickets (:func:`truco_match.matchmaking.form`) and
   take each table's tickets in one store step (:meth:`~truco_server.ports.tickets.Tickets.form`:
   all of them or none, so a ticket is never in two tables even when two workers form at
   once), then finish them as in 1. With the pool's bot fill, a ticket left waiting that long
   is taken the same way, alone, for a table whose other seats the server's bots play
   (:func:`truco_match.matchmaking.fill`): one store step decides a ticket's table, so it is
   never both filled with bots and seated with people.

A worker that dies at any point leaves either waiting tickets (formed again later) or a
pending formation (finished by the next pass): no ticket is lost or seated twice.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence

import structlog

from truco_match import matchmaking as mm
from truco_match.create import DEFAULT_TAKEOVER_LEVEL, SeatSpec
from truco_match.operator_events import OperatorEvent, OperatorEventType, TicketMatch, TicketSeat
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.ports.tickets import EXPIRED, Formation, Tickets
from truco_server.services.matchmaking import stored
from truco_server.services.matchmaking.pools import Pools, StoredPool
from truco_server.services.matchmaking.watch import TicketWatch

log = structlog.get_logger("truco.matchmaking")

CreateMatch = Callable[[Operator, T.CreateMatchRequest], Awaitable[T.CreateMatchResponse]]
Publish = Callable[[str, Sequence[OperatorEvent]], Awaitable[None]]

FORM_BATCH = 2000
"""The oldest waiting tickets one pass looks at."""
TABLES_PER_PASS = 64
"""Tables one pass forms at most (then the pool is due again at once)."""
CREATE_CONCURRENCY = 16
BOT_NAME = "Bot"
"""The display name of a seat bot fill gives the server's bot."""
AGAIN_MS = 1000
"""A pool with tickets waiting and no table formed is looked at again this much later (the
windows widen meanwhile)."""


class PoolPass:
    """One pass over a pool (see the module docstring)."""

    def __init__(
        self,
        pools: Pools,
        tickets: Tickets,
        create_match: CreateMatch,
        publish: Publish,
        watch: TicketWatch,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.pools = pools
        self.tickets = tickets
        self.create_match = create_match
        self.publish = publish
        self.watch = watch
        self.now = clock
        self._limit = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def run(self, key: str) -> int | None:
        """One pass over the pool stored under ``key``; when it is due next (ms since the
        epoch), or ``None`` when nothing waits."""
        pool = await self.pools.by_key(key)
        if pool is None:
            return None
        pending = await self.tickets.pending(key, TABLES_PER_PASS)
        await asyncio.gather(*(self.finish(pool, f) for f in pending))
        now_ms = round(self.now() * 1000)
        for ticket_id in await self.tickets.expiring(key, now_ms, 256):
            ended = await self.tickets.end(key, ticket_id, EXPIRED, now_ms)
            if ended is not None and ended.state == EXPIRED:
                metrics.TICKETS.labels("expired").inc()
                self.watch.changed(key, [ticket_id])
        line = await self.tickets.waiting(key, FORM_BATCH)
        waiting = [stored.waiting_of(t) for t in line]
        data = {t.ticket_id: stored.data_of(t.data) for t in line}
        tables = mm.form(pool.pool, waiting, now_ms / 1000, TABLES_PER_PASS)
        seated = {t.ticket_id for table in tables for t in table.tickets}
        left = [w for w in waiting if w.ticket_id not in seated]
        tables += mm.fill(pool.pool, left, now_ms / 1000, TABLES_PER_PASS - len(tables))
        formed = [f for f in await asyncio.gather(*(self._take(pool, t, data, now_ms) for t in tables)) if f]
        await asyncio.gather(*(self.finish(pool, f) for f in formed))
        if pending or tables:
            return round(self.now() * 1000)  # more may be ready: again at once
        if not waiting:
            return None
        again = now_ms + AGAIN_MS
        fill_at = mm.fill_due(pool.pool, left)  # none is due yet: tables were made of those
        return again if fill_at is None else min(again, max(now_ms, round(fill_at * 1000)))

    async def _take(
        self, pool: StoredPool, table: mm.Table, data: dict[str, stored.TicketData], now_ms: int
    ) -> Formation | None:
        tickets = [data[t.ticket_id] for t in table.tickets]
        names = {p.player_id: p.display_name for d in tickets for p in d.players}
        created = {t.ticket_id: d.created_ms for t, d in zip(table.tickets, tickets, strict=True)}
        formation = Formation(
            "f" + secrets.token_hex(10), stored.formation_bytes(table, names, created), now_ms
        )
        taken = await self.tickets.form(pool.key, formation, [t.ticket_id for t in table.tickets], now_ms)
        return None if taken else formation

    async def finish(self, pool: StoredPool, formation: Formation) -> None:
        """Create the formation's match, tell the operator, settle its tickets."""
        async with self._limit:
            seats, created_ms = stored.formation_of(formation.data)
            spec = pool.pool.spec.match
            labels = {**spec.labels, "pool": pool.pool.pool_id, "formation": formation.formation_id}
            fill = pool.pool.spec.bot_fill
            level = fill.level if fill is not None else DEFAULT_TAKEOVER_LEVEL
            req = T.CreateMatchRequest(
                preset=spec.preset,
                overrides=spec.overrides,
                players=spec.players,
                seats=tuple(
                    SeatSpec(name, player_id=player) if ticket_id else SeatSpec(BOT_NAME, bot_level=level)
                    for ticket_id, player, name in seats
                ),
                labels=labels,
                lifecycle=spec.lifecycle,
                rated=spec.rated and all(ticket_id for ticket_id, _, _ in seats),  # bots: unrated
                request_id=f"mm:{formation.formation_id}",
            )
            try:
                created = await self.create_match(Operator(pool.owner), req)
            except E.InvalidArgument:
                log.exception("a pool's match cannot be made", pool=pool.pool.pool_id)
                raise
            match_id = created.match.match_id
            by_ticket: dict[str, list[TicketSeat]] = {}
            for i, (ticket_id, player, _) in enumerate(seats):
                if not ticket_id:
                    continue  # the server's bot
                by_ticket.setdefault(ticket_id, []).append(
                    TicketSeat(player_id=player, seat=i, token=created.seat_tokens[i])
                )
            now = self.now()
            events = [
                OperatorEvent(
                    id=f"{ticket_id}:matched",
                    match_id=match_id,
                    type=OperatorEventType.TICKET_MATCHED,
                    time=now,
                    labels=labels,
                    ticket=TicketMatch(ticket_id=ticket_id, pool_id=pool.pool.pool_id, seats=tuple(s)),
                )
                for ticket_id, s in by_ticket.items()
            ]
            await self.publish(pool.owner, events)
            matched_ms = round(now * 1000)
            results = {t: stored.result_bytes(match_id, s, matched_ms) for t, s in by_ticket.items()}
            if await self.tickets.settle(pool.key, formation.formation_id, results):
                metrics.TICKETS.labels("matched").inc(len(results))
                metrics.FORMATION_SECONDS.observe(max(0.0, now - formation.formed / 1000))
                for t in results:
                    metrics.TICKET_WAIT_SECONDS.observe(
                        max(0, matched_ms - created_ms.get(t, matched_ms)) / 1000
                    )
            self.watch.changed(pool.key, list(results))
