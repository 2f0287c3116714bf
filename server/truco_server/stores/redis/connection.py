"""The adapter's Redis clients, made from the URL, and how an operation gets through faults.

* :meth:`RedisConnection.from_url` picks redis-py's own client from the URL form
  (:mod:`truco_server.core.redis_url`): a ``Redis`` on a ``ConnectionPool`` for one server,
  ``Sentinel(...).master_for(...)`` for a Sentinel group (every new connection asks the
  sentinels for the primary), ``RedisCluster`` for a cluster. redis-py's own retries are off
  (``Retry(NoBackoff(), 0)``): this module decides.
* At most ``max_connections`` operations use the backend at once (:attr:`RedisConnection.slots`,
  a FIFO semaphore: more wait their turn), so the pools never run out; a plain pool behind a
  semaphore costs a commit 12 us less than redis-py's ``BlockingConnectionPool``, which
  waits on a condition and a timeout for every connection it hands out.
* The script batches go through lanes (:meth:`RedisConnection.lane`, :mod:`.lane`): one
  connection per server or cluster node, held, that batches in flight share.
* :meth:`RedisConnection.run` runs an operation, bounds each attempt by the URL's
  ``socket_timeout`` (an ``asyncio.timeout`` around the attempt: a paused server fails the
  attempt instead of hanging it), and retries a fault a retry may get past (:func:`retryable`,
  by the exception's type only) with jittered exponential backoff for up to
  ``StoreSettings.retry_seconds``; then :class:`~truco_server.ports.errors.StoreUnavailable`.
  A fault no retry gets past (wrong credentials, an unexpected error reply) is
  ``StoreUnavailable`` at once. No redis-py exception leaves the adapter.
* :class:`RedisStats` counts what the adapter sent: round trips (network waits), commands,
  retries, short ``WAIT``\\ s; the metrics ``truco_redis_*`` count the same in production.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff
from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    ClusterError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from truco_server.core import metrics
from truco_server.core.redis_url import RedisTarget, parse_redis_url
from truco_server.ports.errors import StoreUnavailable
from truco_server.ports.settings import StoreSettings
from truco_server.stores.redis.lane import Lane

__all__ = ["DEFAULT_SOCKET_TIMEOUT", "Kind", "RedisConnection", "RedisStats", "is_fault", "retryable"]

_T = TypeVar("_T")
Kind = Literal["standalone", "sentinel", "cluster"]

DEFAULT_SOCKET_TIMEOUT = 5.0
"""Seconds an attempt may wait for its replies (or a connection to open) unless the URL says
otherwise."""

_NO_RETRY = Retry(NoBackoff(), 0)
_SPARE_CONNECTIONS = 8
"""Connections a pool has beyond the operations' slots: for the stream hub's checks and
wake-ups, which do not take a slot."""


@dataclass(slots=True)
class RedisStats:
    """What the adapter sent to Redis: ``round_trips`` (network waits: a pipeline is one, a
    cluster pipeline one per node it reaches), ``commands``, ``retries`` after faults, and
    commits whose ``WAIT`` came back short."""

    round_trips: int = 0
    commands: int = 0
    retries: int = 0
    wait_short: int = 0

    def add(self, round_trips: int, commands: int) -> None:
        self.round_trips += round_trips
        self.commands += commands


def is_fault(exc: BaseException, kind: Kind) -> bool:
    """Whether ``exc`` is a fault of the backend (as opposed to a bug of ours): a redis-py
    error, a socket error, an attempt's timeout. On a cluster also an ``AttributeError``:
    redis-py's async cluster client raises one when its topology changes under a command
    (redis/redis-py#3835); :meth:`RedisConnection.run` only wraps redis-py's calls."""
    if isinstance(exc, RedisError | RedisClusterException | OSError | TimeoutError):
        return True
    return kind == "cluster" and isinstance(exc, AttributeError)


def retryable(exc: BaseException, kind: Kind) -> bool:
    """A fault a retry may get past: no connection, an attempt timed out, a failover in
    progress (``READONLY`` from a demoted primary, ``CLUSTERDOWN``, ``TRYAGAIN``,
    ``MASTERDOWN``, ``LOADING``, a slot without a primary, no primary to name). Not wrong
    credentials, not an error reply of another kind."""
    if isinstance(exc, AuthenticationError | AuthorizationError):
        return False
    faults = (
        RedisConnectionError,
        RedisTimeoutError,
        TimeoutError,
        OSError,
        ClusterError,
        TryAgainError,
        ReadOnlyError,
    )
    if isinstance(exc, faults):
        return True
    if isinstance(exc, SlotNotCoveredError):
        return True
    if isinstance(exc, RedisClusterException):  # no node reachable (raised from the cause)
        return isinstance(exc.__cause__, RedisConnectionError | RedisTimeoutError | OSError)
    return kind == "cluster" and isinstance(exc, AttributeError)


class Attempts:
    """The retry schedule of one operation: backoff from 25 ms doubling to 500 ms, jittered,
    until ``retry_seconds`` after the first fault."""

    __slots__ = ("_conn", "_deadline", "_delay", "_operation")

    def __init__(self, conn: RedisConnection, operation: str) -> None:
        self._conn = conn
        self._operation = operation
        self._deadline: float | None = None
        self._delay = 0.025

    async def failed(self, exc: BaseException) -> None:
        """After a fault: return when it is time to try again, or raise StoreUnavailable."""
        conn = self._conn
        if not retryable(exc, conn.kind):
            raise conn.unavailable(self._operation, exc, "failed") from exc
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + conn.settings.retry_seconds
        if now >= self._deadline:
            raise conn.unavailable(self._operation, exc, f"unavailable for {conn.settings.retry_seconds:g}s")
        conn.stats.retries += 1
        metrics.REDIS_RETRIES.labels(self._operation).inc()
        await conn.recover(exc)
        pause = min(self._delay * (0.5 + random.random()), max(0.0, self._deadline - time.monotonic()))
        await asyncio.sleep(pause)
        self._delay = min(self._delay * 2, 0.5)


class RedisConnection:
    """The clients of one Redis backend and the rules of every call to it (module docstring).

    ``client`` is redis-py's ``Redis`` (one server, a Sentinel group's primary) or
    ``RedisCluster``, made with ``decode_responses=False`` and no command timeout of its own
    (``timeout`` bounds each attempt instead)."""

    def __init__(
        self,
        client: aioredis.Redis | RedisCluster,
        settings: StoreSettings,
        *,
        kind: Kind,
        timeout: float = DEFAULT_SOCKET_TIMEOUT,
        description: str = "redis",
        node_kwargs: dict[str, Any] | None = None,
        sentinel: Sentinel | None = None,
        max_connections: int = 64,
    ) -> None:
        self.client: Any = client
        self.settings = settings
        self.kind: Kind = kind
        self.timeout = timeout
        self.description = description
        self.stats = RedisStats()
        self.slots = asyncio.Semaphore(max_connections)
        """Held by every operation of :meth:`run`, and by a script batch that ends in
        ``WAIT``, while it uses a connection of the pool (the other batches go through the
        lanes, which take none per batch)."""
        self._node_kwargs = node_kwargs or {}
        self._sentinel = sentinel
        self._refresh_lock = asyncio.Lock()
        self._refreshed_at = 0.0
        self._lanes: dict[str, Lane] = {}
        """The batches' lanes: ``""`` for one server or a Sentinel group's primary, a node's
        name on a cluster."""
        self._lane_locks: dict[str, asyncio.Lock] = {}
        """One per lane: a node slow to connect does not hold up the others' lanes."""
        self.closed = False

    @classmethod
    def from_url(cls, url: str, settings: StoreSettings, *, max_connections: int = 64) -> RedisConnection:
        """The clients for any URL form of :mod:`~truco_server.core.redis_url` (``ValueError``
        for a malformed one)."""
        target: RedisTarget = parse_redis_url(url)
        if target.kind == "cluster":
            return cls._cluster(target, settings, max_connections)
        if target.kind == "sentinel":
            return cls._sentinel_group(target, settings, max_connections)
        pool = aioredis.ConnectionPool.from_url(
            url,
            max_connections=max_connections + _SPARE_CONNECTIONS,
            decode_responses=False,
            socket_timeout=DEFAULT_SOCKET_TIMEOUT,
            socket_connect_timeout=DEFAULT_SOCKET_TIMEOUT,
            retry=_NO_RETRY,
        )
        # the URL's own socket_timeout wins; it bounds each attempt, not each socket call
        timeout = pool.connection_kwargs.get("socket_timeout") or DEFAULT_SOCKET_TIMEOUT
        pool.connection_kwargs["socket_timeout"] = None
        where = pool.connection_kwargs.get("path") or "{}:{}".format(
            pool.connection_kwargs.get("host", "localhost"), pool.connection_kwargs.get("port", 6379)
        )
        return cls(
            aioredis.Redis.from_pool(pool),
            settings,
            kind="standalone",
            timeout=float(timeout),
            description=f"redis standalone {where}",
            max_connections=max_connections,
        )

    @classmethod
    def _cluster(cls, target: RedisTarget, settings: StoreSettings, max_connections: int) -> RedisConnection:
        kwargs = target.connection_kwargs()
        timeout = float(kwargs.pop("socket_timeout") or DEFAULT_SOCKET_TIMEOUT)
        client = RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
            max_connections=max(4 * max_connections, 256),
            # a slot without a primary fails the matches in it (retried, then
            # StoreUnavailable), not the whole store
            require_full_coverage=False,
            decode_responses=False,
            retry=_NO_RETRY,
            socket_timeout=None,
            **kwargs,
        )
        nodes = ",".join(f"{h}:{p}" for h, p in target.nodes)
        return cls(
            client,
            settings,
            kind="cluster",
            timeout=timeout,
            description=f"redis cluster {nodes}",
            node_kwargs=kwargs,
        )

    @classmethod
    def _sentinel_group(
        cls, target: RedisTarget, settings: StoreSettings, max_connections: int
    ) -> RedisConnection:
        assert target.master_name is not None
        kwargs = target.connection_kwargs()
        timeout = float(kwargs.pop("socket_timeout") or DEFAULT_SOCKET_TIMEOUT)
        sentinel = Sentinel(
            list(target.nodes), sentinel_kwargs=target.sentinel_kwargs(), socket_timeout=None, **kwargs
        )
        client: aioredis.Redis = sentinel.master_for(
            target.master_name,
            max_connections=max_connections + _SPARE_CONNECTIONS,
            decode_responses=False,
            retry=_NO_RETRY,
        )
        nodes = ",".join(f"{h}:{p}" for h, p in target.nodes)
        return cls(
            client,
            settings,
            kind="sentinel",
            timeout=timeout,
            description=f"redis sentinel {target.master_name} via {nodes}",
            sentinel=sentinel,
            max_connections=max_connections,
        )

    # -- calls --------------------------------------------------------------------------

    async def run(self, operation: str, call: Callable[[], Awaitable[_T]], *, extra: float = 0.0) -> _T:
        """``call()`` (redis-py calls only: everything it raises is the backend's), each
        attempt bounded by ``timeout + extra`` seconds, again after a retryable fault until
        ``retry_seconds``; a fault becomes StoreUnavailable (module docstring)."""
        attempts: Attempts | None = None
        while True:
            if self.closed:
                raise StoreUnavailable(f"the store is closed ({operation})")
            try:
                async with self.slots, asyncio.timeout(self.timeout + extra):
                    return await call()
            except Exception as exc:
                if not is_fault(exc, self.kind):
                    raise
                if attempts is None:
                    attempts = Attempts(self, operation)
                await attempts.failed(exc)

    def attempts(self, operation: str) -> Attempts:
        """The retry schedule of an operation that runs its own attempts (a batch)."""
        return Attempts(self, operation)

    def unavailable(self, operation: str, exc: BaseException, what: str) -> StoreUnavailable:
        metrics.REDIS_UNAVAILABLE.labels(operation).inc()
        return StoreUnavailable(f"Redis {what} ({operation}): {type(exc).__name__}: {exc}")

    async def recover(self, exc: BaseException) -> None:
        """Before the next attempt after a fault: after a connection fault or a timeout,
        close the batches' lanes (they may lead to a server that is gone or no longer the
        primary); then on a cluster read the slot map again (one refresh for everyone
        failing at once), on one server or a Sentinel group close the pool's idle
        connections after such a fault (new ones ask the sentinels)."""
        lost = isinstance(exc, RedisConnectionError | OSError | TimeoutError)
        if lost:
            await self._drop_lanes(f"after a fault: {type(exc).__name__}")
        if self.kind == "cluster":
            await self.refresh_slots()
        elif lost:
            await self.client.connection_pool.disconnect(inuse_connections=False)

    async def lane(self, node: Any = None) -> Lane:
        """The connection the script batches go through (:mod:`.lane`): of one server or a
        Sentinel group's primary, or of the cluster ``node`` (redis-py's ``ClusterNode``);
        opened on first use and again after it ended."""
        key = "" if node is None else node.name
        lane = self._lanes.get(key)
        if lane is not None and lane.serving:
            return lane
        lock = self._lane_locks.get(key)
        if lock is None:
            lock = self._lane_locks[key] = asyncio.Lock()
        async with lock:
            lane = self._lanes.get(key)
            if lane is not None and lane.serving:  # opened while this caller waited
                return lane
            if lane is not None:
                del self._lanes[key]
                await lane.close("ended")
            if self.closed:
                raise StoreUnavailable("the store is closed")
            lane = await (Lane.open(self.client.connection_pool) if node is None else Lane.open_on_node(node))
            self._lanes[key] = lane
            return lane

    async def _drop_lanes(self, why: str) -> None:
        lanes, self._lanes = list(self._lanes.values()), {}
        for lane in lanes:
            await lane.close(why)

    async def refresh_slots(self) -> None:
        """Read the cluster's slot map again (coalesced: callers that wait for a refresh in
        progress do not start another one). A node that does not answer yet is fine: the
        next attempt tries again."""
        started = time.monotonic()
        async with self._refresh_lock:
            if self._refreshed_at > started:
                return  # someone refreshed while this caller waited
            try:
                async with asyncio.timeout(self.timeout):
                    await self.client.nodes_manager.initialize()
            except Exception as exc:
                if not is_fault(exc, self.kind):
                    raise
            self._refreshed_at = time.monotonic()

    # -- clients for the stream hubs ----------------------------------------------------

    def reader_client(self) -> aioredis.Redis:
        """A client with one dedicated connection and no command timeout, for the stream
        hub's blocking ``XREAD`` (one server, or the Sentinel group's primary: a connection
        that asks the sentinels for the primary whenever it reconnects)."""
        pool = self.client.connection_pool
        kwargs = {**pool.connection_kwargs, "socket_timeout": None}
        reader_pool: aioredis.ConnectionPool
        if isinstance(pool, SentinelConnectionPool):
            kwargs.pop("connection_pool", None)
            reader_pool = SentinelConnectionPool(  # type: ignore[no-untyped-call]
                pool.service_name, pool.sentinel_manager, connection_class=pool.connection_class, **kwargs
            )
        else:
            reader_pool = aioredis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
        return aioredis.Redis(connection_pool=reader_pool, single_connection_client=True)

    def node_client(self, host: str, port: int) -> aioredis.Redis:
        """A client for one cluster node's subscriber connection: no command timeout (it
        waits for messages), a health check, no reconnect of its own (the hub re-places the
        channels itself after a failure)."""
        return aioredis.Redis(
            host=host,
            port=port,
            health_check_interval=5,
            retry=_NO_RETRY,
            **{k: v for k, v in self._node_kwargs.items() if v is not None},
        )

    # -- health, end --------------------------------------------------------------------

    async def ping(self, timeout: float) -> None:
        """One ``PING`` within ``timeout`` seconds, no retries; StoreUnavailable otherwise."""
        try:
            async with asyncio.timeout(timeout):
                await self.client.ping()
        except Exception as exc:
            if not is_fault(exc, self.kind):
                raise
            raise StoreUnavailable(
                f"Redis did not answer PING within {timeout:g}s: {type(exc).__name__}"
            ) from exc

    async def close(self) -> None:
        self.closed = True
        await self._drop_lanes("the store closed")
        await self.client.aclose()
        if self._sentinel is not None:
            await self._sentinel.aclose()
