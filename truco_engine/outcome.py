"""Ending a match by a decision outside the game: a resignation, a forfeit, an arbiter's award.

The rules say how a match is won on the table; a service also ends matches for reasons the
table does not see (a seat resigns, runs out of time too often, an operator awards the match).
:func:`conclude` gives those the same shape as a match won on the table: the state is over,
its winner is set, and a ``match_ended`` event says so.
"""

from __future__ import annotations

from truco_engine.enums import Phase
from truco_engine.errors import MatchOverError, TrucoError
from truco_engine.events import Event, MatchEnded
from truco_engine.state import MatchState


def conclude(state: MatchState, winner_team: int) -> tuple[MatchState, list[Event]]:
    """The match over now, won by ``winner_team`` (a score holder: a team, or a seat where each
    plays for himself). Raises :class:`MatchOverError` when it is already over."""
    if state.phase == Phase.OVER:
        raise MatchOverError()
    if not 0 <= winner_team < state.rules.sides:
        raise TrucoError(f"winner_team {winner_team} is not a team; teams are 0..{state.rules.sides - 1}")
    s = state.copy()
    s.phase = Phase.OVER
    s.winner = winner_team
    if s.hand is not None:
        s.hand.over = True
        s.hand.truco = None
        s.hand.bet = None
        s.hand.eleven_decider = None
    return s, [Event(MatchEnded(winner_team=winner_team, games_won=tuple(s.games)))]
