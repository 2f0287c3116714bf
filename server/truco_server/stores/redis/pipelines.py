"""How a batch of script calls (:mod:`.batch`) reaches Redis, once: each call's outcome (a
reply or an exception), never an exception for the whole batch from a fault of one node.

* one server or a Sentinel group's primary (:func:`send_one_server`): one write of the
  scripts to load, each call's preceding commands and its ``EVALSHA``, and ``WAIT``, on the
  store's lane (:mod:`.lane`: a connection of redis-py's pool that batches share, read as
  the replies arrive) -- a batch that ends in ``WAIT`` on a connection of the pool held for
  it alone (:func:`_alone`); one read of the replies;
* a Redis Cluster (:func:`send_cluster`): the preceding commands (other slots) first, then
  the scripts, each grouped by the node redis-py's slot map gives their keys, a node's
  group in one write and one read on that node's lane (a connection of the node's, from
  ``ClusterNode.acquire_connection``; with ``WAIT``, one held for it alone), the nodes at
  once. A fault of one node fails only its group's calls. A command a node redirects
  (``MOVED``, ``ASK``, ``TRYAGAIN``) is sent again through redis-py's cluster client, which
  follows the redirection and updates its slot map. What it costs is in docs/storage.md
  ("The batch of an event-loop turn").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hiredis import pack_command
from redis.exceptions import AskError, ResponseError, TryAgainError

from truco_server.core import metrics
from truco_server.stores.redis.connection import RedisConnection, is_fault
from truco_server.stores.redis.scripts import Script

__all__ = ["Command", "ScriptCall", "Sender", "send_cluster", "send_one_server"]

Command = tuple[Any, ...]
"""A command and its arguments (bytes, str or int), as redis-py's ``execute_command`` takes
them."""


@dataclass(slots=True, eq=False)
class ScriptCall:
    """One script call of a batch."""

    script: Script
    keys: list[str]
    args: list[Any]
    operation: str
    """What it is, for the metrics (``commit``, ``create``, ``queue_add``...)."""
    before: Sequence[Command] = ()
    """Commands sent before it (on other keys; on a cluster, other slots), in order."""
    durable: bool = False
    """``WAIT`` for ``StoreSettings.wait_replicas`` after it (when configured)."""
    future: asyncio.Future[Any] | None = field(default=None, repr=False)
    before_done: bool = False
    load: bool = False
    reloads: int = 0

    def evalsha(self) -> Command:
        return ("EVALSHA", self.script.sha, len(self.keys), *self.keys, *self.args)


Sender = Callable[[list[ScriptCall]], Awaitable[list[Any]]]
"""Sends a batch once: each call's outcome, in order."""


def _to_load(calls: Sequence[ScriptCall]) -> list[Script]:
    return list({c.script.sha: c.script for c in calls if c.load}.values())


def _outcome(replies: Sequence[Any]) -> Any:
    """A call's outcome from its replies (its preceding commands', then its script's): the
    first error, else the script's reply."""
    for reply in replies:
        if isinstance(reply, BaseException):
            return reply
    return replies[-1]


def _count_short(conn: RedisConnection, acknowledged: Any, durable_calls: int) -> None:
    """Count the durable calls of a ``WAIT`` that came back short."""
    if durable_calls and not (isinstance(acknowledged, int) and acknowledged >= conn.settings.wait_replicas):
        conn.stats.wait_short += durable_calls
        metrics.REDIS_WAIT_SHORT.inc(durable_calls)


def send_one_server(conn: RedisConnection) -> Sender:
    """The sender of one server or a Sentinel group's primary (module docstring)."""
    s = conn.settings
    wait: Command | None = ("WAIT", s.wait_replicas, s.wait_timeout_ms) if s.wait_replicas else None

    async def send(todo: list[ScriptCall]) -> list[Any]:
        commands: list[Command] = [("SCRIPT", "LOAD", script.body) for script in _to_load(todo)]
        spans = []
        for call in todo:
            start = len(commands)
            if not call.before_done:
                commands.extend(call.before)
            commands.append(call.evalsha())
            spans.append((start, len(commands)))
        durable = sum(1 for c in todo if c.durable) if wait is not None else 0
        if durable:
            assert wait is not None
            commands.append(wait)
        conn.stats.add(1, len(commands))
        replies = await _exchange(conn, commands, waits=bool(durable))
        if durable:
            _count_short(conn, replies[-1], durable)
        return [_outcome(replies[a:b]) for a, b in spans]

    return send


def _packed(commands: list[Command]) -> bytes:
    """``commands`` in the Redis protocol, packed by hiredis's ``pack_command`` (the same
    bytes as redis-py's packer for the bytes, str and int the adapter sends, a fifth of its
    CPU: ``test_hiredis_packs_the_adapters_commands_as_redis_py_does``)."""
    return b"".join([pack_command(command) for command in commands])


async def _exchange(
    conn: RedisConnection, commands: list[Command], *, node: Any = None, waits: bool = False
) -> list[Any]:
    """Send ``commands`` in one write and read their replies (an error reply as its
    exception): on the lane of one server or of the cluster ``node`` (:mod:`.lane`: a
    connection of redis-py's, read by the lane itself), or when they end in ``WAIT``
    (``waits``) on a connection held for this batch alone (:func:`_alone`); packed by
    :func:`_packed`."""
    payload = _packed(commands)
    if waits:
        async with conn.slots, _held(conn, node) as connection:
            return await _alone(connection, payload, len(commands))
    lane = await conn.lane(node)
    return await lane.exchange(payload, len(commands))


@contextlib.asynccontextmanager
async def _held(conn: RedisConnection, node: Any) -> AsyncIterator[Any]:
    """A connection of redis-py's for one batch alone: of the pool of one server, or of the
    cluster ``node`` (``ClusterNode.acquire_connection`` and ``release``)."""
    if node is None:
        pool = conn.client.connection_pool
        connection = await pool.get_connection()
        try:
            yield connection
        finally:
            await pool.release(connection)
    else:
        connection = node.acquire_connection()
        try:
            await node.disconnect_if_needed(connection)  # one marked after a failover
            yield connection
        finally:
            node.release(connection)


async def _alone(connection: Any, payload: bytes, count: int) -> list[Any]:
    """``payload`` (``count`` commands) written on a connection of redis-py's that this batch
    holds alone, and its replies: for a batch that ends in ``WAIT``, which holds its
    connection until the replicas answer (up to the timeout when they do not) and would hold
    up every batch behind it on a lane. A connection left with replies unread (a fault, a
    cancellation) is closed, never reused."""
    try:
        await connection.send_packed_command(payload, check_health=False)
        replies: list[Any] = []
        for _ in range(count):
            try:
                replies.append(await connection.read_response())
            except ResponseError as exc:
                replies.append(exc)
    except BaseException:
        await connection.disconnect()
        raise
    return replies


def send_cluster(conn: RedisConnection) -> Sender:
    """The sender of a Redis Cluster (module docstring)."""
    s = conn.settings
    wait: Command | None = ("WAIT", s.wait_replicas, s.wait_timeout_ms) if s.wait_replicas else None

    async def send(todo: list[ScriptCall]) -> list[Any]:
        await conn.client.initialize()  # the slot map, once (and again after a fault)
        outcomes: list[Any] = [None] * len(todo)
        await _before(conn, todo, outcomes)
        ready = [i for i in range(len(todo)) if outcomes[i] is None]
        groups = _by_node(conn, [todo[i].keys[0] for i in ready])
        sends = [_node(conn, node, [todo[ready[k]] for k in idx], wait) for node, idx in groups]
        results = [await sends[0]] if len(sends) == 1 else await asyncio.gather(*sends)
        for (_, idx), got in zip(groups, results, strict=True):
            for k, out in zip(idx, got, strict=True):
                outcomes[ready[k]] = out
        return outcomes

    return send


def _by_node(conn: RedisConnection, keys: list[str]) -> list[tuple[Any, list[int]]]:
    """The indexes of ``keys`` grouped by the node redis-py's slot map gives them."""
    groups: dict[str, tuple[Any, list[int]]] = {}
    for i, key in enumerate(keys):
        node = conn.client.get_node_from_key(key)
        groups.setdefault(node.name, (node, []))[1].append(i)
    return list(groups.values())


async def _before(conn: RedisConnection, todo: list[ScriptCall], outcomes: list[Any]) -> None:
    """The calls' preceding commands (idempotent: a fault sends them again), one write per
    node; a call whose commands failed gets that failure as its outcome."""
    owners = [(i, c) for i, c in enumerate(todo) if c.before and not c.before_done]
    commands = [(i, command) for i, call in owners for command in call.before]
    if not commands:
        return
    replies: list[Any] = [None] * len(commands)
    groups = _by_node(conn, [str(command[1]) for _, command in commands])
    sent = [_on_node(conn, node, [commands[k][1] for k in idx]) for node, idx in groups]
    results = [await sent[0]] if len(sent) == 1 else await asyncio.gather(*sent)
    for (_, idx), got in zip(groups, results, strict=True):
        for k, reply in zip(idx, got, strict=True):
            replies[k] = reply
    for (i, _), reply in zip(commands, replies, strict=True):
        if isinstance(reply, BaseException) and outcomes[i] is None:
            outcomes[i] = reply
    for i, call in owners:
        call.before_done = outcomes[i] is None


async def _node(conn: RedisConnection, node: Any, calls: list[ScriptCall], wait: Command | None) -> list[Any]:
    """One node's scripts, with what it must load first and its WAIT after."""
    load = _to_load(calls)
    durable = sum(1 for c in calls if c.durable) if wait is not None else 0
    commands = [("SCRIPT", "LOAD", script.body) for script in load] + [c.evalsha() for c in calls]
    if durable:
        assert wait is not None
        commands.append(wait)
    replies = await _on_node(
        conn, node, commands, follow=range(len(load), len(load) + len(calls)), waits=bool(durable)
    )
    if durable:
        # a script redis-py sent to another node (MOVED, ASK) is not covered by this node's
        # WAIT: counted as short
        moved = any(conn.client.get_node_from_key(c.keys[0]).name != node.name for c in calls if c.durable)
        _count_short(conn, -1 if moved else replies[-1], durable)
    return replies[len(load) : len(load) + len(calls)]


async def _on_node(
    conn: RedisConnection,
    node: Any,
    commands: list[Command],
    follow: range | None = None,
    *,
    waits: bool = False,
) -> list[Any]:
    """``commands`` in one write on the lane of ``node`` (:func:`_exchange`; when they end in
    ``WAIT``, on a connection of the node's held for them alone), their replies in one read;
    a fault of the node is every command's reply. A command the node redirects (``MOVED``,
    ``ASK``, ``TRYAGAIN``; all of ``follow`` when given, else all) is sent again through
    redis-py's cluster client, which follows the redirection and learns the slot's new
    owner."""
    conn.stats.add(1, len(commands))
    try:
        replies = await _exchange(conn, commands, node=node, waits=waits)
    except Exception as exc:
        if not is_fault(exc, conn.kind):
            raise
        return [exc] * len(commands)
    for i in follow if follow is not None else range(len(commands)):
        if isinstance(replies[i], AskError | TryAgainError):  # MovedError is an AskError
            conn.stats.add(1, 1)
            try:
                replies[i] = await conn.client.execute_command(*commands[i])
            except Exception as exc:
                if not is_fault(exc, conn.kind):
                    raise
                replies[i] = exc
    return replies
