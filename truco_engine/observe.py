"""Per-seat observations: the only thing a player (or spectator) ever sees of a match.

:func:`observe` returns what ``seat`` is entitled to: its own hand, the public table, tricks
(face-down cards only to whoever played them), scores, the hand's value, the pending call,
whose turn it is, its legal actions, and what the rules reveal (partners' cards at the hand
of eleven). ``seat=None`` is a spectator: public information only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from truco_engine.actions import Action
from truco_engine.engine import legal_actions, to_act
from truco_engine.flor import bet_values
from truco_engine.state import MatchState

PlayView = tuple[int, str | None, bool]
"""(seat, card or None when face down and not yours, face_down)."""


@dataclass(frozen=True, slots=True)
class TrickView:
    """One trick as a seat sees it."""

    leader: int
    plays: tuple[PlayView, ...]
    winner: int | None
    side: int | None
    tied: bool


@dataclass(frozen=True, slots=True)
class PendingCall:
    """The call awaiting an answer."""

    family: str
    """``truco``, ``envido``, ``flor`` or ``hand_of_eleven``."""
    call: str
    """Last call made (``truco``, ``six``, ``real_envido``, …)."""
    caller: int | None
    responder: int
    value_if_accepted: int
    value_if_declined: int


@dataclass(frozen=True, slots=True)
class Observation:
    """What one seat sees at one moment."""

    seat: int | None
    """The observing seat; ``None`` for a spectator."""
    side: int | None
    """The observing seat's side (team); ``None`` for a spectator."""
    preset: str
    players: int
    phase: str
    """``deal`` (between hands), ``play`` or ``over``."""
    game: int
    hand_number: int
    dealer: int
    mano: int | None
    turn_up: str | None
    """The vira (or muestra) of the hand, if the rules turn one up."""
    special: str | None
    """``eleven`` (hand of eleven), ``iron`` (iron hand) or ``None``."""
    hand: tuple[str, ...]
    """The seat's own cards (empty for spectators and in the iron hand)."""
    hidden_hand: int
    """Own cards the seat holds but may not look at (iron hand)."""
    hand_sizes: tuple[int, ...]
    revealed: dict[int, tuple[str, ...]]
    """Other seats' cards the rules let this seat see (partners at the hand of eleven)."""
    tricks: tuple[TrickView, ...]
    scores: tuple[int, ...]
    games: tuple[int, ...]
    hand_value: int
    """What the hand is worth now (accepted calls only)."""
    pending: PendingCall | None
    to_act: tuple[int, ...]
    legal_actions: tuple[Action, ...]
    decision: int
    """Identifies the decision point (the server's deadline slot); grows with each action."""
    winner: int | None
    """Winning side once the match is over."""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping."""
        pending = self.pending
        return {
            "seat": self.seat,
            "side": self.side,
            "preset": self.preset,
            "players": self.players,
            "phase": self.phase,
            "game": self.game,
            "hand_number": self.hand_number,
            "dealer": self.dealer,
            "mano": self.mano,
            "turn_up": self.turn_up,
            "special": self.special,
            "hand": list(self.hand),
            "hidden_hand": self.hidden_hand,
            "hand_sizes": list(self.hand_sizes),
            "revealed": {str(k): list(v) for k, v in self.revealed.items()},
            "tricks": [
                {
                    "leader": t.leader,
                    "plays": [{"seat": p[0], "card": p[1], "face_down": p[2]} for p in t.plays],
                    "winner": t.winner,
                    "side": t.side,
                    "tied": t.tied,
                }
                for t in self.tricks
            ],
            "scores": list(self.scores),
            "games": list(self.games),
            "hand_value": self.hand_value,
            "pending": None
            if pending is None
            else {
                "family": pending.family,
                "call": pending.call,
                "caller": pending.caller,
                "responder": pending.responder,
                "value_if_accepted": pending.value_if_accepted,
                "value_if_declined": pending.value_if_declined,
            },
            "to_act": list(self.to_act),
            "legal_actions": [a.to_dict() for a in self.legal_actions],
            "decision": self.decision,
            "winner": self.winner,
            **({"extra": self.extra} if self.extra else {}),
        }


def observe(state: MatchState, seat: int | None) -> Observation:
    """The observation of ``seat`` (``None``: a spectator)."""
    r = state.rules
    h = state.hand
    side = None
    if seat is not None:
        if not 0 <= seat < r.players:
            raise ValueError(f"seat {seat} does not exist; seats are 0..{r.players - 1}")
        side = seat % 2 if r.play_mode == "teams" else seat
    if h is None:
        return Observation(
            seat,
            side,
            r.name,
            r.players,
            state.phase,
            state.game,
            0,
            state.dealer,
            None,
            None,
            None,
            (),
            0,
            (0,) * r.players,
            {},
            (),
            tuple(state.scores),
            tuple(state.games),
            r.base_value,
            None,
            (),
            (),
            state.actions,
            state.winner,
        )
    own: tuple[str, ...] = ()
    hidden = 0
    if seat is not None:
        if h.blind:
            hidden = len(h.cards[seat])
        else:
            own = tuple(h.cards[seat])
    revealed: dict[int, tuple[str, ...]] = {}
    if h.special == "eleven" and side == h.eleven_side and not h.over:
        for x in h.order:
            if x != seat and h.side_of[x] == side:
                revealed[x] = tuple(h.cards[x])
    tricks = tuple(
        TrickView(
            t.leader,
            tuple((x, c if (not d or x == seat) else None, d) for x, c, d in t.plays),
            t.winner,
            t.side,
            t.tied,
        )
        for t in h.tricks
    )
    pending: PendingCall | None = None
    if state.phase == "play":
        if h.eleven_decider is not None:
            pending = PendingCall(
                "hand_of_eleven",
                "hand_of_eleven",
                None,
                h.eleven_decider,
                r.hand_of_eleven_value,
                r.hand_of_eleven_refusal,
            )
        elif h.bet is not None:
            b = h.bet
            accepted, declined = bet_values(state, b)
            pending = PendingCall(b.family, b.chain[-1], b.caller, b.responder, accepted, declined)
        elif h.truco is not None:
            c = h.truco
            pending = PendingCall(
                "truco", c.chain[-1], c.caller, c.responder, r.truco_ladder[c.level], h.value
            )
    acting = to_act(state)
    legal = tuple(legal_actions(state, seat)) if seat is not None and seat in acting else ()
    extra: dict[str, Any] = {}
    if r.play_mode == "carancho":
        extra["carancho"] = h.mano
        extra["sides"] = list(h.side_of)
    elif len(h.order) == 2 and r.players > 2:
        extra["head_to_head"] = list(h.order)
    return Observation(
        seat,
        side,
        r.name,
        r.players,
        state.phase,
        state.game,
        h.number,
        h.dealer,
        h.mano,
        h.turn_up,
        h.special or None,
        own,
        hidden,
        tuple(len(c) for c in h.cards),
        revealed,
        tricks,
        tuple(state.scores),
        tuple(state.games),
        h.value,
        pending,
        acting,
        legal,
        state.actions,
        state.winner,
        extra,
    )
