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
from collections.abc import Awaitable, Callable, Sequence
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
    RedisError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from truco_server.core import metrics
from truco_server.core.lru import Lru
from truco_server.core.redis_url import RedisTarget, parse_redis_url
from truco_server.ports.store import (
    CLOCK,
    RELAY,
    Claim,
    CommitResult,
    Event,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchNotFound,
    RelayWake,
    Snapshot,
    StoreSettings,
    StoreUnavailable,
    VersionConflict,
    check_page_size,
    decode_page_token,
    encode_page_token,
)
from truco_server.stores.fanout import (
    ClusterStreamHub,
    EventSubscription,
    RedisStreamHub,
    _parse_xread,
    version_of,
)
from truco_server.stores.shards import ShardedQueue

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
-- KEYS: match hash, events stream, record list, outbox list
-- ARGV: meta, state, status, owner, created_at, sort_key, summary, maxlen,
--       retention_ttl (0 = none), head, n_events, events..., n_outbox, outbox items...
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
local n = tonumber(ARGV[11])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[8], i .. '-0', 'e', ARGV[11 + i])
end
local m = tonumber(ARGV[12 + n])
for j = 1, m do redis.call('RPUSH', KEYS[4], ARGV[12 + n + j]) end
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
-- KEYS: match hash, events stream, request records hash, record list, outbox list
-- ARGV: expected_version, state, request_id ('' = none), reply, request_ttl, maxlen,
--       status ('' = unchanged), retention_ttl (0 = status not terminal), updated_at,
--       summary ('' = unchanged), expected head ('' = not checked), new head,
--       doorbell channel ('' = none), record step ('' = none), n_events, events...,
--       n_outbox, outbox items...
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
local n = tonumber(ARGV[15])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[6], (cur + i) .. '-0', 'e', ARGV[15 + i])
end
local m = tonumber(ARGV[16 + n])
for j = 1, m do redis.call('RPUSH', KEYS[5], ARGV[16 + n + j]) end
local newv = cur + n
redis.call('HSET', KEYS[1], 'version', newv, 'state', ARGV[2], 'updated_at', ARGV[9], 'head', ARGV[12])
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'status', ARGV[7]) end
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'summary', ARGV[10]) end
if ARGV[14] ~= '' then redis.call('RPUSH', KEYS[4], ARGV[14]) end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[3], newv .. ':' .. ARGV[4])
  redis.call('EXPIRE', KEYS[3], ARGV[5])
end
local ttl = tonumber(ARGV[8])
if ttl > 0 then
  for k = 1, 5 do redis.call('EXPIRE', KEYS[k], ttl) end
end
if ARGV[13] ~= '' and n > 0 then
  local lens, evs = {}, {}
  for i = 1, n do
    evs[i] = ARGV[15 + i]
    lens[i] = string.len(evs[i])
  end
  redis.call('SPUBLISH', ARGV[13], cur .. ':' .. table.concat(lens, ',') .. ':' .. table.concat(evs))
end
return {0, newv}
"""

OUTBOX_TAKE_LUA = """
-- KEYS: outbox list, relay lock.  ARGV: token, lease (ms), most items.
-- The outbox's first items and the lock, or false when another relay holds the lock.
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) == false then return false end
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[3]) - 1)
if #items == 0 then redis.call('DEL', KEYS[2]) end
return items
"""

OUTBOX_DONE_LUA = """
-- KEYS: outbox list, relay lock.  ARGV: token, items relayed.
-- Drops the relayed items and the lock, if the lock is still this relay's.
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('LTRIM', KEYS[1], tonumber(ARGV[2]), -1)
redis.call('DEL', KEYS[2])
return 1
"""

QUEUE_ADD_LUA = """
-- KEYS: due zset, data hash of the item's shard.  ARGV: item, due (ms), mode, data.
-- mode 'lower': the item's due time becomes at most `due` (a new item is added), data
--   replaced when given; mode 'new': added only if the item has no data yet (returns 0
--   when it had: an item is queued once).
if ARGV[3] == 'new' then
  if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[4]) == 0 then return 0 end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[4]) end
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
return 1
"""

QUEUE_CLAIM_LUA = """
-- KEYS: due zset, data hash.  ARGV: now (ms), lease (ms), limit.
-- Items due by now, each pushed to now + lease (claimed until then); returns
-- {item, due score, lease score, data ('' = none), ...}.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0,
                       tonumber(ARGV[3]))
local out = {}
local lease = tonumber(ARGV[1]) + tonumber(ARGV[2])
for i = 1, #due, 2 do
  redis.call('ZADD', KEYS[1], 'XX', lease, due[i])
  out[#out + 1] = due[i]
  out[#out + 1] = due[i + 1]
  out[#out + 1] = lease
  out[#out + 1] = redis.call('HGET', KEYS[2], due[i]) or ''
end
return out
"""

QUEUE_FINISH_LUA = """
-- KEYS: due zset, data hash.  ARGV: item, lease it was claimed with, next due ('' = done:
--   drop it and its data), new data ('' = unchanged), mode.
-- mode 'lower': if the due time was lowered meanwhile (a commit registered an earlier
--   wakeup), the lower of the two stays; a missing item is re-added.  mode 'owned': nothing
--   happens unless the claim still holds (another reader took over an expired lease).
-- Returns 1 when the claim still held.
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
local held = cur and tonumber(cur) == tonumber(ARGV[2])
if not held then
  if ARGV[5] == 'owned' then return 0 end
  if ARGV[3] ~= '' then redis.call('ZADD', KEYS[1], 'LT', ARGV[3], ARGV[1]) end
  return 0
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[4]) end
end
return 1
"""

QUEUE_RELEASE_LUA = """
-- KEYS: due zset, data hash of the item's shard.  ARGV: item, data.
-- Drops the item and its data if its data is still ARGV[2] (nobody queued it again since).
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
"""

QUEUE_DUE_LUA = """
-- KEYS: the due zsets of a queue's shards, all on this server.  ARGV: now (ms).
-- The indexes (0-based) of the shards with an item due by now.
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('ZCOUNT', key, '-inf', ARGV[1]) > 0 then out[#out + 1] = i - 1 end
end
return out
"""

WEBHOOK_PUT_LUA = """
-- KEYS: the operator's webhooks hash.  ARGV: webhook id, data, most webhooks.
-- Stores (or replaces) a webhook; 0 when the operator already has the most it may.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""

DOC_PUT_LUA = """
-- KEYS: a document's hash (fields v = version, d = data).  ARGV: expected version, data.
-- Compare-and-set: writes the data and version + 1 only if the version is the expected one
-- (0: no document yet); returns 1 when written, 0 when the version differs.
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'v', v + 1, 'd', ARGV[2])
return 1
"""

DELIVERY_LOG_PUT_LUA = """
-- KEYS: a webhook's deliveries hash, their order zset.  ARGV: delivery id, data, event time
-- (ms), deliveries kept.  Records a delivery's state; the oldest beyond the limit go.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  local old = redis.call('ZRANGE', KEYS[2], 0, extra - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, extra - 1)
  redis.call('HDEL', KEYS[1], unpack(old))
end
return 1
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
_OUTBOX_TAKE = Lua(OUTBOX_TAKE_LUA)
_OUTBOX_DONE = Lua(OUTBOX_DONE_LUA)
_QUEUE_ADD = Lua(QUEUE_ADD_LUA)
_QUEUE_CLAIM = Lua(QUEUE_CLAIM_LUA)
_QUEUE_FINISH = Lua(QUEUE_FINISH_LUA)
_QUEUE_RELEASE = Lua(QUEUE_RELEASE_LUA)
_QUEUE_DUE = Lua(QUEUE_DUE_LUA)
_WEBHOOK_PUT = Lua(WEBHOOK_PUT_LUA)
_DOC_PUT = Lua(DOC_PUT_LUA)
_DELIVERY_LOG_PUT = Lua(DELIVERY_LOG_PUT_LUA)


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
    record: str
    """The list of the match's record steps (one per commit that has one)."""
    presence: str
    """The hash of the last time each seat was seen (field = seat, value = ms)."""
    outbox: str
    """The list of the match's operator events not relayed yet (docs/webhooks.md)."""
    relay: str
    """The lock of the relay moving the outbox to the operator's stream."""
    live: str = ""
    """The sharded pub/sub channel of the match's doorbells (Redis Cluster)."""

    def request(self, request_id: str) -> str:
        """The key holding the record of ``request_id``: the match's records hash."""
        return self.requests


@dataclass(frozen=True, slots=True)
class OperatorKeys:
    """Names of the Redis keys of one operator (all in slot ``{op:<owner>}``)."""

    events: str
    """The stream of the operator's lifecycle events."""
    webhooks: str
    """The hash of its webhooks (field = webhook id)."""
    base: str

    def deliveries(self, webhook_id: str) -> str:
        """The hash of a webhook's delivery states (field = delivery id)."""
        return f"{self.base}:wh:{webhook_id}:deliveries"

    def delivery_order(self, webhook_id: str) -> str:
        """The sorted set of a webhook's deliveries by event time (for listing, trimming)."""
        return f"{self.base}:wh:{webhook_id}:order"


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
_HEADS_IDLE_SECONDS = 300.0
"""A commit token not used for this long is forgotten (longer than the service keeps a match
it does not touch: a state the service still holds keeps its token; a match without one is
loaded again, which brings the token)."""


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


async def _send(conn: Connection, payload: bytes) -> None:
    """``conn.send_packed_command(payload)`` without its cost on Python 3.11, where the
    write's timeout (``asyncio.wait_for``) makes a task and an event-loop turn of every
    send (about 20 microseconds): the payload goes to the connection's stream writer, and
    only a write the socket did not take at once waits, under the connection's timeout.
    A connection without the stream writer redis-py keeps (another redis-py) is sent to
    through redis-py."""
    if not conn.is_connected:
        await conn.connect()  # type: ignore[no-untyped-call]
    writer = getattr(conn, "_writer", None)
    if not isinstance(writer, asyncio.StreamWriter):
        await conn.send_packed_command(payload)
        return
    try:
        writer.write(payload)
        if writer.transport.get_write_buffer_size():  # the socket's buffer is full
            async with asyncio.timeout(conn.socket_timeout):
                await writer.drain()
    except TimeoutError:
        await conn.disconnect(nowait=True)
        raise RedisTimeoutError("Timeout writing to socket") from None
    except OSError as exc:
        await conn.disconnect(nowait=True)
        raise RedisConnectionError(f"Error while writing to socket: {exc}") from exc


class _BlockingSentinelPool(SentinelConnectionPool, aioredis.BlockingConnectionPool):
    """redis-py's Sentinel pool (asks the sentinels for the primary on every connect),
    waiting for a free connection like :class:`~redis.asyncio.BlockingConnectionPool`."""


Lease = tuple[Connection, Callable[[Connection], Awaitable[None]]]


class _PoolRoute:
    """One primary behind the client's pool (one server, or a Sentinel group).

    The store's own exchanges (every commit) keep up to ``keep`` connections between calls
    instead of handing each back to the pool: taking one from redis-py's blocking pool (its
    condition, timeout and checks) cost about a fifth of a commit's CPU. A kept connection is
    always clean: an exchange reads every reply it asked for, or disconnects the connection
    (:meth:`RedisMatchStore._exchange`). After a fault, :meth:`recover` gives every kept
    connection back, disconnected, so the retry opens a new one (and the Sentinel pool asks
    the sentinels for the current primary)."""

    def __init__(self, client: aioredis.Redis, keep: int = 4) -> None:
        self._pool = client.connection_pool
        self._keep = keep
        self._idle: list[Connection] = []

    async def acquire(self, key: str, ask: tuple[str, int] | None) -> Lease:
        idle = self._idle
        if idle:
            return idle.pop(), self._release
        conn = await self._pool.get_connection()  # type: ignore[no-untyped-call]
        return conn, self._release

    async def _release(self, conn: Connection) -> None:
        if conn.is_connected and len(self._idle) < self._keep:
            self._idle.append(conn)
        else:
            await self._pool.release(conn)

    async def moved(self, exc: MovedError) -> None:
        raise exc  # not a cluster: a redirection is a configuration error

    async def recover(self, exc: BaseException) -> None:
        """Give the kept connections back, disconnected (they may lead to a server that is
        gone or no longer the primary)."""
        await self.close()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.disconnect()
            await self._pool.release(conn)


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


DEFAULT_SOCKET_TIMEOUT = 5.0
"""Seconds a command of a standalone server may wait for its reply (or a connection to
open) unless the URL says otherwise."""


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
        self._queues: dict[str, ShardedQueue] = {}
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
        self._heads: Lru[str, tuple[int, str]] = Lru(_HEADS_KEPT, idle=_HEADS_IDLE_SECONDS)
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
            return cls(cluster, settings, node_client=node_client, max_connections=max_connections, **kwargs)
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
        # A paused or unreachable server must fail a command (which is then retried, and
        # answered UNAVAILABLE after `retry_seconds`), never hang it: the same defaults as
        # the cluster and Sentinel forms; the URL's own `socket_timeout` and
        # `socket_connect_timeout` win.
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=pool_timeout,
            decode_responses=False,
            socket_timeout=DEFAULT_SOCKET_TIMEOUT,
            socket_connect_timeout=DEFAULT_SOCKET_TIMEOUT,
        )
        # the store owns the pool it made: closing the store closes its connections
        return cls(aioredis.Redis.from_pool(pool), settings, max_connections=max_connections, **kwargs)

    @property
    def client(self) -> Any:
        """The redis-py client (``Redis`` or ``RedisCluster``)."""
        return self._r

    def keys_for(self, match_id: str) -> MatchKeys:
        base = f"{self._prefix}:{{{match_id}}}"
        return MatchKeys(
            match=f"{base}:match",
            events=f"{base}:events",
            requests=f"{base}:req",
            record=f"{base}:record",
            presence=f"{base}:presence",
            outbox=f"{base}:outbox",
            relay=f"{base}:relay",
            live=f"{base}:live",
        )

    def queue(self, name: str) -> ShardedQueue:
        """The layout of the sharded queue ``name`` (``clock``, ``webhook``)."""
        q = self._queues.get(name)
        if q is None:
            q = self._queues[name] = ShardedQueue(name, self.settings.queue_shards, self._prefix)
        return q

    def operator_keys(self, owner: str) -> OperatorKeys:
        base = f"{self._prefix}:{{op:{owner}}}"
        return OperatorKeys(events=f"{base}:events", webhooks=f"{base}:webhooks", base=base)

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
            await _send(conn, payload)
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

    async def _script(
        self,
        lua: Lua,
        keys: list[str],
        args: list[Any],
        *,
        durable: bool = False,
        before: Sequence[bytes] = (),
    ) -> Any:
        """``EVALSHA`` of ``lua`` (then ``WAIT`` when configured and ``durable``) in one round
        trip to the node holding ``keys``; ``NOSCRIPT`` loads the script on the same connection
        first, ``MOVED``/``ASK`` follow the slot. ``before``: packed commands sent first on
        the same connection, in order (only for keys on the same node: never on a cluster)."""
        evalsha = pack_command("EVALSHA", lua.sha, len(keys), *keys, *args)
        wait = self._wait if durable else b""
        load = False
        ask: tuple[str, int] | None = None
        for _ in range(8):
            commands = list(before)
            before = ()  # it ran: a retry sends the script alone
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

    async def _scripts(self, lua: Lua, calls: Sequence[tuple[list[str], list[Any]]]) -> list[Any]:
        """:meth:`_script` of ``lua`` once per ``(keys, args)`` of ``calls``, the replies in
        order: on one server all in one round trip (one write of every ``EVALSHA``, one read
        of the replies; ``NOSCRIPT`` loads the script and runs the refused ones again); on a
        cluster, where the keys are other slots, each in a round trip of its own, at once."""
        if not calls:
            return []
        if self.kind == "cluster" or len(calls) == 1:
            return list(await asyncio.gather(*(self._script(lua, keys, args) for keys, args in calls)))
        replies: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        load: list[bytes] = []
        for _ in range(2):
            commands = load + [
                pack_command("EVALSHA", lua.sha, len(calls[i][0]), *calls[i][0], *calls[i][1]) for i in todo
            ]
            got = await self._exchange(calls[0][0][0], b"".join(commands), len(commands), None)
            refused = []
            for i, res in zip(todo, got[len(load) :], strict=True):
                if isinstance(res, NoScriptError):
                    refused.append(i)
                elif isinstance(res, Exception):
                    raise res
                else:
                    replies[i] = res
            if not refused:
                return replies
            todo, load = refused, [pack_command("SCRIPT", "LOAD", lua.body)]  # then run them again
        raise ResponseError(f"{lua.sha[:8]}: NOSCRIPT after SCRIPT LOAD")

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
        *,
        wake: int | None = None,
        outbox: Sequence[bytes] = (),
        relay: RelayWake | None = None,
    ) -> int:
        if index.match_id != match_id:
            raise ValueError("index.match_id must equal match_id")
        keys = self.keys_for(match_id)
        before = await self._queue_first(match_id, wake, relay)
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
            len(outbox),
            *outbox,
        ]
        index_key = self.owner_key_for(index.owner, match_id)
        script_keys = [keys.match, keys.events, keys.record, keys.outbox]

        async def go() -> int:
            self.stats.add(1, 1)
            await self._r.zadd(index_key, {index.sort_key: 0}, nx=True)
            return int(await self._script(_CREATE, script_keys, args, durable=True, before=before))

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
        if head is None or _s(status) in self.settings.terminal_statuses:
            self._heads.pop(match_id)  # an ended match takes no more commits: nothing to check
        else:
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
        record: bytes | None = None,
        wake: int | None = None,
        outbox: Sequence[bytes] = (),
        relay: RelayWake | None = None,
    ) -> CommitResult:
        keys = self.keys_for(match_id)
        ended = status is not None and status in self.settings.terminal_statuses
        retention = self.settings.retention_seconds if ended else 0
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
            record or b"",
            len(events),
            *events,
            len(outbox),
            *outbox,
        ]
        script_keys = [keys.match, keys.events, keys.requests, keys.record, keys.outbox]
        before = await self._queue_first(match_id, wake, relay)
        hub = self._hub
        if hub is not None:
            hub.begin_commit(match_id)
        try:
            res = await self._retrying(
                "commit",
                lambda: self._script(_COMMIT, script_keys, args, durable=True, before=before),
            )
        finally:
            if hub is not None:
                hub.end_commit(match_id)
        code = int(res[0])
        if code == 0:
            new_version = int(res[1])
            if ended:  # an ended match takes no more commits: nothing to check
                self._heads.pop(match_id)
            else:
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

    async def _queue_first(self, match_id: str, wake: int | None, relay: RelayWake | None) -> list[bytes]:
        """The queue commands a create or a commit sends before its script: a clock wakeup no
        later than ``wake`` (``ZADD LT``), and the relay queue's safety net: its token first,
        then its due time (in that order, so a relay that checks the token between the two
        finds the new one and keeps the item; docs/storage.md). Returned packed, to go in the
        script's write; on a cluster, where the queues are other slots and likely other nodes,
        sent here instead, each queue's in a round trip of its own (and ``[]`` returned)."""
        groups: list[list[tuple[Any, ...]]] = []
        if wake is not None:
            groups.append([("ZADD", self.queue(CLOCK).key_for(match_id, ":due"), "LT", wake, match_id)])
        if relay is not None:
            q = self.queue(RELAY)
            groups.append(
                [
                    ("HSET", q.key_for(match_id, ":data"), match_id, relay.token),
                    ("ZADD", q.key_for(match_id, ":due"), "LT", relay.at, match_id),
                ]
            )
        if self.kind != "cluster":
            return [pack_command(*cmd) for group in groups for cmd in group]
        for group in groups:

            async def go(group: list[tuple[Any, ...]] = group) -> Any:
                self.stats.add(1, len(group))
                pipe = self._r.pipeline(transaction=False)
                for cmd in group:
                    pipe.execute_command(*cmd)
                return await pipe.execute()

            await self._retrying("wake", go)
        return []

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

    # -- sharded queues (docs/storage.md, "Sharded queues") ----------------------------

    def queue_shards(self, queue: str) -> int:
        return self.settings.queue_shards

    async def queue_add(
        self, queue: str, item: str, due: int, data: bytes = b"", *, only_new: bool = False
    ) -> bool:
        q = self.queue(queue)
        keys = [q.key_for(item, ":due"), q.key_for(item, ":data")]
        args = [item, due, "new" if only_new else "lower", data]

        async def go() -> Any:
            return await self._script(_QUEUE_ADD, keys, args)

        return bool(int(await self._retrying("queue_add", go)))

    async def queue_due(self, queue: str, now: int) -> list[int]:
        q = self.queue(queue)
        shards = q.all_shards()

        keys = [q.key(k, ":due") for k in shards]
        if self.kind != "cluster":
            # one script over every shard: a worker asks this of each queue every tick,
            # busy or idle, and one command costs it a sixteenth of a pipeline of counts
            found = await self._retrying("queue_due", lambda: self._script(_QUEUE_DUE, keys, [now]))
            return [shards[int(i)] for i in found]

        async def go() -> Any:  # the shards are in other slots, likely on other nodes
            self.stats.add(1, len(shards))
            pipe = self._r.pipeline(transaction=False)
            for key in keys:
                pipe.zcount(key, "-inf", now)
            return await pipe.execute()

        counts = await self._retrying("queue_due", go)
        return [k for k, n in zip(shards, counts, strict=True) if int(n)]

    async def queue_claim(self, queue: str, shard: int, now: int, lease: int, limit: int) -> list[Claim]:
        q = self.queue(queue)
        keys = [q.key(shard, ":due"), q.key(shard, ":data")]

        async def go() -> Any:
            return await self._script(_QUEUE_CLAIM, keys, [now, lease, limit])

        raw = await self._retrying("queue_claim", go)
        return [
            Claim(_s(raw[i]), int(float(_s(raw[i + 1]))), int(raw[i + 2]), _b(raw[i + 3]))
            for i in range(0, len(raw), 4)
        ]

    async def queue_finish(
        self,
        queue: str,
        item: str,
        lease: int,
        due: int | None,
        data: bytes = b"",
        *,
        owned: bool = False,
    ) -> bool:
        q = self.queue(queue)
        keys = [q.key_for(item, ":due"), q.key_for(item, ":data")]
        args = [item, lease, "" if due is None else due, data, "owned" if owned else "lower"]

        async def go() -> Any:
            return await self._script(_QUEUE_FINISH, keys, args)

        return bool(int(await self._retrying("queue_finish", go)))

    async def queue_release(self, queue: str, item: str, data: bytes) -> bool:
        return (await self.queue_release_many(queue, [(item, data)]))[0]

    async def queue_release_many(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        q = self.queue(queue)
        calls = [([q.key_for(item, ":due"), q.key_for(item, ":data")], [item, data]) for item, data in items]

        async def go() -> list[Any]:
            return await self._scripts(_QUEUE_RELEASE, calls)

        return [bool(int(r)) for r in await self._retrying("queue_release", go)]

    # -- presence, records, the outbox -----------------------------------------------

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        keys = self.keys_for(match_id)

        async def go() -> Any:
            self.stats.add(1, 2)
            pipe = self._r.pipeline(transaction=False)
            pipe.hset(keys.presence, str(seat), now)
            pipe.expire(keys.presence, max(self.settings.retention_seconds, 3600))
            return await pipe.execute()

        await self._retrying("touch", go)

    async def presence(self, match_id: str) -> dict[int, int]:
        key = self.keys_for(match_id).presence

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hgetall(key)

        raw = await self._retrying("presence", go)
        return {int(_s(k)): int(_s(v)) for k, v in raw.items()}

    async def outbox_take(self, match_id: str, token: str, lease: int, limit: int) -> list[bytes] | None:
        return (await self.outbox_take_many([match_id], token, lease, limit))[0]

    async def outbox_take_many(
        self, match_ids: Sequence[str], token: str, lease: int, limit: int
    ) -> list[list[bytes] | None]:
        calls = []
        for match_id in match_ids:
            keys = self.keys_for(match_id)
            calls.append(([keys.outbox, keys.relay], [token, lease, limit]))

        async def go() -> list[Any]:
            return await self._scripts(_OUTBOX_TAKE, calls)

        return [
            None if raw is None else [_b(x) for x in raw] for raw in await self._retrying("outbox_take", go)
        ]

    async def outbox_done(self, match_id: str, token: str, count: int) -> bool:
        return (await self.outbox_done_many([(match_id, count)], token))[0]

    async def outbox_done_many(self, done: Sequence[tuple[str, int]], token: str) -> list[bool]:
        calls = []
        for match_id, count in done:
            keys = self.keys_for(match_id)
            calls.append(([keys.outbox, keys.relay], [token, count]))

        async def go() -> list[Any]:
            return await self._scripts(_OUTBOX_DONE, calls)

        return [bool(int(r)) for r in await self._retrying("outbox_done", go)]

    # -- operators: event streams, webhooks, deliveries --------------------------------

    async def operator_append(self, owner: str, events: Sequence[bytes]) -> list[str]:
        key = self.operator_keys(owner).events
        maxlen = self.settings.operator_events_max_len

        async def go() -> Any:
            self.stats.add(1, len(events))
            pipe = self._r.pipeline(transaction=False)
            for raw in events:
                pipe.xadd(key, {EVENT_FIELD: raw}, maxlen=maxlen, approximate=True)
            return await pipe.execute()

        return [_s(x) for x in await self._retrying("operator_append", go)]

    async def operator_read(
        self, owner: str, after: str, limit: int, block: float = 0.0
    ) -> list[tuple[str, bytes]]:
        key = self.operator_keys(owner).events
        start = after or "0-0"

        async def go() -> Any:
            self.stats.add(1, 1)
            if block <= 0:
                return [[key, await self._r.xrange(key, min=f"({start}", max="+", count=limit)]]
            return await self._r.xread({key: start}, count=limit, block=max(1, math.ceil(block * 1000)))

        resp = await self._retrying("operator_read", go)
        out = []
        for _key, entries in _parse_xread(resp):
            for eid, fields in entries:
                out.append((_s(eid), _b(fields[EVENT_FIELD])))
        return out

    async def operator_last(self, owner: str) -> str:
        key = self.operator_keys(owner).events

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.xrevrange(key, count=1)

        last = await self._retrying("operator_last", go)
        return _s(last[0][0]) if last else "0-0"

    async def webhook_put(self, owner: str, webhook_id: str, data: bytes, limit: int) -> bool:
        key = self.operator_keys(owner).webhooks

        async def go() -> Any:
            return await self._script(_WEBHOOK_PUT, [key], [webhook_id, data, limit])

        return bool(int(await self._retrying("webhook_put", go)))

    async def webhook_get(self, owner: str, webhook_id: str) -> bytes | None:
        key = self.operator_keys(owner).webhooks

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hget(key, webhook_id)

        raw = await self._retrying("webhook_get", go)
        return None if raw is None else _b(raw)

    async def webhook_list(self, owner: str) -> dict[str, bytes]:
        key = self.operator_keys(owner).webhooks

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hgetall(key)

        raw = await self._retrying("webhook_list", go)
        return {_s(k): _b(v) for k, v in raw.items()}

    async def webhook_delete(self, owner: str, webhook_id: str) -> bool:
        ok = self.operator_keys(owner)

        async def go() -> Any:
            self.stats.add(1, 3)
            pipe = self._r.pipeline(transaction=False)
            pipe.hdel(ok.webhooks, webhook_id)
            pipe.delete(ok.deliveries(webhook_id), ok.delivery_order(webhook_id))
            return await pipe.execute()

        removed, _ = await self._retrying("webhook_delete", go)
        return bool(removed)

    async def delivery_log_put(
        self, owner: str, webhook_id: str, delivery_id: str, data: bytes, time_ms: int, keep: int
    ) -> None:
        ok = self.operator_keys(owner)
        keys = [ok.deliveries(webhook_id), ok.delivery_order(webhook_id)]

        async def go() -> Any:
            return await self._script(_DELIVERY_LOG_PUT, keys, [delivery_id, data, time_ms, keep])

        await self._retrying("delivery_log_put", go)

    async def delivery_log(self, owner: str, webhook_id: str, limit: int) -> list[bytes]:
        ok = self.operator_keys(owner)

        async def go() -> Any:
            self.stats.add(1, 2)
            ids = await self._r.zrevrange(ok.delivery_order(webhook_id), 0, limit - 1)
            if not ids:
                return []
            return await self._r.hmget(ok.deliveries(webhook_id), ids)

        return [_b(x) for x in await self._retrying("delivery_log", go) if x is not None]

    # -- leagues: documents, indexes, bot assignments (docs/storage.md, "Leagues") -------

    def doc_key(self, kind: str, doc_id: str) -> str:
        """A document's hash: ``truco:{lg:<kind>:<id>}:doc`` (a slot of its own)."""
        return f"{self._prefix}:{{lg:{kind}:{doc_id}}}:doc"

    def doc_index_key(self, owner: str, kind: str) -> str:
        """The owner's index of documents of ``kind``, in the operator's slot."""
        return f"{self._prefix}:{{op:{owner}}}:docs:{kind}"

    def assignments_key(self, bot_id: str) -> str:
        return f"{self._prefix}:{{bot:{bot_id}}}:assignments"

    async def doc_get(self, kind: str, doc_id: str) -> tuple[int, bytes] | None:
        key = self.doc_key(kind, doc_id)

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hmget(key, ["v", "d"])

        v, d = await self._retrying("doc_get", go)
        return None if v is None else (int(v), _b(d))

    async def doc_put(self, kind: str, doc_id: str, expected_version: int, data: bytes) -> bool:
        key = self.doc_key(kind, doc_id)

        async def go() -> Any:
            return await self._script(_DOC_PUT, [key], [expected_version, data], durable=True)

        return bool(int(await self._retrying("doc_put", go)))

    async def doc_index_add(self, owner: str, kind: str, doc_id: str, time_ms: int) -> None:
        key = self.doc_index_key(owner, kind)

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.zadd(key, {doc_id: time_ms}, nx=True)

        await self._retrying("doc_index_add", go)

    async def doc_index(self, owner: str, kind: str, limit: int) -> list[str]:
        key = self.doc_index_key(owner, kind)

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.zrevrange(key, 0, limit - 1)

        return [_s(x) for x in await self._retrying("doc_index", go)]

    async def assignment_put(self, bot_id: str, match_id: str, data: bytes) -> None:
        key = self.assignments_key(bot_id)

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hset(key, match_id, data)

        await self._retrying("assignment_put", go)

    async def assignment_delete(self, bot_id: str, match_id: str) -> bool:
        key = self.assignments_key(bot_id)

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hdel(key, match_id)

        return bool(int(await self._retrying("assignment_delete", go)))

    async def assignments(self, bot_id: str) -> dict[str, bytes]:
        key = self.assignments_key(bot_id)

        async def go() -> Any:
            self.stats.add(1, 1)
            return await self._r.hgetall(key)

        raw = await self._retrying("assignments", go)
        return {_s(k): _b(v) for k, v in raw.items()}

    @_timed("read_record")
    async def read_record(self, match_id: str) -> list[bytes] | None:
        keys = self.keys_for(match_id)
        self.stats.add(1, 2)
        pipe = self._r.pipeline(transaction=False)
        pipe.exists(keys.match)
        pipe.lrange(keys.record, 0, -1)
        exists, steps = await pipe.execute()
        if not exists:
            return None
        return [_b(x) for x in steps]

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

    async def ping(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self._r.ping(), timeout)
        except (TimeoutError, RedisError, OSError) as exc:
            raise StoreUnavailable(
                f"Redis did not answer PING within {timeout:g}s: {type(exc).__name__}"
            ) from exc

    async def close(self) -> None:
        if self._hub is not None:
            await self._hub.close()
            self._hub = None
        if isinstance(self._route, _PoolRoute):
            await self._route.close()
        await self._r.aclose()
        if self._sentinel is not None:
            await self._sentinel.aclose()
