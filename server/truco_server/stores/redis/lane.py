"""The batcher's own connection to one server, a Sentinel group's primary or a cluster
node: batches written one after another, their replies read as they arrive.

A batch of script calls (:mod:`.batch`) is one write and one read. Through redis-py's pool
a lone batch cost the worker about 1.6 times a bare ``asyncio.Protocol``'s round trip in CPU,
the lane about 1.1 times (``python benchmarks/round_trip_floor.py``): the pool's lock and
metric records, its check for buffered bytes, and the stream reader's wake-up per reply. A
worker at moderate load sends most batches alone, one per action, so that difference is a
few percent of an action's cost there (docs/benchmarks.md).

A :class:`Lane` takes one connection from redis-py -- from the pool of one server or a
Sentinel group (:meth:`Lane.open`), or of a cluster node (:meth:`Lane.open_on_node`):
opened, authenticated, on the Sentinel group's current primary, over TLS where the URL says
so, all of that redis-py's -- and becomes the protocol of its transport: what arrives is fed to a hiredis
reader (the parser redis-py uses, with redis-py's error classes: a ``NOSCRIPT`` reply is a
``NoScriptError``...), and each batch gets its replies in the order the batches were
written (Redis answers in order). Batches in flight share the connection. A batch whose
caller stops waiting (a timeout, a cancelled task) stays in line and its replies are
dropped when they come.

A lane ends -- every batch still waiting fails with redis-py's ``ConnectionError``, a fault
the batcher retries (re-sending a batch is safe, :mod:`.batch`) -- when its connection is
lost or closed, when a reply says the server is no longer the primary (``READONLY``, or a
demoted primary's ``UNBLOCKED``: the next lane's connection asks the sentinels again, as
redis-py's Sentinel connection does), when a reply cannot be parsed or comes unasked, and
when :meth:`~.connection.RedisConnection.recover` drops it after a connection fault or a
timeout. Its connection goes back to redis-py, closed; the next batch opens a new lane.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import hiredis
from redis._parsers.base import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, ReadOnlyError, ResponseError
from redis.sentinel import DEMOTED_MASTER_UNBLOCKED_ERROR

from truco_server.core import metrics

__all__ = ["Lane"]


class _Batch:
    __slots__ = ("count", "future", "replies")

    def __init__(self, future: asyncio.Future[list[Any]], count: int) -> None:
        self.future = future
        self.count = count
        self.replies: list[Any] = []


Release = Callable[[Any], Awaitable[None]]
"""Gives a connection back to where it came from (closed, it reconnects on its next use)."""


class Lane(asyncio.Protocol):
    """One connection of redis-py's, read by the lane itself (module docstring). Made by
    :meth:`open` (a pool's) or :meth:`open_on_node` (a cluster node's); :meth:`exchange`
    sends a batch; :meth:`close` ends it."""

    def __init__(self, connection: Any, transport: asyncio.Transport, release: Release) -> None:
        self._connection = connection
        self._transport = transport
        self._release = release
        self._stream = transport.get_protocol()
        """redis-py's protocol, told when the connection is lost (its ``disconnect`` waits
        for that)."""
        self._reader = hiredis.Reader(protocolError=InvalidResponse, replyError=BaseParser.parse_error)
        self._waiting: deque[_Batch] = deque()
        self.lost: BaseException | None = None
        """Why the lane ended (``None`` while it serves)."""
        self._returned = False

    @classmethod
    async def open(cls, pool: Any) -> Lane:
        """A lane on a connection of redis-py's ``pool`` (its ``get_connection``: connected
        and ready to send)."""
        connection = await pool.get_connection()
        return await cls._take(connection, pool.release)

    @classmethod
    async def open_on_node(cls, node: Any) -> Lane:
        """A lane on a connection of a cluster node (redis-py's ``ClusterNode``: its
        ``acquire_connection``, connected here, and ``release``)."""
        connection = node.acquire_connection()

        async def release(c: Any) -> None:
            node.release(c)

        failure: BaseException | None = None
        try:
            await node.disconnect_if_needed(connection)  # one marked after a failover
            await connection.connect()
        except BaseException as exc:
            failure = exc
        if failure is not None:
            await release(connection)  # out of the handler (docs/engine.md, "Compiled build")
            try:  # its traceback holds this frame: no local may hold it
                raise failure
            finally:
                del failure
        return await cls._take(connection, release)

    @classmethod
    async def _take(cls, connection: Any, release: Release) -> Lane:
        try:
            transport = connection._writer.transport  # redis-py's stream writer's
            lane = cls(connection, transport, release)
            transport.set_protocol(lane)
            return lane
        except BaseException as exc:
            failure = exc
        await connection.disconnect()  # out of the handler (docs/engine.md, "Compiled build")
        await release(connection)
        try:  # its traceback holds this frame: no local may hold it
            raise failure
        finally:
            del failure

    @property
    def serving(self) -> bool:
        return self.lost is None

    async def exchange(self, payload: bytes, count: int) -> list[Any]:
        """Write ``payload`` (``count`` packed commands) and return their replies, an error
        reply as its exception; redis-py's ``ConnectionError`` when the lane ends first."""
        if self.lost is not None:
            raise RedisConnectionError(f"the store's connection ended: {self.lost}")
        batch = _Batch(asyncio.get_running_loop().create_future(), count)
        self._waiting.append(batch)
        self._transport.write(payload)
        return await batch.future

    # -- asyncio.Protocol ---------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        waiting = self._waiting
        while True:
            try:
                reply = reader.gets()
            except InvalidResponse as exc:
                self._end(RedisConnectionError(f"unreadable reply from Redis: {exc}"), "unreadable")
                return
            if reply is False:
                return
            if isinstance(reply, hiredis.PushNotification):
                continue  # RESP3's out-of-band messages answer no batch
            if not waiting:
                self._end(RedisConnectionError("a reply from Redis that no batch asked for"), "unasked")
                return
            if _demoted(reply):
                self._end(RedisConnectionError("the server is no longer the primary"), "demoted")
                return
            batch = waiting[0]
            batch.replies.append(reply)
            if len(batch.replies) == batch.count:
                waiting.popleft()
                if not batch.future.done():
                    batch.future.set_result(batch.replies)

    def eof_received(self) -> bool:
        return False  # the transport closes itself: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(
            RedisConnectionError(f"connection to Redis lost: {exc}" if exc else "connection to Redis closed"),
            "lost",
        )
        self._stream.connection_lost(exc)

    # -- the end ------------------------------------------------------------------------

    def _end(self, exc: BaseException, reason: str) -> None:
        """Fail every batch waiting with ``exc`` and close the connection (once; counted by
        ``reason`` in ``truco_redis_lane_ends_total``)."""
        if self.lost is not None:
            return
        self.lost = exc
        metrics.REDIS_LANE_ENDS.labels(reason).inc()
        waiting, self._waiting = self._waiting, deque()
        for batch in waiting:
            if not batch.future.done():
                batch.future.set_exception(exc)
        self._transport.close()

    async def close(self, why: str = "closed by the store") -> None:
        """End the lane (if it serves) and give its connection back to the pool, closed."""
        self._end(RedisConnectionError(why), "dropped")
        if self._returned:
            return
        self._returned = True
        cancelled: BaseException | None = None
        try:  # the transport is closed already: nothing to wait for
            await self._connection.disconnect(nowait=True)
        except Exception:  # a connection being discarded: its fault changes nothing
            pass
        except BaseException as exc:  # cancelled: the connection goes back all the same
            cancelled = exc
        # not in a handler or a ``finally`` (docs/engine.md, "Compiled build")
        await self._release(self._connection)
        if cancelled is not None:
            try:  # its traceback holds this frame: no local may hold it
                raise cancelled
            finally:
                del cancelled


def _demoted(reply: Any) -> bool:
    """Whether ``reply`` says the server is no longer the primary."""
    if isinstance(reply, ReadOnlyError):
        return True
    return isinstance(reply, ResponseError) and str(reply).startswith(DEMOTED_MASTER_UNBLOCKED_ERROR)
