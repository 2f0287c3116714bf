"""The rules as functions: deal (the chance step), whose turn, legal actions, apply.

All functions are pure: they never change the state they are given; :func:`apply` and
:func:`deal` return a new state and the events of the transition. There is no randomness:
every hand's deck order comes in from outside through :func:`deal`.

Turn model (documented in ``docs/rules/README.md``): exactly one seat acts at a time.

* The seat whose turn it is plays a card, or first makes a call (truco, envido, flor) or folds.
* A call is answered by the next opponent after the caller in play order; a raise is
  answered by the seat that made the call being raised.
* At the hand of eleven the first player (nearest the mano) of the side at eleven decides.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from truco_engine import actions as A
from truco_engine import events as E
from truco_engine import flor as F
from truco_engine import variants as V
from truco_engine.actions import Action
from truco_engine.enums import Phase
from truco_engine.errors import (
    IllegalActionError,
    InvalidDeckError,
    MatchOverError,
    NotYourTurnError,
)
from truco_engine.events import CallFamily, Event, HandEndReason, Special, private
from truco_engine.ranking import FACE_DOWN, USES_TURN_UP, envido_points_for, strength_table
from truco_engine.rules import RuleSet
from truco_engine.state import Call, HandState, MatchState, Trick

ENVIDO_CALLS = ("envido", "real_envido", "falta_envido")
ENVIDO_ORDER = {"envido": 0, "real_envido": 1, "falta_envido": 2}
ENVIDO_MAX = {"envido": 2, "real_envido": 1, "falta_envido": 1}
ENVIDO_VALUE = {"envido": 2, "real_envido": 3}


# ------------------------------------------------------------------------ queries
def new_match(rules: RuleSet, first_dealer: int | None = None) -> MatchState:
    """A match before its first deal. The first dealer defaults to the last seat, so seat 0
    is the first hand's mano."""
    s = MatchState.__new__(MatchState)
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
    return s


def needs_deal(state: MatchState) -> bool:
    """Whether the next step is the chance step :func:`deal`."""
    return state.phase is Phase.DEAL


def is_over(state: MatchState) -> bool:
    """Whether the match has ended."""
    return state.phase is Phase.OVER


def to_act(state: MatchState) -> tuple[int, ...]:
    """The seat(s) that may act now (empty while a deal is awaited or after the match)."""
    h = state.hand
    if state.phase is not Phase.PLAY or h is None:
        return ()
    return (_actor(h),)


def seat_teams(state: MatchState) -> tuple[int, ...]:
    """The team (score holder) of every seat, index = seat: for the hand in progress (or the
    last one), else for the next hand. The one place a seat's team comes from."""
    if state.hand is not None:
        return state.hand.side_of
    return V.table_sides(state.rules, (state.dealer + 1) % state.rules.players)


def _actor(h: HandState) -> int:
    if h.eleven_decider is not None:
        return h.eleven_decider
    if h.bet is not None:
        return h.bet.responder
    if h.truco is not None:
        return h.truco.responder
    return h.turn


def legal_actions(state: MatchState, seat: int) -> list[Action]:
    """Every action ``seat`` may take now, in a deterministic order: plays (in hand order,
    then face down), calls, answers, fold. Empty if the seat is not to act."""
    h = state.hand
    if state.phase is not Phase.PLAY or h is None or seat != _actor(h):
        return []
    r = state.rules
    out: list[Action] = []
    if h.eleven_decider is not None:
        return [A.ACCEPT, A.DECLINE]
    side = h.side_of[seat]
    call = h.bet if h.bet is not None else h.truco
    if call is not None:
        flor_now = (
            r.flor
            and (call.family == "envido" or (call.family == "truco" and call.level == 0))
            and F.can_sing(state, h, seat, answering=True)
        )
        if flor_now and r.flor_mandatory:
            return [A.FLOR]
        out.append(A.ACCEPT)
        out.append(A.DECLINE)
        if call.family == "truco":
            if call.level + 1 < len(r.truco_ladder):
                out.append(A.TRUCO)
            if call.level == 0 and _envido_window(state, h, seat, answering_truco=True):
                out.extend(_envido_starts(h))
        elif call.family == "flor":
            out.extend(F.raises(call))
        elif not (r.flor and F.envido_barred(state, h, seat)):
            out.extend(_envido_raises(call))
        if flor_now:
            out.append(A.FLOR)
        if r.fold and r.play_mode != "individual":
            out.append(A.FOLD)
        return out
    # Own turn, nothing pending.
    hand = h.cards[seat]
    if len(hand) > 3:  # the carancho's extra card: discard first
        return [Action("discard", c) for c in hand]
    flor_now = r.flor and F.can_sing(state, h, seat, answering=False)
    if flor_now and r.flor_mandatory:
        return [A.FLOR]
    if h.blind:
        out.extend(Action("play", slot=i) for i in range(len(hand)))
    else:
        out.extend(Action("play", c) for c in hand)
        fd = r.face_down_from_trick
        if fd and len(h.tricks) >= fd:
            out.extend(Action("play", c, face_down=True) for c in hand)
    if (
        h.special == ""
        and h.truco_level + 1 < len(r.truco_ladder)
        and (h.raise_side is None or h.raise_side == side)
    ):
        out.append(A.TRUCO)
    if _envido_window(state, h, seat, answering_truco=False):
        out.extend(_envido_starts(h))
    if flor_now:
        out.append(A.FLOR)
    if r.fold and r.play_mode != "individual":
        out.append(A.FOLD)
    return out


def _envido_window(state: MatchState, h: HandState, seat: int, *, answering_truco: bool) -> bool:
    """Envido may be called in the first trick by a seat that has not played its card yet
    (or that is answering the first truco call), once per hand, before a truco is accepted."""
    if not state.rules.envido or not h.envido_open or len(h.tricks) != 1 or h.special:
        return False
    if state.rules.flor and F.envido_barred(state, h, seat):
        return False
    if answering_truco:
        return True
    return all(p[0] != seat for p in h.tricks[0].plays)


def _envido_starts(h: HandState) -> list[Action]:
    return [A.ENVIDO, A.REAL_ENVIDO, A.FALTA_ENVIDO]


def _envido_raises(call: Call) -> list[Action]:
    last = ENVIDO_ORDER[call.chain[-1]]
    out = []
    for name in ENVIDO_CALLS:
        if ENVIDO_ORDER[name] >= last and call.chain.count(name) < ENVIDO_MAX[name]:
            out.append(Action(name))
    return out


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
    if (
        len(deck) != len(r.deck_cards)
        or not all(isinstance(c, str) for c in deck)
        or set(deck) != set(r.deck_cards)
    ):
        raise InvalidDeckError(
            f"the deck order must be a permutation of the {len(r.deck_cards)} cards of "
            f"deck {r.deck!r}{' (clean)' if r.clean_deck else ''}"
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
    cards: list[list[str]] = [[] for _ in range(n)]
    for k in range(3):
        for i, seat in enumerate(order):
            cards[seat].append(deck[k * n + i])
    carancho = r.play_mode == "carancho"
    if carancho:  # the carancho (the mano) receives one extra card after the deal
        cards[mano].append(deck[3 * n])
    turn_up = deck[3 * n + carancho] if r.ranking in USES_TURN_UP else None
    h = HandState.__new__(HandState)
    s.hands += 1
    h.number = s.hands
    h.dealer = s.dealer
    h.mano = mano
    h.order = order
    h.side_of = V.table_sides(r, mano)
    h.cards = cards
    h.dealt = [tuple(c) for c in cards]
    h.turn_up = turn_up
    h.commitment = deck_commitment(deck, salt)
    h.strength = strength_table(r, turn_up)
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
    if r.pica_pica and V.is_pica_round(s, h.number):
        V.start_sub_hand(s, h, 0, ev)
    if h.special == "eleven":
        team = [x for x in order if h.side_of[x] == h.eleven_side]
        if len(team) > 1:
            for x in team:
                shown = E.CardsRevealed(
                    seat=x, cards=tuple(cards[x]), count=len(cards[x]), reason="hand_of_eleven", public=False
                )
                ev.append(private(shown, team, "cards"))


# -------------------------------------------------------------------------- apply
def apply(state: MatchState, seat: int, action: Action) -> tuple[MatchState, list[Event]]:
    """Apply ``seat``'s ``action``; return the new state and the events it caused.

    Raises :class:`NotYourTurnError` or :class:`IllegalActionError` (listing what is legal)
    without touching the state.
    """
    if state.phase is Phase.OVER:
        raise MatchOverError()
    h0 = state.hand
    if state.phase is not Phase.PLAY or h0 is None or seat != _actor(h0):
        raise NotYourTurnError(seat, to_act(state))
    legal = legal_actions(state, seat)
    if action not in legal:
        raise IllegalActionError(_why_illegal(state, seat, action), legal)
    s = state.copy()
    h = s.hand
    assert h is not None
    s.actions += 1
    ev: list[Event] = []
    kind = action.kind
    if h.eleven_decider is not None:
        _decide_eleven(s, h, seat, kind == "accept", ev)
    elif kind == "play":
        _play(s, h, seat, action, ev)
    elif kind == "truco":
        _call_truco(s, h, seat, ev)
    elif kind in ENVIDO_ORDER:
        _call_envido(s, h, seat, kind, ev)
    elif kind in F.FLOR_CALLS:
        F.sing(s, h, seat, kind, ev)
    elif kind == "discard":
        _discard(h, seat, action, ev)
    elif kind == "accept":
        _accept(s, h, seat, ev)
    elif kind == "decline":
        _decline(s, h, seat, ev)
    elif kind == "fold":
        _fold(s, h, seat, ev)
    else:  # pragma: no cover - legal_actions never offers anything else
        raise IllegalActionError(f"{kind} is not implemented", legal)
    return s, ev


def _why_illegal(state: MatchState, seat: int, action: Action) -> str:
    h = state.hand
    assert h is not None
    if action.kind == "play":
        if h.bet is not None or h.truco is not None or h.eleven_decider is not None:
            return "a call must be answered before any card is played"
        if h.blind and action.slot is None:
            return "in the iron hand cards are played blind, by slot"
        if [a.kind for a in legal_actions(state, seat)] == ["flor"]:
            return "a player holding flor must sing it first (flor_mandatory)"
        if action.card is not None and action.card not in h.cards[seat]:
            return f"{action.card} is not in seat {seat}'s hand"
        if action.face_down:
            return "a card may not be played face down in this trick"
        return f"cannot play {action.text()}"
    if action.kind == "truco":
        if h.special:
            return f"nobody calls truco in the {'iron hand' if h.special == 'iron' else 'hand of eleven'}"
        level = h.truco.level if h.truco is not None else h.truco_level
        if level + 1 >= len(state.rules.truco_ladder):
            return "the truco ladder is at its top"
        return "only the side that accepted the last call may raise"
    if action.kind in ("accept", "decline"):
        return "there is no call to answer"
    if action.kind in ENVIDO_ORDER:
        if not state.rules.envido:
            return "these rules have no envido"
        return "envido is only possible in the first trick, before your card, once per hand"
    if action.kind == "fold":
        return "folding is not allowed here" if state.rules.fold else "these rules have no folding"
    if action.kind in F.FLOR_CALLS:
        if not state.rules.flor:
            return "these rules have no flor"
        if action.kind == "flor":
            return "flor is sung by a player holding one, in the first trick, before his card, once per hand"
        return "contraflor answers a flor, by a player holding flor"
    if action.kind == "discard":
        return "only the carancho discards, once, before anything else"
    if len(h.cards[seat]) > 3:
        return "the carancho must discard first"
    return f"{action.kind} is not allowed now"


def _next_opponent(h: HandState, seat: int) -> int:
    n = len(h.order)
    i = h.order.index(seat)
    side = h.side_of[seat]
    for k in range(1, n):
        x = h.order[(i + k) % n]
        if h.side_of[x] != side:
            return x
    raise AssertionError("no opponent")  # pragma: no cover


def _decide_eleven(s: MatchState, h: HandState, seat: int, play: bool, ev: list[Event]) -> None:
    side = h.side_of[seat]
    h.eleven_decider = None
    ev.append(Event(E.HandOfElevenDecision(seat=seat, team=side, play=play)))
    if not play:
        other = 1 - side
        _end_hand(s, h, other, s.rules.hand_of_eleven_refusal, HandEndReason.ELEVEN_REFUSED, ev)


def _discard(h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
    """The carancho keeps three of his four cards; the discard is seen by nobody else."""
    card = action.card
    assert card is not None
    h.cards[seat].remove(card)
    h.dealt = list(h.dealt)  # shared with the previous state: copy before changing
    h.dealt[seat] = tuple(h.cards[seat])
    ev.append(private(E.CardDiscarded(seat=seat, card=card), (seat,), "card"))


def _play(s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
    hand = h.cards[seat]
    card = hand.pop(action.slot) if action.slot is not None else action.card
    if action.slot is None:
        assert card is not None
        hand.remove(card)
    assert card is not None
    trick = h.tricks[-1]
    trick.plays.append((seat, card, action.face_down))
    played = E.CardPlayed(seat=seat, card=card, face_down=action.face_down, trick_index=len(h.tricks) - 1)
    ev.append(private(played, (seat,), "card") if action.face_down else Event(played))
    n = len(h.order)
    if len(trick.plays) < n:
        h.turn = h.order[(h.order.index(seat) + 1) % n]
        return
    _finish_trick(s, h, trick, ev)


def _finish_trick(s: MatchState, h: HandState, trick: Trick, ev: list[Event]) -> None:
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
        if rule == "tied_trick_opener":
            leader = trick.leader
        elif rule == "mano":
            leader = h.order[0]
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
    decided, winner = _hand_result(h.tricks)
    if not decided:
        h.tricks.append(Trick(leader))
        h.turn = leader
        return
    if winner is None:
        if s.rules.all_tricks_tied == "mano":
            side = h.side_of[h.order[0]]
            _end_hand(s, h, side, _hand_points(s, h, side), HandEndReason.ALL_TIED_MANO, ev)
        else:
            _end_hand(s, h, None, 0, HandEndReason.ALL_TIED_REDEAL, ev)
        return
    _end_hand(s, h, winner, _hand_points(s, h, winner), HandEndReason.TRICKS, ev)


def _hand_result(tricks: list[Trick]) -> tuple[bool, int | None]:
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
    leaders = [x for x, c in counts.items() if c == top]
    if len(leaders) == 1:
        return True, leaders[0]
    return True, r1 if r1 in leaders else r3


def _hand_points(s: MatchState, h: HandState, side: int) -> int:
    if h.special == "iron":
        return s.rules.target_points - s.scores[side]
    return h.value


def _call_truco(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    r = s.rules
    old = h.truco
    if old is not None:  # a raise answers the pending call: its value is accepted first
        h.truco_level = old.level
        h.value = r.truco_ladder[old.level]
        level, responder = old.level + 1, old.caller
    else:
        level, responder = h.truco_level + 1, _next_opponent(h, seat)
        if r.flor and level == 0:
            responder = F.flor_responder(s, h, seat, responder)
    if r.envido and old is not None:
        h.envido_open = False
    h.truco = Call("truco", seat, responder, [r.truco_call_names[level]], level)
    ev.append(
        Event(
            E.CallMade(
                seat=seat,
                family=CallFamily.TRUCO,
                name=r.truco_call_names[level],
                value_if_accepted=r.truco_ladder[level],
                value_if_declined=h.value,
                responder=responder,
            )
        )
    )


def envido_value(s: MatchState, chain: Sequence[str]) -> int:
    """Points an accepted envido chain is worth (falta envido: what it is worth now)."""
    if "falta_envido" in chain:
        return falta_value(s)
    return sum(ENVIDO_VALUE[c] for c in chain)


def envido_declined_value(s: MatchState, chain: Sequence[str]) -> int:
    """Points the caller scores when the last call of the chain is declined: the value the
    chain had reached before that call, at least 1."""
    return envido_value(s, chain[:-1]) if len(chain) > 1 else 1


def falta_value(s: MatchState) -> int:
    """Falta envido: what the leader needs to win the game, or (``falta_envido="half"``)
    to close the first half while the leader is still in it."""
    r = s.rules
    lead = max(s.scores)
    half = r.target_points // 2
    if r.falta_envido == "half" and lead < half:
        return half - lead
    return r.target_points - lead


def _call_envido(s: MatchState, h: HandState, seat: int, name: str, ev: list[Event]) -> None:
    old = h.bet
    if old is not None:
        chain = [*old.chain, name]
        responder = old.caller
    else:
        chain = [name]
        responder = h.truco.caller if h.truco is not None else _next_opponent(h, seat)
        if s.rules.flor and h.truco is None:
            responder = F.flor_responder(s, h, seat, responder, partners=True)
    h.bet = Call("envido", seat, responder, chain)
    ev.append(
        Event(
            E.CallMade(
                seat=seat,
                family=CallFamily.ENVIDO,
                name=name,
                value_if_accepted=envido_value(s, chain),
                value_if_declined=envido_declined_value(s, chain),
                responder=responder,
            )
        )
    )


def _accept(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    r = s.rules
    if h.bet is not None and h.bet.family == "flor":
        F.accept(s, h, seat, ev)
        return
    if h.bet is not None:
        bet = h.bet
        h.bet = None
        h.envido_open = False
        value = envido_value(s, bet.chain)
        ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily(bet.family), accepted=True, value=value)))
        _resolve_envido(s, h, value, ev)
        return
    call = h.truco
    assert call is not None
    h.truco = None
    h.truco_level = call.level
    h.value = r.truco_ladder[call.level]
    h.raise_side = h.side_of[seat]
    if r.envido:
        h.envido_open = False
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.TRUCO, accepted=True, value=h.value)))


def _decline(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    if h.bet is not None and h.bet.family == "flor":
        F.decline(s, h, seat, ev)
        return
    if h.bet is not None:
        bet = h.bet
        h.bet = None
        h.envido_open = False
        value = envido_declined_value(s, bet.chain)
        ev.append(
            Event(E.CallAnswered(seat=seat, family=CallFamily(bet.family), accepted=False, value=value))
        )
        side = h.side_of[bet.caller]
        ev.append(
            Event(
                E.BetWon(
                    family=CallFamily(bet.family), winner_seat=bet.caller, winner_team=side, points=value
                )
            )
        )
        _add_points(s, side, value, ev)
        if s.phase is Phase.PLAY:
            return
        h.over = True
        return
    call = h.truco
    assert call is not None
    h.truco = None
    ev.append(Event(E.CallAnswered(seat=seat, family=CallFamily.TRUCO, accepted=False, value=h.value)))
    _end_hand(s, h, h.side_of[call.caller], h.value, HandEndReason.DECLINED, ev)


def _fold(s: MatchState, h: HandState, seat: int, ev: list[Event]) -> None:
    side = h.side_of[seat]
    other = h.side_of[_next_opponent(h, seat)]
    ev.append(Event(E.Folded(seat=seat, team=side)))
    if h.bet is None and s.rules.fold_concedes_envido and h.envido_open and not h.flor_sung:
        # Going to the mazo with the envido still open: the other side's envido point.
        ev.append(Event(E.BetWon(family=CallFamily.ENVIDO, winner_seat=None, winner_team=other, points=1)))
        if _add_points(s, other, 1, ev):
            h.over = True
            return
    if h.bet is not None:
        bet = h.bet
        h.bet = None
        value = F.bet_values(s, bet)[1]
        ev.append(
            Event(
                E.BetWon(
                    family=CallFamily(bet.family), winner_seat=bet.caller, winner_team=other, points=value
                )
            )
        )
        if _add_points(s, other, value, ev):
            h.over = True
            return
    h.truco = None
    _end_hand(s, h, other, _hand_points(s, h, other), HandEndReason.FOLDED, ev)


def _resolve_envido(s: MatchState, h: HandState, value: int, ev: list[Event]) -> None:
    """Declare points from the mano on; each seat shows its points only when it beats the
    best so far ("son buenas" otherwise); ties go to the seat nearest the mano."""
    best_seat = -1
    best = -1
    for x in h.order:
        p = envido_points_for(s.rules, h.turn_up, h.dealt[x])
        if p > best:
            best, best_seat = p, x
            ev.append(Event(E.PointsDeclared(seat=x, family=CallFamily.ENVIDO, points=p)))
        elif h.side_of[x] != h.side_of[best_seat]:
            ev.append(Event(E.PointsDeclared(seat=x, family=CallFamily.ENVIDO, points=None)))
    side = h.side_of[best_seat]
    if s.rules.show_envido_cards:
        h.shows.append((best_seat, "envido"))
    ev.append(
        Event(E.BetWon(family=CallFamily.ENVIDO, winner_seat=best_seat, winner_team=side, points=value))
    )
    if _add_points(s, side, value, ev):
        h.over = True


def _add_points(s: MatchState, side: int, points: int, ev: list[Event]) -> bool:
    """Score points; returns True if that ended the game (the hand stops there)."""
    r = s.rules
    h = s.hand
    if r.play_mode == "carancho" and h is not None:  # the pair's points go to both partners
        holders = [x for x in h.order if h.side_of[x] == side]
        for x in holders:
            s.scores[x] += points
        ev.append(Event(E.ScoreChanged(scores=tuple(s.scores), games_won=tuple(s.games))))
        reached = [x for x in holders if s.scores[x] >= r.target_points]
        if not reached:
            return False
        side = max(reached, key=lambda x: s.scores[x])  # equal: the one nearer the mano
    else:
        s.scores[side] += points
        ev.append(Event(E.ScoreChanged(scores=tuple(s.scores), games_won=tuple(s.games))))
        if s.scores[side] < r.target_points:
            return False
    s.games[side] += 1
    ev.append(Event(E.GameEnded(game_number=s.game, winner_team=side, games_won=tuple(s.games))))
    if h is not None:
        _reveal_shows(h, ev)
    if s.games[side] >= r.games_to_win:
        s.phase = Phase.OVER
        s.winner = side
        ev.append(Event(E.MatchEnded(winner_team=side, games_won=tuple(s.games))))
    else:
        s.game += 1
        s.scores = [0] * r.sides
        s.phase = Phase.DEAL
        s.dealer = (s.dealer + 1) % r.players
    return True


def _reveal_shows(h: HandState, ev: list[Event]) -> None:
    for seat, family in h.shows:
        cards = tuple(h.dealt[seat])
        ev.append(
            Event(E.CardsRevealed(seat=seat, cards=cards, count=len(cards), reason=family, public=True))
        )
    h.shows = []


def _end_hand(
    s: MatchState, h: HandState, side: int | None, points: int, reason: HandEndReason, ev: list[Event]
) -> None:
    h.over = True
    h.truco = None
    h.bet = None
    h.eleven_decider = None
    ev.append(Event(E.HandEnded(winner_team=side, points=points, reason=reason)))
    if side is not None and points > 0 and _add_points(s, side, points, ev):
        return
    _reveal_shows(h, ev)
    if V.is_sub_hand(s, h):  # pica-pica: the next pair plays its sub-hand
        k = V.next_sub_hand(s, h)
        if k is not None:
            V.start_sub_hand(s, h, k, ev)
            return
    s.phase = Phase.DEAL
    s.dealer = (s.dealer + 1) % s.rules.players
