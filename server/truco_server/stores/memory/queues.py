"""The in-memory :class:`~truco_server.ports.queues.Queues`: one dict per queue (item ->
due time and data); the shards matter only to Redis, so every queue has one."""

from __future__ import annotations

from collections.abc import Sequence

from truco_server.ports.documents import DocRef
from truco_server.ports.queues import Claim
from truco_server.stores.memory.documents import MemoryDocuments

__all__ = ["MemoryQueues"]


class MemoryQueues:
    """Sharded queues held in this process (one shard each)."""

    def __init__(self, documents: MemoryDocuments) -> None:
        self._queues: dict[str, dict[str, tuple[int, bytes]]] = {}
        self._documents = documents
        """What an item's ``requires`` are looked up in."""

    def shards(self, queue: str) -> int:
        return 1

    def lower(self, queue: str, item: str, due: int, data: bytes = b"") -> None:
        """Queue ``item`` no later than ``due`` (and replace its data when ``data``)."""
        q = self._queues.setdefault(queue, {})
        cur = q.get(item)
        if cur is None:
            q[item] = (due, data)
        else:
            q[item] = (min(cur[0], due), data or cur[1])

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
        self._documents.require(requires)
        q = self._queues.setdefault(queue, {})
        if only_new:
            if item in q:
                return False
            q[item] = (due, data)
            return True
        self.lower(queue, item, due, data)
        return True

    async def due(self, queue: str, now: int) -> list[int]:
        return [0] if any(d <= now for d, _ in self._queues.get(queue, {}).values()) else []

    async def claim(self, queue: str, shard: int, now: int, lease: int, limit: int) -> list[Claim]:
        q = self._queues.get(queue, {})
        due = sorted((d, item) for item, (d, _) in q.items() if d <= now)[:limit]
        out = []
        for d, item in due:
            data = q[item][1]
            q[item] = (now + lease, data)
            out.append(Claim(item, d, now + lease, data))
        return out

    async def finish(
        self, queue: str, item: str, lease: int, due: int | None, data: bytes = b"", *, owned: bool = False
    ) -> bool:
        q = self._queues.setdefault(queue, {})
        cur = q.get(item)
        if cur is None or cur[0] != lease:
            if not owned and due is not None:
                self.lower(queue, item, due)
            return False
        if due is None:
            del q[item]
        else:
            q[item] = (due, data or cur[1])
        return True

    async def release(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        q = self._queues.setdefault(queue, {})
        out = []
        for item, data in items:
            cur = q.get(item)
            if cur is None or cur[1] != data:
                out.append(False)
            else:
                del q[item]
                out.append(True)
        return out
