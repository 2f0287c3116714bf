"""Storage port of the match service and its two implementations.

* :class:`MatchStore` (:mod:`.base`) -- the async protocol: matches as opaque bytes
  (``meta``, ``state``) plus a versioned event log, atomic idempotent commits, resumable
  event reads, a per-owner listing.
* :class:`RedisMatchStore` (:mod:`.redis_store`) -- production; one Lua script per commit;
  on one Redis server, a Sentinel group or a Redis Cluster, chosen by the URL
  (:mod:`.redis_url`).
* :class:`MemoryMatchStore` (:mod:`.memory_store`) -- embedded single-process default.
* :mod:`.fanout` -- live subscriptions multiplexed on one reader per worker (one
  subscriber connection per node on a cluster).
* :mod:`.shards` -- the sharded-queue key layout for work claimed across workers.

Use :func:`open_store` to pick one from a URL. See ``docs/storage.md``.
"""

from __future__ import annotations

from typing import cast

from truco_server.ports import Store
from truco_server.ports.store import (
    LOG_TRIMMED,
    CommitResult,
    Event,
    InvalidPageToken,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchNotFound,
    MatchStore,
    Snapshot,
    StorageError,
    StoreSettings,
    StoreUnavailable,
    Subscription,
    VersionConflict,
)
from truco_server.stores.fanout import EventSubscription
from truco_server.stores.legacy import LegacyStore
from truco_server.stores.memory import MemoryMatchStore
from truco_server.stores.redis_store import RedisMatchStore, RedisStats
from truco_server.stores.shards import ShardedQueue

__all__ = [
    "LOG_TRIMMED",
    "CommitResult",
    "Event",
    "EventSubscription",
    "InvalidPageToken",
    "LogTrimmed",
    "MatchExists",
    "MatchIndexEntry",
    "MatchNotFound",
    "MatchStore",
    "MemoryMatchStore",
    "RedisMatchStore",
    "RedisStats",
    "ShardedQueue",
    "Snapshot",
    "StorageError",
    "StoreSettings",
    "StoreUnavailable",
    "Subscription",
    "VersionConflict",
    "open_store",
]


def open_store(redis_url: str | None, settings: StoreSettings | None = None) -> Store:
    """A :class:`RedisMatchStore` for a Redis URL -- ``redis://``/``rediss://``/``unix://``
    (one server), ``redis+cluster://`` (Redis Cluster), ``redis+sentinel://`` (Sentinel),
    ``rediss+...`` for TLS; see :mod:`.redis_url` -- else (``None`` or empty) the embedded
    :class:`MemoryMatchStore`. Raises ``ValueError`` for a malformed URL."""
    if redis_url:
        store = RedisMatchStore.from_url(redis_url, settings)
        return cast(Store, LegacyStore(store, f"redis {store.kind}"))
    return cast(Store, LegacyStore(MemoryMatchStore(settings), "memory"))
