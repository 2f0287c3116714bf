"""Whether the worker's store keeps its data across a restart, told once at start-up and kept
current (docs/operations.md, "Persistence").

A Redis restarted without the append-only file or RDB snapshots comes back empty: every
match, league, bot account, rating book, webhook and queued job is gone, and the workers go
on as if nothing happened. So a worker reads its store's persistence when it starts
(:meth:`truco_server.ports.Store.persistence`: each Redis primary's ``CONFIG GET appendonly``
and ``save``) and

* logs one line: ``store has no persistence`` (a warning, or info with
  ``TRUCO_EPHEMERAL_STORE_OK``) naming the nodes, what a restart loses and how to turn it on;
  ``store persistence on``; or ``store persistence could not be checked`` (info, with why:
  ``CONFIG`` renamed or refused, no answer) -- never a failure to start;
* sets the gauge ``truco_store_persistence`` (1 on, 0 off, -1 unknown);
* shows it under ``store`` in the worker's health details (REST ``GET /healthz``).

It reads it again every :data:`RECHECK_SECONDS` (a Redis restarted with another
configuration, ``CONFIG SET appendonly yes`` made at run time) and logs again only when the
answer changed. The in-memory store is never persistent: it says so once, the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from truco_server.core import metrics
from truco_server.ports import Persistence, Store

log = structlog.get_logger("truco.persistence")

RECHECK_SECONDS = 60.0
"""How often a running worker reads its store's persistence again."""
CHECK_TIMEOUT_SECONDS = 5.0
"""How long each primary has to answer (a node that does not is ``unknown`` until next time)."""
GAUGE = {"on": 1, "off": 0, "unknown": -1}

LOST = "every match, league, bot account, rating book, webhook and queued job"
FIX_REDIS = (
    "turn on the append-only file on every primary and replica: `appendonly yes` in redis.conf "
    "(at run time: CONFIG SET appendonly yes, then CONFIG REWRITE), or RDB snapshots "
    "(`save 60 1000`); docs/operations.md, Persistence"
)
FIX_MEMORY = "set REDIS_URL to a Redis with the append-only file on"
ACKNOWLEDGE = "TRUCO_EPHEMERAL_STORE_OK=1 if losing it is intended (tests, development)"


class PersistenceReport:
    """Reads the store's persistence at start-up and every :data:`RECHECK_SECONDS`, and
    reports it (module docstring) into ``details`` (the worker's health details)."""

    def __init__(
        self,
        store: Store,
        details: dict[str, Any],
        *,
        acknowledged: bool = False,
        every: float = RECHECK_SECONDS,
        timeout: float = CHECK_TIMEOUT_SECONDS,
    ) -> None:
        self.store = store
        self.details = details
        self.acknowledged = acknowledged
        self.every = every
        self.timeout = timeout
        self.last: Persistence | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Check now and every :attr:`every` seconds, in a task of its own (the worker's start
        never waits for a store that does not answer)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="truco-persistence")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            try:
                await self.check()
            except Exception:  # a bug of ours: never let it end the worker's checks
                log.exception("store persistence check failed")
            await asyncio.sleep(self.every)

    async def check(self) -> Persistence:
        """Read the store's persistence, report it, and log it if it changed."""
        found = await self.store.persistence(self.timeout)
        metrics.STORE_PERSISTENCE.set(GAUGE[found.state])
        self.details["store"] = self._detail(found)
        if self.last is None or self.last.state != found.state:
            self._log(found)
        self.last = found
        return found

    def _memory(self) -> bool:
        return self.store.description == "memory"

    def _lost(self) -> str:
        if self._memory():
            return f"stopping this worker loses {LOST}: the in-memory store lives in its process"
        return f"a restart of Redis loses {LOST}"

    def _detail(self, found: Persistence) -> dict[str, Any]:
        detail: dict[str, Any] = {"persistence": found.state, "ephemeral_ok": self.acknowledged}
        if found.state == "off":
            detail["lost_on_restart"] = self._lost()
            detail["fix"] = FIX_MEMORY if self._memory() else FIX_REDIS
        elif found.state == "unknown":
            detail["problem"] = "; ".join(n.problem for n in found.nodes if n.state == "unknown")
        return detail

    def _log(self, found: Persistence) -> None:
        store = self.store.description
        if found.state == "on":
            log.info(
                "store persistence on",
                store=store,
                persistence="on",
                aof=[n.node for n in found.nodes if n.aof],
                snapshots={n.node: n.snapshots for n in found.nodes if n.snapshots},
            )
            return
        if found.state == "unknown":
            log.info(
                "store persistence could not be checked",
                store=store,
                persistence="unknown",
                nodes={n.node: n.problem for n in found.nodes if n.state == "unknown"},
                fix=FIX_REDIS,
            )
            return
        say = log.info if self.acknowledged else log.warning
        silence = {} if self.acknowledged else {"acknowledge": ACKNOWLEDGE}
        say(
            "store has no persistence",
            store=store,
            persistence="off",
            nodes=found.nodes_in("off"),
            lost_on_restart=self._lost(),
            fix=FIX_MEMORY if self._memory() else FIX_REDIS,
            acknowledged=self.acknowledged,
            **silence,
        )
