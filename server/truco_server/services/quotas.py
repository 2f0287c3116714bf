"""Per-credential quotas of one worker: open streams, actions per second, matches created per
minute.

The API layer (:class:`truco_server.api.matches.MatchApi`) asks :class:`Quotas` before it calls
the service, so both transports enforce the same limits once; a refusal is
:class:`~truco_server.core.errors.QuotaExceeded` (gRPC ``RESOURCE_EXHAUSTED`` with
``google.rpc.QuotaFailure`` and ``RetryInfo``; REST 429 with ``Retry-After``), counted in
``truco_quota_exceeded_total{quota}``, and changes nothing.

Rates are token buckets (``rate`` tokens per second, up to ``burst``); open streams are a
count per credential. The counts live in the worker's memory: a client spread over *n*
workers by a balancer may get up to *n* times a limit (docs/operations.md, "Quotas"). Memory
is bounded: a bucket that has filled up again is forgotten (a new one starts full, so nothing
changes), which keeps only the credentials used within the last few seconds; and at most
:data:`TRACKED` credentials are remembered per quota (beyond that the least recently used is
forgotten, which can only err towards allowing).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from prometheus_client import Counter

from truco_server.core import errors as E
from truco_server.core.config import Settings
from truco_server.core.lru import Lru

QUOTA_EXCEEDED = Counter(
    "truco_quota_exceeded_total",
    "Calls refused because a per-credential quota was hit, by quota.",
    ("quota",),
)

TRACKED = 100_000
"""Credentials remembered per quota."""

STREAMS = "open_streams"
ACTIONS = "actions_per_second"
MATCHES = "matches_created_per_minute"


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RateLimit:
    """A token bucket per key: ``rate`` per second, bursts of ``burst``; ``rate`` 0 is off."""

    def __init__(
        self,
        quota: str,
        rate: float,
        burst: float,
        limit: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quota, self.rate, self.burst, self.limit = quota, rate, max(1.0, burst), limit
        self._clock = clock
        # a bucket unused for burst / rate seconds is full again: forgetting it changes nothing
        self._buckets: Lru[str, _Bucket] = Lru(
            TRACKED, idle=self.burst / rate if rate > 0 else None, clock=clock
        )

    def take(self, key: str) -> None:
        """Spend one token of ``key`` or raise :class:`~truco_server.core.errors.QuotaExceeded`."""
        if self.rate <= 0:
            return
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets.put(key, _Bucket(self.burst, now))
        else:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
            bucket.at = now
        if bucket.tokens < 1.0:
            QUOTA_EXCEEDED.labels(self.quota).inc()
            raise E.QuotaExceeded(self.quota, self.limit, (1.0 - bucket.tokens) / self.rate)
        bucket.tokens -= 1.0

    def tracked(self) -> int:
        """Credentials whose bucket is remembered (for tests and diagnostics)."""
        return len(self._buckets)


class Quotas:
    """The worker's quotas, from its settings (see the module docstring)."""

    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic) -> None:
        per_second = settings.quota_actions_per_second
        per_minute = settings.quota_matches_per_minute
        self.max_streams = settings.quota_streams
        self.actions = RateLimit(ACTIONS, per_second, per_second, f"{per_second:g} per second", clock=clock)
        self.matches = RateLimit(
            MATCHES, per_minute / 60.0, max(1.0, per_minute / 10), f"{per_minute:g} per minute", clock=clock
        )
        self._open: dict[str, int] = {}

    def action(self, credential: str) -> None:
        """One action by a seat credential."""
        self.actions.take(credential)

    def create(self, operator: str) -> None:
        """One CreateMatch by an operator (a retry of a created match counts too)."""
        self.matches.take(operator)

    def open_streams(self, credential: str) -> int:
        return self._open.get(credential, 0)

    @asynccontextmanager
    async def stream(self, credential: str) -> AsyncIterator[None]:
        """Hold one of the credential's stream slots while the stream is open."""
        held = self._open.get(credential, 0)
        if self.max_streams and held >= self.max_streams:
            QUOTA_EXCEEDED.labels(STREAMS).inc()
            # a slot frees when one of its streams ends: no schedule to promise, a second
            raise E.QuotaExceeded(STREAMS, f"{self.max_streams} open per credential", 1.0)
        self._open[credential] = held + 1
        try:
            yield
        finally:
            left = self._open[credential] - 1
            if left:
                self._open[credential] = left
            else:
                del self._open[credential]
