"""The Redis adapter: the four ports on one Redis server, a Sentinel group or a Redis
Cluster, chosen by the URL (:func:`open_redis`)."""

from __future__ import annotations

from typing import Any

from truco_server.ports.persistence import Persistence
from truco_server.ports.settings import StoreSettings
from truco_server.stores.redis.batch import ScriptBatcher
from truco_server.stores.redis.connection import Kind, RedisConnection, RedisStats
from truco_server.stores.redis.documents import RedisDocuments
from truco_server.stores.redis.guards import Guards
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.matches import RedisMatchLog
from truco_server.stores.redis.operators import RedisOperatorFeed
from truco_server.stores.redis.persistence import read_persistence
from truco_server.stores.redis.queues import RedisQueues

__all__ = ["RedisStore", "open_redis"]


class RedisStore:
    """The four ports on one Redis backend (a :class:`~truco_server.ports.Store`), sharing
    its clients (:class:`~.connection.RedisConnection`) and one script batcher
    (:class:`~.batch.ScriptBatcher`)."""

    def __init__(self, conn: RedisConnection, *, prefix: str = "truco", hub_block_ms: int = 1000) -> None:
        s = conn.settings
        self.settings = s
        self.connection = conn
        self.keys = Keys(prefix, queue_shards=s.queue_shards, owner_index_shards=s.owner_index_shards)
        self._batcher = ScriptBatcher(conn)
        guards = Guards(conn, self.keys, self._batcher)
        self.matches = RedisMatchLog(conn, self.keys, self._batcher, guards, hub_block_ms=hub_block_ms)
        self.queues = RedisQueues(conn, self.keys, self._batcher, guards)
        self.operators = RedisOperatorFeed(conn, self.keys, self._batcher)
        self.documents = RedisDocuments(conn, self.keys, self._batcher, guards)

    @property
    def description(self) -> str:
        return self.connection.description

    @property
    def kind(self) -> Kind:
        """``standalone``, ``sentinel`` or ``cluster``."""
        return self.connection.kind

    @property
    def stats(self) -> RedisStats:
        """Round trips, commands, retries and short WAITs sent so far (benchmarks, tests)."""
        return self.connection.stats

    @property
    def client(self) -> Any:
        """redis-py's client (``Redis`` or ``RedisCluster``): for tests and tools only."""
        return self.connection.client

    async def ping(self, timeout: float) -> None:
        await self.connection.ping(timeout)

    async def persistence(self, timeout: float) -> Persistence:
        return await read_persistence(self.connection, timeout)

    async def close(self) -> None:
        await self.matches.close()
        await self._batcher.close()
        await self.connection.close()


def open_redis(
    url: str,
    settings: StoreSettings | None = None,
    *,
    hub_block_ms: int = 1000,
    max_connections: int = 64,
    prefix: str = "truco",
) -> RedisStore:
    """The Redis adapter for any URL form of :mod:`truco_server.core.redis_url` (``ValueError``
    for a malformed one). Nothing connects until the first operation."""
    conn = RedisConnection.from_url(url, settings or StoreSettings(), max_connections=max_connections)
    return RedisStore(conn, prefix=prefix, hub_block_ms=hub_block_ms)
