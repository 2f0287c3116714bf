"""Whether each Redis primary keeps its data across a restart (:func:`read_persistence`).

Each primary -- the one server, the Sentinel group's primary, every primary of a cluster --
is asked ``CONFIG GET appendonly`` and ``CONFIG GET save``. Where ``CONFIG`` is renamed,
disabled or refused (managed services, ACLs), ``INFO persistence`` still tells whether the
append-only file is on (``aof_enabled``), not whether snapshots are scheduled: such a node
is ``on`` with the append-only file, else ``unknown``, with the reason. Nothing here raises
for the backend's faults: a node that does not answer is ``unknown`` too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import ResponseError

from truco_server.ports.persistence import NodePersistence, Persistence
from truco_server.stores.redis.connection import RedisConnection, is_fault
from truco_server.stores.redis.replies import as_str

__all__ = ["read_persistence"]

Execute = Callable[..., Awaitable[Any]]


async def read_persistence(conn: RedisConnection, timeout: float) -> Persistence:
    """Every primary's persistence, each read within ``timeout`` seconds (no retries)."""
    if conn.kind != "cluster":
        return Persistence((await _node(conn, conn.description, conn.client.execute_command, timeout),))
    try:
        async with asyncio.timeout(timeout):
            await conn.client.initialize()
        primaries = conn.client.get_primaries()
    except Exception as exc:
        if not is_fault(exc, conn.kind):
            raise
        return Persistence((NodePersistence(conn.description, None, None, _no_answer(exc)),))
    nodes = await asyncio.gather(*(_node(conn, n.name, n.execute_command, timeout) for n in primaries))
    return Persistence(tuple(nodes))


async def _node(conn: RedisConnection, name: str, execute: Execute, timeout: float) -> NodePersistence:
    try:
        async with asyncio.timeout(timeout):
            conn.stats.add(1, 2)
            aof, save = await asyncio.gather(
                execute("CONFIG", "GET", "appendonly"), execute("CONFIG", "GET", "save")
            )
        return NodePersistence(name, _value(aof, "appendonly") == "yes", _value(save, "save"))
    except Exception as exc:
        if not is_fault(exc, conn.kind):
            raise
        if not _refused(exc):
            return NodePersistence(name, None, None, _no_answer(exc))
        refused = f"CONFIG GET refused ({str(exc)[:120]})"
    try:  # CONFIG renamed, disabled or not allowed: INFO tells about the append-only file
        async with asyncio.timeout(timeout):
            conn.stats.add(1, 1)
            info = await execute("INFO", "persistence")
        aof = bool(int(info.get("aof_enabled", 0)))
    except Exception as exc:
        if not is_fault(exc, conn.kind):
            raise
        return NodePersistence(name, None, None, f"{refused}; INFO persistence: {_no_answer(exc)}")
    return NodePersistence(name, aof, None, f"{refused}; the snapshot schedule could not be read")


def _value(reply: Any, name: str) -> str:
    """A ``CONFIG GET`` reply's value (redis-py answers a dict; a bare list on some paths)."""
    if isinstance(reply, dict):
        for k, v in reply.items():
            if as_str(k) == name:
                return as_str(v)
        return ""
    pairs = list(reply)
    return next((as_str(v) for k, v in zip(pairs[::2], pairs[1::2], strict=True) if as_str(k) == name), "")


def _refused(exc: BaseException) -> bool:
    """An error reply (unknown command, ``NOPERM``), not a fault of the connection."""
    return isinstance(exc, ResponseError)


def _no_answer(exc: BaseException) -> str:
    return f"no answer: {type(exc).__name__}: {str(exc)[:120]}"
