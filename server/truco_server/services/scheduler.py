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
import functools
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
    """Claims due items of one queue every ``tick`` seconds and handles them, at most
    ``concurrency`` at a time (see the module)."""

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
        self.concurrency = concurrency
        self._busy: set[asyncio.Task[None]] = set()
        self._handling: dict[str, asyncio.Task[None]] = {}
        """The latest handling of each item being handled."""
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._shards = list(range(queues.shards(queue)))
        random.shuffle(self._shards)  # workers start on different shards

    async def start(self) -> None:
        if self._task is None:
            self._stop.clear()
            self._task = asyncio.create_task(self._run(), name=f"truco-queue-{self.queue}")

    async def stop(self) -> None:
        """Stop claiming, and cancel the items being handled (their leases expire and they
        are claimed again, here or by another worker)."""
        task, self._task = self._task, None
        if task is not None:
            self._stop.set()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        busy = list(self._busy)
        for t in busy:
            t.cancel()
        await asyncio.gather(*busy, return_exceptions=True)

    async def _run(self) -> None:
        """Claims what is due while fewer than ``concurrency`` items are being handled,
        without waiting for those: an item that falls due while a slow one (a bot's search, a
        webhook's delivery) is handled is claimed at the next tick, or as soon as a slot frees
        when the last look filled every slot (more may be due)."""
        while not self._stop.is_set():
            full = False
            try:
                full = (await self._start_due())[1]
            except Exception:  # a store fault: log it and try again next tick
                log.exception("queue tick failed", queue=self.queue)
            if full and not self._busy:
                continue  # every slot filled and already free again: look at once
            stop = asyncio.ensure_future(self._stop.wait())
            try:
                if full:
                    await asyncio.wait(
                        {stop, *self._busy}, timeout=self.tick, return_when=asyncio.FIRST_COMPLETED
                    )
                else:
                    await asyncio.wait({stop}, timeout=self.tick)
            finally:
                stop.cancel()

    async def run_once(self) -> int:
        """One pass over the shards with due items, and the handling of what it claimed;
        returns the number of items handled."""
        started, _ = await self._start_due()
        await asyncio.gather(*started)
        return len(started)

    async def _start_due(self) -> tuple[list[asyncio.Task[None]], bool]:
        """Claims due items, as many as there are free slots, and starts handling each;
        returns those and whether they took every free slot."""
        started: list[asyncio.Task[None]] = []
        free = self.concurrency - len(self._busy)
        if free <= 0:
            return started, True
        due = set(await self.queues.due(self.queue, round(time.time() * 1000)))
        for shard in self._shards:
            if shard not in due or len(started) >= free:
                continue
            now = round(time.time() * 1000)
            claims = await self.queues.claim(
                self.queue, shard, now, self.lease_ms, min(self.batch, free - len(started))
            )
            if not claims:
                continue
            metrics.QUEUE_CLAIMS.labels(self.queue).inc(len(claims))
            for c in claims:
                metrics.QUEUE_LAG_SECONDS.labels(self.queue).observe(max(0, now - c.due) / 1000)
                task = asyncio.create_task(
                    self._one(c, self._handling.get(c.item)), name=f"truco-queue-{self.queue}-item"
                )
                self._busy.add(task)
                self._handling[c.item] = task
                task.add_done_callback(functools.partial(self._done, c.item))
                started.append(task)
        return started, len(started) >= free

    def _done(self, item: str, task: asyncio.Task[None]) -> None:
        self._busy.discard(task)
        if self._handling.get(item) is task:
            del self._handling[item]

    async def _one(self, claim: Claim, after: asyncio.Task[None] | None) -> None:
        """Handle ``claim`` once ``after`` (the same item's handling, still running when it
        fell due again: a league's pass) is over: one item is never handled twice at once."""
        if after is not None:
            await asyncio.wait({after})
        data = b""
        try:
            try:
                nxt, data = await self.handle(claim)
            except (ServiceError, StorageError):
                log.warning("queue item failed; retrying", queue=self.queue, item=claim.item, exc_info=True)
                nxt = round(time.time() * 1000) + self.retry_ms
            await self.queues.finish(self.queue, claim.item, claim.lease, nxt, data, owned=self.owned)
        except Exception:  # its lease expires and it is claimed again
            log.exception("queue item failed", queue=self.queue, item=claim.item)


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
