"""The store adapters: the ports of :mod:`truco_server.ports` (match log, queues,
operator feed, documents, matchmaking tickets, quota counters) on one backend.

* :mod:`.memory` -- in this process's memory: the embedded default of one worker;
* :mod:`.redis` -- on one Redis server, a Sentinel group or a Redis Cluster;
* :mod:`.subscription` -- a subscriber of a match's events (every adapter's);
* :mod:`.paging` -- the listing's page tokens (every adapter's).

:func:`open_store` picks one from a URL. See ``docs/storage.md``.
"""

from __future__ import annotations

from truco_server.ports import Store
from truco_server.ports.settings import StoreSettings
from truco_server.stores.memory import MemoryStore
from truco_server.stores.redis import RedisStore, open_redis

__all__ = ["MemoryStore", "RedisStore", "open_store"]


def open_store(url: str | None, settings: StoreSettings | None = None) -> Store:
    """The Redis adapter for a Redis URL -- ``redis://``, ``rediss://``, ``unix://`` (one
    server), ``redis+cluster://`` (Redis Cluster), ``redis+sentinel://`` (Sentinel), ``rediss+``
    for TLS; :mod:`truco_server.core.redis_url` -- else (``None`` or empty) the in-memory
    adapter. Raises ``ValueError`` for a malformed URL."""
    settings = settings or StoreSettings()
    if url:
        return open_redis(url, settings)
    return MemoryStore(settings)
