"""Redis :class:`~.base.MatchStore` (production): one Lua script per commit.

Key layout -- every key of a match shares the hash tag ``{<match_id>}`` so a script may
touch them all on Redis Cluster::

    truco:{<match_id>}:match            hash    version, state, meta, status, owner,
                                                created_at, updated_at, sort_key, summary
    truco:{<match_id>}:events           stream  entry id "<version>-0", field "e" = event
    truco:{<match_id>}:req              hash    request_id -> "<version after commit>:<reply>";
                                                EXPIRE settings.request_ttl_seconds after
                                                each record (retention once terminal)
    truco:owner:{<owner>}:matches       zset    all scores 0, members "<sort_key>"
                                                (= zero-padded created ms ":" match_id)

Because stream ids are derived from versions, ``XRANGE <v>-0 +`` reads exactly from
version ``v`` and ``XREAD`` resumes from any version.

Idempotency records of a match share one small hash (Redis keeps it as a compact
listpack: about 35 bytes per record with short request ids, against about 120 for a
string key per request); its TTL is renewed by every record, so a record lives at least
``request_ttl_seconds`` (longer while the match keeps being played).

Atomicity: :meth:`RedisMatchStore.commit` is one ``EVALSHA`` of :data:`COMMIT_LUA` (a
script runs without interleaving on the server). In order it: fails if the match hash is
missing; returns the recorded reply if the request id is recorded (writes nothing); fails
with the current version if it differs from the expected one (writes nothing); then
``XADD``\\ s each event with ``MAXLEN = settings.max_events``, writes version/state/status
into the hash, records the request id and renews the record hash's TTL, and -- when the
new status is terminal -- ``EXPIRE``\\ s the hash, the stream and the records with
``settings.retention_seconds``. The script is
registered with ``register_script``; redis-py falls back to ``EVAL``/``SCRIPT LOAD`` after
a ``NOSCRIPT`` (restart, failover), which costs one extra round trip once.

Creation is a ``ZADD NX`` on the owner index followed by :data:`CREATE_LUA`. The index
lives in another slot (per owner), so it is not in the script; it is written *first* so a
created match is always listed, and :meth:`list_matches` skips (and lazily removes)
members whose match hash is missing or belongs to another creation.

Round trips per operation (counted in :attr:`RedisMatchStore.stats`): commit 1, load 1,
read_events 1 (pipelined ``EXISTS`` + ``XRANGE``), create 2, wait_events 1 when events are
waiting, else 1 + one ``XREAD BLOCK`` per 2 s slice, list_matches 1 + 1 per scanned batch.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from truco_server import metrics

from .base import (
    CommitResult,
    Event,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchNotFound,
    Snapshot,
    StoreSettings,
    VersionConflict,
    check_page_size,
    decode_page_token,
    encode_page_token,
    shard_of,
)
from .fanout import EventSubscription, RedisStreamHub, _parse_xread, version_of

_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])


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
-- KEYS: match hash, events stream, record list
-- ARGV: meta, state, status, owner, created_at, sort_key, summary, maxlen,
--       retention_ttl (0 = none), (unused), n_events, events...
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('DEL', KEYS[2], KEYS[3])
local n = tonumber(ARGV[11])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[8], i .. '-0', 'e', ARGV[11 + i])
end
redis.call('HSET', KEYS[1], 'version', n, 'state', ARGV[2], 'meta', ARGV[1],
           'status', ARGV[3], 'owner', ARGV[4], 'created_at', ARGV[5],
           'updated_at', ARGV[5], 'sort_key', ARGV[6], 'summary', ARGV[7])
local ttl = tonumber(ARGV[9])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  if n > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
end
return n
"""

COMMIT_LUA = """
-- KEYS: match hash, events stream, request records hash, record list
-- ARGV: expected_version, state, request_id ('' = none), reply, request_ttl, maxlen,
--       status ('' = unchanged), retention_ttl (0 = status not terminal), updated_at,
--       summary ('' = unchanged), record step ('' = none), (unused), n_events, events...
-- Returns {0, new_version} | {1, recorded "<version>:<reply>"} | {2, current_version}
--       | {3} when the match does not exist.
if redis.call('EXISTS', KEYS[1]) == 0 then return {3} end
if ARGV[3] ~= '' then
  local prev = redis.call('HGET', KEYS[3], ARGV[3])
  if prev then return {1, prev} end
end
local cur = tonumber(redis.call('HGET', KEYS[1], 'version'))
if cur ~= tonumber(ARGV[1]) then return {2, cur} end
local n = tonumber(ARGV[13])
for i = 1, n do
  redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[6], (cur + i) .. '-0', 'e', ARGV[13 + i])
end
local newv = cur + n
redis.call('HSET', KEYS[1], 'version', newv, 'state', ARGV[2], 'updated_at', ARGV[9])
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'status', ARGV[7]) end
if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'summary', ARGV[10]) end
if ARGV[11] ~= '' then redis.call('RPUSH', KEYS[4], ARGV[11]) end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[3], newv .. ':' .. ARGV[4])
  redis.call('EXPIRE', KEYS[3], ARGV[5])
end
local ttl = tonumber(ARGV[8])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
  redis.call('EXPIRE', KEYS[3], ttl)
  redis.call('EXPIRE', KEYS[4], ttl)
end
return {0, newv}
"""

WAKE_LUA = """
-- KEYS: schedule zset of the match's shard.  ARGV: match id, due (ms since the epoch).
-- Lowers the match's wakeup to `due` (never raises it): ZADD LT, or a new member.
return redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
"""

CLAIM_LUA = """
-- KEYS: schedule zset.  ARGV: now (ms), lease (ms), limit.
-- Members due by now, each pushed to now + lease (claimed until then); returns
-- {member, due score, lease score, ...}.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0,
                       tonumber(ARGV[3]))
local out = {}
local lease = tonumber(ARGV[1]) + tonumber(ARGV[2])
for i = 1, #due, 2 do
  redis.call('ZADD', KEYS[1], 'XX', lease, due[i])
  out[#out + 1] = due[i]
  out[#out + 1] = due[i + 1]
  out[#out + 1] = lease
end
return out
"""

RESCHEDULE_LUA = """
-- KEYS: schedule zset.  ARGV: match id, the lease score it was claimed with, next due (ms;
-- '' = nothing due: remove it).
-- A claim ends: the next wakeup replaces the lease, unless a commit lowered the wakeup in
-- the meantime (then the lower of the two stays).
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not cur then
  if ARGV[3] ~= '' then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
  return 1
end
if tonumber(cur) == tonumber(ARGV[2]) then
  if ARGV[3] == '' then redis.call('ZREM', KEYS[1], ARGV[1])
  else redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
  return 1
end
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[1], 'LT', ARGV[3], ARGV[1]) end
return 0
"""


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

    def request(self, request_id: str) -> str:
        """The key holding the record of ``request_id``: the match's records hash."""
        return self.requests


@dataclass(slots=True)
class RedisStats:
    """What this store sent to Redis: ``round_trips`` (network waits) and ``commands``."""

    round_trips: int = 0
    commands: int = 0

    def add(self, round_trips: int, commands: int) -> None:
        self.round_trips += round_trips
        self.commands += commands


_INDEX_GRACE_MS = 60_000
"""An index member without its match hash is removed only when older than this."""


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


class RedisMatchStore:
    """A :class:`~.base.MatchStore` on Redis (see the module docstring).

    Build it with :meth:`from_url` (a ``BlockingConnectionPool``: callers wait for a free
    connection instead of failing with "Too many connections") or pass a client created
    with ``decode_responses=False``.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        settings: StoreSettings | None = None,
        *,
        prefix: str = "truco",
        hub_block_ms: int = 1000,
    ) -> None:
        self.settings = settings or StoreSettings()
        self.stats = RedisStats()
        self._r = client
        self._prefix = prefix
        self._hub_block_ms = hub_block_ms
        self._hub: RedisStreamHub | None = None
        self._create: AsyncScript = client.register_script(CREATE_LUA)
        self._commit: AsyncScript = client.register_script(COMMIT_LUA)
        self._wake: AsyncScript = client.register_script(WAKE_LUA)
        self._claim: AsyncScript = client.register_script(CLAIM_LUA)
        self._reschedule: AsyncScript = client.register_script(RESCHEDULE_LUA)

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
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=pool_timeout, decode_responses=False
        )
        return cls(aioredis.Redis(connection_pool=pool), settings, **kwargs)

    @property
    def client(self) -> aioredis.Redis:
        return self._r

    def keys_for(self, match_id: str) -> MatchKeys:
        base = f"{self._prefix}:{{{match_id}}}"
        return MatchKeys(
            match=f"{base}:match",
            events=f"{base}:events",
            requests=f"{base}:req",
            record=f"{base}:record",
            presence=f"{base}:presence",
        )

    def schedule_key(self, shard: int) -> str:
        """The schedule of one shard: a sorted set of match ids by wakeup (ms)."""
        return f"{self._prefix}:{{sched:{shard}}}:due"

    def owner_key(self, owner: str) -> str:
        return f"{self._prefix}:owner:{{{owner}}}:matches"

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
    ) -> int:
        if index.match_id != match_id:
            raise ValueError("index.match_id must equal match_id")
        keys = self.keys_for(match_id)
        if wake is not None:
            await self.wake(match_id, wake)
        retention = self.settings.retention_seconds if index.status in self.settings.terminal_statuses else 0
        self.stats.add(1, 1)
        await self._r.zadd(self.owner_key(index.owner), {index.sort_key: 0}, nx=True)
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
            "",
            len(events),
            *events,
        ]
        self.stats.add(1, 1)
        version = int(await self._create(keys=[keys.match, keys.events, keys.record], args=args))
        if version < 0:
            raise MatchExists(match_id)
        return version

    @_timed("load")
    async def load(self, match_id: str) -> Snapshot | None:
        keys = self.keys_for(match_id)
        self.stats.add(1, 1)
        version, state, meta, status, updated = await self._r.hmget(
            keys.match, ["version", "state", "meta", "status", "updated_at"]
        )
        if version is None:
            return None
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
    ) -> CommitResult:
        keys = self.keys_for(match_id)
        retention = (
            self.settings.retention_seconds
            if status is not None and status in self.settings.terminal_statuses
            else 0
        )
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
            record or b"",
            "",
            len(events),
            *events,
        ]
        self.stats.add(1, 1)
        hub = self._hub
        if hub is not None:
            hub.begin_commit(match_id)
        try:
            before = None
            if wake is not None:  # a wakeup no later than `wake`, registered before the commit
                before = ("ZADD", self.schedule_key(self.shard_of(match_id)), "LT", wake, match_id)
            res = await self._call_script(
                self._commit, [keys.match, keys.events, keys.requests, keys.record], args, before=before
            )
        finally:
            if hub is not None:
                hub.end_commit(match_id)
        code = int(res[0])
        if code == 0:
            if hub is not None:
                hub.committed(match_id, expected_version, events)  # local fan-out
            return CommitResult(version=int(res[1]), reply=reply)
        if code == 1:
            version, _, first_reply = bytes(res[1]).partition(b":")
            return CommitResult(version=int(version), reply=first_reply, duplicate=True)
        if code == 2:
            if hub is not None:
                hub.conflicted(match_id)
            raise VersionConflict(match_id, expected_version, int(res[1]))
        raise MatchNotFound(match_id)

    async def _call_script(
        self,
        script: AsyncScript,
        keys: list[str],
        args: list[Any],
        *,
        before: tuple[Any, ...] | None = None,
    ) -> Any:
        """``EVALSHA`` of a registered script on a connection of the client's pool, after the
        command ``before`` (if any) in the same round trip: Redis runs them in that order.

        The hot path (one call per action) packs the commands itself and skips the client's
        command layer (argument packing, response callbacks); the pool, the connection and
        its parser are redis-py's. Anything unusual -- the script not loaded yet (first
        call, Redis restarted or failed over), a broken connection -- goes through the
        client's own calls, which load the script and apply the client's retry policy."""
        sha = script.sha
        if sha:
            payload = pack_command("EVALSHA", sha, len(keys), *keys, *args)
            if before is not None:
                payload = pack_command(*before) + payload
            pool = self._r.connection_pool
            conn = await pool.get_connection()  # type: ignore[no-untyped-call]
            try:
                await conn.send_packed_command(payload)
                if before is not None:
                    await conn.read_response()
                return await conn.read_response()
            except NoScriptError:
                before = None  # it ran: the fallback below runs only the script
            except (RedisConnectionError, RedisTimeoutError, OSError):
                await conn.disconnect()
            finally:
                await pool.release(conn)
        if before is not None:
            await self._r.execute_command(*before)  # type: ignore[no-untyped-call]
        return await script(keys=keys, args=args)

    @_timed("lookup_request")
    async def lookup_request(self, match_id: str, request_id: str) -> CommitResult | None:
        keys = self.keys_for(match_id)
        self.stats.add(1, 1)
        raw = await self._r.hget(keys.requests, request_id)
        if raw is None:
            return None
        version, _, first_reply = _b(raw).partition(b":")
        return CommitResult(version=int(version), reply=first_reply, duplicate=True)

    @_timed("read_events")
    async def read_events(self, match_id: str, after_version: int, limit: int) -> list[Event] | LogTrimmed:
        if after_version < 0 or limit < 1:
            raise ValueError("after_version must be >= 0 and limit >= 1")
        keys = self.keys_for(match_id)
        pipe = self._r.pipeline(transaction=False)
        pipe.exists(keys.match)
        pipe.xrange(keys.events, min=f"{after_version + 1}-0", max="+", count=limit)
        self.stats.add(1, 2)
        exists, entries = await pipe.execute()
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
            resp = await self._r.xread(
                {keys.events: f"{after_version}-0"},
                count=limit,
                block=max(1, math.ceil(block * 1000)),
            )
            for _key, entries in _parse_xread(resp):
                if entries:
                    return self._to_events(entries, after_version)
            remaining -= block
        return []

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> EventSubscription:
        if self._hub is None:
            pool = self._r.connection_pool
            reader = aioredis.Redis(
                connection_pool=aioredis.ConnectionPool(
                    connection_class=pool.connection_class,
                    **{**pool.connection_kwargs, "socket_timeout": None},
                ),
                single_connection_client=True,
            )
            self._hub = RedisStreamHub(
                reader,
                self._r,
                lambda mid: self.keys_for(mid).events,
                field=EVENT_FIELD,
                block_ms=self._hub_block_ms,
                on_round_trip=lambda n: self.stats.add(n, n),
            )
        return EventSubscription(self, self._hub, match_id, after_version, queue_size=queue_size)

    # -- lifecycle: the schedule, presence, records ---------------------------------

    @property
    def shards(self) -> int:
        return self.settings.schedule_shards

    def shard_of(self, match_id: str) -> int:
        return shard_of(match_id, self.settings.schedule_shards)

    async def wake(self, match_id: str, due: int) -> None:
        self.stats.add(1, 1)
        await self._wake(keys=[self.schedule_key(self.shard_of(match_id))], args=[match_id, due])

    async def claim(self, shard: int, now: int, lease: int, limit: int) -> list[tuple[str, int, int]]:
        self.stats.add(1, 1)
        raw = await self._claim(keys=[self.schedule_key(shard)], args=[now, lease, limit])
        return [(_s(raw[i]), int(float(_s(raw[i + 1]))), int(raw[i + 2])) for i in range(0, len(raw), 3)]

    async def reschedule(self, match_id: str, lease: int, due: int | None) -> None:
        self.stats.add(1, 1)
        key = self.schedule_key(self.shard_of(match_id))
        await self._reschedule(keys=[key], args=[match_id, lease, "" if due is None else due])

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        keys = self.keys_for(match_id)
        self.stats.add(1, 2)
        pipe = self._r.pipeline(transaction=False)
        pipe.hset(keys.presence, str(seat), now)
        pipe.expire(keys.presence, max(self.settings.retention_seconds, 3600))
        await pipe.execute()

    async def presence(self, match_id: str) -> dict[int, int]:
        self.stats.add(1, 1)
        raw = await self._r.hgetall(self.keys_for(match_id).presence)
        return {int(_s(k)): int(_s(v)) for k, v in raw.items()}

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
        idx = self.owner_key(owner)
        upper = "+" if not page_token else "(" + decode_page_token(owner, page_token)
        found: list[MatchIndexEntry] = []
        now_ms = time.time() * 1000
        batch = page_size + 1 if status is None else max(page_size + 1, 50)
        while len(found) <= page_size:
            self.stats.add(1, 1)
            members = await self._r.zrevrangebylex(idx, upper, "-", start=0, num=batch)
            if not members:
                break
            pipe = self._r.pipeline(transaction=False)
            for member in members:
                match_id = _s(member).split(":", 1)[1]
                pipe.hmget(
                    self.keys_for(match_id).match,
                    ["sort_key", "status", "owner", "created_at", "summary", "version", "updated_at"],
                )
            self.stats.add(1, len(members))
            rows = await pipe.execute()
            stale: list[bytes | str] = []
            for member, (sort_key, st, own, created, summary, version, updated) in zip(
                members, rows, strict=True
            ):
                if _s(sort_key) != _s(member):
                    if sort_key is not None or _created_ms(member) < now_ms - _INDEX_GRACE_MS:
                        stale.append(member)  # expired, or a failed duplicate create
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
            if stale:
                self.stats.add(1, 1)
                await self._r.zrem(idx, *stale)
            if len(members) < batch:
                break
            upper = "(" + _s(members[-1])
        if len(found) > page_size:
            page = found[:page_size]
            return page, encode_page_token(owner, page[-1].sort_key)
        return found, None

    async def close(self) -> None:
        if self._hub is not None:
            await self._hub.close()
            self._hub = None
        await self._r.aclose()
