"""The in-memory :class:`~truco_server.ports.documents.Documents`."""

from __future__ import annotations

from collections.abc import Sequence

from truco_server.ports.documents import DocRef
from truco_server.ports.errors import ParentMissing

__all__ = ["MemoryDocuments"]


class MemoryDocuments:
    """Versioned documents, their indexes and bot assignments held in this process."""

    def __init__(self) -> None:
        self._docs: dict[tuple[str, str], tuple[int, bytes]] = {}
        self._index: dict[tuple[str, str], dict[str, int]] = {}
        self._assignments: dict[str, dict[str, bytes]] = {}

    async def get(self, kind: str, doc_id: str) -> tuple[int, bytes] | None:
        return self._docs.get((kind, doc_id))

    def require(self, requires: Sequence[DocRef]) -> None:
        """Raise ParentMissing for the first document of ``requires`` that does not exist."""
        for ref in requires:
            if (ref.kind, ref.doc_id) not in self._docs:
                raise ParentMissing(ref)

    async def put(
        self, kind: str, doc_id: str, expected_version: int, data: bytes, *, requires: Sequence[DocRef] = ()
    ) -> bool:
        self.require(requires)
        current = self._docs.get((kind, doc_id))
        if (current[0] if current is not None else 0) != expected_version:
            return False
        self._docs[(kind, doc_id)] = (expected_version + 1, bytes(data))
        return True

    async def index_add(self, owner: str, kind: str, doc_id: str, time_ms: int) -> None:
        self._index.setdefault((owner, kind), {}).setdefault(doc_id, time_ms)

    async def index(self, owner: str, kind: str, limit: int) -> list[str]:
        found = self._index.get((owner, kind), {})
        return sorted(found, key=lambda d: (-found[d], d))[:limit]

    async def assignment_put(
        self, bot_id: str, match_id: str, data: bytes, *, requires: Sequence[DocRef] = ()
    ) -> None:
        self.require(requires)
        self._assignments.setdefault(bot_id, {})[match_id] = bytes(data)

    async def assignment_delete(self, bot_id: str, match_id: str) -> bool:
        return self._assignments.get(bot_id, {}).pop(match_id, None) is not None

    async def assignments(self, bot_id: str) -> dict[str, bytes]:
        return dict(self._assignments.get(bot_id, {}))
