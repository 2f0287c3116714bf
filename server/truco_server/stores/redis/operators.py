"""The Redis :class:`~truco_server.ports.operators.OperatorFeed`: a match's outbox is a list
in the match's slot with a relay lock beside it; an operator's events are a stream, its
webhooks a hash and each webhook's deliveries a hash and a sorted set, all in the operator's
slot (docs/storage.md, "Redis key layout"), so a delivery's state is recorded only while its
webhook is registered, in the same script."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from truco_server.stores.redis.batch import ScriptBatcher, ScriptCall
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.replies import EVENT_FIELD, as_bytes, as_str, parse_xread
from truco_server.stores.redis.scripts import DELIVERY_LOG_PUT_IF, OUTBOX_DONE, OUTBOX_TAKE, WEBHOOK_PUT

__all__ = ["RedisOperatorFeed"]


class RedisOperatorFeed:
    """Outboxes, operator streams and webhooks on Redis (see the module docstring)."""

    def __init__(self, conn: RedisConnection, keys: Keys, batcher: ScriptBatcher) -> None:
        self.settings = conn.settings
        self._conn = conn
        self._keys = keys
        self._batcher = batcher

    # -- outboxes -----------------------------------------------------------------------

    async def outbox_take(
        self, match_ids: Sequence[str], token: str, lease: int, limit: int
    ) -> list[list[bytes] | None]:
        calls = []
        for match_id in match_ids:
            keys = self._keys.match(match_id)
            calls.append(
                ScriptCall(OUTBOX_TAKE, [keys.outbox, keys.relay], [token, lease, limit], "outbox_take")
            )
        return [
            None if raw is None else [as_bytes(x) for x in raw]
            for raw in await self._batcher.call_many(calls)
        ]

    async def outbox_done(self, done: Sequence[tuple[str, int]], token: str) -> list[bool]:
        calls = []
        for match_id, count in done:
            keys = self._keys.match(match_id)
            calls.append(ScriptCall(OUTBOX_DONE, [keys.outbox, keys.relay], [token, count], "outbox_done"))
        return [bool(int(r)) for r in await self._batcher.call_many(calls)]

    # -- operator streams -----------------------------------------------------------------

    async def append(self, owner: str, events: Sequence[bytes]) -> list[str]:
        key = self._keys.operator(owner).events
        maxlen = self.settings.operator_events_max_len

        async def go() -> Any:
            self._conn.stats.add(1, len(events))
            pipe = self._conn.client.pipeline(transaction=False)
            for raw in events:
                pipe.xadd(key, {EVENT_FIELD: raw}, maxlen=maxlen, approximate=True)
            return await pipe.execute()

        return [as_str(x) for x in await self._conn.run("operator_append", go)] if events else []

    async def read(self, owner: str, after: str, limit: int, block: float = 0.0) -> list[tuple[str, bytes]]:
        key = self._keys.operator(owner).events
        start = after or "0-0"
        client = self._conn.client

        async def go() -> Any:
            self._conn.stats.add(1, 1)
            if block <= 0:
                return [[key, await client.xrange(key, min=f"({start}", max="+", count=limit)]]
            return await client.xread({key: start}, count=limit, block=max(1, math.ceil(block * 1000)))

        resp = await self._conn.run("operator_read", go, extra=max(0.0, block))
        return [
            (as_str(eid), as_bytes(fields[EVENT_FIELD]))
            for _key, entries in parse_xread(resp)
            for eid, fields in entries
        ]

    async def last(self, owner: str) -> str:
        key = self._keys.operator(owner).events

        async def go() -> Any:
            self._conn.stats.add(1, 1)
            return await self._conn.client.xrevrange(key, count=1)

        newest = await self._conn.run("operator_last", go)
        return as_str(newest[0][0]) if newest else "0-0"

    # -- webhooks and their deliveries ----------------------------------------------------

    async def webhook_put(self, owner: str, webhook_id: str, data: bytes, limit: int) -> bool:
        key = self._keys.operator(owner).webhooks
        call = ScriptCall(WEBHOOK_PUT, [key], [webhook_id, data, limit], "webhook_put")
        return bool(int(await self._batcher.call(call)))

    async def webhook_get(self, owner: str, webhook_id: str) -> bytes | None:
        key = self._keys.operator(owner).webhooks

        async def go() -> Any:
            self._conn.stats.add(1, 1)
            return await self._conn.client.hget(key, webhook_id)

        raw = await self._conn.run("webhook_get", go)
        return None if raw is None else as_bytes(raw)

    async def webhook_list(self, owner: str) -> dict[str, bytes]:
        key = self._keys.operator(owner).webhooks

        async def go() -> Any:
            self._conn.stats.add(1, 1)
            return await self._conn.client.hgetall(key)

        raw = await self._conn.run("webhook_list", go)
        return {as_str(k): as_bytes(v) for k, v in raw.items()}

    async def webhook_delete(self, owner: str, webhook_id: str) -> bool:
        ok = self._keys.operator(owner)

        async def go() -> Any:
            self._conn.stats.add(1, 2)
            pipe = self._conn.client.pipeline(transaction=False)
            pipe.hdel(ok.webhooks, webhook_id)
            pipe.delete(ok.deliveries(webhook_id), ok.delivery_order(webhook_id))
            return await pipe.execute()

        removed, _ = await self._conn.run("webhook_delete", go)
        return bool(removed)

    async def delivery_log_put(
        self, owner: str, webhook_id: str, delivery_id: str, data: bytes, time_ms: int, keep: int
    ) -> bool:
        ok = self._keys.operator(owner)
        keys = [ok.deliveries(webhook_id), ok.delivery_order(webhook_id), ok.webhooks]
        args = [delivery_id, data, time_ms, keep, webhook_id]
        call = ScriptCall(DELIVERY_LOG_PUT_IF, keys, args, "delivery_log_put")
        return bool(int(await self._batcher.call(call)))

    async def delivery_log(self, owner: str, webhook_id: str, limit: int) -> list[bytes]:
        ok = self._keys.operator(owner)
        client = self._conn.client

        async def go() -> Any:
            self._conn.stats.add(1, 1)
            ids = await client.zrevrange(ok.delivery_order(webhook_id), 0, limit - 1)
            if not ids:
                return []
            self._conn.stats.add(1, 1)
            return await client.hmget(ok.deliveries(webhook_id), ids)

        return [as_bytes(x) for x in await self._conn.run("delivery_log", go) if x is not None]
