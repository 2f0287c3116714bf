"""The rules as functions: deal (the chance step), whose decision is awaited, legal actions,
apply.

All functions are pure: they never change the state they are given; :func:`apply` and
:func:`deal` return a new state and the events of the transition. There is no randomness:
every hand's deck order comes in from outside through :func:`deal`.

Turn model (documented in ``docs/rules/README.md``): the game waits for one seat's decision
at a time (:func:`to_act`); other seats may act only where the rules say so (a truco call
out of turn, a flor over a pending envido). Each action kind's rule is in
:mod:`truco_engine.moves` (verify / can / do); scoring is in :mod:`truco_engine.scoring`;
table shapes (teams, each for himself, carancho, pica-pica) in :mod:`truco_engine.variants`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from truco_engine import events as E
from truco_engine import variants as V
from truco_engine.enums import Phase
from truco_engine.errors import InvalidDeckError, MatchOverError
from truco_engine.events import Event, Special, private
from truco_engine.moves import apply, awaited, forgo_flor, is_legal, legal_actions, verify_action
from truco_engine.ranking import USES_TURN_UP, deck_set, strength_table
from truco_engine.rules import RuleSet
from truco_engine.scoring import (
    ENVIDO_CALLS,
    ENVIDO_MAX,
    ENVIDO_ORDER,
    ENVIDO_VALUE,
    envido_declined_value,
    envido_value,
    falta_value,
)
from truco_engine.state import HandState, MatchState

__all__ = [
    "ENVIDO_CALLS",
    "ENVIDO_MAX",
    "ENVIDO_ORDER",
    "ENVIDO_VALUE",
    "apply",
    "deal",
    "deck_commitment",
    "envido_declined_value",
    "envido_value",
    "falta_value",
    "forgo_flor",
    "is_legal",
    "is_over",
    "legal_actions",
    "needs_deal",
    "new_match",
    "seat_teams",
    "to_act",
    "verify_action",
]


# ------------------------------------------------------------------------ queries
def new_match(rules: RuleSet, first_dealer: int | None = None) -> MatchState:
    """A match before its first deal. The first dealer defaults to the last seat, so seat 0
    is the first hand's mano."""
    s = MatchState()
    s.rules = rules
    s.scores = [0] * rules.sides
    s.games = [0] * rules.sides
    s.game = 1
    s.hands = 0
    s.dealer = rules.players - 1 if first_dealer is None else first_dealer % rules.players
    s.hand = None
    s.phase = Phase.DEAL
    s.winner = None
    s.actions = 0
    s.legal_memo = None
    return s


def needs_deal(state: MatchState) -> bool:
    """Whether the next step is the chance step :func:`deal`."""
    return state.phase is Phase.DEAL


def is_over(state: MatchState) -> bool:
    """Whether the match has ended."""
    return state.phase is Phase.OVER


def to_act(state: MatchState) -> tuple[int, ...]:
    """The seat whose decision the game waits for (what a turn clock times), as a tuple;
    empty while a deal is awaited or after the match. Other seats may still have legal
    actions out of turn: ask :func:`legal_actions`."""
    h = state.hand
    if state.phase is not Phase.PLAY or h is None:
        return ()
    return (awaited(h),)


def seat_teams(state: MatchState) -> tuple[int, ...]:
    """The team (score holder) of every seat, index = seat: for the hand in progress (or the
    last one), else for the next hand. The one place a seat's team comes from."""
    if state.hand is not None:
        return state.hand.side_of
    return V.table_sides(state.rules, (state.dealer + 1) % state.rules.players)


# ----------------------------------------------------------------------- the deal
def deck_commitment(deck: Sequence[str], salt: str) -> str:
    """SHA-256 commitment to a deck order: ``sha256(salt + ":" + " ".join(deck))`` in hex."""
    return hashlib.sha256((salt + ":" + " ".join(deck)).encode()).hexdigest()


def deal(state: MatchState, deck: Sequence[str], salt: str = "") -> tuple[MatchState, list[Event]]:
    """The chance step: start the next hand with this deck order.

    Cards are dealt one at a time, starting with the mano and following play order, three
    rounds; the next card is turned up where the ranking uses a vira or muestra.
    """
    if state.phase is Phase.OVER:
        raise MatchOverError()
    if state.phase is not Phase.DEAL:
        raise InvalidDeckError("no deal is awaited now: the hand in progress has not ended")
    r = state.rules
    deck = list(deck)
    cards = deck_set(r)
    try:
        ok = len(deck) == len(cards) and cards.issuperset(deck) and len(set(deck)) == len(deck)
    except TypeError:  # something unhashable in the list
        ok = False
    if not ok:
        raise InvalidDeckError(
            f"the deck order must be a permutation of the {len(cards)} cards of "
            f"deck '{r.deck}'{' (clean)' if r.clean_deck else ''}"
        )
    s = state.copy()
    ev: list[Event] = []
    _start_hand(s, deck, salt, ev)
    return s, ev


def _start_hand(s: MatchState, deck: list[str], salt: str, ev: list[Event]) -> None:
    r = s.rules
    n = r.players
    mano = (s.dealer + 1) % n
    order = tuple((mano + i) % n for i in range(n))
    shape = V.shape_of(r)
    cards, nxt = shape.deal(r, deck, order)
    turn_up = deck[nxt] if r.ranking in USES_TURN_UP else None
    h = HandState()
    s.hands += 1
    h.number = s.hands
    h.dealer = s.dealer
    h.mano = mano
    h.order = order
    h.side_of = shape.sides(r, mano)
    h.cards = cards
    h.dealt = [tuple(c) for c in cards]
    h.turn_up = turn_up
    h.commitment = deck_commitment(deck, salt)
    h.strength = strength_table(r, turn_up)
    h.flor_holders = None
    h.start_play(mano, r)
    h.special = ""
    h.eleven_side = None
    h.eleven_decider = None
    h.blind = False
    s.hand = h
    s.phase = Phase.PLAY
    at = r.hand_of_eleven_at
    on_eleven = [side for side in range(r.sides) if at is not None and s.scores[side] >= at]
    if len(on_eleven) == 2 and r.iron_hand:
        h.special = "iron"
        h.blind = True
    elif len(on_eleven) == 1:
        h.special = "eleven"
        h.eleven_side = on_eleven[0]
        h.eleven_decider = next(x for x in order if h.side_of[x] == on_eleven[0])
        h.value = r.hand_of_eleven_value
    ev.append(
        Event(
            E.HandStarted(
                game_number=s.game,
                hand_number=h.number,
                dealer=h.dealer,
                mano=mano,
                turn_up=turn_up,
                deck_commitment=h.commitment,
                special=Special(h.special) if h.special else None,
            )
        )
    )
    for seat in order:
        dealt = E.CardsDealt(seat=seat, cards=tuple(cards[seat]), count=len(cards[seat]))
        ev.append(private(dealt, () if h.blind else (seat,), "cards"))
    shape.begin_hand(s, h, ev)
    if h.special == "eleven":
        team = [x for x in order if h.side_of[x] == h.eleven_side]
        if len(team) > 1:
            for x in team:
                shown = E.CardsRevealed(
                    seat=x, cards=tuple(cards[x]), count=len(cards[x]), reason="hand_of_eleven", public=False
                )
                ev.append(private(shown, team, "cards"))
