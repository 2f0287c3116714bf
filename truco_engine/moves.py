"""The actions, one rule in one place: a verify / can / do triple per action kind.

Every action kind is a :class:`Move`. Its :meth:`Move.reason` is the only place that says
whether the kind (and, for cards, the card) is legal now, and why not:

* :meth:`Move.verify` raises the typed error with that reason (:class:`NotYourTurnError`
  when the seat has no say now, else :class:`IllegalActionError`, listing what is legal);
* :meth:`Move.can` is ``reason(...) is None``;
* :meth:`Move.do` applies the action to a copy of the state.

:func:`legal_actions` is the candidates of every kind filtered by ``can``, in a fixed order
(plays in hand order then face down, calls, answers, fold); :func:`apply` verifies, copies
and does. There is no other legality check anywhere.

Who may act (``docs/rules/README.md``, turn model): the game waits for one seat, the
*awaited* seat (:func:`awaited`): the side deciding the hand of eleven, the responder of a
pending call, else the seat whose turn it is. Other seats may act only where the rules say
so: a truco call out of turn (``truco_out_of_turn``), a flor sung over a pending envido
(without ``flor_mandatory``). Two legal actions racing at the same state are not the
engine's business: it applies whatever it is given to the state it is given (the store's
version check lets one through and answers the other with the new state).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from truco_engine import actions as A
from truco_engine import events as E
from truco_engine import flor as F
from truco_engine import tricks as T
from truco_engine import variants as V
from truco_engine.actions import Action
from truco_engine.calls import Answer, Contraflor, Envido, SingFlor, Truco
from truco_engine.enums import Phase, PlayMode
from truco_engine.errors import IllegalActionError, InvalidCardError, MatchOverError, NotYourTurnError
from truco_engine.events import CallFamily, Event, private
from truco_engine.move_frame import ANSWER, NOT_YOUR_TURN, TURN, Ctx, Move, awaited, legal_of, register
from truco_engine.ranking import deck_set
from truco_engine.rules import RuleSet
from truco_engine.scoring import ENVIDO_CALLS
from truco_engine.state import Call, HandState, MatchState

__all__ = [
    "MOVES",
    "Ctx",
    "Move",
    "apply",
    "awaited",
    "forgo_flor",
    "is_legal",
    "legal_actions",
    "legal_tuple",
    "to_act_of",
    "verify_action",
]


# ------------------------------------------------------------------------ discard
class Discard(Move):
    """The carancho keeps three of his four cards; the discard is seen by nobody else."""

    kind = "discard"

    def played(self, r: RuleSet) -> bool:
        return r.play_mode is PlayMode.CARANCHO

    def kind_reason(self, c: Ctx) -> str | None:
        if not c.on_turn:
            return NOT_YOUR_TURN
        if len(c.h.cards[c.seat]) <= 3:
            return "only the carancho discards, once, before anything else"
        return None

    def action_reason(self, c: Ctx, action: Action) -> str | None:
        if action.card not in c.h.cards[c.seat] or action.face_down or action.slot is not None:
            return f"{action.card} is not in seat {c.seat}'s hand"
        return None

    per_action = True

    def candidates(self, c: Ctx) -> Sequence[Action]:
        return [A.discard(card) for card in c.h.cards[c.seat]]

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        card = action.card
        assert card is not None
        kept = [c for c in h.cards[seat] if c != card]
        h.cards[seat] = kept  # replaced, never edited: the list is shared with the previous state
        h.dealt = list(h.dealt)
        h.dealt[seat] = tuple(kept)
        h.flor_holders = None
        ev.append(private(E.CardDiscarded(seat=seat, card=card), (seat,), "card"))


# --------------------------------------------------------------------------- play
class Play(Move):
    """Play a card: face up, face down where allowed, by slot in the iron hand."""

    kind = "play"

    def kind_reason(self, c: Ctx) -> str | None:
        if not c.on_turn:
            return NOT_YOUR_TURN
        if c.pending is not None:
            return "a call must be answered before any card is played"
        return c.block

    def face_down_allowed(self, c: Ctx) -> bool:
        fd = c.r.face_down_from_trick
        return bool(fd) and len(c.h.tricks) >= fd and not c.h.blind

    def action_reason(self, c: Ctx, action: Action) -> str | None:
        hand = c.h.cards[c.seat]
        if c.h.blind:
            if action.slot is None or action.card is not None or action.face_down:
                return "in the iron hand cards are played blind, by slot"
            if not 0 <= action.slot < len(hand):
                return f"seat {c.seat} holds {len(hand)} cards; slots are 0..{len(hand) - 1}"
            return None
        if action.slot is not None:
            return "cards are played by their code; slots are for the iron hand"
        if action.card not in hand:
            return f"{action.card} is not in seat {c.seat}'s hand"
        if action.face_down and not self.face_down_allowed(c):
            return "a card may not be played face down in this trick"
        return None

    per_action = True

    def candidates(self, c: Ctx) -> Sequence[Action]:
        hand = c.h.cards[c.seat]
        if c.h.blind:
            return [A.play_slot(i) for i in range(len(hand))]
        out = [_play(card, False) for card in hand]
        if self.face_down_allowed(c):
            out += [_play(card, True) for card in hand]
        return out

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        hand = list(h.cards[seat])  # replaced, never edited: the list is shared with the previous state
        if action.slot is not None:
            card = hand.pop(action.slot)
        else:
            assert action.card is not None
            card = action.card
            hand.remove(card)
        h.cards[seat] = hand
        trick = h.tricks[-1]
        trick.plays.append((seat, card, action.face_down))
        played = E.CardPlayed(seat=seat, card=card, face_down=action.face_down, trick_index=len(h.tricks) - 1)
        ev.append(private(played, (seat,), "card") if action.face_down else Event(played))
        T.played(s, h, seat, ev)


_PLAYS: dict[tuple[str, bool], Action] = {}


def _play(card: str, face_down: bool) -> Action:
    """:func:`truco_engine.actions.play`: one shared ``play`` action per card and side up."""
    key = (card, face_down)
    a = _PLAYS.get(key)
    if a is None:
        a = _PLAYS[key] = A.play(card, face_down)
    return a


# --------------------------------------------------------------------------- fold
class Fold(Move):
    """Give up the hand (irse al mazo), on one's turn or as the answer to a pending call."""

    kind = "fold"
    where = frozenset({TURN, ANSWER})

    def played(self, r: RuleSet) -> bool:
        return r.fold

    def kind_reason(self, c: Ctx) -> str | None:
        if not c.on_turn:
            return NOT_YOUR_TURN
        if not c.r.fold:
            return "these rules have no folding"
        if not V.shape_of(c.r).may_fold(c.r):
            return "folding is not allowed here"
        return c.block

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        T.fold(s, h, seat, ev)


# ----------------------------------------------------------------------- registry
MOVES: Final[dict[str, Move]] = {
    m.kind: m
    for m in (
        Discard(),
        Play(),
        Answer("accept"),
        Answer("decline"),
        Truco(),
        Envido("envido"),
        Envido("real_envido"),
        Envido("falta_envido"),
        Contraflor("contraflor"),
        Contraflor("contraflor_al_resto"),
        SingFlor(),
        Fold(),
    )
}
"""Every action kind's move, in the order of :func:`legal_actions`."""
assert set(MOVES) == set(A.KINDS)
assert tuple(MOVES)[5:8] == ENVIDO_CALLS


register(MOVES.values())


def _ctx(state: MatchState, seat: int) -> Ctx | None:
    h = state.hand
    if state.phase is not Phase.PLAY or h is None or not 0 <= seat < state.rules.players:
        return None
    return Ctx(state, h, seat)


def legal_tuple(state: MatchState, seat: int) -> tuple[Action, ...]:
    """:func:`legal_actions` as the memoized tuple (do not change it)."""
    memo = state.legal_memo
    if memo is not None:
        got = memo.get(seat)
        if got is not None:
            return got
    c = _ctx(state, seat)
    return () if c is None else legal_of(c)


def legal_actions(state: MatchState, seat: int) -> list[Action]:
    """Every action ``seat`` may take now, in a deterministic order: plays (in hand order,
    then face down), calls, answers, fold. Any seat may be asked: one the game is not waiting
    for gets what it may do out of turn (often nothing)."""
    memo = state.legal_memo
    if memo is not None:
        got = memo.get(seat)
        if got is not None:
            return list(got)
    c = _ctx(state, seat)
    return [] if c is None else list(legal_of(c))


def _check(state: MatchState, seat: int, action: Action) -> None:
    if state.phase is Phase.OVER:
        raise MatchOverError()
    card = action.card
    if card is not None and card not in deck_set(state.rules):
        raise InvalidCardError(
            f"{card!r} is not a card of this match's deck (deck '{state.rules.deck}')", card
        )
    memo = state.legal_memo
    if memo is not None:
        got = memo.get(seat)
        if got is not None:
            for a in got:  # most often the very object legal_actions handed out
                if a is action:
                    return
            if action in got:
                return
    c = _ctx(state, seat)
    if c is None:
        raise NotYourTurnError(seat, to_act_of(state))
    move = MOVES.get(action.kind)
    if move is None:  # pragma: no cover - Action.from_dict and parse_action refuse other kinds
        raise IllegalActionError(f"unknown action kind {action.kind!r}", legal_of(c))
    move.verify(c, action)


def verify_action(state: MatchState, seat: int, action: Action) -> None:
    """Raise what :func:`apply` would raise for this action, without applying it."""
    _check(state, seat, action)


def is_legal(state: MatchState, seat: int, action: Action) -> bool:
    """Whether :func:`apply` would accept this action now."""
    c = _ctx(state, seat)
    if c is None or (action.card is not None and action.card not in deck_set(state.rules)):
        return False
    move = MOVES.get(action.kind)
    return move is not None and move.can(c, action)


def to_act_of(state: MatchState) -> tuple[int, ...]:
    """The awaited seat, as a tuple (empty while a deal is awaited or after the match)."""
    h = state.hand
    if state.phase is not Phase.PLAY or h is None:
        return ()
    return (awaited(h),)


def forgo_flor(state: MatchState, seat: int) -> MatchState:
    """``seat`` says nothing where it must sing its flor (``flor_mandatory``): the flor is lost
    for the hand -- never sung, counted or compared, and nobody scores it (sources:
    docs/rules/river-plate.md, §6). The seat then decides what it would without a flor
    (a call of the other side stays its to answer), except its own partner's envido, which it
    answered only because of the flor ("la flor está primero"): that goes on to the seat that
    answers it without the flor. The decision counter moves on. Not a player's action (a
    holder who must sing has ``flor`` as its only legal action): it is what a service does
    when that seat's time runs out (docs/lifecycle.md). Raises :class:`IllegalActionError`
    when ``seat`` is not awaited to sing a flor it must sing."""
    c = _ctx(state, seat)
    if c is None or not c.sing or not MOVES["flor"].can(c, F.FLOR):
        raise IllegalActionError(
            f"seat {seat} is not awaited to sing a flor it must sing", legal_tuple(state, seat)
        )
    s = state.copy()
    h = s.hand
    assert h is not None
    s.actions += 1
    h.flor_void = tuple(sorted({*h.flor_void, seat}))
    bet = h.bet
    if (
        bet is not None
        and bet.family is CallFamily.ENVIDO
        and bet.responder == seat
        and h.side_of[bet.caller] == h.side_of[seat]
    ):
        responder = F.flor_responder(s, h, bet.caller, T.next_opponent(h, bet.caller), partners=True)
        h.bet = Call(CallFamily.ENVIDO, bet.caller, responder, list(bet.chain))
    return s


def apply(state: MatchState, seat: int, action: Action) -> tuple[MatchState, list[Event]]:
    """Apply ``seat``'s ``action``; return the new state and the events it caused.

    Raises :class:`NotYourTurnError` or :class:`IllegalActionError` (listing what is legal),
    :class:`MatchOverError`, or :class:`InvalidCardError` for a card code that is not of this
    deck, without touching the state.
    """
    _check(state, seat, action)
    s = state.copy()
    h = s.hand
    assert h is not None
    s.actions += 1
    ev: list[Event] = []
    MOVES[action.kind].do(s, h, seat, action, ev)
    return s, ev
