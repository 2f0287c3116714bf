"""Flor: three cards of one suit (piezas are wild under a muestra), its chain and its scoring.

The flor uses the hand's ``bet`` slot with a :class:`Call` of family ``flor``; its ``chain``
is ``["flor"]``, ``["flor", "contraflor"]``, ``["flor", "contraflor_al_resto"]`` or
``["flor", "contraflor", "contraflor_al_resto"]``. Values are rule options
(docs/rules/river-plate.md; defaults in brackets):

===========================================  ===============================  ======================
chain                                        accepted (flors compared)        declined
===========================================  ===============================  ======================
``flor`` unopposed (no opponent holds flor)  ``flor_value`` [3] per flor      —
``flor`` answered by an opposing flor        ``flor_accepted_value`` [4]      ``flor_value`` [3]
``flor, contraflor``                         ``contraflor_value`` [6]         ``flor_accepted_value``
``flor, contraflor_al_resto``                the falta (or the game)          ``flor_accepted_value``
``flor, contraflor, contraflor_al_resto``    the falta (or the game)          ``contraflor_value``
===========================================  ===============================  ======================

A declined call gives the caller what the chain was worth before that call (as envido does).

When and who:

* A seat holding flor may sing it in the envido window: during the first trick before its own
  card, as the answer to the first truco call ("la flor está primero") or as the answer to an
  envido (the flor cancels the envido: nobody scores it). Once a flor is sung, no envido is
  played in that hand.
* With ``flor_mandatory`` a holder whose window is open has exactly one legal action: ``flor``.
  The first holder after the caller answers an envido or a first truco call made by an
  opponent (the flor is public anyway: it must be sung); with ``partner_flor="first"`` that
  includes the envido caller's partner. Without ``flor_mandatory``, any seat holding a flor
  it may still sing may sing it out of turn while an envido is pending.
* ``partner_flor="voided"``: an envido speaks for the pair and voids the flor of the caller's
  partners for the hand (``HandState.flor_void``).
* A holder who says nothing where he must sing loses his flor the same way
  (:func:`truco_engine.moves.forgo_flor`, what a service does when his time runs out).
* If no opponent holds flor, the singing side scores at once. Otherwise the first opponent
  holding flor (in play order after the singer) answers: ``accept`` (con flor quiero),
  ``decline`` (con flor me achico), ``contraflor`` or ``contraflor_al_resto``; a contraflor is
  answered by the first singer, who may accept, decline or raise to contraflor al resto.
* Accepted: every flor of the hand is declared from the mano on ("son buenas" when it cannot
  win); the best flor wins, ties to the seat nearest the mano.
* The winning flor's cards are shown when the hand ends (``show_envido_cards``).
"""

from __future__ import annotations

from typing import Final

from truco_engine import events as E
from truco_engine import scoring as S
from truco_engine.actions import Action
from truco_engine.enums import ContraflorAlResto, PartnerFlor
from truco_engine.events import CallFamily, Event
from truco_engine.ranking import flor_points_for, has_flor_for
from truco_engine.rules import RuleSet
from truco_engine.state import Call, HandState, MatchState

FLOR_CALLS: Final = ("flor", "contraflor", "contraflor_al_resto")
FLOR = Action("flor")
CONTRAFLOR = Action("contraflor")
CONTRAFLOR_AL_RESTO = Action("contraflor_al_resto")


def flor_holders(r: RuleSet, h: HandState) -> tuple[int, ...]:
    """The seats dealt (kept, for the carancho) a flor, void or not; computed once a hand."""
    holders = h.flor_holders
    if holders is None:
        dealt, turn_up = h.dealt, h.turn_up
        holders = tuple(x for x in range(len(dealt)) if has_flor_for(r, turn_up, dealt[x])) if r.flor else ()
        h.flor_holders = holders
    return holders


def holds_flor(r: RuleSet, h: HandState, seat: int) -> bool:
    """Whether ``seat`` was dealt (kept, for the carancho) a flor that is not void."""
    return seat in flor_holders(r, h) and seat not in h.flor_void


def played_first_card(h: HandState, seat: int) -> bool:
    """Whether ``seat`` has played its card of the first trick."""
    return seat in [p[0] for p in h.tricks[0].plays]


def window_open(s: MatchState, h: HandState) -> bool:
    """The flor (and envido) window of the hand: flor played, first trick, no flor sung yet,
    no truco accepted or raised, not a hand of eleven or iron hand."""
    return (
        s.rules.flor
        and h.envido_open
        and not h.flor_sung
        and len(h.tricks) == 1
        and not h.special
        and h.truco_level < 0
    )


def can_sing(s: MatchState, h: HandState, seat: int, *, answering: bool) -> bool:
    """Flor may be sung now by ``seat``: the window is open, the seat holds a flor and has not
    played its first card (unless it is answering a call)."""
    if not window_open(s, h):
        return False
    if not answering and played_first_card(h, seat):
        return False
    return holds_flor(s.rules, h, seat)


def envido_barred(s: MatchState, h: HandState, seat: int) -> bool:
    """A flor holder may not call or raise envido (unless ``envido_with_flor``)."""
    r = s.rules
    return r.flor and not r.envido_with_flor and holds_flor(r, h, seat)


def flor_responder(s: MatchState, h: HandState, seat: int, default: int, *, partners: bool = False) -> int:
    """With mandatory flor, the first player after ``seat`` (in play order) holding an
    unsung flor answers a first call instead of ``default``: an opponent (he sings it as
    his answer), or -- with ``partners``, for an envido under ``partner_flor="first"`` -- the
    caller's own partner ("la flor está primero": the partner's flor is sung and the envido
    is void)."""
    r = s.rules
    if not (r.flor_mandatory and window_open(s, h)):
        return default
    side = h.side_of[seat]
    for x in after(h, seat):
        if h.side_of[x] == side and not partners:
            continue
        if holds_flor(r, h, x) and not played_first_card(h, x):
            return x
    return default


def void_partners_flor(s: MatchState, h: HandState, seat: int) -> None:
    """``partner_flor="voided"``: ``seat``'s envido speaks for the pair; his partners' flors
    are void for the hand."""
    if s.rules.flor and s.rules.partner_flor is PartnerFlor.VOIDED:
        side = h.side_of[seat]
        mates = tuple(x for x in h.order if x != seat and h.side_of[x] == side and holds_flor(s.rules, h, x))
        if mates:
            h.flor_void = tuple(sorted({*h.flor_void, *mates}))


def raises(s: MatchState, call: Call) -> list[Action]:
    """Raises open to the responder of a pending flor call."""
    r = s.rules
    last = call.chain[-1]
    out = []
    if last == "flor" and r.contraflor:
        out.append(CONTRAFLOR)
    if last in ("flor", "contraflor") and r.contraflor_al_resto is not ContraflorAlResto.OFF:
        out.append(CONTRAFLOR_AL_RESTO)
    return out


# ---------------------------------------------------------------------- transitions
def sing(s: MatchState, h: HandState, seat: int, name: str, ev: list[Event]) -> None:
    """``flor`` (a first flor, possibly cancelling a pending envido) or a raise of a pending
    flor (``contraflor``, ``contraflor_al_resto``)."""
    r = s.rules
    old = h.bet
    if old is not None and old.family is CallFamily.FLOR:
        chain = [*old.chain, name]
        responder = old.caller
        if seat not in h.flor_sung:
            h.flor_sung.append(seat)
        h.bet = Call(CallFamily.FLOR, seat, responder, chain)
        value, declined = S.flor_value(s, chain), S.flor_declined_value(s, chain)
        ev.append(_called(seat, name, value, declined, responder))
        return
    cancels = old.family if old is not None else None
    h.bet = None
    h.flor_sung.append(seat)
    side = h.side_of[seat]
    rival = next((x for x in after(h, seat) if h.side_of[x] != side and holds_flor(r, h, x)), None)
    if rival is None:
        own = [x for x in h.order if h.side_of[x] == side and holds_flor(r, h, x)]
        points = r.flor_value * len(own)
        ev.append(_called(seat, "flor", points, points, None, cancels))
        h.envido_open = False
        if r.show_envido_cards:
            h.shows.extend((x, "flor") for x in own)
        S.win_bet(s, h, CallFamily.FLOR, seat, side, points, ev)
        return
    h.bet = Call(CallFamily.FLOR, seat, rival, ["flor"])
    ev.append(_called(seat, "flor", r.flor_accepted_value, r.flor_value, rival, cancels))


def accept(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    """Con flor quiero / quiero: every flor is declared, the best takes the chain's value."""
    bet = h.bet
    assert bet is not None
    r = s.rules
    h.bet = None
    h.envido_open = False
    if seat not in h.flor_sung:
        h.flor_sung.append(seat)
    holders = [x for x in h.order if holds_flor(r, h, x)]
    declared: list[Event] = []  # the winner first: falta_envido_by_winner pays by it
    best = S.declare(
        h, holders, lambda x: flor_points_for(r, h.turn_up, h.dealt[x]), CallFamily.FLOR, declared
    )
    value = S.flor_value(s, bet.chain, h.side_of[best])
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.FLOR, accepted=True, value=value)))
    ev.extend(declared)
    if r.show_envido_cards:
        h.shows.append((best, "flor"))
    S.win_bet(s, h, CallFamily.FLOR, best, h.side_of[best], value, ev)


def decline(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    """Con flor me achico / no quiero: the caller's side scores the declined value."""
    bet = h.bet
    assert bet is not None
    h.bet = None
    h.envido_open = False
    value = S.flor_declined_value(s, bet.chain)
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.FLOR, accepted=False, value=value)))
    if s.rules.show_envido_cards:
        h.shows.append((bet.caller, "flor"))
    S.win_bet(s, h, CallFamily.FLOR, bet.caller, h.side_of[bet.caller], value, ev)


# ------------------------------------------------------------------------- helpers
def after(h: HandState, seat: int) -> list[int]:
    """The other seats of the (sub-)hand in play order after ``seat``."""
    n = len(h.order)
    i = h.order.index(seat)
    return [h.order[(i + k) % n] for k in range(1, n)]


def _called(
    seat: int, call: str, value: int, declined: int, responder: int | None, cancels: CallFamily | None = None
) -> Event:
    return Event(
        E.CallMade(
            seat=seat,
            family=CallFamily.FLOR,
            name=call,
            value_if_accepted=value,
            value_if_declined=declined,
            responder=responder,
            cancels=cancels,
        )
    )
