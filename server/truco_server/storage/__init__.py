"""Storage port of the match service and its two implementations.

* :class:`MatchStore` (:mod:`.base`) -- the async protocol: matches as opaque bytes
  (``meta``, ``state``) plus a versioned event log, atomic idempotent commits, resumable
  event reads, a per-owner listing.
* :class:`RedisMatchStore` (:mod:`.redis_store`) -- production; one Lua script per commit.
* :class:`MemoryMatchStore` (:mod:`.memory_store`) -- embedded single-process default.
* :mod:`.fanout` -- live subscriptions multiplexed on one reader per worker.

Use :func:`open_store` to pick one from a URL. See ``docs/storage.md``.
"""

from __future__ import annotations

from .base import (
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
    Subscription,
    VersionConflict,
)
from .fanout import EventSubscription
from .memory_store import MemoryMatchStore
from .redis_store import RedisMatchStore, RedisStats

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
    "Snapshot",
    "StorageError",
    "StoreSettings",
    "Subscription",
    "VersionConflict",
    "open_store",
]


def open_store(redis_url: str | None, settings: StoreSettings | None = None) -> MatchStore:
    """A :class:`RedisMatchStore` for a ``redis://``/``rediss://``/``unix://`` URL,
    else (``None`` or empty) the embedded :class:`MemoryMatchStore`."""
    if redis_url:
        return RedisMatchStore.from_url(redis_url, settings)
    return MemoryMatchStore(settings)
