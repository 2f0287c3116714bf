"""The Redis :class:`~truco_server.ports.tickets.Tickets`: a pool's tickets (a hash each),
its line and expiries (sorted sets), its players' live tickets and its pending formations,
all in the pool's slot (:class:`~.keys.PoolKeys`), so adding, forming, settling and ending
are each one script (:mod:`.scripts`) and run unchanged on a Redis Cluster. Reads are one
pipeline on the pool's node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from truco_server.ports.tickets import Added, Formation, NewTicket, StoredTicket
from truco_server.stores.redis.batch import ScriptBatcher, ScriptCall
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.replies import as_bytes, as_str
from truco_server.stores.redis.scripts import TICKET_ADD, TICKET_END, TICKET_FORM, TICKET_SETTLE

__all__ = ["RedisTickets"]

_FIELDS = ["state", "data", "result", "formation"]


def _ticket(ticket_id: str, raw: Sequence[Any]) -> StoredTicket | None:
    state, data, result, formation = raw
    if state is None:
        return None
    return StoredTicket(ticket_id, as_str(state), as_bytes(data), as_bytes(result), as_str(formation))


class RedisTickets:
    """Matchmaking tickets on Redis (see the module docstring)."""

    def __init__(self, conn: RedisConnection, keys: Keys, batcher: ScriptBatcher) -> None:
        self._conn = conn
        self._keys = keys
        self._batcher = batcher
        self._retention = conn.settings.retention_seconds

    async def _pipeline(self, operation: str, commands: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """Commands on one pool's keys (one slot) in one round trip."""
        if not commands:
            return []

        async def go() -> Any:
            self._conn.stats.add(1, len(commands))
            pipe = self._conn.client.pipeline(transaction=False)
            for name, args in commands:
                getattr(pipe, name)(*args)
            return await pipe.execute()

        result: list[Any] = await self._conn.run(operation, go)
        return result

    async def add(self, pool: str, ticket: NewTicket, most_waiting: int) -> Added:
        k = self._keys.pool(pool)
        keys = [k.ticket(ticket.ticket_id), k.waiting, k.expiry, k.players]
        args: list[Any] = [ticket.ticket_id, ticket.data, ticket.created, ticket.expires, most_waiting]
        args += ["\n".join(ticket.players), len(ticket.players), *ticket.players]
        raw = await self._batcher.call(ScriptCall(TICKET_ADD, keys, args, "ticket_add", durable=True))
        code = int(raw[0])
        if code == 1:
            found = _ticket(ticket.ticket_id, raw[1:5])
            return Added(False, existing=found)
        if code == 2:
            return Added(False, busy=(as_str(raw[1]), as_str(raw[2])))
        return Added(code == 0, full=code == 3)

    async def get(self, pool: str, ticket_ids: Sequence[str]) -> list[StoredTicket | None]:
        k = self._keys.pool(pool)
        raw = await self._pipeline("ticket_get", [("hmget", (k.ticket(t), _FIELDS)) for t in ticket_ids])
        return [_ticket(t, r) for t, r in zip(ticket_ids, raw, strict=True)]

    async def waiting(self, pool: str, limit: int) -> list[StoredTicket]:
        k = self._keys.pool(pool)
        (ids,) = await self._pipeline("ticket_waiting", [("zrange", (k.waiting, 0, limit - 1))])
        found = await self.get(pool, [as_str(i) for i in ids])
        return [t for t in found if t is not None]

    async def expiring(self, pool: str, now: int, limit: int) -> list[str]:
        k = self._keys.pool(pool)
        (ids,) = await self._pipeline(
            "ticket_expiring", [("zrangebyscore", (k.expiry, "-inf", now, 0, limit))]
        )
        return [as_str(i) for i in ids]

    async def end(self, pool: str, ticket_id: str, state: str, now: int | None = None) -> StoredTicket | None:
        k = self._keys.pool(pool)
        keys = [k.ticket(ticket_id), k.waiting, k.expiry, k.players]
        args = [ticket_id, state, self._retention, "" if now is None else now]
        raw = await self._batcher.call(ScriptCall(TICKET_END, keys, args, "ticket_end", durable=True))
        return _ticket(ticket_id, raw) if raw else None

    async def form(self, pool: str, formation: Formation, ticket_ids: Sequence[str], now: int) -> list[str]:
        k = self._keys.pool(pool)
        keys = [k.waiting, k.expiry, k.formations, k.pending, *(k.ticket(t) for t in ticket_ids)]
        args = [formation.formation_id, formation.data, now, *ticket_ids]
        raw = await self._batcher.call(ScriptCall(TICKET_FORM, keys, args, "ticket_form", durable=True))
        return [as_str(x) for x in raw]

    async def pending(self, pool: str, limit: int) -> list[Formation]:
        k = self._keys.pool(pool)
        (ids,) = await self._pipeline("ticket_pending", [("zrange", (k.pending, 0, limit - 1, False, True))])
        if not ids:
            return []
        (datas,) = await self._pipeline("ticket_pending", [("hmget", (k.formations, [i for i, _ in ids]))])
        return [
            Formation(as_str(i), as_bytes(d), int(score))
            for (i, score), d in zip(ids, datas, strict=True)
            if d is not None
        ]

    async def settle(self, pool: str, formation_id: str, results: Mapping[str, bytes]) -> bool:
        k = self._keys.pool(pool)
        ids = list(results)
        keys = [k.formations, k.pending, k.players, *(k.ticket(t) for t in ids)]
        args = [formation_id, self._retention, *ids, *(results[t] for t in ids)]
        call = ScriptCall(TICKET_SETTLE, keys, args, "ticket_settle", durable=True)
        return bool(int(await self._batcher.call(call)))
