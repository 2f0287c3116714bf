"""Tricks and leaving the hand: who plays next, deciding a trick and the hand, going to the
deck (irse al mazo) as a side or, with ``fold_alone``, as one player.

The moves (:mod:`truco_engine.moves`) call these after a card is played or a seat folds;
scoring goes through :mod:`truco_engine.scoring`.

Folding alone (``fold_alone``, gotruco's individual "mazo"; ``docs/rules/house-rules.md``):
in a team game a seat may go to the deck on its turn, with no call pending, while a partner
is still in the hand. It leaves the hand (``HandState.out``): its cards go to the deck
unseen, it plays no more and decides nothing, its flor is void and it does not declare its
envido. The partners play on; the last seat of a side to fold gives up the hand for the side,
as a fold always does. A trick is complete once every seat still in has played. Where the
rules name a seat that has left (the opener of a trick it was to lead, the mano for a tie),
the first seat after it in play order still in the hand stands in.
"""

from __future__ import annotations

from truco_engine import events as E
from truco_engine import flor as F
from truco_engine import scoring as S
from truco_engine.enums import AllTied, FoldOnEnvido, LeadAfterTie
from truco_engine.events import CallFamily, Event, HandEndReason
from truco_engine.ranking import FACE_DOWN
from truco_engine.state import HandState, MatchState, Trick


def next_opponent(h: HandState, seat: int) -> int:
    """The first seat of another side after ``seat`` in play order (still in the hand)."""
    n = len(h.order)
    i = h.order.index(seat)
    side = h.side_of[seat]
    out = h.out
    for k in range(1, n):
        x = h.order[(i + k) % n]
        if h.side_of[x] != side and x not in out:
            return x
    raise AssertionError("no opponent")  # pragma: no cover


def played(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    """After ``seat`` played a card: the next seat's turn, or the trick is complete."""
    trick = h.tricks[-1]
    if not h.out:
        n = len(h.order)
        if len(trick.plays) < n:
            h.turn = h.order[(h.order.index(seat) + 1) % n]
            return
        finish_trick(s, h, trick, ev)
        return
    nxt = next_to_play(h, seat)
    if nxt is None:
        finish_trick(s, h, trick, ev)
    else:
        h.turn = nxt


def next_to_play(h: HandState, seat: int) -> int | None:
    """The seat after ``seat`` in play order still in the hand that has not played to the
    current trick; ``None`` when every seat still in has played (the trick is complete)."""
    n = len(h.order)
    i = h.order.index(seat)
    done = {p[0] for p in h.tricks[-1].plays}
    for k in range(1, n):
        x = h.order[(i + k) % n]
        if x in h.out:
            continue
        return None if x in done else x
    return None


def finish_trick(s: MatchState, h: HandState, trick: Trick, ev: list[Event]) -> None:
    """Decide a complete trick, then lead the next one or end the hand."""
    strength = h.strength
    best = FACE_DOWN
    for _, card, down in trick.plays:
        v = FACE_DOWN if down else strength[card]
        if v > best:
            best = v
    top = [x for x, card, down in trick.plays if not down and strength[card] == best]
    sides = {h.side_of[x] for x in top}
    if best == FACE_DOWN or len(sides) > 1:
        trick.tied = True
        rule = s.rules.lead_after_tie
        if rule is LeadAfterTie.TIED_TRICK_OPENER:
            leader = trick.leader
        elif rule is LeadAfterTie.MANO:
            leader = _stand_in(h, h.order[0]) if h.out else h.order[0]
        else:
            tying = top or [p[0] for p in trick.plays]
            leader = min(tying, key=h.order.index)
    else:
        trick.winner = top[0]
        trick.side = h.side_of[top[0]]
        leader = top[0]
    ev.append(
        Event(
            E.TrickEnded(
                trick_index=len(h.tricks) - 1,
                winner_seat=trick.winner,
                winner_team=trick.side,
                tied=trick.tied,
            )
        )
    )
    if len(h.tricks) == 1 and h.envido_open:
        h.envido_open = False
    decided, winner = hand_result(h.tricks)
    if not decided:
        h.tricks.append(Trick(leader))
        h.turn = leader
        return
    if winner is None:
        if s.rules.all_tricks_tied is AllTied.MANO:
            side = h.side_of[_stand_in(h, h.order[0]) if h.out else h.order[0]]
            S.end_hand(s, h, side, S.hand_points(s, h, side), HandEndReason.ALL_TIED_MANO, ev)
        else:
            S.end_hand(s, h, None, 0, HandEndReason.ALL_TIED_REDEAL, ev)
        return
    S.end_hand(s, h, winner, S.hand_points(s, h, winner), HandEndReason.TRICKS, ev)


def _stand_in(h: HandState, seat: int) -> int:
    """The first seat from ``seat`` on, in play order, still in the hand."""
    n = len(h.order)
    i = h.order.index(seat)
    for k in range(n):
        x = h.order[(i + k) % n]
        if x not in h.out:
            return x
    raise AssertionError("no seat left in the hand")  # pragma: no cover


def hand_result(tricks: list[Trick]) -> tuple[bool, int | None]:
    """Rule 7 of the paulista text (and the parda rules of the River Plate texts):
    (decided, winning side or None for all three tied)."""
    res = [None if t.tied else t.side for t in tricks if t.tied or t.side is not None]
    if len(res) < 2:
        return False, None
    r1, r2 = res[0], res[1]
    if len(res) == 2:
        if r1 is not None and r1 == r2:
            return True, r1
        if r1 is not None and r2 is None:
            return True, r1
        if r1 is None and r2 is not None:
            return True, r2
        return False, None
    r3 = res[2]
    if r3 is None:
        if r1 is None and r2 is None:
            return True, None
        return True, r1 if r1 is not None else r2
    counts: dict[int, int] = {}
    for x in res:
        if x is not None:
            counts[x] = counts.get(x, 0) + 1
    top = max(counts.values())
    leaders = [x for x, n in counts.items() if n == top]
    if len(leaders) == 1:
        return True, leaders[0]
    return True, r1 if r1 in leaders else r3


# --------------------------------------------------------------------------- fold
def folds_alone(s: MatchState, h: HandState, seat: int) -> bool:
    """Whether ``seat`` folding now leaves the hand alone (``fold_alone``): on its turn, no
    call pending, and a partner of its side still in the hand."""
    if not s.rules.fold_alone or h.bet is not None or h.truco is not None:
        return False
    side = h.side_of[seat]
    return any(x != seat and h.side_of[x] == side and x not in h.out for x in h.order)


def fold(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    """``seat`` goes to the deck: alone (:func:`folds_alone`) or giving up the hand for its
    side, which pays a pending envido or flor as the rules say and the hand's value."""
    r = s.rules
    side = h.side_of[seat]
    ev.append(Event(E.Folded(seat=seat, team=side)))
    if folds_alone(s, h, seat):
        _leave(s, h, seat, ev)
        return
    other = h.side_of[next_opponent(h, seat)]
    bet = h.bet
    # Going to the mazo with the envido still open: the other side's envido point.
    conceded = bet is None and r.fold_concedes_envido and h.envido_open and not h.flor_sung
    if conceded and S.win_bet(s, h, CallFamily.ENVIDO, None, other, 1, ev):
        return
    if bet is not None:
        h.bet = None
        # A pending envido is dropped (seed 003: the opponent "is awarded whatever the round
        # is currently worth") or counted as declined; a sung flor is always paid.
        if bet.family is CallFamily.FLOR or r.fold_on_envido is FoldOnEnvido.DECLINED:
            value = S.bet_values(s, bet)[1]
            if S.win_bet(s, h, bet.family, bet.caller, other, value, ev):
                return
    h.truco = None
    S.end_hand(s, h, other, S.hand_points(s, h, other), HandEndReason.FOLDED, ev)


def _leave(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    """``seat`` leaves the hand alone: its cards go to the deck, its flor is void, and the
    turn passes (or the trick is complete)."""
    h.out = (*h.out, seat)
    h.cards[seat] = []  # replaced, never edited: the list is shared with the previous state
    if seat in F.flor_holders(s.rules, h) and seat not in h.flor_void:
        h.flor_void = tuple(sorted((*h.flor_void, seat)))
    trick = h.tricks[-1]
    nxt = next_to_play(h, seat)
    if nxt is None:
        finish_trick(s, h, trick, ev)
        return
    if not trick.plays:
        trick.leader = nxt  # the seat that opens the trick in his place
    h.turn = nxt
