"""The calls and their answers: truco and its raises, the envido family, flor and contraflor,
accepting and declining (a :class:`~truco_engine.move_frame.Move` each; the registry and the
public functions are in :mod:`truco_engine.moves`)."""

from __future__ import annotations

from typing import Final

from truco_engine import events as E
from truco_engine import flor as F
from truco_engine import scoring as S
from truco_engine import tricks as T
from truco_engine.actions import Action
from truco_engine.enums import PartnerFlor
from truco_engine.events import CallFamily, Event, HandEndReason
from truco_engine.move_frame import ANSWER, ELEVEN, NOT_YOUR_TURN, OUT_OF_TURN, TURN, UNSET, Ctx, Move
from truco_engine.ranking import envido_points_for
from truco_engine.rules import RuleSet
from truco_engine.scoring import ENVIDO_MAX, ENVIDO_ORDER
from truco_engine.state import Call, HandState, MatchState


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
        if why is UNSET:  # the same for the three calls: worked out once per query
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
