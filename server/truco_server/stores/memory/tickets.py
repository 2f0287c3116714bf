"""The in-memory :class:`~truco_server.ports.tickets.Tickets`: per pool, its tickets, its
line, its expiries, its players' live tickets and its pending formations; each operation runs
with no ``await`` between its checks and its writes. Ended tickets are kept (no retention in
memory)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from truco_server.ports.tickets import FORMING, MATCHED, WAITING, Added, Formation, NewTicket, StoredTicket

__all__ = ["MemoryTickets"]


@dataclass
class _Pool:
    tickets: dict[str, StoredTicket] = field(default_factory=dict)
    players_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    line: dict[str, int] = field(default_factory=dict)
    """Waiting ticket -> when it was made."""
    expiry: dict[str, int] = field(default_factory=dict)
    live: dict[str, str] = field(default_factory=dict)
    """Player -> its waiting or forming ticket."""
    formations: dict[str, Formation] = field(default_factory=dict)


class MemoryTickets:
    """Matchmaking tickets held in this process."""

    def __init__(self) -> None:
        self._pools: dict[str, _Pool] = {}

    def _pool(self, pool: str) -> _Pool:
        return self._pools.setdefault(pool, _Pool())

    async def add(self, pool: str, ticket: NewTicket, most_waiting: int) -> Added:
        p = self._pool(pool)
        if ticket.ticket_id in p.tickets:
            return Added(False, existing=p.tickets[ticket.ticket_id])
        for player in ticket.players:
            if player in p.live:
                return Added(False, busy=(player, p.live[player]))
        if len(p.line) >= most_waiting:
            return Added(False, full=True)
        p.tickets[ticket.ticket_id] = StoredTicket(ticket.ticket_id, WAITING, bytes(ticket.data))
        p.players_of[ticket.ticket_id] = tuple(ticket.players)
        p.line[ticket.ticket_id] = ticket.created
        p.expiry[ticket.ticket_id] = ticket.expires
        for player in ticket.players:
            p.live[player] = ticket.ticket_id
        return Added(True)

    async def get(self, pool: str, ticket_ids: Sequence[str]) -> list[StoredTicket | None]:
        p = self._pool(pool)
        return [p.tickets.get(t) for t in ticket_ids]

    async def waiting(self, pool: str, limit: int) -> list[StoredTicket]:
        p = self._pool(pool)
        oldest = sorted(p.line, key=lambda t: (p.line[t], t))[:limit]
        return [p.tickets[t] for t in oldest]

    async def expiring(self, pool: str, now: int, limit: int) -> list[str]:
        p = self._pool(pool)
        return sorted((t for t, at in p.expiry.items() if at <= now), key=lambda t: (p.expiry[t], t))[:limit]

    def _leave(self, p: _Pool, ticket_id: str) -> None:
        p.line.pop(ticket_id, None)
        p.expiry.pop(ticket_id, None)
        for player in p.players_of.get(ticket_id, ()):
            if p.live.get(player) == ticket_id:
                del p.live[player]

    async def end(self, pool: str, ticket_id: str, state: str, now: int | None = None) -> StoredTicket | None:
        p = self._pool(pool)
        cur = p.tickets.get(ticket_id)
        if cur is None or cur.state != WAITING:
            return cur
        if now is not None and p.expiry.get(ticket_id, now + 1) > now:
            return cur
        self._leave(p, ticket_id)
        p.tickets[ticket_id] = replace(cur, state=state)
        return p.tickets[ticket_id]

    async def form(self, pool: str, formation: Formation, ticket_ids: Sequence[str], now: int) -> list[str]:
        p = self._pool(pool)
        bad = []
        for t in ticket_ids:
            cur = p.tickets.get(t)
            ours = cur is not None and cur.state == FORMING and cur.formation == formation.formation_id
            waits = cur is not None and cur.state == WAITING and p.expiry.get(t, 0) > now
            if not (ours or waits):
                bad.append(t)
        if bad:
            return bad
        for t in ticket_ids:
            p.line.pop(t, None)
            p.expiry.pop(t, None)
            p.tickets[t] = replace(p.tickets[t], state=FORMING, formation=formation.formation_id)
        p.formations.setdefault(formation.formation_id, formation)
        return []

    async def pending(self, pool: str, limit: int) -> list[Formation]:
        p = self._pool(pool)
        return sorted(p.formations.values(), key=lambda f: (f.formed, f.formation_id))[:limit]

    async def settle(self, pool: str, formation_id: str, results: Mapping[str, bytes]) -> bool:
        p = self._pool(pool)
        if p.formations.pop(formation_id, None) is None:
            return False
        for t, result in results.items():
            self._leave(p, t)
            p.tickets[t] = replace(p.tickets[t], state=MATCHED, result=bytes(result))
        return True
