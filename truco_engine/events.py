"""Typed events emitted by every transition, and their per-seat redaction.

An event is public unless ``private_to`` names the seats entitled to its ``hidden`` fields;
every other seat (and a spectator) gets :meth:`Event.redact`'s copy, in which each hidden
field is blanked (a card becomes ``None``, a list of cards becomes its length).
Redaction happens here, in the engine, never in a transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class EventKind(StrEnum):
    """Every kind of event, with its payload fields."""

    HAND_STARTED = "hand_started"
    """game, hand, dealer, mano, turn_up (vira/muestra or null), commitment (sha256 of the
    deck order and salt, revealed at the end of the match)."""
    CARDS_DEALT = "cards_dealt"
    """seat, cards — private to that seat (to nobody in the iron hand)."""
    CARDS_SHOWN = "cards_shown"
    """seat, cards, reason — cards shown to some seats only (partners at the hand of eleven)."""
    CARDS_REVEALED = "cards_revealed"
    """seat, cards, reason — cards shown to everybody (envido or flor winner at hand end)."""
    CARD_PLAYED = "card_played"
    """seat, card (hidden from others when face down), face_down, trick."""
    CARD_DISCARDED = "card_discarded"
    """seat, card (private) — the carancho's discard."""
    HEAD_TO_HEAD_STARTED = "head_to_head_started"
    """pair (two seats), mano, index — a head-to-head sub-hand of a pica-pica round starts."""
    TRICK_ENDED = "trick_ended"
    """trick (1-based), winner (seat or null), side (or null), tied."""
    CALLED = "called"
    """seat, call (truco ladder name, envido chain name, flor...), family, value_if_accepted,
    value_if_declined, responder."""
    ANSWERED = "answered"
    """seat, family, answer (accept / decline), value."""
    ELEVEN_DECIDED = "eleven_decided"
    """seat, side, play (bool)."""
    POINTS_DECLARED = "points_declared"
    """seat, family (envido / flor), points (null: "son buenas", not shown)."""
    BET_WON = "bet_won"
    """family (envido / flor), seat, side, points."""
    FOLDED = "folded"
    """seat, side."""
    HAND_ENDED = "hand_ended"
    """side (or null when nobody scores), points, reason."""
    SCORE = "score"
    """scores (per side, current game), games (per side)."""
    GAME_ENDED = "game_ended"
    """side, games."""
    MATCH_ENDED = "match_ended"
    """side, games. The server follows it with `match_revealed` (seed and every deal) so
    anyone can verify the deals (docs/fairness.md)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One event. ``data`` holds the payload named in :class:`EventKind`."""

    kind: EventKind
    data: Mapping[str, Any]
    private_to: frozenset[int] | None = None
    """Seats that see the ``hidden`` fields; ``None`` means the whole event is public."""
    hidden: tuple[str, ...] = field(default=())
    """Payload fields blanked for seats outside ``private_to``."""

    def visible_to(self, seat: int | None) -> bool:
        """Whether ``seat`` (``None``: a spectator) sees the hidden fields."""
        return self.private_to is None or (seat is not None and seat in self.private_to)

    def redact(self, seat: int | None) -> Event:
        """The event as ``seat`` (``None``: a spectator) may see it."""
        if self.visible_to(seat):
            return self
        data = dict(self.data)
        for key in self.hidden:
            value = data.get(key)
            data[key] = len(value) if isinstance(value, list | tuple) else None
        return Event(self.kind, data, None, ())

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping (the event as stored; redact first to send it)."""
        d: dict[str, Any] = {"kind": self.kind.value, **self.data}
        if self.private_to is not None:
            d["private_to"] = sorted(self.private_to)
            d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Event:
        """Inverse of :meth:`to_dict`."""
        data = {k: v for k, v in d.items() if k not in ("kind", "private_to", "hidden")}
        private = d.get("private_to")
        return cls(
            EventKind(d["kind"]),
            data,
            None if private is None else frozenset(private),
            tuple(d.get("hidden", ())),
        )
