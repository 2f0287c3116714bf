"""Pairings, results, scoring, and the per-entrant history derived from results.

A :class:`Pairing` is one table of one round: ``first`` is mano in the first hand of the
match (the side that plays first, Truco's counterpart of White in chess), ``second`` is the
opponent, or ``None`` for a bye. A :class:`Result` is a pairing with its outcome. Formats
derive everything they need (who met whom, scores, byes, mano counts) from the results,
so the service stores results and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from truco_server.leagues.errors import InvalidOptionError, InvalidResultError, UnknownEntrantError


@dataclass(frozen=True)
class Pairing:
    """One table of one round."""

    round: int
    """Round number, from 1."""
    table: int
    """Table number within the round, from 1 (byes come after the played tables)."""
    first: str
    """Entrant id of the side that is mano in the first hand (for a bye: who gets it)."""
    second: str | None
    """Entrant id of the other side; ``None`` when ``first`` has a bye (or a walkover)."""
    label: str = ""
    """Bracket match name in elimination formats (``W1.3``, ``L2.1``, ``GF``), else empty."""

    @property
    def is_bye(self) -> bool:
        """True when nobody plays ``first`` at this table."""
        return self.second is None

    @property
    def entrants(self) -> tuple[str, ...]:
        """The one or two entrant ids at this table."""
        return (self.first,) if self.second is None else (self.first, self.second)

    def result(self, winner: str | None, points: tuple[int, int] = (0, 0), forfeit: bool = False) -> Result:
        """This pairing's :class:`Result`; ``points`` are (first's, second's) Truco points."""
        return Result(self.round, self.table, self.first, self.second, winner, points[0], points[1], forfeit)

    def bye_result(self) -> Result:
        """The result of a bye (``first`` scores the format's bye score)."""
        if self.second is not None:
            raise InvalidResultError("pairing", "not a bye: both sides play")
        return Result(self.round, self.table, self.first, None, self.first)


@dataclass(frozen=True)
class Result:
    """The outcome of one pairing."""

    round: int
    table: int
    first: str
    second: str | None
    winner: str | None
    """Entrant id of the winner; ``None`` is a draw (or, with ``forfeit``, a double forfeit)."""
    first_points: int = 0
    """Truco points ``first`` scored in the match (under duplicate: on the compared deals)."""
    second_points: int = 0
    forfeit: bool = False
    """True when the match was not played (a no-show); it still counts as a meeting."""

    @property
    def is_bye(self) -> bool:
        return self.second is None

    @property
    def pairing(self) -> Pairing:
        return Pairing(self.round, self.table, self.first, self.second)

    @property
    def entrants(self) -> tuple[str, ...]:
        """The one or two entrant ids at this table."""
        return (self.first,) if self.second is None else (self.first, self.second)

    def loser(self) -> str | None:
        """The losing entrant of a decided, played result (``None`` for draws and byes)."""
        if self.second is None or self.winner is None:
            return None
        return self.second if self.winner == self.first else self.first


@dataclass(frozen=True)
class Scoring:
    """Points in the standings for each outcome (chess-style by default)."""

    win: float = 1.0
    draw: float = 0.5
    loss: float = 0.0
    bye: float = 1.0
    """What a bye (or a walkover) is worth; Lichess Swiss gives a full point."""

    def __post_init__(self) -> None:
        for name in ("win", "draw", "loss", "bye"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InvalidOptionError(f"scoring.{name}", f"must be a number >= 0, got {value!r}")
        if not self.win >= self.draw >= self.loss:
            raise InvalidOptionError("scoring", "needs win >= draw >= loss")


#: The default scoring: win 1, draw 1/2, loss 0, bye 1.
DEFAULT_SCORING = Scoring()


@dataclass(frozen=True)
class Game:
    """One result seen from one entrant's side."""

    round: int
    opponent: str | None
    """``None`` for a bye."""
    fraction: float
    """1 for a win, 1/2 for a draw, 0 for a loss (a bye counts 1); used by Sonneborn-Berger."""
    score: float
    """What the result is worth in the standings under the event's :class:`Scoring`."""
    points_for: int
    points_against: int
    mano: bool
    """True when this entrant was ``first`` (mano in the first hand)."""


@dataclass(frozen=True)
class History:
    """Every entrant's games, in round order, derived from a list of results."""

    games: Mapping[str, tuple[Game, ...]]
    rounds_played: int
    """Highest round number with a result."""
    met: frozenset[frozenset[str]] = field(default_factory=frozenset)
    """Every pair of entrants that already met (each a two-element set)."""

    def of(self, entrant_id: str) -> tuple[Game, ...]:
        return self.games.get(entrant_id, ())

    def score(self, entrant_id: str) -> float:
        return sum(g.score for g in self.of(entrant_id))

    def byes(self, entrant_id: str) -> int:
        return sum(1 for g in self.of(entrant_id) if g.opponent is None)

    def opponents(self, entrant_id: str) -> list[str]:
        return [g.opponent for g in self.of(entrant_id) if g.opponent is not None]

    def have_met(self, a: str, b: str) -> bool:
        return frozenset((a, b)) in self.met

    def times_met(self, a: str, b: str) -> int:
        return sum(1 for g in self.of(a) if g.opponent == b)


def _game_value(result: Result, me: str, scoring: Scoring) -> tuple[float, float]:
    if result.second is None:
        return 1.0, scoring.bye
    if result.winner is None:
        if result.forfeit:
            return 0.0, scoring.loss
        return 0.5, scoring.draw
    if result.winner == me:
        return 1.0, scoring.win
    return 0.0, scoring.loss


def check_result(result: Result, known: Mapping[str, object] | Iterable[str]) -> None:
    """Check a result's own consistency (ids known, the winner one of the two sides).
    ``known`` is looked up as it is when it is a mapping or a set (so a caller checking
    many results passes a set once)."""

    def where() -> str:
        return f"results[round {result.round}, table {result.table}]"

    if result.round < 1 or result.table < 1:
        raise InvalidResultError(where(), "round and table numbers start at 1")
    ids = known if isinstance(known, Mapping | set | frozenset) else set(known)
    sides = result.entrants
    for side in sides:
        if side not in ids:
            raise UnknownEntrantError(where(), f"{side!r} is not a registered entrant")
    if result.second is not None and result.first == result.second:
        raise InvalidResultError(where(), "an entrant cannot play itself")
    if result.winner is not None and result.winner not in sides:
        raise InvalidResultError(f"{where()}.winner", f"{result.winner!r} did not play at this table")
    if result.first_points < 0 or result.second_points < 0:
        raise InvalidResultError(f"{where()}.points", "Truco points cannot be negative")


def build_history(results: Sequence[Result], known: Iterable[str], scoring: Scoring) -> History:
    """Derive every entrant's games from ``results`` (checked: each table and each entrant
    at most once per round)."""
    ids = set(known)
    games: dict[str, list[Game]] = {}
    seen_tables: set[tuple[int, int]] = set()
    seen_in_round: set[tuple[int, str]] = set()
    met: set[frozenset[str]] = set()
    last = 0
    for result in sorted(results, key=lambda r: (r.round, r.table)):
        check_result(result, ids)
        key = (result.round, result.table)
        if key in seen_tables:
            raise InvalidResultError(
                f"results[round {result.round}, table {result.table}]", "this table has two results"
            )
        seen_tables.add(key)
        sides = result.entrants
        for side in sides:
            if (result.round, side) in seen_in_round:
                raise InvalidResultError(
                    f"results[round {result.round}, table {result.table}]",
                    f"{side!r} has two results in round {result.round}",
                )
            seen_in_round.add((result.round, side))
        last = max(last, result.round)
        if len(sides) == 2:
            met.add(frozenset(sides))
        for me in sides:
            other = None if result.second is None else (result.second if me == result.first else result.first)
            fraction, score = _game_value(result, me, scoring)
            pf, pa = (
                (result.first_points, result.second_points)
                if me == result.first
                else (result.second_points, result.first_points)
            )
            games.setdefault(me, []).append(
                Game(result.round, other, fraction, score, pf, pa, me == result.first and other is not None)
            )
    return History({k: tuple(v) for k, v in games.items()}, last, frozenset(met))
