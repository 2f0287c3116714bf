"""The in-memory :class:`~truco_server.ports.documents.Documents`."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from truco_server.ports.documents import WHOLE, DocRef, check_part_names
from truco_server.ports.errors import ParentMissing

__all__ = ["MemoryDocuments"]


class MemoryDocuments:
    """Versioned documents, their indexes and bot assignments held in this process."""

    def __init__(self) -> None:
        self._docs: dict[tuple[str, str], tuple[int, dict[str, bytes]]] = {}
        self._index: dict[tuple[str, str], dict[str, int]] = {}
        self._assignments: dict[str, dict[str, bytes]] = {}

    async def get(self, kind: str, doc_id: str) -> tuple[int, bytes] | None:
        got = await self.get_parts(kind, doc_id)
        return None if got is None else (got[0], got[1].get(WHOLE, b""))

    def require(self, requires: Sequence[DocRef]) -> None:
        """Raise ParentMissing for the first document of ``requires`` that does not exist."""
        for ref in requires:
            if (ref.kind, ref.doc_id) not in self._docs:
                raise ParentMissing(ref)

    async def put(
        self, kind: str, doc_id: str, expected_version: int, data: bytes, *, requires: Sequence[DocRef] = ()
    ) -> bool:
        self.require(requires)
        return await self.put_parts(kind, doc_id, expected_version, {WHOLE: data})

    async def get_parts(self, kind: str, doc_id: str) -> tuple[int, dict[str, bytes]] | None:
        got = self._docs.get((kind, doc_id))
        return None if got is None else (got[0], dict(got[1]))

    async def put_parts(
        self,
        kind: str,
        doc_id: str,
        expected_version: int,
        changed: Mapping[str, bytes],
        removed: Collection[str] = (),
    ) -> bool:
        check_part_names(changed, removed)
        version, parts = self._docs.get((kind, doc_id), (0, {}))
        if version != expected_version:
            return False
        parts = {k: v for k, v in parts.items() if k not in removed}
        parts.update((k, bytes(v)) for k, v in changed.items())
        self._docs[(kind, doc_id)] = (expected_version + 1, parts)
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
