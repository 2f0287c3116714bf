"""The worker's scheduler: claims the matches that are due and does what is due in them.

Every worker runs one. Each tick it claims, shard by shard, the matches whose wakeup has come
(:meth:`MatchStore.queue_claim` on the ``clock`` queue: a Lua script moves each to a lease,
so no other worker takes it meanwhile), asks the service to do what is due
(:meth:`MatchService.wake_match`: a clock expiry, a default move for an away seat, the end
of a join window, an idle abort, each an ordinary version-checked commit), and sets the next
wakeup (:meth:`MatchStore.queue_finish`).

Exactly once: a step is fenced by the version of the match (and a clock expiry by the decision
it times), so two workers that both handle a wakeup (a lease expired while the first was slow)
commit it once; a worker that dies mid-step leaves its lease to expire and another worker
claims the match again. A wakeup is never later than the match's due time (every commit
registers its due time first), so nothing due is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

import structlog

from truco_server import metrics
from truco_server.errors import ServiceError
from truco_server.service import MatchService
from truco_server.storage import MatchStore, StorageError
from truco_server.storage.base import CLOCK

log = structlog.get_logger("truco.scheduler")


class Scheduler:
    """Claims due matches every ``tick`` seconds and handles them (see the module)."""

    def __init__(
        self,
        service: MatchService,
        store: MatchStore,
        *,
        tick: float = 0.25,
        lease_ms: int = 5_000,
        batch: int = 64,
        concurrency: int = 16,
        retry_ms: int = 1_000,
    ) -> None:
        self.service = service
        self.store = store
        self.tick = tick
        self.lease_ms = lease_ms
        self.batch = batch
        self.retry_ms = retry_ms
        self._limit = asyncio.Semaphore(concurrency)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._shards = list(range(store.queue_shards(CLOCK)))
        random.shuffle(self._shards)  # workers start on different shards

    async def start(self) -> None:
        if self._task is None:
            self._stop.clear()
            self._task = asyncio.create_task(self._run(), name="truco-scheduler")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            self._stop.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while not self._stop.is_set():
            try:
                await self.run_once()
            except Exception:  # a store fault: log it and try again next tick
                log.exception("scheduler tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.tick)

    async def run_once(self) -> int:
        """One pass over every shard; returns the number of matches handled."""
        handled = 0
        due = set(await self.store.queue_due(CLOCK, round(time.time() * 1000)))
        for shard in self._shards:
            if shard not in due:
                continue
            now = round(time.time() * 1000)
            claims = await self.store.queue_claim(CLOCK, shard, now, self.lease_ms, self.batch)
            if not claims:
                continue
            metrics.SCHEDULER_WAKEUPS.inc(len(claims))
            for c in claims:
                metrics.SCHEDULER_LAG_SECONDS.observe(max(0, now - c.due) / 1000)
            await asyncio.gather(*(self._one(c.item, c.lease) for c in claims))
            handled += len(claims)
        return handled

    async def _one(self, match_id: str, lease: int) -> None:
        async with self._limit:
            try:
                nxt = await self.service.wake_match(match_id)
            except (ServiceError, StorageError):
                log.warning("wakeup failed; retrying", match_id=match_id, exc_info=True)
                nxt = round(time.time() * 1000) + self.retry_ms
            await self.store.queue_finish(CLOCK, match_id, lease, nxt)
