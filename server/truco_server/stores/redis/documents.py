"""The Redis :class:`~truco_server.ports.documents.Documents`: a document is a hash (``v`` =
version, ``d`` = data) in a slot of its own, replaced by a compare-and-set script; an
operator's index of a kind is a sorted set in the operator's slot; a bot's assignments are a
hash in the bot's slot (docs/storage.md, "Leagues"). A write that requires other documents
goes through :class:`~.guards.Guards`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from truco_server.ports.documents import DocRef
from truco_server.stores.redis.batch import ScriptBatcher, ScriptCall
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.guards import Guards
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.replies import as_bytes, as_str
from truco_server.stores.redis.scripts import ASSIGNMENT_PUT, DOC_PUT

__all__ = ["RedisDocuments"]


class RedisDocuments:
    """Versioned documents, their indexes and bot assignments on Redis."""

    def __init__(self, conn: RedisConnection, keys: Keys, batcher: ScriptBatcher, guards: Guards) -> None:
        self._conn = conn
        self._keys = keys
        self._batcher = batcher
        self._guards = guards

    async def _one(self, operation: str, command: Callable[[Any], Awaitable[Any]]) -> Any:
        """One command (a round trip): ``command(client)``."""
        client = self._conn.client

        async def go() -> Any:
            self._conn.stats.add(1, 1)
            return await command(client)

        return await self._conn.run(operation, go)

    async def get(self, kind: str, doc_id: str) -> tuple[int, bytes] | None:
        v, d = await self._one("doc_get", lambda c: c.hmget(self._keys.document(kind, doc_id), ["v", "d"]))
        return None if v is None else (int(v), as_bytes(d))

    async def put(
        self, kind: str, doc_id: str, expected_version: int, data: bytes, *, requires: Sequence[DocRef] = ()
    ) -> bool:
        key = self._keys.document(kind, doc_id)
        call = ScriptCall(DOC_PUT, [key], [expected_version, data], "doc_put", durable=True)
        return bool(int(await self._guards.call(call, requires)))

    async def index_add(self, owner: str, kind: str, doc_id: str, time_ms: int) -> None:
        key = self._keys.operator(owner).documents(kind)
        await self._one("doc_index_add", lambda c: c.zadd(key, {doc_id: time_ms}, nx=True))

    async def index(self, owner: str, kind: str, limit: int) -> list[str]:
        key = self._keys.operator(owner).documents(kind)
        return [as_str(x) for x in await self._one("doc_index", lambda c: c.zrevrange(key, 0, limit - 1))]

    async def assignment_put(
        self, bot_id: str, match_id: str, data: bytes, *, requires: Sequence[DocRef] = ()
    ) -> None:
        key = self._keys.assignments(bot_id)
        if not requires:
            await self._one("assignment_put", lambda c: c.hset(key, match_id, data))
            return
        call = ScriptCall(ASSIGNMENT_PUT, [key], [match_id, data], "assignment_put")
        await self._guards.call(call, requires)

    async def assignment_delete(self, bot_id: str, match_id: str) -> bool:
        return bool(
            int(
                await self._one(
                    "assignment_delete", lambda c: c.hdel(self._keys.assignments(bot_id), match_id)
                )
            )
        )

    async def assignments(self, bot_id: str) -> dict[str, bytes]:
        raw = await self._one("assignments", lambda c: c.hgetall(self._keys.assignments(bot_id)))
        return {as_str(k): as_bytes(v) for k, v in raw.items()}
