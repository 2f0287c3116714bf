"""Per-credential quotas, counted by the store so that every worker of a deployment enforces
the same numbers (docs/operations.md, "Quotas"):

* ``open_streams``: streams one match credential (or operator) holds open at once;
* ``actions_per_second``: actions of one seat credential (bursts of as many);
* ``matches_created_per_minute``: CreateMatch calls of one operator (bursts of a tenth);
* ``live_matches``: an operator's matches not yet finished, cancelled or aborted;
* ``stored_bytes_per_day``: bytes of new matches an operator may store per day (about what
  one day of retention keeps of its finished matches), at most that much at once.

The API layer asks before it calls the service (streams, actions, creates); the match
service asks :meth:`Quotas.admit` just before it writes a new match (live matches and bytes,
which need the match's id and size) and tells :meth:`Quotas.ended` when a commit ends one.
A refusal is :class:`~truco_server.core.errors.QuotaExceeded` (gRPC ``RESOURCE_EXHAUSTED``
with ``google.rpc.QuotaFailure`` and ``RetryInfo``; REST 429 with ``Retry-After``), counted in
``truco_quota_exceeded_total{quota}``, and changes nothing.

The counters are the store's :class:`~truco_server.ports.quotas.QuotaCounters`: rates are a
generic cell rate algorithm per key (one script per check on Redis, batched with the other
calls of its event-loop turn); streams and live matches are leases. A stream's lease expires
:data:`STREAM_LEASE_MS` after its last renewal (every third of that while it is open), so the
streams of a worker that died free themselves. A live match's lease is released by the
commit that ends it; a lease the store still holds for a match that ended without telling
(a worker died in between) is found when the operator reaches its bound: the worker then
looks at the matches it holds, at most every :data:`RECHECK_SECONDS`, and drops the ended
ones. Keys are digests of the credential, never the secret itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import structlog
from prometheus_client import Counter

from truco_server.core import errors as E
from truco_server.core.config import Settings
from truco_server.ports.errors import StoreUnavailable
from truco_server.ports.quotas import QuotaCounters, RateCharge

log = structlog.get_logger("truco.quotas")

QUOTA_EXCEEDED = Counter(
    "truco_quota_exceeded_total",
    "Calls refused because a per-credential quota was hit, by quota.",
    ("quota",),
)

STREAMS = "open_streams"
ACTIONS = "actions_per_second"
MATCHES = "matches_created_per_minute"
LIVE = "live_matches"
BYTES = "stored_bytes_per_day"
WORKER_STREAMS = "worker_streams"
"""Not a credential's quota: the streams one worker holds open at once
(``TRUCO_MAX_STREAMS_PER_WORKER``; :class:`~truco_server.services.streams.MatchStreams`)."""

STREAM_LEASE_MS = 30_000
"""How long a stream's slot outlives the last renewal of the worker holding it."""
LIVE_LEASE_MS = 7 * 24 * 3600 * 1000
"""How long a live match's slot is kept without its end being told (a bound, not a schedule)."""
RECHECK_SECONDS = 10.0
"""Least time between two looks at an operator's live matches from one worker."""
DAY = 86_400.0


@functools.lru_cache(maxsize=4096)
def digest(credential: str) -> str:
    """What a credential is counted under: never the secret itself. Kept for the credentials
    seen last: a seat asks on each of its actions."""
    return hashlib.sha256(credential.encode()).hexdigest()[:32]


class Quotas:
    """The deployment's quotas, from the worker's settings (see the module docstring)."""

    def __init__(self, settings: Settings, counters: QuotaCounters) -> None:
        self.counters = counters
        self.max_streams = settings.quota_streams
        self.actions_per_second = settings.quota_actions_per_second
        self.matches_per_minute = settings.quota_matches_per_minute
        self.max_live = settings.quota_live_matches
        self.bytes_per_day = settings.quota_stored_bytes_per_day
        self.worker = secrets.token_hex(8)
        """This worker's part of its stream leases' names."""
        self._streams: dict[str, set[str]] = {}
        """The stream leases this worker holds, by key."""
        self._renewer: asyncio.Task[None] | None = None
        self._rechecked: dict[str, float] = {}
        self.is_live: Callable[[str], Awaitable[bool]] | None = None
        """Whether a match is still live (set by the wiring: the match service's read)."""

    async def _take(
        self, quota: str, key: str, per_second: float, burst: float, limit: str, cost: float = 1
    ) -> None:
        """Spend ``cost`` of the rate ``quota`` of ``key``, else refuse (QuotaExceeded)."""
        await self.spend(RateCharge(f"{quota}:{key}", per_second, burst, cost), quota, limit)

    async def spend(self, rate: RateCharge, quota: str, limit: str) -> None:
        """Spend ``rate`` in the store now, else refuse it as the quota ``quota`` (``limit``:
        the quota in words)."""
        wait = await self.counters.take(rate.key, rate.per_second, rate.burst, rate.cost)
        if wait > 0:
            raise self.exceeded(quota, limit, wait)

    def exceeded(self, quota: str, limit: str, wait: float) -> E.QuotaExceeded:
        """The refusal of the spent rate ``quota``, counted."""
        QUOTA_EXCEEDED.labels(quota).inc()
        return E.QuotaExceeded(quota, limit, wait)

    async def action(self, credential: str) -> None:
        """One action by a seat credential."""
        charge = self.action_charge(credential)
        if charge is not None:
            await charge.pay()

    def action_charge(self, credential: str) -> ActionCharge | None:
        """What one action by a seat credential spends (``None``: no such quota), for the
        action's commit to spend or :meth:`ActionCharge.pay` to."""
        rate = self.actions_per_second
        if rate <= 0:
            return None
        return ActionCharge(self, RateCharge(f"{ACTIONS}:{digest(credential)}", rate, max(1.0, rate)))

    @property
    def action_limit(self) -> str:
        """The quota of actions in words."""
        return f"{self.actions_per_second:g} per second"

    async def create(self, operator: str) -> None:
        """One CreateMatch by an operator (a retry of a created match counts too)."""
        rate = self.matches_per_minute
        if rate > 0:
            await self._take(MATCHES, operator, rate / 60.0, max(1.0, rate / 10), f"{rate:g} per minute")

    async def admit(self, owner: str, match_id: str, size: int) -> None:
        """A new match of ``owner`` of ``size`` bytes, about to be written (a retry of the
        same match is admitted again)."""
        if self.bytes_per_day > 0:
            per_day = self.bytes_per_day
            await self._take(BYTES, owner, per_day / DAY, per_day, f"{per_day} bytes per day", size)
        if self.max_live > 0:
            key = f"{LIVE}:{owner}"
            held = await self.counters.hold(key, match_id, self.max_live, LIVE_LEASE_MS)
            if held and await self._recheck(owner, key):
                held = await self.counters.hold(key, match_id, self.max_live, LIVE_LEASE_MS)
            if held:
                QUOTA_EXCEEDED.labels(LIVE).inc()
                raise E.QuotaExceeded(LIVE, f"{self.max_live} live matches", RECHECK_SECONDS)

    async def _recheck(self, owner: str, key: str) -> bool:
        """Release the live-match leases of ``owner``'s matches that ended: whether any was."""
        now = time.monotonic()
        if self.is_live is None or now - self._rechecked.get(owner, -RECHECK_SECONDS) < RECHECK_SECONDS:
            return False
        self._rechecked[owner] = now
        if len(self._rechecked) > 10_000:
            self._rechecked = {o: t for o, t in self._rechecked.items() if now - t < RECHECK_SECONDS}
        freed = 0
        for match_id in await self.counters.holders(key):
            if not await self.is_live(match_id):
                await self.counters.release(key, match_id)
                freed += 1
        log.info("quotas.live_rechecked", owner=owner, freed=freed)
        return freed > 0

    async def ended(self, owner: str, match_id: str) -> None:
        """A commit ended ``match_id``: its live-match slot is free."""
        if self.max_live > 0:
            try:
                await self.counters.release(f"{LIVE}:{owner}", match_id)
            except StoreUnavailable:  # found again by the next recheck
                log.warning("quotas.release_failed", match_id=match_id)

    @asynccontextmanager
    async def stream(self, credential: str) -> AsyncIterator[None]:
        """Hold one of the credential's stream slots while the stream is open."""
        if not self.max_streams:
            yield
            return
        key = f"{STREAMS}:{digest(credential)}"
        lease = f"{self.worker}:{secrets.token_hex(6)}"
        if await self.counters.hold(key, lease, self.max_streams, STREAM_LEASE_MS):
            QUOTA_EXCEEDED.labels(STREAMS).inc()
            # a slot frees when one of its streams ends: no schedule to promise, a second
            raise E.QuotaExceeded(STREAMS, f"{self.max_streams} open per credential", 1.0)
        self._streams.setdefault(key, set()).add(lease)
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew())
        try:
            yield
        finally:
            held = self._streams.get(key)
            if held is not None:
                held.discard(lease)
                if not held:
                    del self._streams[key]
            await asyncio.shield(self._release(key, lease))

    async def _release(self, key: str, lease: str) -> None:
        with contextlib.suppress(StoreUnavailable):  # it expires by itself
            await self.counters.release(key, lease)

    async def _renew(self) -> None:
        """Renew this worker's stream leases every third of their time, while it holds any."""
        while self._streams:
            await asyncio.sleep(STREAM_LEASE_MS / 3000)
            for key, leases in list(self._streams.items()):
                with contextlib.suppress(StoreUnavailable):
                    await self.counters.renew(key, sorted(leases), STREAM_LEASE_MS)

    async def close(self) -> None:
        """Stop renewing (the worker stops; its leases expire by themselves)."""
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer

    def open_streams(self) -> int:
        """Stream slots this worker holds (for tests and diagnostics)."""
        return sum(len(v) for v in self._streams.values())


@dataclass(slots=True)
class ActionCharge:
    """One action's spending of its seat's rate of actions, made once: by the action's commit
    where the store can (:attr:`rate` as the commit's ``charge``: an action that is applied
    costs no call of its own), else, and for an action that never commits (refused, or a
    retry answered from its record), by :meth:`pay`."""

    quotas: Quotas
    rate: RateCharge
    paid: bool = False

    async def pay(self) -> None:
        """Spend the rate now, unless it was spent already; QuotaExceeded when it is spent."""
        if self.paid:
            return
        self.paid = True
        await self.quotas.spend(self.rate, ACTIONS, self.quotas.action_limit)

    def refused(self, wait: float) -> E.QuotaExceeded:
        """The commit found the rate spent (and wrote nothing)."""
        self.paid = True
        return self.quotas.exceeded(ACTIONS, self.quotas.action_limit, wait)
