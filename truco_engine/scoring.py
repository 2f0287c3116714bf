"""Scoring: what hands, envido and flor are worth, declaring points from the mano on, adding
points (and ending games and the match), ending a hand.

The trick code (:mod:`truco_engine.moves`) and the flor code (:mod:`truco_engine.flor`) both
score through this module; it imports neither of them. Values and sources:
``docs/rules/river-plate.md`` (envido, falta, flor) and ``docs/rules/brazilian.md`` (hands).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from truco_engine import events as E
from truco_engine import variants as V
from truco_engine.enums import ContraflorAlResto, FaltaEnvido, Phase
from truco_engine.events import CallFamily, Event, HandEndReason
from truco_engine.state import Call, HandState, MatchState

ENVIDO_CALLS: Final = ("envido", "real_envido", "falta_envido")
"""The envido chain's calls, in the order they may follow each other."""
ENVIDO_ORDER: Final = {"envido": 0, "real_envido": 1, "falta_envido": 2}
ENVIDO_MAX: Final = {"envido": 2, "real_envido": 1, "falta_envido": 1}
"""How many times each call may appear in one chain (envido, envido, real envido, falta)."""
ENVIDO_VALUE: Final = {"envido": 2, "real_envido": 3}
FLOR_CALLS: Final = ("flor", "contraflor", "contraflor_al_resto")


# ------------------------------------------------------------------------- values
def game_value(s: MatchState) -> int:
    """What the leader needs to win the game."""
    return s.rules.target_points - max(s.scores)


def side_score(s: MatchState, side: int) -> int:
    """The score that counts for ``side``'s game: its own (the pair of a carancho hand: its
    partner nearer the target)."""
    holders = V.shape_of(s.rules).score_holders(s.hand, side)
    return max(s.scores[x] for x in holders)


def lowest_side_score(s: MatchState) -> int:
    """The score of the side of the hand in progress furthest from the target."""
    h = s.hand
    if h is None or len(s.scores) == 2:
        return min(s.scores)
    return min(side_score(s, side) for side in {h.side_of[x] for x in h.order})


def falta_value(s: MatchState, winner: int | None = None) -> int:
    """Falta envido: what the leader needs to win the game, or (``falta_envido="half"``)
    to close the first half while the leader is still in it -- what ``winner`` (the side that
    wins it) needs to close it with ``falta_envido_by_winner``; the winner not known yet,
    the most it can pay."""
    r = s.rules
    lead = max(s.scores)
    half = r.target_points // 2
    if r.falta_envido is FaltaEnvido.HALF and lead < half:
        if r.falta_envido_by_winner:
            return half - (lowest_side_score(s) if winner is None else side_score(s, winner))
        return half - lead
    return r.target_points - lead


def envido_value(s: MatchState, chain: Sequence[str], winner: int | None = None) -> int:
    """Points an accepted envido chain is worth (falta envido: what it is worth now, to
    ``winner`` when given; plus the calls before it with ``falta_envido_adds_chain``)."""
    if "falta_envido" in chain:
        if s.rules.falta_envido_adds_chain:
            return falta_value(s, winner) + sum(ENVIDO_VALUE[c] for c in chain[:-1])
        return falta_value(s, winner)
    return sum(ENVIDO_VALUE[c] for c in chain)


def envido_declined_value(s: MatchState, chain: Sequence[str]) -> int:
    """Points the caller scores when the last call of the chain is declined: the value the
    chain had reached before that call, at least 1 (``envido_declined_plus_one``: that value
    plus one)."""
    if len(chain) == 1:
        return 1
    before = envido_value(s, chain[:-1])
    return before + 1 if s.rules.envido_declined_plus_one else before


def flor_value(s: MatchState, chain: Sequence[str], winner: int | None = None) -> int:
    """Points an accepted flor chain is worth (flor against flor, contraflor, al resto; the
    falta, as falta envido, to ``winner`` when given)."""
    r = s.rules
    last = chain[-1]
    if last == "contraflor_al_resto":
        return game_value(s) if r.contraflor_al_resto is ContraflorAlResto.GAME else falta_value(s, winner)
    if last == "contraflor":
        return r.contraflor_value
    return r.flor_accepted_value


def flor_declined_value(s: MatchState, chain: Sequence[str]) -> int:
    """Points the caller scores when the last call of a flor chain is declined: what the
    chain was worth before it (a lone flor: ``flor_value``)."""
    return flor_value(s, chain[:-1]) if len(chain) > 1 else s.rules.flor_value


def bet_values(s: MatchState, call: Call) -> tuple[int, int]:
    """(value if accepted, value if declined) of a pending envido or flor call."""
    if call.family is CallFamily.FLOR:
        return flor_value(s, call.chain), flor_declined_value(s, call.chain)
    return envido_value(s, call.chain), envido_declined_value(s, call.chain)


def hand_wins_game(s: MatchState, h: HandState) -> bool:
    """Whether the hand is worth the game to its winner: the iron hand, or an accepted game
    step of the truco ladder (Valencian joc fora)."""
    return h.special == "iron" or h.truco_level >= len(s.rules.truco_ladder)


def hand_points(s: MatchState, h: HandState, side: int) -> int:
    """What the hand is worth to ``side`` if it takes it now."""
    if hand_wins_game(s, h):
        return s.rules.target_points - s.scores[side]
    return h.value


def largest_need(s: MatchState) -> int:
    """What the side of the hand in progress furthest from the target needs to win the game
    (a hand worth this much decides the game whoever takes it)."""
    return s.rules.target_points - lowest_side_score(s)


def ladder_value(s: MatchState, level: int) -> int:
    """Value of the truco-ladder step ``level`` once accepted; the game step is worth what
    the side furthest from the target needs (what it pays at most)."""
    ladder = s.rules.truco_ladder
    if level < len(ladder):
        return ladder[level]
    return s.rules.target_points - min(s.scores)


# -------------------------------------------------------------------- declaring
def declare(
    h: HandState,
    seats: Iterable[int],
    points_of: Callable[[int], int],
    family: CallFamily,
    ev: list[Event],
) -> int:
    """Declare points from the mano on: each seat shows its points only when they beat the
    best so far; a seat of another side that cannot win says "son buenas" (``points=None``).
    Ties go to the seat nearest the mano. ``seats`` are in play order. Returns the winner."""
    best_seat = -1
    best = -1
    for x in seats:
        p = points_of(x)
        if p > best:
            best, best_seat = p, x
            ev.append(Event(E.PointsDeclared(seat=x, family=family, points=p)))
        elif h.side_of[x] != h.side_of[best_seat]:
            ev.append(Event(E.PointsDeclared(seat=x, family=family, points=None)))
    return best_seat


# ----------------------------------------------------------------------- points
def add_points(s: MatchState, side: int, points: int, ev: list[Event]) -> bool:
    """Score ``points`` for ``side``; returns True if that ended the game (the hand stops
    there). The table shape says which score holders a side's points go to."""
    r = s.rules
    h = s.hand
    shape = V.shape_of(r)
    holders = shape.score_holders(h, side)
    for x in holders:
        s.scores[x] += points
    ev.append(Event(E.ScoreChanged(scores=tuple(s.scores), games_won=tuple(s.games))))
    winner = shape.game_winner(s, holders)
    if winner is None:
        return False
    s.games[winner] += 1
    ev.append(Event(E.GameEnded(game_number=s.game, winner_team=winner, games_won=tuple(s.games))))
    if h is not None:
        reveal_shows(h, ev)
    if s.games[winner] >= r.games_to_win:
        s.phase = Phase.OVER
        s.winner = winner
        ev.append(Event(E.MatchEnded(winner_team=winner, games_won=tuple(s.games))))
    else:
        s.game += 1
        s.scores = [0] * r.sides
        s.phase = Phase.DEAL
        s.dealer = (s.dealer + 1) % r.players
    return True


def win_bet(
    s: MatchState, h: HandState, family: CallFamily, seat: int | None, side: int, points: int, ev: list[Event]
) -> bool:
    """An envido or flor bet won by ``side`` (``seat``: whose points decided it): scored at
    once; returns True (and closes the hand) if that ended the game."""
    ev.append(Event(E.BetWon(family=family, winner_seat=seat, winner_team=side, points=points)))
    if add_points(s, side, points, ev):
        h.over = True
        return True
    return False


def reveal_shows(h: HandState, ev: list[Event]) -> None:
    """Show the cards of the envido and flor winners (at the end of the hand or game)."""
    for seat, family in h.shows:
        cards = tuple(h.dealt[seat])
        shown = E.CardsRevealed(seat=seat, cards=cards, count=len(cards), reason=family, public=True)
        ev.append(Event(shown))
    h.shows = []


def end_hand(
    s: MatchState, h: HandState, side: int | None, points: int, reason: HandEndReason, ev: list[Event]
) -> None:
    """End the (sub-)hand: score it, show what must be shown, then the next sub-hand (pica-pica)
    or the next deal."""
    h.over = True
    h.truco = None
    h.bet = None
    h.eleven_decider = None
    ev.append(Event(E.HandEnded(winner_team=side, points=points, reason=reason)))
    if side is not None and points > 0 and add_points(s, side, points, ev):
        return
    reveal_shows(h, ev)
    if V.shape_of(s.rules).next_sub_hand(s, h, ev):
        return
    s.phase = Phase.DEAL
    s.dealer = (s.dealer + 1) % s.rules.players
