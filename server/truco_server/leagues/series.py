"""Best-of-N series: a pairing played as up to N matches (games) between the same two
entrants, decided as one result.

The seats alternate: ``pairing.first`` is mano in the first hand of games 1, 3, 5...,
``pairing.second`` in games 2, 4... The series ends as soon as one side has won a
majority of N (more generally: as soon as the side ahead cannot be caught by the games
left), or when its N games are played. Its :class:`~truco_server.leagues.results.Result`
is what standings, tie-breaks, ratings and brackets see:

* the side with more games won wins the series (a win in the standings), the other loses;
  equal games won after N games (a drawn or undecided game counts for nobody) is a draw
  -- in a knockout the better seed (``first``) goes through, as for a single match;
* its Truco points are the sum of the games' points, each from the pairing's sides;
* a game lost without playing (a no-show, or a loss on time) is a game lost: it counts
  for the side present, and the series goes on while it is not decided. The series is a
  forfeit (``Result.forfeit``) only when every game it took was one.

Pure: everything is a function of the games passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from truco_server.leagues.errors import InvalidOptionError
from truco_server.leagues.results import Pairing, Result

MAX_BEST_OF = 9
"""The longest series a league may ask for."""


def check_best_of(best_of: int) -> int:
    """``best_of`` when it is an odd number from 1 to :data:`MAX_BEST_OF`, else
    :class:`InvalidOptionError`."""
    if isinstance(best_of, bool) or not isinstance(best_of, int) or not 1 <= best_of <= MAX_BEST_OF:
        raise InvalidOptionError("series_best_of", f"an odd number from 1 to {MAX_BEST_OF}; got {best_of!r}")
    if best_of % 2 == 0:
        raise InvalidOptionError(
            "series_best_of", f"an odd number (a series needs a majority); got {best_of}"
        )
    return best_of


@dataclass(frozen=True)
class SeriesGame:
    """One finished game of a series, from the pairing's sides."""

    winner: str | None
    """The entrant that won the game; ``None``: nobody (a draw, both sides absent)."""
    first_points: int = 0
    """Truco points of ``pairing.first`` in this game."""
    second_points: int = 0
    forfeit: bool = False
    """The game was not played to its end (a no-show, a loss on time)."""


def game_sides(pairing: Pairing, game: int) -> tuple[str, str]:
    """Who is mano in the first hand of game ``game`` (from 1), and the other side."""
    if pairing.second is None:
        raise InvalidOptionError("pairing", "a bye has no series")
    if game < 1:
        raise InvalidOptionError("game", f"games are numbered from 1; got {game}")
    return (pairing.first, pairing.second) if game % 2 == 1 else (pairing.second, pairing.first)


def series_score(pairing: Pairing, games: Sequence[SeriesGame]) -> tuple[int, int]:
    """Games won by ``pairing.first`` and by ``pairing.second``."""
    first = sum(1 for g in games if g.winner == pairing.first)
    second = sum(1 for g in games if g.winner is not None and g.winner == pairing.second)
    return first, second


def series_decided(best_of: int, pairing: Pairing, games: Sequence[SeriesGame]) -> bool:
    """True when no further game can change the series' winner (a side has a majority,
    the side ahead cannot be caught, or all ``best_of`` games are played)."""
    left = best_of - len(games)
    if left <= 0:
        return True
    a, b = series_score(pairing, games)
    return abs(a - b) > left


def series_result(
    best_of: int, pairing: Pairing, games: Sequence[SeriesGame], *, knockout: bool = False
) -> Result | None:
    """The series' result once decided (see the module docstring), else ``None``."""
    if len(games) > best_of:
        raise InvalidOptionError(
            "games", f"a best of {best_of} has at most {best_of} games; got {len(games)}"
        )
    if not games or not series_decided(best_of, pairing, games):
        return None
    a, b = series_score(pairing, games)
    winner = pairing.first if a > b else pairing.second if b > a else None
    if winner is None and knockout:
        winner = pairing.first
    points = (sum(g.first_points for g in games), sum(g.second_points for g in games))
    return pairing.result(winner, points, all(g.forfeit for g in games))


__all__ = [
    "MAX_BEST_OF",
    "SeriesGame",
    "check_best_of",
    "game_sides",
    "series_decided",
    "series_result",
    "series_score",
]
