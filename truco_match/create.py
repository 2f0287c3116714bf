"""What a creator asks for when it creates a match: the rules (a preset and overrides), the
seats, where the deals come from, the labels and the lifecycle settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from truco_match.events import SeatKind
from truco_match.lifecycle import Lifecycle


@dataclass(frozen=True, slots=True)
class SeatSpec:
    """A seat as its creator describes it."""

    name: str = ""
    kind: SeatKind = SeatKind.HUMAN


@dataclass(frozen=True, slots=True)
class MatchSpec:
    """A match as its creator asks for it (checked when the match is created)."""

    preset: str = "paulista"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Rule set fields that differ from the preset's."""
    players: int | None = None
    seats: tuple[SeatSpec, ...] = ()
    seed: bytes | None = None
    """The creator's seed (16 to 64 bytes) instead of the server's: visible as such to every seat."""
    deck_orders: tuple[tuple[str, ...], ...] = ()
    """Explicit deck orders of the first hands (visible as such to every seat)."""
    first_dealer: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    """Free-form labels of the creator (a tournament or table id); returned, not interpreted."""
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    """Clock, join window, idle timeout, disconnect grace, spectator settings (an idle
    timeout of 0 takes the server's default)."""
    client_seed: bytes = b""
    """The creator's entropy, mixed into every deal."""
