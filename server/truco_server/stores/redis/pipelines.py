"""How a batch of script calls (:mod:`.batch`) reaches Redis, once: each call's outcome (a
reply or an exception), never an exception for the whole batch from a fault of one node.

* one server or a Sentinel group's primary (:func:`send_one_server`): one write of the
  scripts to load, each call's preceding commands and its ``EVALSHA``, and ``WAIT``, on a
  connection of redis-py's pool (its public connection API: ``get_connection``,
  ``send_packed_command``, ``read_response``, ``release``); one read of the replies;
* a Redis Cluster (:func:`send_cluster`): the preceding commands (other slots) in one
  cluster pipeline, then the scripts grouped by the node redis-py's slot map gives their
  keys: a node's group in a pipeline of its own (a fault of one node fails only its calls:
  one cluster pipeline over every node loses every node's replies when one node fails), a
  group of one script without anything to load or wait for in one ``execute_command``
  (measured: 64 against 102 us). ``MOVED`` and ``ASK`` are redis-py's to follow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hiredis import pack_command
from redis.exceptions import ResponseError

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
        replies = await _exchange(conn, commands)
        if durable:
            _count_short(conn, replies[-1], durable)
        return [_outcome(replies[a:b]) for a, b in spans]

    return send


async def _exchange(conn: RedisConnection, commands: list[Command]) -> list[Any]:
    """Send ``commands`` in one write on a connection of redis-py's pool and read their
    replies (an error reply as its exception). A connection left with replies unread (a
    fault, a cancellation) is closed, never reused. The commands are packed by hiredis's
    ``pack_command`` (the same bytes as redis-py's packer for the bytes, str and int the
    adapter sends, a fifth of its CPU:
    ``test_hiredis_packs_the_adapters_commands_as_redis_py_does``)."""
    pool = conn.client.connection_pool
    payload = b"".join([pack_command(command) for command in commands])
    connection = await pool.get_connection()
    try:
        await connection.send_packed_command(payload, check_health=False)
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(await connection.read_response())
            except ResponseError as exc:
                replies.append(exc)
    except BaseException:
        await connection.disconnect()
        raise
    finally:
        await pool.release(connection)
    return replies


def send_cluster(conn: RedisConnection) -> Sender:
    """The sender of a Redis Cluster (module docstring)."""
    rc = conn.client
    s = conn.settings
    wait: Command | None = ("WAIT", s.wait_replicas, s.wait_timeout_ms) if s.wait_replicas else None

    async def send(todo: list[ScriptCall]) -> list[Any]:
        outcomes: list[Any] = [None] * len(todo)
        await _before(conn, todo, outcomes)
        groups: dict[str, tuple[Any, list[int]]] = {}
        for i, call in enumerate(todo):
            if outcomes[i] is None:
                node = rc.get_node_from_key(call.keys[0])
                groups.setdefault(node.name, (node, []))[1].append(i)
        sends = [_node(conn, node, [todo[i] for i in idx], wait) for node, idx in groups.values()]
        results = [await sends[0]] if len(sends) == 1 else await asyncio.gather(*sends)
        for (_, idx), got in zip(groups.values(), results, strict=True):
            for i, out in zip(idx, got, strict=True):
                outcomes[i] = out
        return outcomes

    return send


async def _before(conn: RedisConnection, todo: list[ScriptCall], outcomes: list[Any]) -> None:
    """The calls' preceding commands (idempotent: a fault sends them all again), in one
    cluster pipeline; a call whose commands failed gets that failure as its outcome."""
    first = [(i, c) for i, c in enumerate(todo) if c.before and not c.before_done]
    if not first:
        return
    rc = conn.client
    pipe = rc.pipeline()
    spans = []
    for i, call in first:
        start = len(pipe)
        for command in call.before:
            pipe.execute_command(*command)
        spans.append((i, start, len(pipe)))
    nodes = {rc.get_node_from_key(str(command[1])).name for _, c in first for command in c.before}
    conn.stats.add(len(nodes), len(pipe))
    replies = await pipe.execute(raise_on_error=False)
    for i, a, b in spans:
        failed = next((r for r in replies[a:b] if isinstance(r, BaseException)), None)
        if failed is not None:
            outcomes[i] = failed
        else:
            todo[i].before_done = True


async def _node(conn: RedisConnection, node: Any, calls: list[ScriptCall], wait: Command | None) -> list[Any]:
    """One node's scripts (what it must load first, WAIT after); a fault of the node is
    every call's outcome."""
    rc = conn.client
    durable = [c for c in calls if c.durable] if wait is not None else []
    load = _to_load(calls)
    try:
        if len(calls) == 1 and not load and not durable:
            conn.stats.add(1, 1)
            try:
                return [await rc.execute_command(*calls[0].evalsha())]
            except ResponseError as exc:
                return [exc]
        pipe = rc.pipeline()
        for script in load:
            pipe.execute_command("SCRIPT LOAD", script.body, target_nodes=node)
        start = len(pipe)
        for call in calls:
            pipe.execute_command(*call.evalsha())
        if durable:
            assert wait is not None
            pipe.execute_command(*wait, target_nodes=node)
        conn.stats.add(1, len(pipe))
        replies = await pipe.execute(raise_on_error=False)
    except Exception as exc:
        if not is_fault(exc, conn.kind):
            raise
        return [exc] * len(calls)
    if durable:
        # a script redis-py sent to another node (MOVED, ASK) is not covered by this
        # node's WAIT: counted as short
        moved = any(rc.get_node_from_key(c.keys[0]).name != node.name for c in durable)
        _count_short(conn, -1 if moved else replies[-1], len(durable))
    return list(replies[start : start + len(calls)])
