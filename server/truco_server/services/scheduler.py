"""Readers of the store's sharded queues: the work any worker may do and exactly one does.

A :class:`QueueReader` ticks: it asks the store which shards of its queue have items due
(:meth:`MatchStore.queue_due`, one read), claims the due items of those shards
(:meth:`MatchStore.queue_claim`: a Lua script moves each to a lease, so no other worker takes
it meanwhile), hands each to its handler, and ends the claim with what the handler says
(:meth:`MatchStore.queue_finish`: the next due time, or done). A worker that dies leaves its
claims to expire and another worker claims them again.

Every worker runs these (and the league service's own):

* the **clock** (:func:`clock_reader`): matches that are due -- a clock expiry, a default
  move for an away seat, the end of a join window, an idle abort -- handled by
  :meth:`MatchService.wake_match`, each an ordinary version-checked
  commit. Exactly once: a step is fenced by the version of the match (and a clock expiry by
  the decision it times), so two workers that both handle a wakeup (a lease expired while the
  first was slow) commit it once. A wakeup is never later than the match's due time (a commit
  that makes the match due earlier registers the time first), so nothing due is missed.
* the **relay** (:func:`relay_reader`): outboxes whose operator events the worker that
  committed them did not relay and release within ``RELAY_GRACE_MS`` (it died, or its relay
  failed), handed to :meth:`truco_server.services.operators.Operators.relay`. At least once, like the
  relay itself.
* the **webhook** deliveries (:func:`webhook_reader`, :class:`truco_server.services.webhooks.Deliverer`):
  at least once; a claim is ended only by the reader that still holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Sequence

import structlog

from truco_server.core import metrics
from truco_server.core.errors import MatchNotFound, ServiceError
from truco_server.ports.errors import StorageError
from truco_server.ports.queues import CLOCK, RELAY, WEBHOOK, Claim, Queues
from truco_server.services.steps import MatchSteps
from truco_server.services.webhooks import Deliverer

log = structlog.get_logger("truco.scheduler")

MISSING_MATCH_TRIES = 10
MISSING_MATCH_RETRY_MS = 1_000
"""A wakeup of a match the store does not hold is tried this many times, this far apart."""

Handler = Callable[[Claim], Awaitable[tuple[int | None, bytes]]]
"""Does a claimed item's work; returns its next due time (ms; ``None``: done) and new data."""


class QueueReader:
    """Claims due items of one queue every ``tick`` seconds and handles them (see the module)."""

    def __init__(
        self,
        queues: Queues,
        queue: str,
        handle: Handler,
        *,
        owned: bool,
        tick: float = 0.25,
        lease_ms: int = 5_000,
        batch: int = 64,
        concurrency: int = 16,
        retry_ms: int = 1_000,
    ) -> None:
        self.queues = queues
        self.queue = queue
        self.handle = handle
        self.owned = owned
        self.tick = tick
        self.lease_ms = lease_ms
        self.batch = batch
        self.retry_ms = retry_ms
        self._limit = asyncio.Semaphore(concurrency)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._shards = list(range(queues.shards(queue)))
        random.shuffle(self._shards)  # workers start on different shards

    async def start(self) -> None:
        if self._task is None:
            self._stop.clear()
            self._task = asyncio.create_task(self._run(), name=f"truco-queue-{self.queue}")

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
                log.exception("queue tick failed", queue=self.queue)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.tick)

    async def run_once(self) -> int:
        """One pass over the shards with due items; returns the number of items handled."""
        handled = 0
        due = set(await self.queues.due(self.queue, round(time.time() * 1000)))
        for shard in self._shards:
            if shard not in due:
                continue
            now = round(time.time() * 1000)
            claims = await self.queues.claim(self.queue, shard, now, self.lease_ms, self.batch)
            if not claims:
                continue
            metrics.QUEUE_CLAIMS.labels(self.queue).inc(len(claims))
            for c in claims:
                metrics.QUEUE_LAG_SECONDS.labels(self.queue).observe(max(0, now - c.due) / 1000)
            await asyncio.gather(*(self._one(c) for c in claims))
            handled += len(claims)
        return handled

    async def _one(self, claim: Claim) -> None:
        async with self._limit:
            data = b""
            try:
                nxt, data = await self.handle(claim)
            except (ServiceError, StorageError):
                log.warning("queue item failed; retrying", queue=self.queue, item=claim.item, exc_info=True)
                nxt = round(time.time() * 1000) + self.retry_ms
            await self.queues.finish(self.queue, claim.item, claim.lease, nxt, data, owned=self.owned)


def clock_reader(steps: MatchSteps, queues: Queues, *, tick: float = 0.25) -> QueueReader:
    """The reader of the match wakeups (the clock, abandonment, relays)."""

    async def wake(claim: Claim) -> tuple[int | None, bytes]:
        try:
            nxt = await steps.wake_match(claim.item)
        except MatchNotFound:
            # A match's wakeup is registered before its creation commits (so that a worker
            # dying in between loses nothing): a reader may get there first. Look again a
            # few times before dropping the wakeup of a match that is not there.
            misses = int(claim.data or b"0") + 1
            if misses > MISSING_MATCH_TRIES:
                return None, b""
            return round(time.time() * 1000) + MISSING_MATCH_RETRY_MS, str(misses).encode()
        return nxt, (b"0" if claim.data not in (b"", b"0") else b"")

    return QueueReader(queues, CLOCK, wake, owned=False, tick=tick)


def relay_reader(
    relay: Callable[[Sequence[str]], Awaitable[list[str]]], queues: Queues, *, tick: float = 0.25
) -> QueueReader:
    """The reader of the outboxes left to relay (``MatchService`` queues each commit's);
    ``relay`` is :meth:`truco_server.services.operators.Operators.relay`."""

    async def handle(claim: Claim) -> tuple[int | None, bytes]:
        if await relay([claim.item]):  # another relay holds the outbox: look again soon
            return round(time.time() * 1000) + 1_000, b""
        return None, b""

    return QueueReader(queues, RELAY, handle, owned=False, tick=tick)


def webhook_reader(deliverer: Deliverer, queues: Queues, *, tick: float = 0.25) -> QueueReader:
    """The reader of the webhook deliveries. Its lease outlasts a delivery's timeout, so a
    claim expires only when its worker died (then another sends it again)."""
    lease = round(deliverer.timeout * 1000) + 2_000
    return QueueReader(queues, WEBHOOK, deliverer.handle, owned=True, tick=tick, lease_ms=lease)
