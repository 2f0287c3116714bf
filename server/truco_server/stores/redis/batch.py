"""Script calls batched per event-loop turn: the commits (and creates, and every other
script) that tasks issue in the same turn of the event loop go to Redis together.

A caller hands :meth:`ScriptBatcher.call` one :class:`ScriptCall` (a script, its keys and
arguments, the commands that must precede it, whether it waits for replicas) and awaits its
own result. The first caller of a turn yields once -- the other tasks of the turn add their
calls meanwhile -- then sends every call queued and answers each (no task, no timer):

* one server or a Sentinel group's primary: one pipeline (one write, one read, on one
  connection of redis-py's pool, through its public connection API) with each call's
  preceding commands and its ``EVALSHA``, in the callers' order, and one ``WAIT`` at the
  end when a call asks for replicas (``WAIT`` covers every write the connection made
  before it);
* a Redis Cluster: the preceding commands (other slots: the queues, the owner index) in one
  cluster pipeline first, then the ``EVALSHA``\\ s in one pipeline per node (grouped from
  redis-py's slot map; one node's fault only retries that node's calls), each node's
  ``WAIT`` after its scripts. ``MOVED`` and ``ASK`` are redis-py's cluster client's to handle.

Each call gets its own outcome: a script's reply (the caller decides what it means: a
version conflict of one commit does not touch the others), or its own exception. ``NOSCRIPT``
(a restart, a failover, a flushed cache) loads the script once -- on one server one
``SCRIPT LOAD`` in the next pipeline, on a cluster one on each node that refused it -- and
runs again only the refused calls, without their preceding commands (they ran). A fault a
retry may get past sends the unanswered calls again, preceding commands included, until
``retry_seconds`` (:class:`~.connection.Attempts`): re-sending a commit is safe, its request
id or its version and head checks stop a second application.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hiredis import pack_command
from redis.exceptions import NoScriptError, ResponseError

from truco_server.core import metrics
from truco_server.ports.errors import StoreUnavailable
from truco_server.stores.redis.connection import Attempts, RedisConnection, is_fault, retryable
from truco_server.stores.redis.scripts import Script

__all__ = ["Command", "ScriptBatcher", "ScriptCall"]

Command = tuple[Any, ...]
"""A command and its arguments, as redis-py's ``execute_command`` takes them."""

_MAX_RELOADS = 4
"""Rounds of ``NOSCRIPT`` in a row a call may meet before it gives up."""


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


class ScriptBatcher:
    """Sends the script calls of each event-loop turn together (module docstring)."""

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn
        self._pending: list[ScriptCall] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        s = conn.settings
        self._wait: Command | None = ("WAIT", s.wait_replicas, s.wait_timeout_ms) if s.wait_replicas else None

    async def call(self, call: ScriptCall) -> Any:
        """The script's reply, sent with the other calls of this turn; raises
        StoreUnavailable (and only that) for a fault.

        The first caller of a turn sends the batch itself: it yields once (the other tasks
        of this turn add their calls meanwhile), then sends them all and answers each. A
        caller cancelled while it sends hands the others to a task that sends them again."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        loop = asyncio.get_running_loop()
        call.future = future = loop.create_future()
        pending = self._pending
        pending.append(call)
        if len(pending) > 1:
            return await future  # the first caller of this turn sends it
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            self._pending.remove(call)
            if self._pending:
                self._in_task(self._pending)
                self._pending = []
            raise
        calls, self._pending = self._pending, []
        try:
            await self._run(calls)
        except asyncio.CancelledError:
            self._in_task(
                [c for c in calls if c is not call and c.future is not None and not c.future.done()]
            )
            raise
        return future.result()

    async def call_many(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """The replies of ``calls`` (given together: one batch), in order; the first fault
        raises."""
        if not calls:
            return []
        if self._closed:
            raise StoreUnavailable("the store is closed")
        loop = asyncio.get_running_loop()
        for call in calls:
            call.future = loop.create_future()
        await self._run(list(calls))
        return [call.future.result() for call in calls if call.future is not None]

    def _in_task(self, calls: list[ScriptCall]) -> None:
        """Send ``calls`` from a task of their own (their sender was cancelled)."""
        if not calls:
            return

        async def send() -> None:
            try:
                await self._run(calls)
            except asyncio.CancelledError:  # the store closes
                _fail(calls, StoreUnavailable("the store was closed"))
                raise

        task = asyncio.get_running_loop().create_task(send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, calls: list[ScriptCall]) -> None:
        """Send ``calls`` until each has its outcome (module docstring)."""
        conn = self._conn
        todo = calls
        attempts: Attempts | None = None
        try:
            while todo:
                durable = self._wait is not None and any(c.durable for c in todo)
                extra = conn.settings.wait_timeout_ms / 1000 if durable else 0.0
                try:
                    async with asyncio.timeout(conn.timeout + extra):
                        if conn.kind == "cluster":
                            outcomes = await self._send_cluster(todo)
                        else:
                            outcomes = await self._send(todo)
                except Exception as exc:
                    if not is_fault(exc, conn.kind):
                        raise
                    outcomes = [exc] * len(todo)
                todo, fault = self._settle(todo, outcomes)
                if fault is not None:
                    attempts = attempts or conn.attempts(todo[0].operation)
                    await attempts.failed(fault)  # or StoreUnavailable
        except Exception as exc:  # StoreUnavailable, or a bug of ours: every caller sees it
            _fail(todo, exc)

    def _settle(self, todo: list[ScriptCall], outcomes: Sequence[Any]) -> tuple[list[ScriptCall], Any]:
        """Answer the calls with a final outcome; return the others and the fault to wait
        out before sending them again (``None`` when they only need their script loaded)."""
        conn = self._conn
        again: list[ScriptCall] = []
        fault: BaseException | None = None
        for call, out in zip(todo, outcomes, strict=True):
            future = call.future
            assert future is not None
            if isinstance(out, NoScriptError) and call.reloads < _MAX_RELOADS:
                call.load = True
                call.before_done = True
                call.reloads += 1
                again.append(call)
            elif isinstance(out, BaseException):
                if retryable(out, conn.kind):
                    call.load = call.before_done = False
                    again.append(call)
                    fault = out
                else:
                    future.set_exception(conn.unavailable(call.operation, out, "failed"))
            elif not future.done():
                future.set_result(out)
        return again, fault

    # -- one server, a Sentinel group ---------------------------------------------------

    async def _send(self, todo: list[ScriptCall]) -> list[Any]:
        """One write of the scripts to load, each call's preceding commands and its EVALSHA,
        and WAIT, on one connection of redis-py's pool; one read of the replies. Returns
        each call's outcome (a reply or an exception)."""
        commands: list[Command] = [
            ("SCRIPT", "LOAD", s.body) for s in {c.script.sha: c.script for c in todo if c.load}.values()
        ]
        spans = []
        for call in todo:
            start = len(commands)
            if not call.before_done:
                commands.extend(call.before)
            commands.append(call.evalsha())
            spans.append((start, len(commands)))
        durable = self._wait is not None and any(c.durable for c in todo)
        if durable:
            assert self._wait is not None
            commands.append(self._wait)
        self._conn.stats.add(1, len(commands))
        replies = await self._exchange(commands)
        outcomes = [_outcome(replies[a:b]) for a, b in spans]
        if durable:
            self._count_short(replies[-1], sum(1 for c in todo if c.durable))
        return outcomes

    async def _exchange(self, commands: list[Command]) -> list[Any]:
        """Send ``commands`` in one write on a connection of redis-py's pool and read their
        replies (an error reply as its exception). A connection left with replies unread
        (a fault, a cancellation) is closed, never reused. The commands are packed by
        hiredis's ``pack_command`` (the same bytes as redis-py's packer, a fifth of its CPU:
        ``test_hiredis_packs_the_adapters_commands_as_redis_py_does``); their arguments
        are bytes, str or int only."""
        pool = self._conn.client.connection_pool
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

    def _count_short(self, acknowledged: Any, durable_calls: int) -> None:
        if isinstance(acknowledged, int) and acknowledged >= self._conn.settings.wait_replicas:
            return
        self._conn.stats.wait_short += durable_calls
        metrics.REDIS_WAIT_SHORT.inc(durable_calls)

    # -- a cluster ----------------------------------------------------------------------

    async def _send_cluster(self, todo: list[ScriptCall]) -> list[Any]:
        """The preceding commands in one cluster pipeline, then one pipeline of scripts per
        node. Returns each call's outcome."""
        conn = self._conn
        rc = conn.client
        outcomes: list[Any] = [None] * len(todo)
        first = [(i, c) for i, c in enumerate(todo) if c.before and not c.before_done]
        if first:
            pipe = rc.pipeline()
            spans = []
            for i, call in first:
                start = len(pipe)
                for command in call.before:
                    pipe.execute_command(*command)
                spans.append((i, start, len(pipe)))
            conn.stats.add(
                len({rc.get_node_from_key(str(cmd[1])).name for _, c in first for cmd in c.before}), len(pipe)
            )
            replies = await pipe.execute(raise_on_error=False)
            for i, a, b in spans:
                failed = next((r for r in replies[a:b] if isinstance(r, BaseException)), None)
                if failed is not None:
                    outcomes[i] = failed
                else:
                    todo[i].before_done = True
        groups: dict[str, tuple[Any, list[int]]] = {}
        for i, call in enumerate(todo):
            if outcomes[i] is None:
                node = rc.get_node_from_key(call.keys[0])
                groups.setdefault(node.name, (node, []))[1].append(i)
        sends = [self._node_pipeline(node, [todo[i] for i in idx]) for node, idx in groups.values()]
        results = [await sends[0]] if len(sends) == 1 else await asyncio.gather(*sends)
        for (_node, idx), got in zip(groups.values(), results, strict=True):
            for i, out in zip(idx, got, strict=True):
                outcomes[i] = out
        return outcomes

    async def _node_pipeline(self, node: Any, calls: list[ScriptCall]) -> list[Any]:
        """One node's scripts (what it must load first, WAIT after); a fault of the node is
        every call's outcome."""
        conn = self._conn
        rc = conn.client
        pipe = rc.pipeline()
        for script in {c.script.sha: c.script for c in calls if c.load}.values():
            pipe.execute_command("SCRIPT LOAD", script.body, target_nodes=node)
        start = len(pipe)
        for call in calls:
            pipe.execute_command(*call.evalsha())
        durable = self._wait is not None and any(c.durable for c in calls)
        if durable:
            assert self._wait is not None
            pipe.execute_command(*self._wait, target_nodes=node)
        conn.stats.add(1, len(pipe))
        try:
            replies = await pipe.execute(raise_on_error=False)
        except Exception as exc:
            if not is_fault(exc, conn.kind):
                raise
            return [exc] * len(calls)
        outcomes = list(replies[start : start + len(calls)])
        if durable:
            # a script that redis-py sent to another node (MOVED, ASK) is not covered by
            # this node's WAIT: counted as short
            moved = sum(1 for c in calls if c.durable and rc.get_node_from_key(c.keys[0]).name != node.name)
            acknowledged = replies[-1] if not moved else -1
            self._count_short(acknowledged, sum(1 for c in calls if c.durable))
        return outcomes

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _fail(calls: Sequence[ScriptCall], exc: BaseException) -> None:
    for call in calls:
        if call.future is not None and not call.future.done():
            call.future.set_exception(exc)


def _outcome(replies: Sequence[Any]) -> Any:
    """A call's outcome from its replies (its preceding commands', then its script's): the
    first error, else the script's reply."""
    for reply in replies:
        if isinstance(reply, BaseException):
            return reply
    return replies[-1]
