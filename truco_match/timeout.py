"""What the server plays for a seat whose time ran out, or that is away: the move that gives
its side the least.

A seat that lets its clock run out must never gain by it. For the awaited seat's pending
decision, :func:`default_move`:

1. makes no declaration: a flor the seat must sing (``flor_mandatory``) is lost for the hand
   (:func:`truco_engine.forgo_flor`: a flor never sung scores nothing), and if that passes
   the decision to another seat (its own partner's envido, answered because of the flor),
   the seat makes no move at all;
2. never calls, raises or accepts: it chooses among the moves that end the decision without
   raising the stakes -- ``decline`` (no quiero; the hand of eleven refused), a card played or
   discarded, ``fold``;
3. takes among those the one that scores least for the seat's side by itself (match won,
   then games won, then points, read from the move's events), and on a tie the usual one:
   decline, else the weakest card face up (the carancho discards his weakest; in the iron
   hand the weakest card unseen), else the weakest card face down, else fold.

So a timeout never scores for the timed-out side unless every such move would (its last
card wins the last trick and it may not fold). The rule for each kind of decision, with its
sources: docs/lifecycle.md, "What the clock plays".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import truco_engine as te
from truco_engine.ranking import strength_table

PASSIVE: Final = frozenset({"decline", "play", "discard", "fold"})
"""The kinds of move that end a decision without calling, raising, accepting or declaring."""


@dataclass(frozen=True, slots=True)
class DefaultMove:
    """What the clock does for the awaited seat."""

    state: te.MatchState
    """The state the move is made on: the one given, or, when the seat had to sing a flor,
    the state with that flor lost."""
    action: te.Action | None
    """The move; ``None`` when the lost flor passed the decision to another seat."""


def default_move(state: te.MatchState, seat: int) -> DefaultMove:
    """The move made for ``seat``, the awaited seat, when its time runs out (module doc).
    Raises :class:`truco_engine.NotYourTurnError` when ``seat`` has nothing to decide."""
    legal = te.legal_actions(state, seat)
    if not legal or te.to_act(state) != (seat,):
        raise te.NotYourTurnError(seat, te.to_act(state))
    if state.rules.flor_mandatory and any(a.kind == "flor" for a in legal):
        state = te.forgo_flor(state, seat)
        if te.to_act(state) != (seat,):
            return DefaultMove(state, None)
        legal = te.legal_actions(state, seat)
    moves = [a for a in legal if a.kind in PASSIVE] or legal
    side = te.seat_teams(state)[seat]
    rank = _preference(state, seat, legal)
    return DefaultMove(state, min(moves, key=lambda a: (_scored(state, seat, a, side), rank(a))))


def _scored(state: te.MatchState, seat: int, action: te.Action, side: int) -> tuple[bool, int, int]:
    """What ``action`` by itself scores for ``side``: (wins the match, games won, points)."""
    _, events = te.apply(state, seat, action)
    won, games, points = False, 0, 0
    for e in events:
        p = e.payload
        if isinstance(p, te.MatchEnded):
            won = won or p.winner_team == side
        elif isinstance(p, te.GameEnded):
            games += p.winner_team == side
        elif isinstance(p, te.HandEnded | te.BetWon) and p.winner_team == side:
            points += p.points
    return won, games, points


def _preference(
    state: te.MatchState, seat: int, legal: Sequence[te.Action]
) -> Callable[[te.Action], tuple[int, int, int]]:
    """The order among moves that score alike: decline, the weakest card face up (discard
    or play), the weakest unseen card (iron hand), the weakest card face down, fold, then
    anything else in legal order."""
    h = state.hand
    assert h is not None
    strength = strength_table(state.rules, h.turn_up)
    hand = h.cards[seat]

    def rank(a: te.Action) -> tuple[int, int, int]:
        order = legal.index(a)
        if a.kind == "decline":
            return 0, 0, order
        if a.kind in ("play", "discard"):
            if a.slot is not None:
                return 2, strength[hand[a.slot]], order
            assert a.card is not None
            return (3 if a.face_down else 1), strength[a.card], order
        if a.kind == "fold":
            return 4, 0, order
        return 5, 0, order

    return rank
