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
from truco_engine import scoring as S
from truco_engine import tricks as T
from truco_engine import variants as V
from truco_engine.actions import Action
from truco_engine.enums import PartnerFlor, Phase, PlayMode
from truco_engine.errors import IllegalActionError, InvalidCardError, MatchOverError, NotYourTurnError
from truco_engine.events import CallFamily, Event, HandEndReason, private
from truco_engine.ranking import deck_set, envido_points_for
from truco_engine.rules import RuleSet
from truco_engine.scoring import ENVIDO_CALLS, ENVIDO_MAX, ENVIDO_ORDER
from truco_engine.state import Call, HandState, MatchState

NOT_YOUR_TURN: Final = "the game is not waiting for this seat"
"""The reason of a kind the seat may not take now because it is not its decision."""
_UNSET: Final = "(not worked out yet)"

TURN: Final = "turn"
"""Situations of a seat: the game waits for it to play (or call) on its turn,"""
ANSWER: Final = "answer"
"""to answer a pending call,"""
ELEVEN: Final = "eleven"
"""to decide the hand of eleven; or it does not wait for it at all:"""
OUT_OF_TURN: Final = "out_of_turn"


def awaited(h: HandState) -> int:
    """The seat whose decision the game waits for (what a turn clock times)."""
    if h.eleven_decider is not None:
        return h.eleven_decider
    if h.bet is not None:
        return h.bet.responder
    if h.truco is not None:
        return h.truco.responder
    return h.turn


class Ctx:
    """What every rule asks about one seat at one state, computed once per query."""

    __slots__ = (
        "aw",
        "block",
        "envido",
        "flor",
        "h",
        "on_turn",
        "pending",
        "r",
        "s",
        "seat",
        "sing",
        "where",
    )

    def __init__(self, s: MatchState, h: HandState, seat: int) -> None:
        self.s = s
        self.h = h
        r = self.r = s.rules
        self.seat = seat
        aw = self.aw = awaited(h)
        self.on_turn = on_turn = seat == aw
        self.pending: Call | None = h.bet if h.bet is not None else h.truco
        self.flor = on_turn and r.flor and self.flor_now()
        """The awaited seat may sing flor now."""
        self.sing = self.flor and r.flor_mandatory
        self.block: str | None = None
        """For the awaited seat, a situation that allows one kind of action only."""
        self.envido: str | None = _UNSET
        self.where = OUT_OF_TURN if not on_turn else ANSWER if self.pending is not None else TURN
        if on_turn:
            if h.eleven_decider is not None:
                self.where = ELEVEN
                self.block = "the side at the hand of eleven decides first: accept (play it) or decline"
            elif len(h.cards[h.mano]) > 3:
                self.block = "the carancho discards first"
            elif self.sing:
                self.block = "a player holding flor must sing it first (flor_mandatory)"

    def flor_now(self) -> bool:
        """The awaited seat may sing flor now: on its turn before its first card, or as the
        answer to an envido or to the first truco call."""
        s, h, call = self.s, self.h, self.pending
        if not self.r.flor or h.eleven_decider is not None:
            return False
        if call is None:
            return F.can_sing(s, h, self.seat, answering=False)
        if call.family is CallFamily.ENVIDO or (call.family is CallFamily.TRUCO and call.level == 0):
            return F.can_sing(s, h, self.seat, answering=True)
        return False

    def discard_owed(self) -> bool:
        """The carancho has not discarded his fourth card yet (nothing else happens first)."""
        return len(self.h.cards[self.h.mano]) > 3


class Move:
    """One action kind: its candidates, the one rule saying whether each is legal, and its
    transition."""

    kind: str
    action: Action
    """The action of this kind when it takes no card."""
    where: frozenset[str] = frozenset({TURN})
    """The situations in which an action of this kind can be legal at all (its
    :meth:`kind_reason` refuses it in every other); :func:`legal_actions` asks only these."""

    def played(self, r: RuleSet) -> bool:
        """Whether these rules have this kind of action at all (its :meth:`kind_reason`
        refuses it otherwise)."""
        return True

    def __init__(self) -> None:
        self.action = Action(self.kind)

    def reason(self, c: Ctx, action: Action) -> str | None:
        """Why ``action`` (of this kind) is illegal for ``c.seat`` now; ``None`` if legal."""
        why = self.kind_reason(c)
        return why if why is not None else self.action_reason(c, action)

    def kind_reason(self, c: Ctx) -> str | None:
        """Why no action of this kind is legal now (``None``: some may be)."""
        raise NotImplementedError

    def action_reason(self, c: Ctx, action: Action) -> str | None:
        """Why this particular action is illegal, the kind being allowed (its card, ...)."""
        if action != self.action:
            return f"{self.kind} takes no card, slot or face-down flag"
        return None

    per_action = False
    """Whether :meth:`action_reason` can refuse a candidate the kind allows (cards, slots);
    when not, every candidate of an allowed kind is legal."""

    def candidates(self, c: Ctx) -> Sequence[Action]:
        """The actions of this kind worth checking now, in their legal-list order."""
        return (self.action,)

    def can(self, c: Ctx, action: Action) -> bool:
        return self.reason(c, action) is None

    def verify(self, c: Ctx, action: Action) -> None:
        """Raise the typed error if ``action`` is illegal now."""
        why = self.reason(c, action)
        if why is NOT_YOUR_TURN:
            raise NotYourTurnError(c.seat, (c.aw,), legal=_legal(c))
        if why is not None:
            raise IllegalActionError(why, _legal(c))

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        raise NotImplementedError


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


def _steps(r: RuleSet) -> int:
    """:attr:`RuleSet.ladder_steps`."""
    return len(r.truco_ladder) + (r.truco_game_call is not None)


CAPPED: Final = "the hand is already worth what every side needs to win the game (truco_capped_at_game)"


def truco_closes_envido(r: RuleSet, h: HandState) -> None:
    """A truco accepted (or raised, which accepts it) closes the envido. With
    ``fold_concedes_envido_after_truco`` the envido stays unplayed (``envido_open``) for the
    mazo's point, and the window checks close it through ``truco_level`` instead."""
    if r.envido and not r.fold_concedes_envido_after_truco:
        h.envido_open = False


# -------------------------------------------------------------------------- truco
class Truco(Move):
    """Call the next step of the truco ladder; as the answer to a ladder call, raise it."""

    kind = "truco"
    where = frozenset({TURN, ANSWER, OUT_OF_TURN})

    def kind_reason(self, c: Ctx) -> str | None:
        h, r = c.h, c.r
        if not c.on_turn and not r.truco_out_of_turn:
            return NOT_YOUR_TURN
        if h.special:
            return f"nobody calls truco in the {'iron hand' if h.special == 'iron' else 'hand of eleven'}"
        if not c.on_turn and (c.seat not in h.order or c.seat in h.out or c.discard_owed()):
            return NOT_YOUR_TURN
        if c.on_turn:
            why = c.block
            if why is not None:
                return why
        call = c.pending
        if call is not None:
            if not c.on_turn:
                return f"a call is pending: seat {c.aw} answers it first"
            if call.family is not CallFamily.TRUCO:
                return f"the {call.family} call must be answered first"
            if call.level + 1 >= _steps(r):
                return "the truco ladder is at its top"
            if r.truco_capped_at_game and S.ladder_value(c.s, call.level) >= S.largest_need(c.s):
                return CAPPED
            return None
        if h.truco_level + 1 >= _steps(r):
            return "the truco ladder is at its top"
        if h.raise_side is not None and h.raise_side != h.side_of[c.seat]:
            return "only the side that accepted the last call may raise"
        if r.truco_capped_at_game and h.value >= S.largest_need(c.s):
            return CAPPED
        return None

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        r = s.rules
        old = h.truco
        if old is not None:  # a raise answers the pending call: its value is accepted first
            h.truco_level = old.level
            h.value = S.ladder_value(s, old.level)
            level, responder = old.level + 1, old.caller
        else:
            level, responder = h.truco_level + 1, T.next_opponent(h, seat)
            if r.flor and level == 0:
                responder = F.flor_responder(s, h, seat, responder)
        if old is not None:
            truco_closes_envido(r, h)
        name = r.call_name(level)
        h.truco = Call(CallFamily.TRUCO, seat, responder, [name], level)
        ev.append(
            Event(
                E.CallMade(
                    seat=seat,
                    family=CallFamily.TRUCO,
                    name=name,
                    value_if_accepted=S.ladder_value(s, level),
                    value_if_declined=h.value,
                    responder=responder,
                )
            )
        )


# ------------------------------------------------------------------------- envido
_DOUBLE: Final = ["envido", "envido"]


class Envido(Move):
    """The envido chain: envido, real envido, falta envido."""

    where = frozenset({TURN, ANSWER})

    def played(self, r: RuleSet) -> bool:
        return r.envido

    def __init__(self, kind: str) -> None:
        self.kind = kind  # one instance per call of the chain
        super().__init__()

    def kind_reason(self, c: Ctx) -> str | None:
        why = c.envido
        if why is _UNSET:  # the same for the three calls: worked out once per query
            why = c.envido = self.chain_reason(c)
        if why is not None:
            return why
        call = c.pending
        if call is not None and call.family is CallFamily.ENVIDO:
            last = ENVIDO_ORDER[call.chain[-1]]
            if ENVIDO_ORDER[self.kind] < last or call.chain.count(self.kind) >= ENVIDO_MAX[self.kind]:
                return f"{self.kind} cannot follow {', '.join(call.chain)}"
            if self.kind == "falta_envido" and not c.r.falta_after_envido_envido and call.chain == _DOUBLE:
                return "falta_envido cannot follow envido, envido (falta_after_envido_envido)"
        return None

    @staticmethod
    def chain_reason(c: Ctx) -> str | None:
        """Why no envido call (start or raise) is possible now."""
        h, r = c.h, c.r
        if not c.on_turn:
            return NOT_YOUR_TURN
        if not r.envido:
            return "these rules have no envido"
        why = c.block
        if why is not None:
            return why
        call = c.pending
        window = "envido is only possible in the first trick, before your card, once per hand"
        if call is None or (call.family is CallFamily.TRUCO and call.level == 0 and h.bet is None):
            if not h.envido_open or len(h.tricks) != 1 or h.special or h.truco_level >= 0:
                return window
            if r.flor and F.envido_barred(c.s, h, c.seat):
                return "a player holding flor sings flor instead of calling envido (envido_with_flor)"
            if call is None and F.played_first_card(h, c.seat):
                return window
            return None
        if call.family is CallFamily.ENVIDO:
            if r.flor and F.envido_barred(c.s, h, c.seat):
                return "a player holding flor sings flor instead of raising the envido (envido_with_flor)"
            return None
        return f"the {call.family} call must be answered first"

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        name = self.kind
        old = h.bet
        if old is not None:
            chain = [*old.chain, name]
            responder = old.caller
        else:
            chain = [name]
            responder = h.truco.caller if h.truco is not None else T.next_opponent(h, seat)
            if s.rules.flor and h.truco is None:
                F.void_partners_flor(s, h, seat)
                partners = s.rules.partner_flor is PartnerFlor.FIRST
                responder = F.flor_responder(s, h, seat, responder, partners=partners)
        h.bet = Call(CallFamily.ENVIDO, seat, responder, chain)
        ev.append(
            Event(
                E.CallMade(
                    seat=seat,
                    family=CallFamily.ENVIDO,
                    name=name,
                    value_if_accepted=S.envido_value(s, chain),
                    value_if_declined=S.envido_declined_value(s, chain),
                    responder=responder,
                )
            )
        )


# --------------------------------------------------------------------------- flor
class SingFlor(Move):
    """Sing flor: on one's turn, as the answer to an envido or a first truco, or (without
    ``flor_mandatory``) out of turn over a pending envido."""

    kind = "flor"
    where = frozenset({TURN, ANSWER, OUT_OF_TURN})

    def played(self, r: RuleSet) -> bool:
        return r.flor

    def kind_reason(self, c: Ctx) -> str | None:
        h, r = c.h, c.r
        if not r.flor:
            return "these rules have no flor"
        window = "flor is sung by a player holding one, in the first trick, before his card, once per hand"
        if c.on_turn:
            if h.eleven_decider is not None or c.discard_owed():
                return c.block
            return None if c.flor else window
        bet = h.bet
        if r.flor_mandatory or bet is None or bet.family is not CallFamily.ENVIDO or c.seat not in h.order:
            return NOT_YOUR_TURN
        if c.seat in h.out:
            return NOT_YOUR_TURN
        if c.seat == bet.caller:
            return "the envido's caller does not sing flor over his own envido"
        return None if F.can_sing(c.s, h, c.seat, answering=False) else window

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        F.sing(s, h, seat, self.kind, ev)


class Contraflor(Move):
    """Raise a pending flor: contraflor, contraflor al resto."""

    where = frozenset({ANSWER})

    def played(self, r: RuleSet) -> bool:
        return r.flor

    def __init__(self, kind: str) -> None:
        self.kind = kind
        super().__init__()

    def kind_reason(self, c: Ctx) -> str | None:
        if not c.on_turn:
            return NOT_YOUR_TURN
        if not c.r.flor:
            return "these rules have no flor"
        call = c.pending
        if call is None or call.family is not CallFamily.FLOR or self.action not in F.raises(c.s, call):
            return "contraflor answers a flor, by a player holding flor"
        return None

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        F.sing(s, h, seat, self.kind, ev)


# ------------------------------------------------------------------------ answers
class Answer(Move):
    """Accept or decline the pending call (quiero / no quiero), or decide the hand of eleven."""

    where = frozenset({ANSWER, ELEVEN})

    def __init__(self, kind: str) -> None:
        self.kind = kind
        super().__init__()

    def kind_reason(self, c: Ctx) -> str | None:
        if not c.on_turn:
            return NOT_YOUR_TURN
        if c.h.eleven_decider is not None:
            return None
        if c.pending is None:
            return "there is no call to answer"
        if c.sing:
            return "a player holding flor must sing it first (flor_mandatory)"
        return None

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        if h.eleven_decider is not None:
            decide_eleven(s, h, seat, self.kind == "accept", ev)
        elif self.kind == "accept":
            accept(s, h, seat, ev)
        else:
            decline(s, h, seat, ev)


def decide_eleven(s: MatchState, h: HandState, seat: int, play: bool, ev: list[Event]) -> None:
    side = h.side_of[seat]
    h.eleven_decider = None
    ev.append(Event(E.HandOfElevenDecision(seat=seat, team=side, play=play)))
    if not play:
        other = 1 - side
        S.end_hand(s, h, other, s.rules.hand_of_eleven_refusal, HandEndReason.ELEVEN_REFUSED, ev)


def accept(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    r = s.rules
    bet = h.bet
    if bet is not None and bet.family is CallFamily.FLOR:
        F.accept(s, h, seat, ev)
        return
    if bet is not None:
        h.bet = None
        h.envido_open = False
        seats = h.order if not h.out else tuple(x for x in h.order if x not in h.out)
        declared: list[Event] = []  # the winner first: falta_envido_by_winner pays by it
        best = S.declare(
            h, seats, lambda x: envido_points_for(r, h.turn_up, h.dealt[x]), CallFamily.ENVIDO, declared
        )
        value = S.envido_value(s, bet.chain, h.side_of[best])
        ev.append(Event(E.CallAnswered(seat=seat, family=bet.family, accepted=True, value=value)))
        ev.extend(declared)
        if r.show_envido_cards:
            h.shows.append((best, "envido"))
        S.win_bet(s, h, CallFamily.ENVIDO, best, h.side_of[best], value, ev)
        return
    call = h.truco
    assert call is not None
    h.truco = None
    h.truco_level = call.level
    h.value = S.ladder_value(s, call.level)
    h.raise_side = h.side_of[seat]
    truco_closes_envido(r, h)
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.TRUCO, accepted=True, value=h.value)))


def decline(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    bet = h.bet
    if bet is not None and bet.family is CallFamily.FLOR:
        F.decline(s, h, seat, ev)
        return
    if bet is not None:
        h.bet = None
        h.envido_open = False
        value = S.envido_declined_value(s, bet.chain)
        ev.append(Event(E.CallAnswered(seat=seat, family=bet.family, accepted=False, value=value)))
        S.win_bet(s, h, bet.family, bet.caller, h.side_of[bet.caller], value, ev)
        return
    call = h.truco
    assert call is not None
    h.truco = None
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.TRUCO, accepted=False, value=h.value)))
    S.end_hand(s, h, h.side_of[call.caller], h.value, HandEndReason.DECLINED, ev)


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


_ORDER: Final = tuple(MOVES.values())
_ASKED: dict[tuple[object, ...], tuple[Move, ...]] = {}


def _asked(c: Ctx) -> tuple[Move, ...]:
    """The moves worth asking in the seat's situation under these rules, in legal order."""
    r = c.r
    key = (c.where, r.envido, r.flor, r.fold, r.play_mode, r.truco_out_of_turn, r.flor_mandatory)
    moves = _ASKED.get(key)
    if moves is None:
        moves = _ASKED[key] = tuple(m for m in _ORDER if c.where in m.where and m.played(r))
    return moves


def _legal(c: Ctx) -> tuple[Action, ...]:
    """The seat's legal actions (memoized on the state: states are values)."""
    memo = c.s.legal_memo
    if memo is None:
        memo = c.s.legal_memo = {}
    got = memo.get(c.seat)
    if got is None:
        out: list[Action] = []
        for m in _asked(c):
            if m.kind_reason(c) is None:
                if m.per_action:
                    out += [a for a in m.candidates(c) if m.action_reason(c, a) is None]
                else:
                    out += m.candidates(c)
        got = memo[c.seat] = tuple(out)
    return got


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
    return () if c is None else _legal(c)


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
    return [] if c is None else list(_legal(c))


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
        raise IllegalActionError(f"unknown action kind {action.kind!r}", _legal(c))
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
