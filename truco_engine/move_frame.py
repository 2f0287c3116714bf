"""The frame every action kind fits in (:mod:`truco_engine.moves` has the kinds and the
public functions): who the game waits for, the context a rule asks about a seat, the
:class:`Move` base, and the legal-action list built from the registered moves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from truco_engine import flor as F
from truco_engine.actions import Action
from truco_engine.errors import IllegalActionError, NotYourTurnError
from truco_engine.events import CallFamily, Event
from truco_engine.rules import RuleSet
from truco_engine.state import Call, HandState, MatchState

NOT_YOUR_TURN: Final = "the game is not waiting for this seat"
"""The reason of a kind the seat may not take now because it is not its decision."""
UNSET: Final = "(not worked out yet)"

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
        self.envido: str | None = UNSET
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
            raise NotYourTurnError(c.seat, (c.aw,), legal=legal_of(c))
        if why is not None:
            raise IllegalActionError(why, legal_of(c))

    def do(self, s: MatchState, h: HandState, seat: int, action: Action, ev: list[Event]) -> None:
        raise NotImplementedError


_ORDER: list[Move] = []
"""Every action kind's move in the order of the legal-action list (:func:`register`)."""
_ASKED: dict[tuple[object, ...], tuple[Move, ...]] = {}


def register(moves: Iterable[Move]) -> None:
    """Make ``moves`` the action kinds, in legal-list order (:mod:`truco_engine.moves`)."""
    _ORDER[:] = moves
    _ASKED.clear()


def _asked(c: Ctx) -> tuple[Move, ...]:
    """The moves worth asking in the seat's situation under these rules, in legal order."""
    r = c.r
    key = (c.where, r.envido, r.flor, r.fold, r.play_mode, r.truco_out_of_turn, r.flor_mandatory)
    moves = _ASKED.get(key)
    if moves is None:
        moves = _ASKED[key] = tuple(m for m in _ORDER if c.where in m.where and m.played(r))
    return moves


def legal_of(c: Ctx) -> tuple[Action, ...]:
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
