"""A match as the management API describes it (no hidden information)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import truco_engine as te
from truco_match.events import Fairness, MatchStatus, SeatInfo
from truco_match.lifecycle import Lifecycle


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchResult:
    """The result of a finished match."""

    winner_team: int
    scores: tuple[int, ...]
    games_won: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchInfo:
    """A match's public description (what ``GetMatch`` and ``ListMatches`` show)."""

    match_id: str
    state: MatchStatus
    """Lifecycle state (``Match.state`` on the wire)."""
    rules: te.RuleSet
    seats: tuple[SeatInfo, ...]
    version: int
    """The number of events in the match's log so far."""
    created_at: float
    updated_at: float
    """Time of the last commit (creation, an action, the cancellation)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    result: MatchResult | None = None
    """Present when the match is finished."""
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    """Clock, join window, idle timeout, disconnect grace, spectator settings."""
    fairness: Fairness | None = None
    """Where the deals come from and the seed's hash."""
    rated: bool = False
    """The result updates the players' ratings."""

    @property
    def preset(self) -> str:
        return self.rules.name
