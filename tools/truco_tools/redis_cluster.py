"""A local Redis Cluster and a local Sentinel group on loopback, for tests and development.

Both are built from :func:`truco_tools.redis_proc.start_redis` processes (one per node,
each in its own directory under one temporary directory, each stopped or killed by its own
pid), so nothing here needs Docker or a system service::

    cluster = start_cluster()             # 3 primaries + 3 replicas
    try:
        cluster.url                       # redis+cluster://127.0.0.1:P1,...,127.0.0.1:P6
        rc = cluster.client()             # redis-py's RedisCluster on the same nodes
        failover = cluster.kill_primary()  # SIGKILL one primary, wait for its replica
        cluster.restart(failover.killed)  # it comes back as a replica of the new primary
    finally:
        cluster.stop()

    group = start_sentinel_group()        # 1 primary, 1 replica, 3 sentinels
    try:
        group.url                         # redis+sentinel://127.0.0.1:S1,...,127.0.0.1:S3/truco
        group.master_client()             # Sentinel(...).master_for("truco")
        group.kill_primary()              # the sentinels promote the replica
    finally:
        group.stop()

From a shell (the Redis side alone, e.g. for work on the storage layer; it prints the URL
and every process, times ``--failovers`` kill-and-restart rounds, and stops on Ctrl-C)::

    python -m truco_tools.redis_cluster cluster [--timeout-ms 2000] [--failovers N] [--appendonly]
    python -m truco_tools.redis_cluster sentinel [--timeout-ms 1000] [--failovers N] [--appendonly]

How the cluster is made (no ``redis-cli --cluster``; every step is a command sent by
redis-py, so the primary/replica pairing is known, not chosen by a tool): every node
starts with ``cluster-enabled yes``, its own ``nodes.conf`` and an explicit cluster bus port
(``cluster-port``, so the bus port is free too; needs Redis 7.0 or newer); each primary is
given an equal range of the 16,384 slots (``CLUSTER ADDSLOTSRANGE``) and each node a distinct
config epoch (``CLUSTER SET-CONFIG-EPOCH``); the first node meets every other one
(``CLUSTER MEET``); once every node knows every other one, each replica follows its primary
(``CLUSTER REPLICATE``); then :meth:`LocalRedisCluster.wait_healthy` waits until every node
reports ``cluster_state:ok`` with all slots served, agrees on the same topology, and every
replica's link is up with no sync in progress.

The URLs are the forms the storage layer is selected by (docs/operations.md, "Redis
URLs"): hand one to a worker as ``REDIS_URL`` and it runs on that cluster or group.
:meth:`LocalRedisCluster.move_slot` migrates one slot to another primary (resharding),
for tests that follow a slot move.

Timings: ``cluster-node-timeout`` (``node_timeout_ms``) and the sentinels'
``down-after-milliseconds`` (``down_after_ms``) decide how fast a dead primary is replaced.
The defaults here are short so tests stay fast; production keeps Redis's own (15 s, 30 s).
Without ``appendonly`` nothing is persisted: a killed replica comes back empty and resyncs
from its primary, and a killed primary's data lives on only in its promoted replica.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import redis
from redis.cluster import ClusterNode as ClientNode
from redis.cluster import RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.sentinel import Sentinel

from truco_tools.redis_proc import RedisProcess, free_port, start_redis

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


# ------------------------------------------------------------------------------ cluster
@dataclass(frozen=True)
class NodeView:
    """One line of ``CLUSTER NODES``: a node as some node sees it."""

    node_id: str
    host: str
    port: int
    flags: frozenset[str]
    primary_id: str | None
    slots: tuple[tuple[int, int], ...]

    @property
    def is_primary(self) -> bool:
        return "master" in self.flags

    @property
    def failing(self) -> bool:
        return bool(self.flags & {"fail", "fail?", "handshake", "noaddr"})


def parse_cluster_nodes(text: str) -> list[NodeView]:
    """Parse the reply of ``CLUSTER NODES`` (slot-migration entries ``[...]`` are skipped)."""
    views: list[NodeView] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        address = fields[1].split(",", 1)[0].split("@", 1)[0]  # ip:port@cport[,hostname]
        host, _, port = address.rpartition(":")
        slots: list[tuple[int, int]] = []
        for item in fields[8:]:
            if item.startswith("["):
                continue
            first, _, last = item.partition("-")
            slots.append((int(first), int(last or first)))
        views.append(
            NodeView(
                node_id=fields[0],
                host=host,
                port=int(port) if port else 0,
                flags=frozenset(fields[2].split(",")),
                primary_id=None if fields[3] == "-" else fields[3],
                slots=tuple(sorted(slots)),
            )
        )
    return views


@dataclass
class ClusterNode:
    """One ``redis-server`` of the local cluster. ``index`` (1-based) never changes; the
    role does (a replica is promoted, a restarted primary comes back as a replica)."""

    index: int
    process: RedisProcess
    bus_port: int
    node_id: str = ""

    @property
    def address(self) -> str:
        return self.process.address

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.running()

    def client(self) -> redis.Redis:
        """A plain client of this one node (decoded replies)."""
        return _client(self.process)

    def view(self) -> list[NodeView]:
        with self.client() as c:
            reply = c.execute_command("CLUSTER", "NODES")
        return parse_cluster_nodes(reply if isinstance(reply, str) else reply.decode())

    def role(self) -> str:
        """``master`` or ``slave``, as this node reports itself (``INFO replication``)."""
        with self.client() as c:
            return str(c.info("replication")["role"])


@dataclass
class LocalRedisCluster:
    """A Redis Cluster of loopback processes; build it with :func:`start_cluster`."""

    nodes: list[ClusterNode]
    workdir: Path
    replicas_per_primary: int
    node_timeout_ms: int
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        """``redis+cluster://HOST:PORT,HOST:PORT,...`` listing every node as a seed."""
        return f"{CLUSTER_SCHEME}://" + ",".join(n.address for n in self.nodes)

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [(n.process.host, n.port) for n in self.nodes]

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes]

    def client(self, **kwargs: object) -> RedisCluster:
        """redis-py's cluster client seeded with every node (keyword arguments passed on)."""
        seeds = [ClientNode(host, port) for host, port in self.startup_nodes]  # type: ignore[no-untyped-call]
        return RedisCluster(startup_nodes=seeds, **kwargs)  # type: ignore[arg-type]

    # -------------------------------------------------------------------- topology
    def node(self, node_id: str) -> ClusterNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def topology(self) -> list[NodeView]:
        """``CLUSTER NODES`` as seen by the first running node that answers."""
        error: Exception | None = None
        for n in self.nodes:
            if n.running():
                try:
                    return n.view()
                except redis.RedisError as exc:
                    error = exc
        raise TopologyTimeout(f"no running cluster node answers ({error})")

    def primaries(self) -> list[ClusterNode]:
        """The primaries that serve slots now (by first slot), running or not."""
        views = [v for v in self.topology() if v.is_primary and v.slots]
        return [self.node(v.node_id) for v in sorted(views, key=lambda v: v.slots[0])]

    def replicas_of(self, primary: ClusterNode) -> list[ClusterNode]:
        return [self.node(v.node_id) for v in self.topology() if v.primary_id == primary.node_id]

    def primary_for_slot(self, slot: int) -> ClusterNode:
        for v in self.topology():
            if v.is_primary and any(first <= slot <= last for first, last in v.slots):
                return self.node(v.node_id)
        raise LookupError(f"slot {slot} is not served")

    def primary_for_key(self, key: str | bytes) -> ClusterNode:
        return self.primary_for_slot(key_slot(key.encode() if isinstance(key, str) else key))

    # -------------------------------------------------------------------- health
    def health_problem(self, expect_running: Sequence[ClusterNode] | None = None) -> str | None:
        """None when the cluster is whole; else the first problem found.

        Whole: every node in ``expect_running`` (default: all) runs, reports
        ``cluster_state:ok`` with all 16,384 slots ok and sees the same topology with no
        node failing; there are as many primaries as at the start, each with its replicas,
        and every replica's link is up with no sync in progress.
        """
        nodes = list(self.nodes if expect_running is None else expect_running)
        for n in nodes:
            if not n.running():
                return f"node {n.index} ({n.address}) is not running"
        shapes: set[tuple[tuple[str, str | None, tuple[tuple[int, int], ...]], ...]] = set()
        for n in nodes:
            with n.client() as c:
                info = c.execute_command("CLUSTER", "INFO")
            text = info if isinstance(info, str) else info.decode()
            fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
            if fields.get("cluster_state") != "ok":
                return f"node {n.index}: cluster_state:{fields.get('cluster_state')}"
            if fields.get("cluster_slots_ok") != str(REDIS_CLUSTER_HASH_SLOTS):
                return f"node {n.index}: cluster_slots_ok:{fields.get('cluster_slots_ok')}"
            views = n.view()
            known = {v.node_id for v in views if not v.failing}
            wanted = {m.node_id for m in nodes}
            if not wanted <= known:
                return f"node {n.index} does not see {sorted(wanted - known)} as healthy"
            shapes.add(
                tuple(sorted((v.node_id, v.primary_id, v.slots) for v in views if v.node_id in wanted))
            )
        if len(shapes) != 1:
            return "nodes disagree on the topology"
        (shape,) = shapes
        primaries = [entry for entry in shape if entry[1] is None]
        if expect_running is None:
            expected = len(self.nodes) // (1 + self.replicas_per_primary)
            if len(primaries) != expected:
                return f"{len(primaries)} primaries, expected {expected}"
            for primary_id, _, _ in primaries:
                followers = [e for e in shape if e[1] == primary_id]
                if len(followers) != self.replicas_per_primary:
                    return f"primary {self.node(primary_id).index} has {len(followers)} replica(s)"
        for replica_id, followed, _ in shape:
            if followed is not None:
                replica = self.node(replica_id)
                problem = _replication_problem(replica.process, f"node {replica.index}")
                if problem is not None:
                    return problem
        return None

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Wait until :meth:`health_problem` finds nothing (raises TopologyTimeout)."""
        _wait(self.health_problem, timeout, "cluster healthy")

    # -------------------------------------------------------------------- failures
    def kill_primary(
        self, primary: ClusterNode | None = None, timeout: float = 30.0
    ) -> Failover[ClusterNode]:
        """SIGKILL ``primary`` (default: the one serving slot 0) by its pid, then wait until
        one of its replicas is the primary of its slots and every other node reports
        ``cluster_state:ok`` again."""
        victim = primary if primary is not None else self.primaries()[0]
        slots = next(v.slots for v in self.topology() if v.node_id == victim.node_id)
        candidates = {r.node_id for r in self.replicas_of(victim)}
        if not candidates:
            raise RuntimeError(f"node {victim.index} has no replica to promote")
        others = [n for n in self.nodes if n is not victim and n.running()]
        started = time.monotonic()
        victim.process.kill()
        promoted: list[ClusterNode] = []

        def promotion() -> str | None:
            owners: set[str] = set()
            for n in others:
                owner = next((v.node_id for v in n.view() if v.is_primary and v.slots == slots), None)
                if owner is None or owner not in candidates:
                    return f"node {n.index} does not see a replica of node {victim.index} serving its slots"
                owners.add(owner)
            if len(owners) != 1:
                return f"the nodes disagree on which replica of node {victim.index} was promoted"
            new = self.node(owners.pop())
            if new.role() != "master":
                return f"node {new.index} does not report itself primary yet"
            promoted[:] = [new]
            return self.health_problem(expect_running=others)

        _wait(promotion, timeout, f"replica of node {victim.index} promoted")
        return Failover(killed=victim, promoted=promoted[0], seconds=time.monotonic() - started)

    def restart(self, node: ClusterNode, timeout: float = 30.0) -> None:
        """Start a killed or stopped node again (same port, same ``nodes.conf``) and wait
        until the whole cluster is healthy; a former primary rejoins as a replica."""
        node.process.restart()
        self.wait_healthy(timeout)

    def wait_replicated(self, primary: ClusterNode, timeout: float = 30.0) -> None:
        """Wait until every replica of ``primary`` has processed everything ``primary`` had
        written when called (replication is asynchronous: a test that kills a primary
        right after writing must wait for this when it means its writes to survive)."""
        with primary.client() as c:
            target = int(c.info("replication")["master_repl_offset"])
        replicas = self.replicas_of(primary)

        def caught_up() -> str | None:
            for r in replicas:
                with r.client() as c:
                    offset = int(c.info("replication").get("slave_repl_offset", -1))
                if offset < target:
                    return f"node {r.index} at offset {offset} of {target}"
            return None

        _wait(caught_up, timeout, f"replicas of node {primary.index} in sync")

    def move_slot(self, slot: int, target: ClusterNode, timeout: float = 30.0) -> ClusterNode:
        """Migrate ``slot`` and its keys to the primary ``target`` as Redis Cluster resharding
        does (``CLUSTER SETSLOT IMPORTING``/``MIGRATING``, ``MIGRATE`` of the keys in batches,
        then ``CLUSTER SETSLOT NODE`` on the target, the source and every other primary), and
        wait until every running node sees ``target`` serving it. Returns the former owner."""
        source = self.primary_for_slot(slot)
        if source.node_id == target.node_id:
            return source
        with target.client() as t, source.client() as s:
            t.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source.node_id)
            s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target.node_id)
            while keys := s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
                s.execute_command("MIGRATE", target.process.host, target.port, "", 0, 5000, "KEYS", *keys)
        pair = (target.node_id, source.node_id)
        for n in [target, source, *(p for p in self.primaries() if p.node_id not in pair)]:
            with n.client() as c:
                c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target.node_id)

        def moved() -> str | None:
            for n in self.nodes:
                if not n.running():
                    continue
                owner = next(
                    (v for v in n.view() if v.is_primary and any(a <= slot <= b for a, b in v.slots)), None
                )
                if owner is None or owner.node_id != target.node_id:
                    return f"node {n.index} does not see node {target.index} serving slot {slot}"
            return None

        _wait(moved, timeout, f"slot {slot} served by node {target.index}")
        return source

    def flushall(self) -> None:
        """Empty every primary (the replicas follow)."""
        for primary in self.primaries():
            with primary.client() as c:
                c.flushall()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every node by its pid and remove the nodes' directories."""
        _stop_all((n.process for n in self.nodes), timeout)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _slot_ranges(primaries: int) -> list[tuple[int, int]]:
    total = REDIS_CLUSTER_HASH_SLOTS
    return [(i * total // primaries, (i + 1) * total // primaries - 1) for i in range(primaries)]


def _start_cluster_node(
    index: int, host: str, workdir: Path, node_timeout_ms: int, appendonly: bool, attempts: int = 5
) -> ClusterNode:
    """One cluster-enabled server on a free port with a free bus port (retried on a lost race)."""
    workdir.mkdir()
    error: Exception | None = None
    for _ in range(attempts):
        port, bus_port = free_port(host), free_port(host)
        if port == bus_port:
            continue
        try:
            proc = start_redis(
                host=host,
                port=port,
                workdir=workdir,
                appendonly=appendonly,
                extra_args=(
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", str(node_timeout_ms),
                    "--cluster-port", str(bus_port),
                    # A replica's first sync starts at once, not after the default 5 s.
                    "--repl-diskless-sync-delay", "0",
                ),
            )  # fmt: skip
        except RuntimeError as exc:
            error = exc
            continue
        return ClusterNode(index=index, process=proc, bus_port=bus_port)
    raise RuntimeError(f"could not start cluster node {index}: {error}")


def start_cluster(
    *,
    host: str = "127.0.0.1",
    primaries: int = 3,
    replicas_per_primary: int = 1,
    node_timeout_ms: int = 2000,
    appendonly: bool = False,
    timeout: float = 30.0,
) -> LocalRedisCluster:
    """Start ``primaries * (1 + replicas_per_primary)`` nodes and make them one healthy
    cluster (see the module docstring). Everything started is stopped again on failure."""
    if primaries < 3:
        raise ValueError("a Redis Cluster that can fail over needs at least 3 primaries")
    root = Path(tempfile.mkdtemp(prefix="truco-redis-cluster-"))
    count = primaries * (1 + replicas_per_primary)
    cluster = LocalRedisCluster(
        nodes=[],
        workdir=root,
        replicas_per_primary=replicas_per_primary,
        node_timeout_ms=node_timeout_ms,
        host=host,
    )
    try:
        for i in range(1, count + 1):
            cluster.nodes.append(
                _start_cluster_node(i, host, root / f"node-{i}", node_timeout_ms, appendonly)
            )
        for n in cluster.nodes:
            with n.client() as c:
                n.node_id = str(c.execute_command("CLUSTER", "MYID"))
                c.execute_command("CLUSTER", "SET-CONFIG-EPOCH", n.index)
        primary_nodes = cluster.nodes[:primaries]
        for n, (first, last) in zip(primary_nodes, _slot_ranges(primaries), strict=True):
            with n.client() as c:
                c.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
        with cluster.nodes[0].client() as c:
            for n in cluster.nodes[1:]:
                c.execute_command("CLUSTER", "MEET", n.process.host, n.port, n.bus_port)

        def everyone_met() -> str | None:
            for n in cluster.nodes:
                healthy = [v for v in n.view() if not v.failing]
                if len(healthy) != count:
                    return f"node {n.index} knows {len(healthy)} of {count} nodes"
            return None

        _wait(everyone_met, timeout, "every node meets every other")
        for i, replica in enumerate(cluster.nodes[primaries:]):
            with replica.client() as c:
                c.execute_command("CLUSTER", "REPLICATE", primary_nodes[i % primaries].node_id)
        cluster.wait_healthy(timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


# ------------------------------------------------------------------------------ sentinel
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


# ------------------------------------------------------------------------------ command line
def _run(argv: Sequence[str] | None = None) -> int:
    """``python -m truco_tools.redis_cluster {cluster,sentinel}``: start a topology, print
    its URL and processes, optionally time ``--failovers`` kill-and-restart rounds, then
    keep it up until Ctrl-C / SIGTERM (or ``--duration``) and stop it by pid."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m truco_tools.redis_cluster", description=_run.__doc__)
    parser.add_argument("kind", choices=("cluster", "sentinel"))
    parser.add_argument(
        "--timeout-ms",
        type=int,
        help="cluster-node-timeout (cluster; default 2000) or down-after-milliseconds (sentinel; 1000)",
    )
    parser.add_argument("--appendonly", action="store_true", help="append-only file on every server")
    parser.add_argument(
        "--failovers", type=int, default=0, help="kill the primary and restart it this many times"
    )
    parser.add_argument(
        "--duration", type=float, help="stop after this many seconds (default: run until Ctrl-C)"
    )
    args = parser.parse_args(argv)

    stop_requested: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: stop_requested.append(signum))

    topology: LocalRedisCluster | LocalSentinelGroup
    if args.kind == "cluster":
        cluster = start_cluster(node_timeout_ms=args.timeout_ms or 2000, appendonly=args.appendonly)
        topology = cluster
        primaries = {n.node_id for n in cluster.primaries()}
        for n in cluster.nodes:
            role = "primary" if n.node_id in primaries else "replica"
            print(f"node {n.index} {role} {n.address} pid={n.pid} dir={n.process.workdir}", flush=True)
    else:
        group = start_sentinel_group(down_after_ms=args.timeout_ms or 1000, appendonly=args.appendonly)
        topology = group
        for s in group.servers:
            print(f"server {s.address} pid={s.pid} dir={s.workdir}", flush=True)
        for s in group.sentinels:
            print(f"sentinel {s.address} pid={s.pid} dir={s.workdir}", flush=True)
    try:
        print(f"url {topology.url}", flush=True)
        for round_ in range(1, args.failovers + 1):
            if stop_requested:
                break
            if isinstance(topology, LocalRedisCluster):
                cf = topology.kill_primary()
                killed, promoted, seconds = f"node {cf.killed.index}", f"node {cf.promoted.index}", cf.seconds
                started = time.monotonic()
                topology.restart(cf.killed)
            else:
                sf = topology.kill_primary()
                killed, promoted, seconds = sf.killed.address, sf.promoted.address, sf.seconds
                started = time.monotonic()
                topology.restart(sf.killed)
            print(
                f"failover {round_}: {killed} killed, {promoted} primary after {seconds:.2f} s; "
                f"{killed} back as a replica in sync after {time.monotonic() - started:.2f} s",
                flush=True,
            )
        deadline = None if args.duration is None else time.monotonic() + args.duration
        print(
            "ready; Ctrl-C stops it" if deadline is None else f"ready; stopping in {args.duration:g} s",
            flush=True,
        )
        while not stop_requested and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.2)
    finally:
        topology.stop()
        print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_run())
