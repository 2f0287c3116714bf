"""Script calls batched per event-loop turn: the commits (and creates, and every other
script) that tasks issue in the same turn of the event loop go to Redis together.

A caller hands :meth:`ScriptBatcher.call` one :class:`ScriptCall` (a script, its keys and
arguments, the commands that must precede it, whether it waits for replicas) and awaits its
own result. The first caller of a turn yields once -- the other tasks of the turn add their
calls meanwhile -- then sends every call queued and answers each (no task, no timer). When
nothing else is ready to run in the turn (a lone move on a quiet worker), nothing could join
the batch before the loop next waits for input, so it sends at once, without the yield and
the turn of the loop it costs:

* one server or a Sentinel group's primary: one pipeline (one write, one read) with each
  call's preceding commands and its ``EVALSHA``, in the callers' order, and one ``WAIT`` at
  the end when a call asks for replicas (``WAIT`` covers every write the connection made
  before it);
* a Redis Cluster: the preceding commands (other slots: the queues, the owner index) in one
  cluster pipeline first, then the ``EVALSHA``\\ s in one pipeline per node (grouped from
  redis-py's slot map; one node's fault only retries that node's calls), each node's
  ``WAIT`` after its scripts. ``MOVED`` and ``ASK`` are redis-py's cluster client's to handle.

How a batch is sent is :mod:`.pipelines`'.

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
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import NoScriptError

from truco_server.ports.errors import StoreUnavailable
from truco_server.stores.redis.connection import Attempts, RedisConnection, is_fault, retryable
from truco_server.stores.redis.pipelines import Command, ScriptCall, send_cluster, send_one_server

__all__ = ["Command", "ScriptBatcher", "ScriptCall"]

_MAX_RELOADS = 4
"""Rounds of ``NOSCRIPT`` in a row a call may meet before it gives up."""


class ScriptBatcher:
    """Sends the script calls of each event-loop turn together (module docstring)."""

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn
        self._pending: list[ScriptCall] = []
        self._tasks: dict[asyncio.Task[None], list[ScriptCall]] = {}
        """Tasks sending again the calls of a cancelled sender, with those calls."""
        self._closed = False
        self._wait = conn.settings.wait_replicas > 0
        self._send = send_cluster(conn) if conn.kind == "cluster" else send_one_server(conn)
        self.others_ready: Callable[[asyncio.AbstractEventLoop], bool] = _others_ready
        """Whether other callbacks are queued in this turn of the loop, so that its first caller
        yields before it sends (:func:`_others_ready`). An attribute, which a test may replace
        to watch the decision: a compiled module calls its own functions directly, past a
        replaced module attribute."""

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
            if self.others_ready(loop):
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
            if future.done() and not future.cancelled():
                future.exception()  # nobody will look at it
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
        self._tasks[task] = calls
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task, None)

    async def _run(self, calls: list[ScriptCall]) -> None:
        """Send ``calls`` until each has its outcome (module docstring)."""
        conn = self._conn
        todo = calls
        attempts: Attempts | None = None
        try:
            while todo:
                durable = self._wait and any(c.durable for c in todo)
                extra = conn.settings.wait_timeout_ms / 1000 if durable else 0.0
                try:
                    async with asyncio.timeout(conn.timeout + extra):
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
                elif not future.done():  # (a caller cancelled meanwhile)
                    future.set_exception(conn.unavailable(call.operation, out, "failed"))
            elif not future.done():
                future.set_result(out)
        return again, fault

    async def close(self) -> None:
        self._closed = True
        left = list(self._tasks.items())
        for task, _ in left:
            task.cancel()
        for task, calls in left:
            with contextlib.suppress(asyncio.CancelledError):
                await task
            # a task cancelled before its first step ran no line: its calls fail here
            _fail(calls, StoreUnavailable("the store was closed"))


def _others_ready(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether other callbacks are queued to run before the loop next waits for input (one
    of them may add a call to the batch). An event loop that does not show its queue (not
    the standard one) is taken to have some."""
    ready = getattr(loop, "_ready", None)
    return ready is None or len(ready) > 0


def _fail(calls: Sequence[ScriptCall], exc: BaseException) -> None:
    for call in calls:
        if call.future is not None and not call.future.done():
            call.future.set_exception(exc)
