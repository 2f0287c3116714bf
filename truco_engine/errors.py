"""Errors raised by the engine: a small hierarchy of :class:`ValueError` subclasses.

Every message names what was wrong; an illegal action also lists what is legal now.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from truco_engine.actions import Action


class TrucoError(ValueError):
    """Base class of every error the engine raises on bad input."""


class InvalidCardError(TrucoError):
    """A card code that is not a card of the deck in use (``card`` is the code given)."""

    def __init__(self, message: str, card: object = None) -> None:
        super().__init__(message)
        self.card = card


class InvalidRulesError(TrucoError):
    """A rule set whose fields do not form a valid combination.

    ``field`` names the offending field; the message lists the allowed values.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class UnknownPresetError(InvalidRulesError):
    """A preset name that is not registered."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__("preset", f"unknown preset {name!r}; known presets: {', '.join(known)}")
        self.name = name


class InvalidDeckError(TrucoError):
    """A deck order for a deal that is not a permutation of the rule set's deck."""


class IllegalActionError(TrucoError):
    """An action that the rules do not allow now.

    ``reason`` explains why; ``legal`` lists the actions legal for that seat now.
    """

    def __init__(self, reason: str, legal: Sequence[Action] = ()) -> None:
        self.reason = reason
        self.legal = tuple(legal)
        listed = ", ".join(a.text() for a in self.legal) or "none"
        super().__init__(f"{reason}; legal now: {listed}")


class NotYourTurnError(IllegalActionError):
    """A seat took an action that is not its to take now: the game waits for another seat's
    decision (``to_act``), or for a deal. ``legal`` lists what this seat may still do now
    out of turn (often nothing)."""

    def __init__(self, seat: int, to_act: Sequence[int], legal: Sequence[Action] = ()) -> None:
        self.seat = seat
        self.to_act = tuple(to_act)
        who = ", ".join(str(s) for s in to_act) if to_act else "nobody (a deal is awaited)"
        super().__init__(f"seat {seat} may not act now; to act: {who}", legal)


class MatchOverError(IllegalActionError):
    """An action or deal after the match has ended."""

    def __init__(self) -> None:
        super().__init__("the match is over")


class RecordError(TrucoError):
    """A match record or serialized state that cannot be read."""
