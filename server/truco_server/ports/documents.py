"""League documents: a league, a bot account and a rating family's book are each one
document (opaque bytes with a version, replaced only by a compare-and-set on that version,
each in a slot of its own); an operator's documents of a kind are listed in an index; a bot's
current assignments are a hash. Contract suite: ``tests/storage/test_documents.py``.

A write may name the documents it belongs to (``requires``: a rating book's league, an
assignment's league and bot account): it is made only if each of them exists, checked in the
same atomic step as the write where the adapter can (:class:`DocRef`), and otherwise refused
with :class:`~truco_server.ports.errors.ParentMissing`, nothing written. So work that was under
way when its league was lost (a Redis restarted without persistence) never writes its records
back into an empty store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class DocRef:
    """A document by its kind and id: what a write names as the document it belongs to."""

    kind: str
    doc_id: str


class Documents(Protocol):
    """Versioned documents, their indexes and bot assignments (see the module docstring)."""

    async def get(self, kind: str, doc_id: str) -> tuple[int, bytes] | None:
        """A document and its version (from 1), or ``None``."""
        ...

    async def put(
        self, kind: str, doc_id: str, expected_version: int, data: bytes, *, requires: Sequence[DocRef] = ()
    ) -> bool:
        """Replace the document if its version is ``expected_version`` (0: create it, only if
        there is none); the version becomes ``expected_version + 1``. ``False``, and nothing
        written, when the version differs. :class:`~truco_server.ports.errors.ParentMissing`,
        nothing written, when a document of ``requires`` does not exist."""
        ...

    async def index_add(self, owner: str, kind: str, doc_id: str, time_ms: int) -> None:
        """List ``doc_id`` among the owner's documents of ``kind`` (ordered by ``time_ms``)."""
        ...

    async def index(self, owner: str, kind: str, limit: int) -> list[str]:
        """The owner's newest ``limit`` document ids of ``kind``, newest first."""
        ...

    async def assignment_put(
        self, bot_id: str, match_id: str, data: bytes, *, requires: Sequence[DocRef] = ()
    ) -> None:
        """Record (or replace) an assignment of a bot to a match;
        :class:`~truco_server.ports.errors.ParentMissing`, nothing written, when a document of
        ``requires`` does not exist."""
        ...

    async def assignment_delete(self, bot_id: str, match_id: str) -> bool:
        """Remove a bot's assignment; ``False`` when there was none."""
        ...

    async def assignments(self, bot_id: str) -> dict[str, bytes]:
        """A bot's current assignments by match id."""
        ...
