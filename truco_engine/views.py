"""What a seat sees: the :class:`Observation` and its parts (frozen dataclasses).

Built by :func:`truco_engine.observe`; kept apart from it so that the compiled build of the
engine (``setup.py``) compiles the function and leaves these classes plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from truco_engine._fast import fast_init
from truco_engine.actions import Action
from truco_engine.enums import Phase
from truco_engine.events import CallFamily, Special


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PlayView:
    """One card of a trick as a seat sees it."""

    seat: int
    card: str | None
    """``None`` when played face down and not by the viewer."""
    face_down: bool


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TrickView:
    """One trick as a seat sees it."""

    leader: int
    plays: tuple[PlayView, ...]
    winner_seat: int | None
    winner_team: int | None
    tied: bool


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PendingCall:
    """The call (or decision) awaiting an answer."""

    family: CallFamily
    name: str
    """Last call made (``truco``, ``six``, ``real_envido``, ...; ``hand_of_eleven``)."""
    caller: int | None
    responder: int
    value_if_accepted: int
    value_if_declined: int


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """What one seat (or a spectator) sees at one moment."""

    seat: int | None
    """The observing seat; ``None`` for a spectator."""
    team: int | None
    """The observing seat's team (score holder) this hand; ``None`` for a spectator."""
    preset: str
    players: int
    phase: Phase
    """``deal`` (between hands), ``play`` or ``over`` (a :class:`Phase`, equal to those strings)."""
    game_number: int
    hand_number: int
    """0 before the first hand."""
    dealer: int
    mano: int | None
    turn_up: str | None
    """The vira (or muestra) of the hand, if the rules turn one up."""
    special: Special | None
    hand: tuple[str, ...]
    """The seat's own cards (empty for spectators and in the iron hand)."""
    hidden_hand: int
    """Own cards the seat holds but may not look at (iron hand)."""
    hand_sizes: tuple[int, ...]
    revealed: Mapping[int, tuple[str, ...]]
    """Other seats' cards the rules let this seat see (partners at the hand of eleven)."""
    tricks: tuple[TrickView, ...]
    seat_teams: tuple[int, ...]
    """The team of every seat this hand (:func:`truco_engine.seat_teams`)."""
    scores: tuple[int, ...]
    """Points in the current game, index = team."""
    games_won: tuple[int, ...]
    hand_value: int
    """What the hand is worth now (accepted calls only)."""
    pending: PendingCall | None
    awaited: tuple[int, ...]
    """Seats whose decision the game is waiting for (what a turn clock times)."""
    legal_actions: tuple[Action, ...]
    """What the observing seat may do now, whether or not the game waits for it (a truco call
    out of turn, a flor over a pending envido); empty for spectators. Never anything about
    what another seat may do."""
    decision: int
    """Identifies the decision point (actions applied so far); grows with each action."""
    winner_team: int | None
    """Winning team once the match is over."""
    carancho: int | None = None
    """Carancho: the seat playing alone against the pair this hand."""
    head_to_head: tuple[int, ...] | None = None
    """Pica-pica: the two seats playing the head-to-head sub-hand in progress."""
    hand_wins_game: bool = False
    """The hand is worth the game to its winner (the iron hand; an accepted game step of the
    truco ladder such as the Valencian joc fora): it scores what it needs to win the game,
    whatever ``hand_value`` says."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping (for logs and debugging; the wire form is ``truco.v1``)."""
        pending = self.pending
        return {
            "seat": self.seat,
            "team": self.team,
            "preset": self.preset,
            "players": self.players,
            "phase": self.phase.value,
            "game_number": self.game_number,
            "hand_number": self.hand_number,
            "dealer": self.dealer,
            "mano": self.mano,
            "turn_up": self.turn_up,
            "special": None if self.special is None else self.special.value,
            "hand": list(self.hand),
            "hidden_hand": self.hidden_hand,
            "hand_sizes": list(self.hand_sizes),
            "revealed": {str(k): list(v) for k, v in self.revealed.items()},
            "tricks": [
                {
                    "leader": t.leader,
                    "plays": [{"seat": p.seat, "card": p.card, "face_down": p.face_down} for p in t.plays],
                    "winner_seat": t.winner_seat,
                    "winner_team": t.winner_team,
                    "tied": t.tied,
                }
                for t in self.tricks
            ],
            "seat_teams": list(self.seat_teams),
            "scores": list(self.scores),
            "games_won": list(self.games_won),
            "hand_value": self.hand_value,
            "pending": None
            if pending is None
            else {
                "family": pending.family.value,
                "name": pending.name,
                "caller": pending.caller,
                "responder": pending.responder,
                "value_if_accepted": pending.value_if_accepted,
                "value_if_declined": pending.value_if_declined,
            },
            "awaited": list(self.awaited),
            "legal_actions": [a.to_dict() for a in self.legal_actions],
            "decision": self.decision,
            "winner_team": self.winner_team,
            "carancho": self.carancho,
            "head_to_head": None if self.head_to_head is None else list(self.head_to_head),
            "hand_wins_game": self.hand_wins_game,
        }
