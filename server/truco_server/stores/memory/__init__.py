"""The in-memory adapter: all four ports in this process's memory, the embedded default of a
single worker. The same semantics as Redis (the same contract suites): atomic commits (no
``await`` between a check and its writes), request records, retention and trimming, queues
with leases, outboxes, operator streams with cursors, documents with compare-and-set.
Nothing survives a restart: use Redis for anything that must."""

from __future__ import annotations

import time
from collections.abc import Callable

from truco_server.ports.persistence import NONE, Persistence
from truco_server.ports.settings import StoreSettings
from truco_server.stores.memory.documents import MemoryDocuments
from truco_server.stores.memory.matches import MemoryMatchLog
from truco_server.stores.memory.operators import MemoryOperatorFeed
from truco_server.stores.memory.queues import MemoryQueues

__all__ = ["MemoryDocuments", "MemoryMatchLog", "MemoryOperatorFeed", "MemoryQueues", "MemoryStore"]


class MemoryStore:
    """The four ports in memory (a :class:`~truco_server.ports.Store`). ``clock`` is what
    retention and request records expire against (monotonic seconds; injectable)."""

    description = "memory"

    def __init__(self, settings: StoreSettings | None = None, *, clock: Callable[[], float] = time.monotonic):
        self.settings = settings = settings or StoreSettings()
        self.documents = MemoryDocuments()
        self.queues = MemoryQueues(self.documents)
        self.matches = MemoryMatchLog(settings, self.queues, clock, self.documents)
        self.operators = MemoryOperatorFeed(settings, self.matches)

    async def ping(self, timeout: float) -> None:
        return None  # in the worker's own memory: always there

    async def persistence(self, timeout: float) -> Persistence:
        return NONE  # nothing survives the process

    async def close(self) -> None:
        self.matches.clear()
