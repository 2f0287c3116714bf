"""The ports: what the services need from storage, one narrow protocol per concern, each with
one contract suite every adapter (:mod:`truco_server.stores`) passes.

* :mod:`.matches` -- the match log: create, load, commit atomically, read, follow, list;
* :mod:`.queues` -- sharded work queues (clock wakeups, relays, webhook deliveries, leagues);
* :mod:`.operators` -- outboxes, operator event streams, webhooks and their delivery log;
* :mod:`.documents` -- league documents, their indexes, bot assignments;
* :mod:`.errors` -- what every adapter raises; :mod:`.settings` -- what tunes them;
* :mod:`.persistence` -- what a store keeps across a restart of its backend.

:class:`Store` is one backend's four ports, what a worker opens once.
"""

from __future__ import annotations

from typing import Protocol

from truco_server.ports.documents import Documents
from truco_server.ports.matches import MatchLog
from truco_server.ports.operators import OperatorFeed
from truco_server.ports.persistence import Persistence
from truco_server.ports.queues import Queues
from truco_server.ports.settings import StoreSettings

__all__ = ["Documents", "MatchLog", "OperatorFeed", "Persistence", "Queues", "Store", "StoreSettings"]


class Store(Protocol):
    """One backend's ports, opened once per worker (:func:`truco_server.stores.open_store`).
    Its members are read-only (an adapter's own types may stand for the ports)."""

    @property
    def matches(self) -> MatchLog: ...

    @property
    def queues(self) -> Queues: ...

    @property
    def operators(self) -> OperatorFeed: ...

    @property
    def documents(self) -> Documents: ...

    @property
    def description(self) -> str:
        """What it is, for logs and health (``memory``, ``redis standalone 127.0.0.1:6379``...)."""
        ...

    async def ping(self, timeout: float) -> None:
        """Return when the backend answers within ``timeout`` seconds (one round trip, no
        retries); raise :class:`~truco_server.ports.errors.StoreUnavailable` otherwise: the
        worker's readiness probe."""
        ...

    async def persistence(self, timeout: float) -> Persistence:
        """What the backend keeps across its restart (each Redis primary's append-only file
        and snapshot schedule), read within ``timeout`` seconds, no retries; what could not be
        read is ``unknown`` with the reason, never an error."""
        ...

    async def close(self) -> None:
        """Release connections and background tasks."""
        ...
