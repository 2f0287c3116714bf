"""The in-memory :class:`~truco_server.ports.quotas.QuotaCounters`: the counters of a single
worker (what Redis shares between workers). A rate is its theoretical arrival time (the
generic cell rate algorithm); a key whose allowance is full again is as good as absent and is
forgotten, and at most :data:`TRACKED` keys are kept (beyond that the least recently used is
forgotten, which can only err towards allowing)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

__all__ = ["TRACKED", "MemoryQuotaCounters"]

TRACKED = 100_000
"""Rate keys remembered."""
EPSILON = 1e-6
"""A wait shorter than this (seconds) is rounding: granted (Redis uses the same)."""


class MemoryQuotaCounters:
    """Rates and leases in this process (see the module docstring); ``clock`` in seconds."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._tat: OrderedDict[str, float] = OrderedDict()
        """Per rate key, when its allowance is full again (least recently taken first)."""
        self._held: dict[str, dict[str, float]] = {}
        """Per lease key, each holder's expiry."""

    async def take(self, key: str, per_second: float, burst: float, cost: float = 1.0) -> float:
        now = self._clock()
        tats = self._tat
        tat = max(tats.get(key, now), now) + cost / per_second
        wait = tat - now - burst / per_second
        if wait > EPSILON:
            return wait
        tats[key] = tat
        tats.move_to_end(key)
        for _ in range(2):  # forget a key or two whose allowance is full again
            oldest = next(iter(tats))
            if tats[oldest] > now:
                break
            del tats[oldest]
        if len(tats) > TRACKED:
            tats.popitem(last=False)
        return 0.0

    def tracked(self) -> int:
        """Rate keys remembered (for tests)."""
        return len(self._tat)

    def _live(self, key: str) -> dict[str, float]:
        now = self._clock()
        held = self._held.get(key, {})
        for holder in [h for h, until in held.items() if until <= now]:
            del held[holder]
        return held

    async def hold(self, key: str, holder: str, limit: int, ttl_ms: int) -> int:
        held = self._live(key)
        if holder not in held and len(held) >= limit:
            return len(held)
        held[holder] = self._clock() + ttl_ms / 1000
        self._held[key] = held
        return 0

    async def renew(self, key: str, holders: Sequence[str], ttl_ms: int) -> None:
        held = self._live(key)
        until = self._clock() + ttl_ms / 1000
        for holder in holders:
            if holder in held:
                held[holder] = until

    async def release(self, key: str, holder: str) -> None:
        held = self._live(key)
        held.pop(holder, None)
        if not held:
            self._held.pop(key, None)

    async def holders(self, key: str) -> list[str]:
        held = self._live(key)
        if not held:
            self._held.pop(key, None)
        return sorted(held)
