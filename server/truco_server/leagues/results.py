"""Pairings, results, scoring, and the per-entrant history derived from results.

A :class:`Pairing` is one table of one round: ``first`` is mano in the first hand of the
match (the side that plays first, Truco's counterpart of White in chess), ``second`` is the
opponent, or ``None`` for a bye. A :class:`Result` is a pairing with its outcome. Formats
derive everything they need (who met whom, scores, byes, mano counts) from the results,
so the service stores results and nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

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

    def bye_result(self, half: bool = False) -> Result:
        """The result of a bye: ``first`` scores the format's bye score (``Scoring.bye``);
        with ``half``, a half-point bye (no winner: it scores a draw's, ``Scoring.draw``)."""
        if self.second is not None:
            raise InvalidResultError("pairing", "not a bye: both sides play")
        return Result(self.round, self.table, self.first, None, None if half else self.first)


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


class Game(NamedTuple):
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
    forfeit: bool = False
    """True when the match was not played (a no-show; :attr:`Result.forfeit`)."""


@dataclass(frozen=True)
class History:
    """Every entrant's games, in round order, derived from a list of results."""

    games: Mapping[str, tuple[Game, ...]]
    rounds_played: int
    """Highest round number with a result."""
    scores: Mapping[str, float] = field(default_factory=dict)
    """Each entrant's score (the sum of its games'), for those with a game."""

    def of(self, entrant_id: str) -> tuple[Game, ...]:
        return self.games.get(entrant_id, ())

    def score(self, entrant_id: str) -> float:
        return self.scores.get(entrant_id, 0.0)

    def byes(self, entrant_id: str) -> int:
        return sum(1 for g in self.of(entrant_id) if g.opponent is None)

    def opponents(self, entrant_id: str) -> list[str]:
        return [g.opponent for g in self.of(entrant_id) if g.opponent is not None]

    @functools.cached_property
    def met(self) -> frozenset[frozenset[str]]:
        """Every pair of entrants that already met (each a two-element set)."""
        return frozenset(frozenset((e, g.opponent)) for e, gs in self.games.items() for g in gs if g.opponent)

    def have_met(self, a: str, b: str) -> bool:
        return any(g.opponent == b for g in self.of(a))

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


def check_result(result: Result, known: Container[str]) -> None:
    """Check a result's own consistency (ids ``known``, the winner one of the two sides)."""

    def where() -> str:
        return f"results[round {result.round}, table {result.table}]"

    if result.round < 1 or result.table < 1:
        raise InvalidResultError(where(), "round and table numbers start at 1")
    sides = result.entrants
    for side in sides:
        if side not in known:
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
    games: dict[str, list[Game]] = {e: [] for e in ids}
    current = 0
    tables: set[int] = set()
    """Tables of the current round seen so far (the results are taken in round order)."""
    seated: set[str] = set()
    """Entrants of the current round seen so far."""
    for r in sorted(results, key=_round_and_table):
        check_result(r, ids)
        if r.round != current:
            current, tables, seated = r.round, set(), set()
        if r.table in tables:
            raise InvalidResultError(
                f"results[round {r.round}, table {r.table}]", "this table has two results"
            )
        tables.add(r.table)
        first, second = r.first, r.second
        for side in (first,) if second is None else (first, second):
            if side in seated:
                raise InvalidResultError(
                    f"results[round {r.round}, table {r.table}]",
                    f"{side!r} has two results in round {r.round}",
                )
            seated.add(side)
        if second is None:  # a bye; without a winner, a half-point bye (a draw's value)
            value = (1.0, scoring.bye) if r.winner == first else (0.5, scoring.draw)
            games[first].append(Game(r.round, None, *value, r.first_points, r.second_points, False))
            continue
        f1, s1 = _game_value(r, first, scoring)
        f2, s2 = _game_value(r, second, scoring)
        games[first].append(Game(r.round, second, f1, s1, r.first_points, r.second_points, True, r.forfeit))
        games[second].append(Game(r.round, first, f2, s2, r.second_points, r.first_points, False, r.forfeit))
    played = {k: tuple(v) for k, v in games.items() if v}
    return History(played, current, {k: sum(g.score for g in v) for k, v in played.items()})


def _round_and_table(r: Result) -> tuple[int, int]:
    return (r.round, r.table)
