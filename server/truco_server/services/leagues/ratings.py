"""The rating books: one document per operator and rating family (``<preset>-<players>p``),
the tournament library's :class:`~truco_server.leagues.RatingBook` as JSON. The league job
rates its finished matches into them; ``GetLeaderboard`` reads them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from truco_server.core import errors as E
from truco_server.core.caller import Operator
from truco_server.leagues import LeaderboardEntry, RatedMatch, RatingBook
from truco_server.ports.documents import DocRef, Documents
from truco_server.services.leagues.documents import CAS_ATTEMPTS, RATINGS
from truco_server.services.leagues.errors import invalid


def book_id(owner: str, family: str) -> str:
    """The document id of an operator's rating book of one family."""
    return f"{owner}/{family}"


class RatingBooks:
    """Every operator's rating books (see the module docstring)."""

    def __init__(self, documents: Documents) -> None:
        self.documents = documents

    async def leaderboard(self, operator: Operator, family: str, limit: int) -> tuple[LeaderboardEntry, ...]:
        if not family or len(family) > 64:
            raise invalid("family", "a rating family, e.g. argentine-2p (League.rating_family)")
        if limit < 0:
            raise invalid("page_size", "must not be negative")
        got = await self.documents.get(RATINGS, book_id(operator.name, family))
        if got is None:
            return ()
        book = RatingBook.from_dict(_json(got[1]))
        return book.leaderboard(family, min(limit or 50, 500))

    async def rate(
        self, owner: str, family: str, played: Sequence[RatedMatch], *, requires: Sequence[DocRef] = ()
    ) -> list[str]:
        """Apply finished matches of one family to the owner's book in one write, each once (a
        match id the book has applied is skipped); returns the ids applied now. ``requires``:
        what the matches belong to (their league): without it nothing is written
        (:class:`~truco_server.ports.errors.ParentMissing`)."""
        doc_id = book_id(owner, family)
        for _ in range(CAS_ATTEMPTS):
            got = await self.documents.get(RATINGS, doc_id)
            version, book = (
                (0, RatingBook()) if got is None else (got[0], RatingBook.from_dict(_json(got[1])))
            )
            applied = [m.match_id for m in played if book.apply(m)]
            if not applied:
                return []
            if await self.documents.put(RATINGS, doc_id, version, _dumps(book.to_dict()), requires=requires):
                return applied
        raise E.ServiceError("the rating book changed too often", code=E.Code.ABORTED, reason="ABORTED")


def _json(raw: bytes) -> dict[str, Any]:
    import orjson

    value = orjson.loads(raw)
    assert isinstance(value, dict)
    return value


def _dumps(value: dict[str, Any]) -> bytes:
    import orjson

    return orjson.dumps(value)
