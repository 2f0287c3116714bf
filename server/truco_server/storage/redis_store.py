"""Redis :class:`~.base.MatchStore` (production): one Lua script per commit, on one Redis
server, a Sentinel group's primary, or a Redis Cluster.

Key layout -- every key of a match shares the hash tag ``{<match_id>}`` so a script may
touch them all on Redis Cluster (they are in one slot)::

    truco:{<match_id>}:match            hash    version, state, meta, status, owner,
                                                created_at, updated_at, sort_key, summary,
                                                head (the token of the last commit)
    truco:{<match_id>}:events           stream  entry id "<version>-0", field "e" = event
    truco:{<match_id>}:req              hash    request_id -> "<version after commit>:<reply>";
                                                EXPIRE settings.request_ttl_seconds after
                                                each record (retention once terminal)
    truco:{<match_id>}:live             channel (Redis Cluster only) sharded pub/sub: each
                                                commit's events, for the stream hubs
    truco:owner:{<owner>}:matches       zset    the owner's index, shard 0 of
    truco:owner:{<owner>@<k>}:matches@<k>       settings.owner_index_shards (k >= 1), by a
                                                hash of the match id; all scores 0, members
                                                "<sort_key>" (= zero-padded created ms ":" id)

Because stream ids are derived from versions, ``XRANGE <v>-0 +`` reads exactly from
version ``v`` and ``XREAD`` resumes from any version.

Idempotency records of a match share one small hash (Redis keeps it as a compact
listpack: about 35 bytes per record with short request ids, against about 120 for a
string key per request); its TTL is renewed by every record, so a record lives at least
``request_ttl_seconds`` (longer while the match keeps being played).

Atomicity: :meth:`RedisMatchStore.commit` is one ``EVALSHA`` of :data:`COMMIT_LUA` (a
script runs without interleaving on the server). In order it: fails if the match hash is
missing; returns the recorded reply if the request id is recorded (writes nothing); fails
with the current version if it differs from the expected one, or if the commit token
(``head``) of that version is not the one this store last saw for it (writes nothing);
then ``XADD``\\ s each event with ``MAXLEN = settings.max_events``, writes version, state,
status and a new head into the hash, records the request id and renews the record hash's
TTL, and -- when the new status is terminal -- ``EXPIRE``\\ s the hash, the stream and the
records with ``settings.retention_seconds``. On Redis Cluster it also ``SPUBLISH``\\ es the
events on the match's channel (the doorbell of :class:`~.fanout.ClusterStreamHub`).

The head makes the version check safe across a failover: a replica promoted before it
received the last commits is behind, and the next commits reuse those versions for other
states; a worker still holding one of the lost states carries that state's head, which
the stored head no longer matches, so its commit conflicts (and it reloads) instead of
writing on top of a state it never saw.

The hot path (one commit per action) packs ``EVALSHA`` itself and sends it on one pooled
connection of the node that holds the match: the client's pool for one server or a
Sentinel group, the cluster client's connection to the slot's primary for a cluster (from
its slot map). ``NOSCRIPT`` (a restart, a failover, a new primary) loads the script on that
same connection and runs it again; ``MOVED``/``ASK`` (a slot moved) update the slot map or
ask the other node; with ``settings.wait_replicas`` a ``WAIT`` follows on the same
connection, in the same write. Any connection error, failover or cluster without a primary
for the key is retried for up to ``settings.retry_seconds`` (then
:class:`~.base.StoreUnavailable`): re-sending a commit is safe, its request id or its
version check stop a second application.

Creation is a ``ZADD NX`` on one shard of the owner index followed by :data:`CREATE_LUA`.
The index lives in another slot (per owner and shard), so it is not in the script; it is
written *first* so a created match is always listed, and :meth:`list_matches` skips (and
lazily removes) members whose match hash is missing or belongs to another creation.

Round trips per operation (counted in :attr:`RedisMatchStore.stats`): commit 1, load 1,
read_events 1 (pipelined ``EXISTS`` + ``XRANGE``), create 2, wait_events 1 when events are
waiting, else 1 + one ``XREAD BLOCK`` per 2 s slice, list_matches 2 per scanned batch (on a
cluster the pipelines are split by node and sent in parallel).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import heapq
import itertools
import math
import os
import random
import secrets
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import Connection, SSLConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff
from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthorizationError,
    ClusterError,
    MovedError,
    NoScriptError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from truco_server import metrics
from truco_server.lru import Lru

from .base import (
    CommitResult,
    Event,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchNotFound,
    Snapshot,
    StoreSettings,
    StoreUnavailable,
    VersionConflict,
    check_page_size,
    decode_page_token,
    encode_page_token,
)
from .fanout import ClusterStreamHub, EventSubscription, RedisStreamHub, _parse_xread, version_of
from .redis_url import RedisTarget, parse_redis_url

_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])
_T = TypeVar("_T")


def _timed(operation: str) -> Callable[[_F], _F]:
    """Record the wall time of a store operation in ``truco_redis_seconds`` (one label per
    operation, its child made once)."""
    child = metrics.REDIS_SECONDS.labels(operation)

    def decorate(method: _F) -> _F:
        @functools.wraps(method)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            finally:
                child.observe(time.perf_counter() - start)

        return cast(_F, timed)

    return decorate


__all__ = ["COMMIT_LUA", "CREATE_LUA", "MatchKeys", "RedisMatchStore", "RedisStats"]

EVENT_FIELD = b"e"

CREATE_LUA = """
-- KEYS: match hash, events stream
-- ARGV: meta, state, status, owner, created_at, sort_key, summary, maxlen,
--       retention_ttl (0 = none), head, n_events, events...
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('DEL', KEYS[2])
local n = tonumber(ARGV[11])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[8], i .. '-0', 'e', ARGV[11 + i])
end
redis.call('HSET', KEYS[1], 'version', n, 'state', ARGV[2], 'meta', ARGV[1],
           'status', ARGV[3], 'owner', ARGV[4], 'created_at', ARGV[5],
           'updated_at', ARGV[5], 'sort_key', ARGV[6], 'summary', ARGV[7], 'head', ARGV[10])
local ttl = tonumber(ARGV[9])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  if n > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
end
return n
"""

COMMIT_LUA = """
-- KEYS: match hash, events stream, request records hash
-- ARGV: expected_version, state, request_id ('' = none), reply, request_ttl, maxlen,
--       status ('' = unchanged), retention_ttl (0 = status not terminal), updated_at,
--       summary ('' = unchanged), expected head ('' = not checked), new head,
--       doorbell channel ('' = none), n_events, events...
-- Returns {0, new_version} | {1, recorded "<version>:<reply>"} | {2, current_version}
--       | {3} when the match does not exist.
if redis.call('EXISTS', KEYS[1]) == 0 then return {3} end
if ARGV[3] ~= '' then
  local prev = redis.call('HGET', KEYS[3], ARGV[3])
  if prev then return {1, prev} end
end
local cur = tonumber(redis.call('HGET', KEYS[1], 'version'))
if cur ~= tonumber(ARGV[1]) then return {2, cur} end
if ARGV[11] ~= '' then
  local head = redis.call('HGET', KEYS[1], 'head')
  if head and head ~= ARGV[11] then return {2, cur} end
end
local n = tonumber(ARGV[14])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[6], (cur + i) .. '-0', 'e', ARGV[14 + i])
end
local newv = cur + n
redis.call('HSET', KEYS[1], 'version', newv, 'state', ARGV[2], 'updated_at', ARGV[9], 'head', ARGV[12])
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'status', ARGV[7]) end
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'summary', ARGV[10]) end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[3], newv .. ':' .. ARGV[4])
  redis.call('EXPIRE', KEYS[3], ARGV[5])
end
local ttl = tonumber(ARGV[8])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
  redis.call('EXPIRE', KEYS[3], ttl)
end
if ARGV[13] ~= '' and n > 0 then
  local lens, evs = {}, {}
  for i = 1, n do
    evs[i] = ARGV[14 + i]
    lens[i] = string.len(evs[i])
  end
  redis.call('SPUBLISH', ARGV[13], cur .. ':' .. table.concat(lens, ',') .. ':' .. table.concat(evs))
end
return {0, newv}
"""


@dataclass(frozen=True, slots=True)
class Lua:
    """A script and its SHA1 (what ``EVALSHA`` names it by)."""

    body: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.body.encode()).hexdigest())


_CREATE = Lua(CREATE_LUA)
_COMMIT = Lua(COMMIT_LUA)


def pack_command(*args: bytes | str | int) -> bytes:
    """One command in the Redis protocol (an array of bulk strings).

    redis-py's own packer handles every argument type and large values in chunks; the
    commit sends the same small set of types on every action, and packing them here costs
    a tenth as much (about 3 against 30 microseconds for a commit)."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        raw = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%b\r\n" % (len(raw), raw))
    return b"".join(parts)


_ASKING = pack_command("ASKING")


@dataclass(frozen=True, slots=True)
class MatchKeys:
    """Names of the Redis keys of one match (all in slot ``{match_id}``)."""

    match: str
    events: str
    requests: str
    """The hash of the match's idempotency records (field = request id)."""
    live: str = ""
    """The sharded pub/sub channel of the match's doorbells (Redis Cluster)."""

    def request(self, request_id: str) -> str:
        """The key holding the record of ``request_id``: the match's records hash."""
        return self.requests


@dataclass(slots=True)
class RedisStats:
    """What this store sent to Redis: ``round_trips`` (network waits) and ``commands``;
    ``retries`` after Redis faults; commits whose ``WAIT`` came back short."""

    round_trips: int = 0
    commands: int = 0
    retries: int = 0
    wait_short: int = 0

    def add(self, round_trips: int, commands: int) -> None:
        self.round_trips += round_trips
        self.commands += commands


_INDEX_GRACE_MS = 60_000
"""An index member without its match hash is removed only when older than this."""

_HEADS_KEPT = 32_768
"""Commit tokens remembered per store (more than the service's cache of loaded matches)."""


def _created_ms(member: bytes | str) -> int:
    head = _s(member).split(":", 1)[0]
    return int(head) if head.isdigit() else 0


def _b(value: bytes | str | None) -> bytes:
    if value is None:
        return b""
    return value.encode() if isinstance(value, str) else value


def _s(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value


def _raised_in_redis_py(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and f"{os.sep}redis{os.sep}" in tb.tb_frame.f_code.co_filename


def _retryable(exc: BaseException) -> bool:
    """A fault that a retry may get past: no connection, a failover in progress, a slot
    without a primary, a demoted primary, a busy or loading server -- and the race in which
    the cluster client closes a node's connections (a topology refresh after a failover)
    while another task is opening one of them, which redis-py raises as an AttributeError
    from inside its connection code."""
    if isinstance(exc, AuthenticationError | AuthorizationError):
        return False
    if isinstance(exc, AttributeError) and _raised_in_redis_py(exc):
        return True
    if isinstance(
        exc,
        RedisConnectionError
        | RedisTimeoutError
        | ClusterError
        | TryAgainError
        | ReadOnlyError
        | SlotNotCoveredError
        | OSError,
    ):
        return True
    cause = exc.__cause__
    return isinstance(exc, RedisClusterException) and isinstance(
        cause, RedisConnectionError | RedisTimeoutError | OSError
    )


class _BlockingSentinelPool(SentinelConnectionPool, aioredis.BlockingConnectionPool):
    """redis-py's Sentinel pool (asks the sentinels for the primary on every connect),
    waiting for a free connection like :class:`~redis.asyncio.BlockingConnectionPool`."""


Lease = tuple[Connection, Callable[[Connection], Awaitable[None]]]


class _PoolRoute:
    """One primary behind the client's pool (one server, or a Sentinel group)."""

    def __init__(self, client: aioredis.Redis) -> None:
        self._pool = client.connection_pool

    async def acquire(self, key: str, ask: tuple[str, int] | None) -> Lease:
        conn = await self._pool.get_connection()  # type: ignore[no-untyped-call]
        return conn, self._pool.release

    async def moved(self, exc: MovedError) -> None:
        raise exc  # not a cluster: a redirection is a configuration error

    async def recover(self, exc: BaseException) -> None:
        """Nothing to do: a new connection finds the server (the Sentinel pool asks the
        sentinels for the current primary)."""


class _ClusterRoute:
    """The primary serving a key's slot, from the cluster client's slot map."""

    def __init__(self, client: RedisCluster, limit: int) -> None:
        self._rc = client
        self._slots = asyncio.Semaphore(limit)

    async def acquire(self, key: str, ask: tuple[str, int] | None) -> Lease:
        rc = self._rc
        await rc.initialize()  # once, and again after the client saw a failure
        node: ClusterNode | None
        if ask is None:
            node = rc.get_node_from_key(key)
        else:
            node = rc.get_node(host=ask[0], port=ask[1])
            if node is None:
                await rc.nodes_manager.initialize()
                node = rc.get_node(host=ask[0], port=ask[1])
        if node is None:
            raise SlotNotCoveredError(f"no node for {key!r}")
        await self._slots.acquire()
        try:
            conn = node.acquire_connection()
        except BaseException:
            self._slots.release()
            raise
        target = node

        async def release(c: Connection) -> None:
            target.release(c)
            self._slots.release()

        return conn, release

    async def moved(self, exc: MovedError) -> None:
        await self._rc.nodes_manager.move_slot(exc)

    async def recover(self, exc: BaseException) -> None:
        """Read the slot map again (coalesced by the client: one refresh for many callers)."""
        if isinstance(exc, RedisConnectionError | RedisTimeoutError | ClusterError | OSError):
            # no node answering yet is fine: the next attempt tries again
            with contextlib.suppress(RedisClusterException, RedisConnectionError, RedisTimeoutError, OSError):
                await self._rc.nodes_manager.initialize()


def _node_client_factory(kwargs: dict[str, Any]) -> Callable[[str, int], aioredis.Redis]:
    """Clients for the cluster hub's subscriber connections: no command timeout (they
    wait for messages), a health check, no transparent reconnect (the hub re-places the
    channels itself after a failure)."""
    base = {k: v for k, v in kwargs.items() if v is not None and k != "socket_timeout"}

    def make(host: str, port: int) -> aioredis.Redis:
        return aioredis.Redis(
            host=host,
            port=port,
            socket_timeout=None,
            health_check_interval=5,
            retry=Retry(NoBackoff(), 0),
            **base,
        )

    return make


def _node_kwargs_of(client: RedisCluster) -> dict[str, Any]:
    """The connection settings of a cluster client that its nodes' subscribers reuse."""
    given = client.connection_kwargs
    kwargs = {k: given.get(k) for k in ("username", "password", "socket_connect_timeout")}
    if given.get("connection_class") is SSLConnection:
        kwargs["ssl"] = True
        kwargs.update({k: v for k, v in given.items() if k.startswith("ssl_")})
    return kwargs


class RedisMatchStore:
    """A :class:`~.base.MatchStore` on Redis (see the module docstring).

    Build it with :meth:`from_url`, which picks the client from the URL form
    (:mod:`.redis_url`): a ``BlockingConnectionPool`` for one server (callers wait for a
    free connection instead of failing with "Too many connections"), redis-py's Sentinel
    client for a Sentinel group (a blocking Sentinel pool of the primary), redis-py's
    ``RedisCluster`` for a cluster. Or pass a client created with ``decode_responses=False``
    (a :class:`~redis.asyncio.Redis` or a :class:`~redis.asyncio.cluster.RedisCluster`).
    """

    def __init__(
        self,
        client: aioredis.Redis | RedisCluster,
        settings: StoreSettings | None = None,
        *,
        prefix: str = "truco",
        hub_block_ms: int = 1000,
        node_client: Callable[[str, int], aioredis.Redis] | None = None,
        sentinel: Sentinel | None = None,
        max_connections: int = 64,
    ) -> None:
        self.settings = s = settings or StoreSettings()
        self.stats = RedisStats()
        self._r: Any = client
        self._prefix = prefix
        self._hub_block_ms = hub_block_ms
        self._hub: RedisStreamHub | ClusterStreamHub | None = None
        self._sentinel = sentinel
        self._route: _PoolRoute | _ClusterRoute
        self.kind: str
        """``standalone``, ``sentinel`` or ``cluster``."""
        if isinstance(client, RedisCluster):
            self.kind = "cluster"
            self._route = _ClusterRoute(client, max_connections)
            self._node_client = node_client or _node_client_factory(_node_kwargs_of(client))
        else:
            pool = client.connection_pool
            self.kind = "sentinel" if isinstance(pool, SentinelConnectionPool) else "standalone"
            self._route = _PoolRoute(client)
            self._node_client = node_client or _node_client_factory({})
        self._wait = pack_command("WAIT", s.wait_replicas, s.wait_timeout_ms) if s.wait_replicas else b""
        self._heads: Lru[str, tuple[int, str]] = Lru(_HEADS_KEPT)
        self._head_prefix = secrets.token_hex(5)
        self._head_counter = itertools.count(1)

    @classmethod
    def from_url(
        cls,
        url: str,
        settings: StoreSettings | None = None,
        *,
        max_connections: int = 64,
        pool_timeout: float = 20.0,
        **kwargs: Any,
    ) -> RedisMatchStore:
        """A store for any URL form of :mod:`.redis_url` (raises ``ValueError`` for a bad one)."""
        target: RedisTarget = parse_redis_url(url)
        if target.kind == "cluster":
            conn = target.connection_kwargs()
            cluster = RedisCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
                max_connections=max(4 * max_connections, 256),
                # a slot without a primary fails the matches in it (retried, then
                # StoreUnavailable), not the whole store
                require_full_coverage=False,
                decode_responses=False,
                **conn,
            )
            node_client = _node_client_factory(
                {k: v for k, v in conn.items() if k not in ("socket_timeout",)}
            )
            return cls(
                cluster, settings, node_client=node_client, max_connections=max_connections, **kwargs
            )
        if target.kind == "sentinel":
            assert target.master_name is not None
            sentinel = Sentinel(  # type: ignore[no-untyped-call]
                list(target.nodes), sentinel_kwargs=target.sentinel_kwargs(), **target.connection_kwargs()
            )
            client: aioredis.Redis = sentinel.master_for(
                target.master_name,
                connection_pool_class=_BlockingSentinelPool,
                max_connections=max_connections,
                timeout=pool_timeout,
                decode_responses=False,
            )
            return cls(client, settings, sentinel=sentinel, max_connections=max_connections, **kwargs)
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=pool_timeout, decode_responses=False
        )
        return cls(aioredis.Redis(connection_pool=pool), settings, max_connections=max_connections, **kwargs)

    @property
    def client(self) -> Any:
        """The redis-py client (``Redis`` or ``RedisCluster``)."""
        return self._r

    def keys_for(self, match_id: str) -> MatchKeys:
        base = f"{self._prefix}:{{{match_id}}}"
        return MatchKeys(
            match=f"{base}:match", events=f"{base}:events", requests=f"{base}:req", live=f"{base}:live"
        )

    def owner_key(self, owner: str, shard: int = 0) -> str:
        """Shard ``shard`` of the owner's index (shard 0 is the one-key layout of old)."""
        if shard == 0:
            return f"{self._prefix}:owner:{{{owner}}}:matches"
        return f"{self._prefix}:owner:{{{owner}@{shard}}}:matches@{shard}"

    def owner_keys(self, owner: str) -> list[str]:
        return [self.owner_key(owner, k) for k in range(self.settings.owner_index_shards)]

    def owner_key_for(self, owner: str, match_id: str) -> str:
        """The index shard a match is listed in: CRC-32 of its id modulo the shard count."""
        return self.owner_key(owner, zlib.crc32(match_id.encode()) % self.settings.owner_index_shards)

    # -- the plumbing -------------------------------------------------------------

    async def _retrying(self, operation: str, call: Callable[[], Awaitable[_T]]) -> _T:
        """``call()``, again after a Redis fault that a retry may get past, with backoff,
        for up to ``settings.retry_seconds``; then :class:`StoreUnavailable`."""
        deadline: float | None = None
        delay = 0.025
        while True:
            try:
                return await call()
            except Exception as exc:
                if not _retryable(exc):
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.settings.retry_seconds
                if now >= deadline:
                    metrics.REDIS_UNAVAILABLE.labels(operation).inc()
                    raise StoreUnavailable(
                        f"Redis unavailable for {self.settings.retry_seconds:g}s ({operation}): "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                self.stats.retries += 1
                metrics.REDIS_RETRIES.labels(operation).inc()
                await self._route.recover(exc)
                await asyncio.sleep(min(delay * (0.5 + random.random()), max(0.0, deadline - now)))
                delay = min(delay * 2, 0.5)

    async def _exchange(self, key: str, payload: bytes, n: int, ask: tuple[str, int] | None) -> list[Any]:
        """Send ``payload`` (``n`` commands) on one connection of the node holding ``key``
        and read the ``n`` replies; an error reply comes back as its exception object."""
        conn, release = await self._route.acquire(key, ask)
        self.stats.add(1, n)
        try:
            await conn.send_packed_command(payload)
            replies: list[Any] = []
            for _ in range(n):
                try:
                    replies.append(await conn.read_response())
                except ResponseError as exc:
                    replies.append(exc)
        except BaseException:
            await conn.disconnect()  # it may hold unread replies: never reuse it
            raise
        finally:
            await release(conn)
        return replies

    async def _script(self, lua: Lua, keys: list[str], args: list[Any]) -> Any:
        """``EVALSHA`` of ``lua`` (then ``WAIT`` when configured) in one round trip to the
        node holding ``keys``; ``NOSCRIPT`` loads the script on the same connection first,
        ``MOVED``/``ASK`` follow the slot."""
        evalsha = pack_command("EVALSHA", lua.sha, len(keys), *keys, *args)
        wait = self._wait
        load = False
        ask: tuple[str, int] | None = None
        for _ in range(8):
            commands = []
            if load:
                commands.append(pack_command("SCRIPT", "LOAD", lua.body))
            if ask is not None:
                commands.append(_ASKING)
            commands.append(evalsha)
            if wait:
                commands.append(wait)
            replies = await self._exchange(keys[0], b"".join(commands), len(commands), ask)
            res = replies[-2] if wait else replies[-1]
            ask = None
            if isinstance(res, NoScriptError):
                load = True
                continue
            if isinstance(res, MovedError):
                await self._route.moved(res)
                continue
            if isinstance(res, AskError):
                ask = (res.host, int(res.port))
                continue
            if isinstance(res, Exception):
                raise res
            if wait and int(replies[-1]) < self.settings.wait_replicas:
                self.stats.wait_short += 1
                metrics.REDIS_WAIT_SHORT.inc()
            return res
        raise ClusterError(f"{lua.sha[:8]}: too many redirections for {keys[0]!r}")

    def _new_head(self) -> str:
        return f"{self._head_prefix}{next(self._head_counter):x}"

    # -- MatchStore ---------------------------------------------------------------

    @_timed("create")
    async def create(
        self,
        match_id: str,
        meta: bytes,
        state: bytes,
        events: list[bytes],
        index: MatchIndexEntry,
    ) -> int:
        if index.match_id != match_id:
            raise ValueError("index.match_id must equal match_id")
        keys = self.keys_for(match_id)
        retention = self.settings.retention_seconds if index.status in self.settings.terminal_statuses else 0
        head = self._new_head()
        args: list[Any] = [
            meta,
            state,
            index.status,
            index.owner,
            repr(index.created_at),
            index.sort_key,
            index.summary,
            self.settings.max_events,
            retention,
            head,
            len(events),
            *events,
        ]
        index_key = self.owner_key_for(index.owner, match_id)

        async def go() -> int:
            self.stats.add(1, 1)
            await self._r.zadd(index_key, {index.sort_key: 0}, nx=True)
            return int(await self._script(_CREATE, [keys.match, keys.events], args))

        version = await self._retrying("create", go)
        if version < 0:
            raise MatchExists(match_id)
        self._heads.put(match_id, (version, head))
        return version

    @_timed("load")
    async def load(self, match_id: str) -> Snapshot | None:
        keys = self.keys_for(match_id)

        async def go() -> list[Any]:
            self.stats.add(1, 1)
            return cast(
                list[Any],
                await self._r.hmget(keys.match, ["version", "state", "meta", "status", "updated_at", "head"]),
            )

        version, state, meta, status, updated, head = await self._retrying("load", go)
        if version is None:
            self._heads.pop(match_id)
            return None
        if head is not None:
            self._heads.put(match_id, (int(version), _s(head)))
        return Snapshot(
            version=int(version),
            state=_b(state),
            meta=_b(meta),
            status=_s(status),
            updated_at=float(updated) if updated is not None else 0.0,
        )

    @_timed("commit")
    async def commit(
        self,
        match_id: str,
        *,
        expected_version: int,
        state: bytes,
        events: list[bytes],
        request_id: str | None,
        reply: bytes,
        status: str | None = None,
        updated_at: float | None = None,
        summary: bytes | None = None,
    ) -> CommitResult:
        keys = self.keys_for(match_id)
        retention = (
            self.settings.retention_seconds
            if status is not None and status in self.settings.terminal_statuses
            else 0
        )
        known = self._heads.get(match_id)
        expected_head = known[1] if known is not None and known[0] == expected_version else ""
        head = self._new_head()
        args: list[Any] = [
            expected_version,
            state,
            request_id or "",
            reply,
            self.settings.request_ttl_seconds,
            self.settings.max_events,
            status or "",
            retention,
            repr(time.time() if updated_at is None else updated_at),
            summary or b"",
            expected_head,
            head,
            keys.live if self.kind == "cluster" else "",
            len(events),
            *events,
        ]
        hub = self._hub
        if hub is not None:
            hub.begin_commit(match_id)
        try:
            res = await self._retrying(
                "commit", lambda: self._script(_COMMIT, [keys.match, keys.events, keys.requests], args)
            )
        finally:
            if hub is not None:
                hub.end_commit(match_id)
        code = int(res[0])
        if code == 0:
            new_version = int(res[1])
            self._heads.put(match_id, (new_version, head))
            if hub is not None:
                hub.committed(match_id, expected_version, events)  # local fan-out
            return CommitResult(version=new_version, reply=reply)
        if code == 1:
            version, _, first_reply = bytes(res[1]).partition(b":")
            return CommitResult(version=int(version), reply=first_reply, duplicate=True)
        self._heads.pop(match_id)
        if code == 2:
            if hub is not None:
                hub.conflicted(match_id)
            raise VersionConflict(match_id, expected_version, int(res[1]))
        raise MatchNotFound(match_id)

    @_timed("lookup_request")
    async def lookup_request(self, match_id: str, request_id: str) -> CommitResult | None:
        keys = self.keys_for(match_id)

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hget(keys.requests, request_id)

        raw = await self._retrying("lookup_request", go)
        if raw is None:
            return None
        version, _, first_reply = _b(raw).partition(b":")
        return CommitResult(version=int(version), reply=first_reply, duplicate=True)

    @_timed("read_events")
    async def read_events(self, match_id: str, after_version: int, limit: int) -> list[Event] | LogTrimmed:
        if after_version < 0 or limit < 1:
            raise ValueError("after_version must be >= 0 and limit >= 1")
        keys = self.keys_for(match_id)

        async def go() -> list[Any]:
            pipe = self._r.pipeline(transaction=False)
            pipe.exists(keys.match)
            pipe.xrange(keys.events, min=f"{after_version + 1}-0", max="+", count=limit)
            self.stats.add(1, 2)
            return cast(list[Any], await pipe.execute())

        exists, entries = await self._retrying("read_events", go)
        if not exists:
            raise MatchNotFound(match_id)
        return self._to_events(entries, after_version)

    @staticmethod
    def _to_events(entries: Any, after_version: int) -> list[Event] | LogTrimmed:
        events = [(version_of(eid), fields[EVENT_FIELD]) for eid, fields in entries]
        if events and events[0][0] != after_version + 1:
            return LogTrimmed(first_version=events[0][0])
        return events

    async def wait_events(
        self, match_id: str, after_version: int, timeout: float, limit: int = 1000
    ) -> list[Event] | LogTrimmed:
        got = await self.read_events(match_id, after_version, limit)
        if got or isinstance(got, LogTrimmed):
            return got
        keys = self.keys_for(match_id)
        remaining = timeout
        # XREAD BLOCK in slices so a configured socket_timeout never cuts a wait short
        while remaining > 0:
            block = min(remaining, 2.0)
            self.stats.add(1, 1)

            async def go(block: float = block) -> Any:
                return await self._r.xread(
                    {keys.events: f"{after_version}-0"}, count=limit, block=max(1, math.ceil(block * 1000))
                )

            resp = await self._retrying("wait_events", go)
            for _key, entries in _parse_xread(resp):
                if entries:
                    return self._to_events(entries, after_version)
            remaining -= block
        return []

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> EventSubscription:
        if self._hub is None:
            self._hub = self._make_hub()
        return EventSubscription(self, self._hub, match_id, after_version, queue_size=queue_size)

    def _make_hub(self) -> RedisStreamHub | ClusterStreamHub:
        count = lambda n: self.stats.add(n, n)  # noqa: E731
        if isinstance(self._r, RedisCluster):
            return ClusterStreamHub(
                self._r,
                lambda mid: self.keys_for(mid).events,
                lambda mid: self.keys_for(mid).live,
                self._node_client,
                field=EVENT_FIELD,
                on_round_trip=count,
            )
        pool = self._r.connection_pool
        kwargs = {**pool.connection_kwargs, "socket_timeout": None}
        reader_pool: aioredis.ConnectionPool
        if isinstance(pool, SentinelConnectionPool):
            kwargs.pop("connection_pool", None)
            reader_pool = SentinelConnectionPool(  # type: ignore[no-untyped-call]
                pool.service_name, pool.sentinel_manager, connection_class=pool.connection_class, **kwargs
            )
        else:
            reader_pool = aioredis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
        reader = aioredis.Redis(connection_pool=reader_pool, single_connection_client=True)
        return RedisStreamHub(
            reader,
            self._r,
            lambda mid: self.keys_for(mid).events,
            field=EVENT_FIELD,
            block_ms=self._hub_block_ms,
            on_round_trip=count,
        )

    @_timed("list_matches")
    async def list_matches(
        self,
        owner: str,
        status: str | None,
        page_size: int,
        page_token: str | None,
    ) -> tuple[list[MatchIndexEntry], str | None]:
        check_page_size(page_size)
        upper = "+" if not page_token else "(" + decode_page_token(owner, page_token)
        return await self._retrying("list_matches", lambda: self._list(owner, status, page_size, upper))

    async def _list(
        self, owner: str, status: str | None, page_size: int, upper: str
    ) -> tuple[list[MatchIndexEntry], str | None]:
        """Walk the owner's index shards below ``upper``, newest first, merging them; read
        the rows of each batch with one pipeline; filter; page."""
        shards = self.owner_keys(owner)
        found: list[MatchIndexEntry] = []
        now_ms = time.time() * 1000
        batch = page_size + 1 if status is None else max(page_size + 1, 50)
        while len(found) <= page_size:
            pipe = self._r.pipeline(transaction=False)
            for key in shards:
                pipe.zrevrangebylex(key, upper, "-", start=0, num=batch)
            self.stats.add(1, len(shards))
            per_shard: list[list[bytes]] = await pipe.execute()
            merged = heapq.merge(
                *([(_b(m), k) for m in members] for k, members in enumerate(per_shard)), reverse=True
            )
            members = list(itertools.islice(merged, batch))
            if not members:
                break
            pipe = self._r.pipeline(transaction=False)
            for member, _k in members:
                match_id = _s(member).split(":", 1)[1]
                pipe.hmget(
                    self.keys_for(match_id).match,
                    ["sort_key", "status", "owner", "created_at", "summary", "version", "updated_at"],
                )
            self.stats.add(1, len(members))
            rows = await pipe.execute()
            stale: dict[int, list[bytes]] = {}
            for (member, k), (sort_key, st, own, created, summary, version, updated) in zip(
                members, rows, strict=True
            ):
                if _s(sort_key) != _s(member):
                    if sort_key is not None or _created_ms(member) < now_ms - _INDEX_GRACE_MS:
                        stale.setdefault(k, []).append(member)  # expired, or a failed duplicate create
                    continue  # else maybe a create between its ZADD and its script
                entry = MatchIndexEntry(
                    match_id=_s(member).split(":", 1)[1],
                    owner=_s(own),
                    status=_s(st),
                    created_at=float(_s(created)),
                    summary=_b(summary),
                    version=int(version or 0),
                    updated_at=float(_s(updated) or _s(created)),
                )
                if status is None or entry.status == status:
                    found.append(entry)
                    if len(found) > page_size:
                        break
            for k, gone in stale.items():
                self.stats.add(1, 1)
                await self._r.zrem(shards[k], *gone)
            if all(len(m) < batch for m in per_shard) and len(members) == sum(map(len, per_shard)):
                break  # every shard is exhausted below `upper`
            upper = "(" + _s(members[-1][0])
        if len(found) > page_size:
            page = found[:page_size]
            return page, encode_page_token(owner, page[-1].sort_key)
        return found, None

    async def close(self) -> None:
        if self._hub is not None:
            await self._hub.close()
            self._hub = None
        await self._r.aclose()
        if self._sentinel is not None:
            await self._sentinel.aclose()
