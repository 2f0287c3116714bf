"""The Redis :class:`~truco_server.ports.queues.Queues`: each queue is ``queue_shards``
shards (:class:`~.keys.ShardedQueue`), each a sorted set of items by due time (``:due``) and
a hash of their data (``:data``) in one slot, so every operation on an item is one script on
one slot (:mod:`.scripts`; scripts go through the adapter's batcher, :mod:`.batch`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from truco_server.ports.documents import DocRef
from truco_server.ports.queues import Claim
from truco_server.stores.redis.batch import ScriptBatcher, ScriptCall
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.guards import Guards
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.replies import as_bytes, as_str
from truco_server.stores.redis.scripts import QUEUE_ADD, QUEUE_CLAIM, QUEUE_DUE, QUEUE_FINISH, QUEUE_RELEASE

__all__ = ["RedisQueues"]


class RedisQueues:
    """Sharded queues on Redis (see the module docstring)."""

    def __init__(self, conn: RedisConnection, keys: Keys, batcher: ScriptBatcher, guards: Guards) -> None:
        self._conn = conn
        self._keys = keys
        self._batcher = batcher
        self._guards = guards

    def shards(self, queue: str) -> int:
        return self._keys.queue(queue).shards

    def _item_keys(self, queue: str, item: str) -> list[str]:
        q = self._keys.queue(queue)
        return [q.key_for(item, ":due"), q.key_for(item, ":data")]

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
        args = [item, due, "new" if only_new else "lower", data]
        call = ScriptCall(QUEUE_ADD, self._item_keys(queue, item), args, "queue_add")
        return bool(int(await self._guards.call(call, requires)))

    async def due(self, queue: str, now: int) -> list[int]:
        q = self._keys.queue(queue)
        shards = q.all_shards()
        keys = [q.key(k, ":due") for k in shards]
        if self._conn.kind != "cluster":
            # one script over every shard: a worker asks this of each queue every tick, busy
            # or idle, and one command costs it a sixteenth of a pipeline of counts
            found = await self._batcher.call(ScriptCall(QUEUE_DUE, keys, [now], "queue_due"))
            return [shards[int(i)] for i in found]

        async def go() -> Any:  # the shards are in other slots, likely on other nodes
            self._conn.stats.add(1, len(shards))
            pipe = self._conn.client.pipeline()
            for key in keys:
                pipe.zcount(key, "-inf", now)
            return await pipe.execute()

        counts = await self._conn.run("queue_due", go)
        return [k for k, n in zip(shards, counts, strict=True) if int(n)]

    async def claim(self, queue: str, shard: int, now: int, lease: int, limit: int) -> list[Claim]:
        q = self._keys.queue(queue)
        keys = [q.key(shard, ":due"), q.key(shard, ":data")]
        raw = await self._batcher.call(ScriptCall(QUEUE_CLAIM, keys, [now, lease, limit], "queue_claim"))
        return [
            Claim(as_str(raw[i]), int(float(as_str(raw[i + 1]))), int(raw[i + 2]), as_bytes(raw[i + 3]))
            for i in range(0, len(raw), 4)
        ]

    async def finish(
        self, queue: str, item: str, lease: int, due: int | None, data: bytes = b"", *, owned: bool = False
    ) -> bool:
        args = [item, lease, "" if due is None else due, data, "owned" if owned else "lower"]
        call = ScriptCall(QUEUE_FINISH, self._item_keys(queue, item), args, "queue_finish")
        return bool(int(await self._batcher.call(call)))

    async def release(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        calls = [
            ScriptCall(QUEUE_RELEASE, self._item_keys(queue, item), [item, data], "queue_release")
            for item, data in items
        ]
        return [bool(int(r)) for r in await self._batcher.call_many(calls)]
