"""What the local Redis topologies (:mod:`truco_tools.redis_cluster`, :mod:`truco_tools.redis_sentinel`)
share: the URL schemes, waiting for a state, stopping processes, replication checks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

import redis

from truco_tools.redis_proc import RedisProcess

CLUSTER_SCHEME = "redis+cluster"
SENTINEL_SCHEME = "redis+sentinel"
DEFAULT_MASTER_NAME = "truco"
POLL_SECONDS = 0.05

N = TypeVar("N")


class TopologyTimeout(RuntimeError):
    """The cluster or sentinel group did not reach the awaited state in time."""


@dataclass(frozen=True)
class Failover(Generic[N]):
    """What :meth:`kill_primary` did: the node it killed, the one that replaced it, and how
    long the replacement took (from the SIGKILL to the new primary being agreed on)."""

    killed: N
    promoted: N
    seconds: float


def _wait(check: Callable[[], str | None], timeout: float, what: str) -> None:
    """Poll ``check`` (None: done; a string: what is still missing) until done or timeout."""
    deadline = time.monotonic() + timeout
    problem = "not checked yet"
    while time.monotonic() < deadline:
        try:
            found = check()
        except (redis.RedisError, OSError) as exc:
            found = f"{type(exc).__name__}: {exc}"
        if found is None:
            return
        problem = found
        time.sleep(POLL_SECONDS)
    raise TopologyTimeout(f"{what}: not reached within {timeout:g}s; last seen: {problem}")


def _client(proc: RedisProcess) -> redis.Redis:
    return redis.Redis(host=proc.host, port=proc.port, socket_timeout=2, decode_responses=True)


def _stop_all(processes: Iterable[RedisProcess], timeout: float) -> None:
    for proc in processes:
        proc.stop(timeout)


def _replication_problem(proc: RedisProcess, name: str) -> str | None:
    """None when the replica ``proc`` has its link up and no sync in progress."""
    with _client(proc) as c:
        info = c.info("replication")
    if info.get("role") != "slave":
        return f"{name} is {info.get('role')}, not a replica"
    if info.get("master_link_status") != "up":
        return f"{name}: master link {info.get('master_link_status')}"
    if int(info.get("master_sync_in_progress", 0)):
        return f"{name}: initial sync in progress"
    return None
