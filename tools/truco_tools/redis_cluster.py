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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.cluster import ClusterNode as ClientNode
from redis.cluster import RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from truco_tools.redis_proc import RedisProcess, free_port, start_redis
from truco_tools.redis_sentinel import LocalSentinelGroup, start_sentinel_group
from truco_tools.redis_topology import (
    CLUSTER_SCHEME,
    DEFAULT_MASTER_NAME,
    POLL_SECONDS,
    SENTINEL_SCHEME,
    Failover,
    TopologyTimeout,
    _client,
    _replication_problem,
    _stop_all,
    _wait,
)

__all__ = [
    "CLUSTER_SCHEME",
    "DEFAULT_MASTER_NAME",
    "POLL_SECONDS",
    "SENTINEL_SCHEME",
    "ClusterNode",
    "Failover",
    "LocalRedisCluster",
    "LocalSentinelGroup",
    "NodeView",
    "TopologyTimeout",
    "parse_cluster_nodes",
    "start_cluster",
    "start_sentinel_group",
]


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
