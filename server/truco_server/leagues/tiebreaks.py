"""Standings from results, with tie-breaks applied in a configurable order.

Every entrant's **score** is the sum of its results under the event's
:class:`~truco_server.leagues.results.Scoring` (win 1, draw 1/2, loss 0, bye 1 by default).
Entrants are ordered by score; each tie-break in order then splits the entrants still tied;
the seed (lower first) settles whatever is left, so the order is total and reproducible.

Formulas (``opp(g)`` is the opponent of game ``g``, ``S(e)`` an entrant's score, ``f(g)``
the game's fraction: 1 win, 1/2 draw, 0 loss; byes have no opponent and add nothing):

- ``buchholz``: ``sum of S(opp(g))`` over the entrant's games (an opponent met twice counts
  twice).
- ``median_buchholz``: Buchholz without the highest and the lowest opponent score, when
  the entrant has at least 3 games with an opponent (otherwise plain Buchholz).
- ``sonneborn_berger``: ``sum of f(g) * S(opp(g))``: the scores of the opponents beaten,
  plus half the scores of those drawn.
- ``head_to_head``: among the entrants still tied when it is applied, the score each made in
  the games between them (under the event's Scoring); an entrant no longer tied gets 0.
- ``points_difference``: ``sum of (Truco points for - Truco points against)`` over its games.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import InvalidOptionError
from truco_server.leagues.results import DEFAULT_SCORING, History, Result, Scoring, build_history


class TieBreak(enum.StrEnum):
    BUCHHOLZ = "buchholz"
    MEDIAN_BUCHHOLZ = "median_buchholz"
    SONNEBORN_BERGER = "sonneborn_berger"
    HEAD_TO_HEAD = "head_to_head"
    POINTS_DIFFERENCE = "points_difference"


#: The default order (Swiss and round robin).
DEFAULT_TIE_BREAKS: tuple[TieBreak, ...] = (
    TieBreak.BUCHHOLZ,
    TieBreak.MEDIAN_BUCHHOLZ,
    TieBreak.SONNEBORN_BERGER,
    TieBreak.HEAD_TO_HEAD,
    TieBreak.POINTS_DIFFERENCE,
)


def parse_tie_breaks(names: Iterable[str]) -> tuple[TieBreak, ...]:
    """Tie-breaks from their names, checked (known, none twice)."""
    out: list[TieBreak] = []
    allowed = ", ".join(t.value for t in TieBreak)
    for i, name in enumerate(names):
        try:
            tb = TieBreak(name)
        except ValueError:
            raise InvalidOptionError(
                f"tie_breaks[{i}]", f"unknown tie-break {name!r}; allowed: {allowed}"
            ) from None
        if tb in out:
            raise InvalidOptionError(f"tie_breaks[{i}]", f"{name!r} is listed twice")
        out.append(tb)
    return tuple(out)


@dataclass(frozen=True)
class Standing:
    """One line of the standings."""

    rank: int
    """1-based position (unique: the seed breaks what the tie-breaks leave tied)."""
    entrant_id: str
    score: float
    played: int
    """Games with an opponent (forfeits included, byes not)."""
    wins: int
    draws: int
    losses: int
    byes: int
    points_for: int
    points_against: int
    tie_breaks: tuple[float, ...]
    """The value of each configured tie-break, in the configured order."""


def buchholz(history: History, entrant_id: str) -> float:
    return sum(history.score(o) for o in history.opponents(entrant_id))


def median_buchholz(history: History, entrant_id: str) -> float:
    scores = sorted(history.score(o) for o in history.opponents(entrant_id))
    if len(scores) >= 3:
        scores = scores[1:-1]
    return sum(scores)


def sonneborn_berger(history: History, entrant_id: str) -> float:
    games = [g for g in history.of(entrant_id) if g.opponent is not None]
    return sum(g.fraction * history.score(g.opponent) for g in games if g.opponent is not None)


def head_to_head(history: History, entrant_id: str, group: Iterable[str]) -> float:
    others = set(group) - {entrant_id}
    return sum(g.score for g in history.of(entrant_id) if g.opponent in others)


def points_difference(history: History, entrant_id: str) -> int:
    return sum(g.points_for - g.points_against for g in history.of(entrant_id) if g.opponent is not None)


def _value(tb: TieBreak, history: History, entrant_id: str, group: Sequence[str]) -> float:
    if tb is TieBreak.BUCHHOLZ:
        return buchholz(history, entrant_id)
    if tb is TieBreak.MEDIAN_BUCHHOLZ:
        return median_buchholz(history, entrant_id)
    if tb is TieBreak.SONNEBORN_BERGER:
        return sonneborn_berger(history, entrant_id)
    if tb is TieBreak.HEAD_TO_HEAD:
        return head_to_head(history, entrant_id, group) if len(group) > 1 else 0.0
    return float(points_difference(history, entrant_id))


def standings(
    entrants: Sequence[Entrant],
    results: Sequence[Result],
    scoring: Scoring = DEFAULT_SCORING,
    tie_breaks: Sequence[TieBreak] = DEFAULT_TIE_BREAKS,
) -> tuple[Standing, ...]:
    """The standings of ``entrants`` after ``results`` (see the module doc for the order)."""
    history = build_history(results, (e.id for e in entrants), scoring)
    seed = {e.id: e.seed for e in entrants}
    values: dict[str, list[float]] = {e.id: [0.0] * len(tie_breaks) for e in entrants}
    ordered = sorted(entrants, key=lambda e: -history.score(e.id))
    groups: list[list[str]] = []
    for e in ordered:
        if groups and history.score(groups[-1][0]) == history.score(e.id):
            groups[-1].append(e.id)
        else:
            groups.append([e.id])
    for k, tb in enumerate(tie_breaks):
        refined: list[list[str]] = []
        for group in groups:
            for member in group:
                values[member][k] = _value(tb, history, member, group)
            if len(group) == 1:
                refined.append(group)
                continue
            group = sorted(group, key=lambda x: -values[x][k])
            sub: list[list[str]] = []
            for member in group:
                if sub and values[sub[-1][0]][k] == values[member][k]:
                    sub[-1].append(member)
                else:
                    sub.append([member])
            refined.extend(sub)
        groups = refined
    final = [x for group in groups for x in sorted(group, key=lambda x: seed[x])]
    out: list[Standing] = []
    for rank, entrant_id in enumerate(final, start=1):
        games = history.of(entrant_id)
        played = [g for g in games if g.opponent is not None]
        out.append(
            Standing(
                rank=rank,
                entrant_id=entrant_id,
                score=history.score(entrant_id),
                played=len(played),
                wins=sum(1 for g in played if g.fraction == 1.0),
                draws=sum(1 for g in played if g.fraction == 0.5),
                losses=sum(1 for g in played if g.fraction == 0.0),
                byes=len(games) - len(played),
                points_for=sum(g.points_for for g in played),
                points_against=sum(g.points_against for g in played),
                tie_breaks=tuple(values[entrant_id]),
            )
        )
    return tuple(out)
