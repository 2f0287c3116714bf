"""The Redis :class:`~truco_server.ports.matches.MatchLog`: one script per commit and per
create (:mod:`.scripts`), sent with the other scripts of the same event-loop turn
(:mod:`.batch`), on keys that share the match's hash tag (:mod:`.keys`).

The commit script, in order: fails if the match hash is missing; returns the recorded reply
if the request id is recorded (writes nothing); fails with the current version if it differs
from the expected one, or if the commit token (``head``) of that version is not the one this
worker last saw for it (writes nothing); then appends each event (``XADD ... MAXLEN =
max_events``), writes version, state, status, summary and a new head, appends the record
step and the outbox, records the request id and renews the records' TTL, starts the
retention time of every key when the new status is terminal, and on a cluster publishes the
events on the match's channel (the doorbell of :mod:`.cluster_feed`).

The head makes the version check safe across a failover: a replica promoted before it
received the last commits is behind, and the next commits reuse those versions for other
states; a worker still holding one of the lost states carries that state's head, which the
stored head no longer matches, so its commit conflicts (and it reloads) instead of writing
on top of a state it never saw.

A commit's wakeup (clock queue) and relay safety net (relay queue) are queued before its
script: in the same pipeline on one server or a Sentinel group, in a pipeline of their own
before it on a cluster (the queues are other slots). A create writes the owner index first
(another slot too), so a created match is always listed (:mod:`.listing`). A create that
requires documents (a league's match) goes through :class:`~.guards.Guards`.
"""

from __future__ import annotations

import functools
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from truco_server.core import metrics
from truco_server.core.lru import Lru
from truco_server.ports.errors import MatchExists, MatchNotFound, RateExceeded, VersionConflict
from truco_server.ports.matches import (
    Commit,
    CommitResult,
    Event,
    FeedAppend,
    LogTrimmed,
    MatchIndexEntry,
    NewMatch,
    Snapshot,
)
from truco_server.ports.queues import CLOCK, RELAY, RelayWake
from truco_server.stores.redis.batch import Command, ScriptBatcher, ScriptCall
from truco_server.stores.redis.cluster_feed import ClusterStreamHub
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.feed import RedisStreamHub
from truco_server.stores.redis.guards import Guards
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.listing import list_matches
from truco_server.stores.redis.replies import EVENT_FIELD, as_bytes, as_str, version_of
from truco_server.stores.redis.scripts import (
    CHARGING_COMMIT,
    CHARGING_FEEDING_COMMIT,
    COMMIT,
    CREATE,
    FEEDING_COMMIT,
    FEEDING_CREATE,
    LOAD,
    Script,
)
from truco_server.stores.subscription import EventSubscription

__all__ = ["RedisMatchLog"]

_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])

_HEADS_KEPT = 32_768
"""Commit tokens remembered per worker (more than the service's cache of loaded matches)."""
_HEADS_IDLE_SECONDS = 300.0
"""A commit token not used for this long is forgotten (a state the service still holds keeps
its token; a match without one is loaded again, which brings the token)."""


def _timed(operation: str) -> Callable[[_F], _F]:
    """Record the wall time of an operation in ``truco_redis_seconds`` (its child made once)."""
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


class RedisMatchLog:
    """Matches on Redis (see the module docstring)."""

    def __init__(
        self,
        conn: RedisConnection,
        keys: Keys,
        batcher: ScriptBatcher,
        guards: Guards,
        *,
        hub_block_ms: int = 1000,
    ):
        self.settings = conn.settings
        self._conn = conn
        self._keys = keys
        self._batcher = batcher
        self._guards = guards
        self._hub_block_ms = hub_block_ms
        self._hub: RedisStreamHub | ClusterStreamHub | None = None
        self._heads: Lru[str, tuple[int, str]] = Lru(_HEADS_KEPT, idle=_HEADS_IDLE_SECONDS)
        self._head_prefix = secrets.token_hex(5)
        self._head_counter = itertools.count(1)
        self.appends_feed = self.charges = conn.kind != "cluster"

    @property
    def hub(self) -> RedisStreamHub | ClusterStreamHub | None:
        """This worker's stream hub, once something subscribed."""
        return self._hub

    def knows_head(self, match_id: str) -> bool:
        """Whether the commit token of ``match_id`` is remembered (for tests)."""
        return match_id in self._heads

    def _new_head(self) -> str:
        return f"{self._head_prefix}{next(self._head_counter):x}"

    def _queue_first(self, match_id: str, wake: int | None, relay: RelayWake | None) -> list[Command]:
        """The queue commands a create or a commit sends before its script: a clock wakeup
        no later than ``wake``, and the relay queue's safety net: its token first, then its
        due time (in that order, so a relay that checks the token between the two finds the
        new one and keeps the item)."""
        commands: list[Command] = []
        if wake is not None:
            commands.append(("ZADD", self._keys.queue(CLOCK).key_for(match_id, ":due"), "LT", wake, match_id))
        if relay is not None:
            q = self._keys.queue(RELAY)
            commands.append(("HSET", q.key_for(match_id, ":data"), match_id, relay.token))
            commands.append(("ZADD", q.key_for(match_id, ":due"), "LT", relay.at, match_id))
        return commands

    @_timed("create")
    async def create(self, new: NewMatch) -> int:
        match_id, index = new.match_id, new.index
        keys = self._keys.match(match_id)
        s = self.settings
        head = self._new_head()
        args: list[Any] = [
            new.meta,
            new.state,
            index.status,
            index.owner,
            repr(index.created_at),
            index.sort_key,
            index.summary,
            s.max_events,
            s.retention_seconds if index.status in s.terminal_statuses else 0,
            head,
            len(new.events),
            *new.events,
            len(new.outbox),
            *new.outbox,
        ]
        listed: Command = ("ZADD", self._keys.owner_index_for(index.owner, match_id), "NX", 0, index.sort_key)
        before = [listed, *self._queue_first(match_id, new.wake, new.relay)]
        script_keys = [keys.match, keys.events, keys.record, keys.outbox]
        script = self._feeding(new.feed, CREATE, FEEDING_CREATE, script_keys, args)
        call = ScriptCall(script, script_keys, args, "create", before, durable=True)
        version = int(await self._guards.call(call, new.requires))
        if version < 0:
            raise MatchExists(match_id)
        self._heads.put(match_id, (version, head))
        return version

    @_timed("load")
    async def load(self, match_id: str) -> Snapshot | None:
        key = self._keys.match(match_id).match
        got = await self._batcher.call(ScriptCall(LOAD, [key], [], "load"))
        version, state, meta, status, updated, head = got
        if version is None:
            self._heads.pop(match_id)
            return None
        if head is None or as_str(status) in self.settings.terminal_statuses:
            self._heads.pop(match_id)  # an ended match takes no more commits: nothing to check
        else:
            self._heads.put(match_id, (int(version), as_str(head)))
        updated_at = float(updated) if updated is not None else 0.0
        return Snapshot(int(version), as_bytes(state), as_bytes(meta), as_str(status), updated_at)

    @_timed("commit")
    async def commit(self, commit: Commit) -> CommitResult:
        match_id = commit.match_id
        s = self.settings
        keys = self._keys.match(match_id)
        ended = commit.status is not None and commit.status in s.terminal_statuses
        known = self._heads.get(match_id)
        expected_head = known[1] if known is not None and known[0] == commit.expected_version else ""
        head = self._new_head()
        events = list(commit.events)
        args: list[Any] = [
            commit.expected_version,
            commit.state,
            commit.request_id or "",
            commit.reply,
            s.request_ttl_seconds,
            s.max_events,
            commit.status or "",
            s.retention_seconds if ended else 0,
            repr(time.time() if commit.updated_at is None else commit.updated_at),
            commit.summary or b"",
            expected_head,
            head,
            keys.live if self._conn.kind == "cluster" else "",
            commit.record or b"",
            len(events),
            *events,
            len(commit.outbox),
            *commit.outbox,
        ]
        before = self._queue_first(match_id, commit.wake, commit.relay)
        script_keys = keys.script_keys()
        script = self._feeding(commit.feed, COMMIT, FEEDING_COMMIT, script_keys, args)
        charge = commit.charge
        if charge is not None:
            if not self.charges:
                raise ValueError("a Redis Cluster cannot spend a rate in a commit")
            script = CHARGING_FEEDING_COMMIT if script is FEEDING_COMMIT else CHARGING_COMMIT
            script_keys.append(self._keys.quota(charge.key))
            args += [repr(charge.per_second), repr(charge.burst), repr(charge.cost)]
        call = ScriptCall(script, script_keys, args, "commit", before, durable=True)
        hub = self._hub
        if hub is not None:
            hub.begin_commit(match_id)
        try:
            return self._committed(commit, await self._batcher.call(call), head, ended, events)
        finally:
            if hub is not None:
                hub.end_commit(match_id)

    def _feeding(
        self, feed: FeedAppend | None, plain: Script, feeding: Script, keys: list[str], args: list[Any]
    ) -> Script:
        """The script that writes a create or commit: ``plain``, or ``feeding`` with the
        owner's stream added to ``keys`` and the events to ``args`` when there is a feed."""
        if feed is None or not feed.events:
            return plain
        if not self.appends_feed:
            raise ValueError("a Redis Cluster cannot append operator events in a commit")
        keys.append(self._keys.operator(feed.owner).events)
        args += [self.settings.operator_events_max_len, len(feed.events), *feed.events]
        return feeding

    def _committed(
        self, commit: Commit, res: Any, head: str, ended: bool, events: list[bytes]
    ) -> CommitResult:
        """What the commit script answered, for the caller (and the local fan-out)."""
        match_id = commit.match_id
        code = int(res[0])
        if code == 0:
            new_version = int(res[1])
            if ended:  # an ended match takes no more commits: nothing to check
                self._heads.pop(match_id)
            else:
                self._heads.put(match_id, (new_version, head))
            if self._hub is not None:
                self._hub.committed(match_id, commit.expected_version, events, commit.note)
            return CommitResult(version=new_version, reply=commit.reply)
        if code == 1:
            version, _, first_reply = as_bytes(res[1]).partition(b":")
            return CommitResult(version=int(version), reply=first_reply, duplicate=True)
        if code == 4:  # nothing written: the commit token still holds
            assert commit.charge is not None
            raise RateExceeded(commit.charge.key, float(as_str(res[1])))
        self._heads.pop(match_id)
        if code == 2:
            if self._hub is not None:
                self._hub.conflicted(match_id)
            raise VersionConflict(match_id, commit.expected_version, int(res[1]))
        raise MatchNotFound(match_id)

    @_timed("lookup_request")
    async def lookup_request(self, match_id: str, request_id: str) -> CommitResult | None:
        keys = self._keys.match(match_id)

        async def go() -> list[Any]:
            self._conn.stats.add(1, 2)
            pipe = self._conn.client.pipeline(transaction=False)
            pipe.exists(keys.match)
            pipe.hget(keys.requests, request_id)
            return cast(list[Any], await pipe.execute())

        exists, raw = await self._conn.run("lookup_request", go)
        if not exists:
            raise MatchNotFound(match_id)
        if raw is None:
            return None
        version, _, first_reply = as_bytes(raw).partition(b":")
        return CommitResult(version=int(version), reply=first_reply, duplicate=True)

    @_timed("read_events")
    async def read_events(self, match_id: str, after_version: int, limit: int) -> list[Event] | LogTrimmed:
        if after_version < 0 or limit < 1:
            raise ValueError("after_version must be >= 0 and limit >= 1")
        keys = self._keys.match(match_id)

        async def go() -> list[Any]:
            self._conn.stats.add(1, 2)
            pipe = self._conn.client.pipeline(transaction=False)
            pipe.exists(keys.match)
            pipe.xrange(keys.events, min=f"{after_version + 1}-0", max="+", count=limit)
            return cast(list[Any], await pipe.execute())

        exists, entries = await self._conn.run("read_events", go)
        if not exists:
            raise MatchNotFound(match_id)
        events = [(version_of(eid), fields[EVENT_FIELD]) for eid, fields in entries]
        if events and events[0][0] != after_version + 1:
            return LogTrimmed(first_version=events[0][0])
        return events

    @_timed("read_record")
    async def read_record(self, match_id: str) -> list[bytes] | None:
        keys = self._keys.match(match_id)

        async def go() -> list[Any]:
            self._conn.stats.add(1, 2)
            pipe = self._conn.client.pipeline(transaction=False)
            pipe.exists(keys.match)
            pipe.lrange(keys.record, 0, -1)
            return cast(list[Any], await pipe.execute())

        exists, steps = await self._conn.run("read_record", go)
        return [as_bytes(x) for x in steps] if exists else None

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> EventSubscription:
        if self._hub is None:
            self._hub = self._make_hub()
        return EventSubscription(self, self._hub, match_id, after_version, queue_size=queue_size)

    def _make_hub(self) -> RedisStreamHub | ClusterStreamHub:
        conn = self._conn
        count = lambda n: conn.stats.add(n, n)  # noqa: E731
        if conn.kind == "cluster":
            return ClusterStreamHub(
                conn.client,
                self._keys.events,
                self._keys.live,
                conn.node_client,
                timeout=conn.timeout,
                on_round_trip=count,
            )
        return RedisStreamHub(
            conn.reader_client(),
            conn.client,
            self._keys.events,
            block_ms=self._hub_block_ms,
            timeout=conn.timeout,
            on_round_trip=count,
        )

    @_timed("list_matches")
    async def list_matches(
        self, owner: str, status: str | None, page_size: int, page_token: str | None
    ) -> tuple[list[MatchIndexEntry], str | None]:
        return await list_matches(self._conn, self._keys, owner, status, page_size, page_token)

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        key = self._keys.match(match_id).presence
        ttl = max(self.settings.retention_seconds, 3600)

        async def go() -> Any:
            self._conn.stats.add(1, 2)
            pipe = self._conn.client.pipeline(transaction=False)
            pipe.hset(key, str(seat), now)
            pipe.expire(key, ttl)
            return await pipe.execute()

        await self._conn.run("touch", go)

    async def presence(self, match_id: str) -> dict[int, int]:
        key = self._keys.match(match_id).presence

        async def go() -> Any:
            self._conn.stats.add(1, 1)
            return await self._conn.client.hgetall(key)

        raw = await self._conn.run("presence", go)
        return {int(as_str(k)): int(as_str(v)) for k, v in raw.items()}

    async def close(self) -> None:
        if self._hub is not None:
            await self._hub.close()
            self._hub = None
