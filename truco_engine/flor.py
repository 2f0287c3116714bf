"""Flor: three cards of one suit (piezas are wild under a muestra), its chain and its scoring.

The flor uses the hand's ``bet`` slot with a :class:`Call` of family ``flor``; its ``chain``
is ``["flor"]``, ``["flor", "contraflor"]``, ``["flor", "contraflor_al_resto"]`` or
``["flor", "contraflor", "contraflor_al_resto"]``. Values (docs/rules/river-plate.md):

===========================================  ===========================  ==================
chain                                        accepted (flors compared)    declined
===========================================  ===========================  ==================
``flor`` unopposed (no opponent holds flor)  3 per flor of the side       —
``flor`` answered by an opposing flor        4 ("con flor quiero")        3 ("me achico")
``flor, contraflor``                         6                            4
``flor, contraflor_al_resto``                falta (as falta envido)      4
``flor, contraflor, contraflor_al_resto``    falta                        6
===========================================  ===========================  ==================

A declined call gives the caller what the chain was worth before that call (as envido does).

When and who:

* A seat holding flor may sing it in the envido window: during the first trick before its own
  card, as the answer to the first truco call ("la flor está primero") or as the answer to an
  envido (the flor cancels the envido: nobody scores it). Once a flor is sung, no envido is
  played in that hand.
* With ``flor_mandatory`` a holder whose window is open has exactly one legal action: ``flor``.
  Its side's first flor holder also answers an envido or a first truco call made by an
  opponent (the flor is public anyway: it must be sung).
* If no opponent holds flor, the singing side scores at once. Otherwise the first opponent
  holding flor (in play order after the singer) answers: ``accept`` (con flor quiero),
  ``decline`` (con flor me achico), ``contraflor`` or ``contraflor_al_resto``; a contraflor is
  answered by the first singer, who may accept, decline or raise to contraflor al resto.
* Accepted: every flor of the hand is declared from the mano on ("son buenas" when it cannot
  win); the best flor wins, ties to the seat nearest the mano.
* The winning flor's cards are shown when the hand ends (``show_envido_cards``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from truco_engine import actions as A
from truco_engine import events as E
from truco_engine.actions import Action
from truco_engine.events import CallFamily, Event
from truco_engine.ranking import flor_points_for, has_flor_for
from truco_engine.state import Call, HandState, MatchState

if TYPE_CHECKING:
    from truco_engine.rules import RuleSet

FLOR_CALLS: Final = ("flor", "contraflor", "contraflor_al_resto")
FLOR_VALUE: Final = 3
"""An unopposed flor, per flor of the singing side."""
FLOR_ACCEPTED: Final = 4
"""Flor against flor, answered "con flor quiero"."""
CONTRAFLOR_VALUE: Final = 6
"""An accepted contraflor."""


def holds_flor(r: RuleSet, h: HandState, seat: int) -> bool:
    """Whether ``seat`` was dealt (kept, for the carancho) a flor."""
    return has_flor_for(r, h.turn_up, h.dealt[seat])


def can_sing(s: MatchState, h: HandState, seat: int, *, answering: bool) -> bool:
    """Flor may be sung now by ``seat``: flor is played, the envido window is open, no flor
    yet this hand, first trick, the seat holds flor and has not played (or is answering)."""
    r = s.rules
    if not r.flor or not h.envido_open or h.flor_sung or len(h.tricks) != 1 or h.special:
        return False
    if not answering and any(p[0] == seat for p in h.tricks[0].plays):
        return False
    return holds_flor(r, h, seat)


def envido_barred(s: MatchState, h: HandState, seat: int) -> bool:
    """A flor holder may not call or raise envido (unless ``envido_with_flor``)."""
    r = s.rules
    return r.flor and not r.envido_with_flor and holds_flor(r, h, seat)


def flor_responder(s: MatchState, h: HandState, seat: int, default: int, *, partners: bool = False) -> int:
    """With mandatory flor, the first player after ``seat`` (in play order) holding an
    unsung flor answers a first call instead of ``default``: an opponent (he sings it as
    his answer), or -- with ``partners``, for an envido -- the caller's own partner ("la
    flor está primero": the partner's flor is sung and the envido is void)."""
    r = s.rules
    if not (r.flor and r.flor_mandatory and h.envido_open and not h.flor_sung and len(h.tricks) == 1):
        return default
    side = h.side_of[seat]
    for x in _after(h, seat):
        if h.side_of[x] == side and (not partners or h.special):
            continue
        if holds_flor(r, h, x) and not _played(h, x):
            return x
    return default


def raises(call: Call) -> list[Action]:
    """Raises open to the responder of a pending flor call."""
    last = call.chain[-1]
    if last == "flor":
        return [A.CONTRAFLOR, A.CONTRAFLOR_AL_RESTO]
    if last == "contraflor":
        return [A.CONTRAFLOR_AL_RESTO]
    return []


def flor_value(s: MatchState, chain: Sequence[str]) -> int:
    """Points an accepted flor chain is worth."""
    from truco_engine.engine import falta_value

    last = chain[-1]
    if last == "contraflor_al_resto":
        return falta_value(s)
    if last == "contraflor":
        return CONTRAFLOR_VALUE
    return FLOR_ACCEPTED


def flor_declined_value(s: MatchState, chain: Sequence[str]) -> int:
    """Points the caller scores when the last call of the chain is declined."""
    return flor_value(s, chain[:-1]) if len(chain) > 1 else FLOR_VALUE


def bet_values(s: MatchState, call: Call) -> tuple[int, int]:
    """(value if accepted, value if declined) of a pending envido or flor call."""
    if call.family == "flor":
        return flor_value(s, call.chain), flor_declined_value(s, call.chain)
    from truco_engine.engine import envido_declined_value, envido_value

    return envido_value(s, call.chain), envido_declined_value(s, call.chain)


# ---------------------------------------------------------------------- transitions
def sing(s: MatchState, h: HandState, seat: int, name: str, ev: list[Event]) -> None:
    """``flor`` (a first flor, possibly cancelling a pending envido) or a raise of a pending
    flor (``contraflor``, ``contraflor_al_resto``)."""
    from truco_engine.engine import _add_points

    r = s.rules
    old = h.bet
    if old is not None and old.family == "flor":
        chain = [*old.chain, name]
        responder = old.caller
        if seat not in h.flor_sung:
            h.flor_sung.append(seat)
        h.bet = Call("flor", seat, responder, chain)
        value, declined = flor_value(s, chain), flor_declined_value(s, chain)
        ev.append(_called(seat, name, value, declined, responder))
        return
    cancels = old.family if old is not None else None
    h.bet = None
    h.flor_sung.append(seat)
    side = h.side_of[seat]
    rival = next(
        (x for x in _after(h, seat) if h.side_of[x] != side and holds_flor(r, h, x)),
        None,
    )
    if rival is None:
        own = [x for x in h.order if h.side_of[x] == side and holds_flor(r, h, x)]
        points = FLOR_VALUE * len(own)
        ev.append(_called(seat, "flor", points, points, None, cancels))
        h.envido_open = False
        if r.show_envido_cards:
            h.shows.extend((x, "flor") for x in own)
        ev.append(Event(E.BetWon(family=CallFamily.FLOR, winner_seat=seat, winner_team=side, points=points)))
        if _add_points(s, side, points, ev):
            h.over = True
        return
    h.bet = Call("flor", seat, rival, ["flor"])
    ev.append(_called(seat, "flor", FLOR_ACCEPTED, FLOR_VALUE, rival, cancels))


def accept(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    """Con flor quiero / quiero: every flor is declared, the best takes the chain's value."""
    from truco_engine.engine import _add_points

    bet = h.bet
    assert bet is not None
    r = s.rules
    h.bet = None
    h.envido_open = False
    if seat not in h.flor_sung:
        h.flor_sung.append(seat)
    value = flor_value(s, bet.chain)
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.FLOR, accepted=True, value=value)))
    best_seat, best = -1, -1
    for x in h.order:
        if not holds_flor(r, h, x):
            continue
        p = flor_points_for(r, h.turn_up, h.dealt[x])
        if p > best:
            best, best_seat = p, x
            ev.append(Event(E.PointsDeclared(seat=x, family=CallFamily.FLOR, points=p)))
        elif h.side_of[x] != h.side_of[best_seat]:
            ev.append(Event(E.PointsDeclared(seat=x, family=CallFamily.FLOR, points=None)))
    side = h.side_of[best_seat]
    if r.show_envido_cards:
        h.shows.append((best_seat, "flor"))
    ev.append(Event(E.BetWon(family=CallFamily.FLOR, winner_seat=best_seat, winner_team=side, points=value)))
    if _add_points(s, side, value, ev):
        h.over = True


def decline(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    """Con flor me achico / no quiero: the caller's side scores the declined value."""
    from truco_engine.engine import _add_points

    bet = h.bet
    assert bet is not None
    h.bet = None
    h.envido_open = False
    value = flor_declined_value(s, bet.chain)
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.FLOR, accepted=False, value=value)))
    side = h.side_of[bet.caller]
    if s.rules.show_envido_cards:
        h.shows.append((bet.caller, "flor"))
    ev.append(Event(E.BetWon(family=CallFamily.FLOR, winner_seat=bet.caller, winner_team=side, points=value)))
    if _add_points(s, side, value, ev):
        h.over = True


# ------------------------------------------------------------------------- helpers
def _after(h: HandState, seat: int) -> list[int]:
    n = len(h.order)
    i = h.order.index(seat)
    return [h.order[(i + k) % n] for k in range(1, n)]


def _played(h: HandState, seat: int) -> bool:
    return any(p[0] == seat for p in h.tricks[0].plays)


def _called(
    seat: int, call: str, value: int, declined: int, responder: int | None, cancels: str | None = None
) -> Event:
    return Event(
        E.CallMade(
            seat=seat,
            family=CallFamily.FLOR,
            name=call,
            value_if_accepted=value,
            value_if_declined=declined,
            responder=responder,
            cancels=CallFamily(cancels) if cancels else None,
        )
    )
