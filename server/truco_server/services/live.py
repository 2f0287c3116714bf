"""A worker's settings of its match service and its one cache of decoded matches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from truco_match import history as match_history
from truco_match.match import Match
from truco_server.core.lru import Lru

__all__ = ["LiveMatches", "ServiceSettings"]


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """How a worker's match service runs (``truco serve`` options, docs/operations.md)."""

    heartbeat_seconds: float = 5.0
    """A stream with nothing to say this long sends a heartbeat (with the clock)."""
    queue_size: int = 256
    """Batches a stream's subscription holds for a slow reader before it re-reads the log."""
    idle_timeout_ms: int = 24 * 3600 * 1000
    """An active match without a clock in which nothing happens this long is aborted (0:
    never), unless the match sets its own."""
    bot_think_ms: int = 1500
    """How long the server's bots think over a decision, on average, unless the match sets
    its own."""
    live_matches: int = 4096
    """Matches in play a worker keeps decoded."""
    live_idle_seconds: float = 60.0
    """A match this worker has not touched for this long leaves its cache (it may have ended
    on another worker, which this one would never learn)."""
    ended_matches: int = 256
    """Ended matches a worker keeps decoded (their last streams, records and GetMatch calls
    come soon after the end), apart from the live ones."""


class LiveMatches:
    """This worker's matches: the live ones (forgotten when idle), the recently ended ones, and
    the histories rebuilt from records (resumes from before the kept log, delayed
    spectators, records of matches in play). Values are immutable versions: a stale one costs a
    reload, never a wrong answer."""

    def __init__(self, settings: ServiceSettings, clock: Callable[[], float]) -> None:
        self.live: Lru[str, Match] = Lru(settings.live_matches, idle=settings.live_idle_seconds, clock=clock)
        self.ended: Lru[str, Match] = Lru(settings.ended_matches)
        self.histories: Lru[tuple[str, str, int], match_history.History] = Lru(64)

    def get(self, match_id: str) -> Match | None:
        hit = self.live.get(match_id)
        return hit if hit is not None else self.ended.get(match_id)

    def keep(self, match: Match) -> None:
        if match.active:
            self.live.put(match.match_id, match)
        else:
            self.live.pop(match.match_id)
            self.ended.put(match.match_id, match)

    def drop(self, match_id: str) -> None:
        self.live.pop(match_id)
        self.ended.pop(match_id)
