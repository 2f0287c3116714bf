"""The players' ratings: one book per operator and rating family (``<preset>-<players>p``,
:func:`truco_match.create.family_of`), the tournament library's
:class:`~truco_server.leagues.RatingBook` (OpenSkill's Plackett-Luce) as one JSON document.

What rates a match into a book:

* the league job, for its leagues' matches (:mod:`truco_server.services.leagues.job`);
* :class:`RatedMatches`, for any match created ``rated`` (by CreateMatch or by a matchmaking
  pool): an operator-events listener that rates a ``match.ended`` with a winner, whatever
  created the match. Relays are at least once; a book applies a match id once.

``GetLeaderboard`` (a family's table), ``GetPlayerRating`` and the matchmaking pools (a
ticket's rating) read the books.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson
import structlog

from truco_match.create import family_of
from truco_match.events import MatchStatus
from truco_match.match import Match
from truco_match.operator_events import OperatorEvent, OperatorEventType
from truco_server.core import errors as E
from truco_server.core.caller import Operator
from truco_server.leagues import LeaderboardEntry, PlayerRating, RatedMatch, RatingBook
from truco_server.leagues.ratings import ranks_from_winner
from truco_server.ports.documents import DocRef, Documents

log = structlog.get_logger("truco.ratings")

RATINGS = "ratings"
"""Document kind of an operator's rating book of one family."""
CAS_ATTEMPTS = 20
"""How often a write that lost the compare-and-set is recomputed before it gives up."""
MAX_FAMILY = 64


def book_id(owner: str, family: str) -> str:
    """The document id of an operator's rating book of one family."""
    return f"{owner}/{family}"


def check_family(family: str, field: str = "family") -> None:
    if not family or len(family) > MAX_FAMILY:
        raise E.InvalidArgument(
            f"{field}: a rating family, e.g. paulista-2p (<preset>-<players>p)",
            field_violations=[E.FieldViolation(field, "a rating family, e.g. paulista-2p")],
        )


class RatingBooks:
    """Every operator's rating books (see the module docstring)."""

    def __init__(self, documents: Documents) -> None:
        self.documents = documents

    async def _book(self, owner: str, family: str) -> tuple[int, RatingBook]:
        got = await self.documents.get(RATINGS, book_id(owner, family))
        return (0, RatingBook()) if got is None else (got[0], RatingBook.from_dict(_json(got[1])))

    async def leaderboard(self, operator: Operator, family: str, limit: int) -> tuple[LeaderboardEntry, ...]:
        check_family(family)
        if limit < 0:
            raise E.InvalidArgument(
                "page_size must not be negative", field_violations=[E.FieldViolation("page_size", "negative")]
            )
        version, book = await self._book(operator.name, family)
        if not version:
            return ()
        return book.leaderboard(family, min(limit or 50, 500))

    async def ratings(self, owner: str, family: str, players: Sequence[str]) -> dict[str, PlayerRating]:
        """The current ratings of ``players`` in ``family`` (the prior for one who has not
        played there), in one read."""
        _, book = await self._book(owner, family)
        return {p: book.rating(family, p) for p in players}

    async def rate(
        self,
        owner: str,
        family: str,
        played: Sequence[RatedMatch],
        unrated: Sequence[str] = (),
        *,
        requires: Sequence[DocRef] = (),
    ) -> list[str]:
        """Apply finished matches of one family to the owner's book in one write, each once (a
        match the book holds as it is is skipped; one it holds with another result is
        corrected), and take out the ``unrated`` match ids it holds; returns the ids changed
        now. ``requires``: what the matches belong to (a league's): without it nothing is
        written (:class:`~truco_server.ports.errors.ParentMissing`)."""
        for _ in range(CAS_ATTEMPTS):
            version, book = await self._book(owner, family)
            applied = [m.match_id for m in played if book.apply(m)]
            applied += [match_id for match_id in unrated if book.remove(match_id)]
            if not applied:
                return []
            if await self.documents.put(
                RATINGS, book_id(owner, family), version, orjson.dumps(book.to_dict()), requires=requires
            ):
                return applied
        raise E.ServiceError("the rating book changed too often", code=E.Code.ABORTED, reason="ABORTED")


def rated_match(match: Match) -> RatedMatch | None:
    """What a finished rated match gives its players' ratings (their sides by team, the
    winners first), or ``None`` for a match that is not rated or ended without a winner."""
    state = match.state
    if not match.meta.rated or match.status is not MatchStatus.FINISHED or state.winner is None:
        return None
    sides: list[list[str]] = [[] for _ in range(match.rules.sides)]
    for seat in match.seats:
        sides[seat.team].append(seat.player_id)
    teams = tuple(tuple(s) for s in sides)
    return RatedMatch(match.match_id, family_of(match.rules), teams, ranks_from_winner(teams, state.winner))


class RatedMatches:
    """Rates every rated match when it ends (an operator-events listener, see the module)."""

    listens = (OperatorEventType.ENDED,)
    """The operator events :meth:`on_events` acts on."""

    def __init__(self, books: RatingBooks, load: Callable[[str], Awaitable[Match]]) -> None:
        self.books = books
        self.load = load

    @staticmethod
    def concerns(match: Match) -> bool:
        """Only a rated match's events are for it."""
        return match.meta.rated

    async def on_events(self, owner: str, events: Sequence[OperatorEvent]) -> None:
        for ev in events:
            if ev.type not in self.listens:
                continue
            played = rated_match(await self.load(ev.match_id))
            if played is not None:
                applied = await self.books.rate(owner, played.family, [played])
                log.info("match rated", match_id=ev.match_id, family=played.family, applied=bool(applied))


def _json(raw: bytes) -> Mapping[str, Any]:
    value = orjson.loads(raw)
    assert isinstance(value, dict)
    return value
