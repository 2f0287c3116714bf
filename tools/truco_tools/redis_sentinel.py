"""A local Sentinel group: one primary, its replicas and the sentinels that watch them
(:func:`start_sentinel_group`); :mod:`truco_tools.redis_cluster` describes both local
topologies and their command line."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.sentinel import Sentinel

from truco_tools.redis_proc import RedisProcess, start_redis
from truco_tools.redis_topology import (
    DEFAULT_MASTER_NAME,
    SENTINEL_SCHEME,
    Failover,
    TopologyTimeout,
    _client,
    _replication_problem,
    _stop_all,
    _wait,
)


@dataclass
class LocalSentinelGroup:
    """One primary, its replicas and the sentinels that watch them; build it with
    :func:`start_sentinel_group`. ``servers[0]`` was the primary at the start."""

    servers: list[RedisProcess]
    sentinels: list[RedisProcess]
    master_name: str
    workdir: Path
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        """``redis+sentinel://HOST:PORT,HOST:PORT,.../MASTER_NAME`` (the sentinels)."""
        return f"{SENTINEL_SCHEME}://" + ",".join(s.address for s in self.sentinels) + f"/{self.master_name}"

    @property
    def sentinel_addresses(self) -> list[tuple[str, int]]:
        return [(s.host, s.port) for s in self.sentinels]

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in (*self.servers, *self.sentinels)]

    def sentinel(self, **connection_kwargs: Any) -> Sentinel:
        """redis-py's Sentinel client over every sentinel (keyword arguments: for the
        connections to the primary and replicas)."""
        return Sentinel(self.sentinel_addresses, sentinel_kwargs={"socket_timeout": 2}, **connection_kwargs)

    def master_client(self, **connection_kwargs: Any) -> redis.Redis:
        """``Sentinel.master_for(master_name)``: follows the primary across failovers."""
        client: redis.Redis = self.sentinel(**connection_kwargs).master_for(self.master_name)
        return client

    def server_at(self, host: str, port: int) -> RedisProcess:
        return next(s for s in self.servers if (s.host, s.port) == (host, port))

    def _sentinel_view(self, sentinel: RedisProcess) -> tuple[str, int]:
        with _client(sentinel) as c:
            host, port = c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name)
        return str(host), int(port)

    def current_primary(self) -> RedisProcess:
        """The server every running sentinel names as the primary (raises if they differ)."""
        views = {self._sentinel_view(s) for s in self.sentinels if s.running()}
        if len(views) != 1:
            raise TopologyTimeout(f"the sentinels disagree on the primary: {sorted(views)}")
        (address,) = views
        return self.server_at(*address)

    def _primary_problem(self) -> tuple[RedisProcess | None, str | None]:
        """(agreed primary, None) once every sentinel names the same running primary, which
        reports itself primary, with no failover in progress and every other sentinel known."""
        views = {self._sentinel_view(s) for s in self.sentinels if s.running()}
        if len(views) != 1:
            return None, f"the sentinels disagree on the primary: {sorted(views)}"
        primary = self.server_at(*views.pop())
        if not primary.running():
            return None, f"the sentinels name {primary.address}, which is not running"
        with _client(primary) as c:
            if c.info("replication").get("role") != "master":
                return None, f"{primary.address} does not report itself primary yet"
        for s in self.sentinels:
            with _client(s) as c:
                state = c.sentinel_master(self.master_name)
            flags = {k for k, v in state.items() if k.startswith("is_") and v is True}
            if flags != {"is_master"}:
                return None, f"sentinel {s.address} flags the primary {sorted(flags)}"
            if int(state["num-other-sentinels"]) != len(self.sentinels) - 1:
                return None, f"sentinel {s.address} knows {state['num-other-sentinels']} other sentinel(s)"
        return primary, None

    def health_problem(self) -> str | None:
        """None when every server and sentinel runs, the sentinels agree on the primary,
        and every replica is known to every sentinel and in sync."""
        for p in (*self.servers, *self.sentinels):
            if not p.running():
                return f"{p.address} is not running"
        primary, problem = self._primary_problem()
        if primary is None:
            return problem
        replicas = [s for s in self.servers if s is not primary]
        for s in self.sentinels:
            with _client(s) as c:
                known = c.sentinel_slaves(self.master_name)
            ok = {
                (str(r["ip"]), int(r["port"]))
                for r in known
                if r.get("is_slave") and not r.get("is_sdown") and not r.get("is_disconnected")
                and r.get("master-link-status") == "ok"
            }  # fmt: skip
            missing = [r.address for r in replicas if (r.host, r.port) not in ok]
            if missing:
                return f"sentinel {s.address} does not see replica(s) {missing} in sync"
        for r in replicas:
            problem = _replication_problem(r, r.address)
            if problem is not None:
                return problem
        return None

    def wait_healthy(self, timeout: float = 30.0) -> None:
        _wait(self.health_problem, timeout, "sentinel group healthy")

    def kill_primary(self, timeout: float = 30.0) -> Failover[RedisProcess]:
        """SIGKILL the current primary by its pid and wait until every sentinel names a
        promoted replica that reports itself primary."""
        victim = self.current_primary()
        started = time.monotonic()
        victim.kill()
        promoted: list[RedisProcess] = []

        def promotion() -> str | None:
            primary, problem = self._primary_problem()
            if primary is None:
                return problem
            if primary is victim:
                return "the sentinels still name the killed primary"
            promoted[:] = [primary]
            return None

        _wait(promotion, timeout, f"a replica of {victim.address} promoted")
        return Failover(killed=victim, promoted=promoted[0], seconds=time.monotonic() - started)

    def wait_replicated(self, timeout: float = 30.0) -> None:
        """Wait until every running replica has processed everything the primary had
        written when called (see :meth:`LocalRedisCluster.wait_replicated`)."""
        primary = self.current_primary()
        with _client(primary) as c:
            target = int(c.info("replication")["master_repl_offset"])
        replicas = [s for s in self.servers if s is not primary and s.running()]

        def caught_up() -> str | None:
            for r in replicas:
                with _client(r) as c:
                    offset = int(c.info("replication").get("slave_repl_offset", -1))
                if offset < target:
                    return f"{r.address} at offset {offset} of {target}"
            return None

        _wait(caught_up, timeout, "replicas in sync")

    def restart(self, server: RedisProcess, timeout: float = 30.0) -> None:
        """Start a killed server again as a replica of the current primary and wait until
        the group is healthy."""
        primary = self.current_primary()
        server.restart(() if server is primary else ("--replicaof", primary.host, str(primary.port)))
        self.wait_healthy(timeout)

    def flushall(self) -> None:
        with _client(self.current_primary()) as c:
            c.flushall()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the sentinels first (so they start no failover), then the servers; remove
        the directories."""
        _stop_all(self.sentinels, timeout)
        _stop_all(self.servers, timeout)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_sentinel_group(
    *,
    host: str = "127.0.0.1",
    replicas: int = 1,
    sentinels: int = 3,
    quorum: int = 2,
    master_name: str = DEFAULT_MASTER_NAME,
    down_after_ms: int = 1000,
    failover_timeout_ms: int = 3000,
    appendonly: bool = False,
    timeout: float = 30.0,
) -> LocalSentinelGroup:
    """Start a primary, ``replicas`` replicas following it and ``sentinels`` sentinels
    monitoring it as ``master_name`` (quorum ``quorum``), and wait until it is healthy.

    ``failover_timeout_ms`` is short (Redis's default is 3 minutes) because a sentinel that
    took part in a failover starts no other one for the same master within twice that
    time: with 3 s, back-to-back failovers in tests are a few seconds apart, not minutes.
    """
    if not 1 <= quorum <= sentinels:
        raise ValueError("quorum must be between 1 and the number of sentinels")
    root = Path(tempfile.mkdtemp(prefix="truco-redis-sentinel-"))
    group = LocalSentinelGroup(servers=[], sentinels=[], master_name=master_name, workdir=root, host=host)
    try:
        for i in range(1, replicas + 2):
            workdir = root / f"server-{i}"
            workdir.mkdir()
            group.servers.append(
                start_redis(
                    host=host,
                    workdir=workdir,
                    appendonly=appendonly,
                    extra_args=("--repl-diskless-sync-delay", "0"),
                )
            )
        primary = group.servers[0]
        for replica in group.servers[1:]:
            with _client(replica) as c:
                c.execute_command("REPLICAOF", primary.host, primary.port)
        for i in range(1, sentinels + 1):
            workdir = root / f"sentinel-{i}"
            workdir.mkdir()
            config = workdir / "sentinel.conf"
            config.write_text(
                f"sentinel monitor {master_name} {primary.host} {primary.port} {quorum}\n"
                f"sentinel down-after-milliseconds {master_name} {down_after_ms}\n"
                f"sentinel failover-timeout {master_name} {failover_timeout_ms}\n"
                f"sentinel parallel-syncs {master_name} 1\n",
                encoding="utf-8",
            )
            group.sentinels.append(
                start_redis(host=host, workdir=workdir, config_file=config, extra_args=("--sentinel",))
            )
        group.wait_healthy(timeout)
    except BaseException:
        group.stop()
        raise
    return group
