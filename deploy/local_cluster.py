"""A local multi-process Truco cluster without containers: a Redis, N stateless workers.

Run from the repository root with the project's virtualenv active::

    python deploy/local_cluster.py --workers 3
    python deploy/local_cluster.py --workers 2 --redis redis://127.0.0.1:6379/0
    python deploy/local_cluster.py --workers 2 --grpc-port 0 --http-port 0 --metrics-port 0
    python deploy/local_cluster.py --workers 2 -- --log-level debug --shutdown-drain 1
    python deploy/local_cluster.py --workers 3 --redis-cluster
    python deploy/local_cluster.py --workers 3 --redis-sentinel

Without ``--redis`` it starts its own ``redis-server`` (no persistence) on a free loopback
port. ``--redis-cluster`` starts a Redis Cluster instead (six ``redis-server`` processes on
loopback: three primaries, three replicas) and hands the workers its ``redis+cluster://``
URL; ``--redis-sentinel`` starts a Sentinel group (a primary, a replica, three sentinels)
and hands them its ``redis+sentinel://`` URL (``truco_tools.redis_cluster``). The workers
select their store by that URL alone. A worker that refuses its configuration exits at
once; the script then says so in one line, stops everything and exits 1.

Worker ``i`` (1-based) listens on ``--grpc-port + i - 1`` (same for ``--http-port``
and ``--metrics-port``); a base port of 0 lets every worker pick a free port (and, for
metrics, disables the endpoint). Each worker is ``truco serve`` in its own process
(``python -m truco_cli.main serve``); its output goes to ``<log dir>/worker-<i>.log``.
Other settings (``TRUCO_API_KEYS``, ``TRUCO_LOG_LEVEL``, ...) are inherited from the
environment; flags after ``--`` are passed to every worker.

Once every worker has printed where it listens, one line per worker is printed::

    redis url=redis://127.0.0.1:41234/0 pid=1200
    worker 1 grpc=127.0.0.1:50051 rest=http://127.0.0.1:8080 metrics=http://127.0.0.1:9100/metrics pid=1201

On Ctrl-C or SIGTERM (or after ``--duration`` seconds) every worker gets SIGTERM (it
drains; see docs/operations.md), then SIGKILL if it is still running after
``--stop-timeout`` seconds; a second Ctrl-C kills at once. Then the Redis side is stopped,
if this script started it. Only processes this script started are signalled, each by its
pid (every redis-server and sentinel included).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

try:
    from truco_server.core.config import redact_url
    from truco_tools.redis_cluster import (
        LocalRedisCluster,
        LocalSentinelGroup,
        start_cluster,
        start_sentinel_group,
    )
    from truco_tools.redis_proc import RedisProcess, start_redis
except ImportError as exc:  # pragma: no cover - depends on the caller's environment
    sys.exit(
        f"local_cluster.py needs the project installed ({exc}): run `make setup`, then "
        "`source .venv/bin/activate`, from the repository root."
    )

#: Lines `truco serve` prints once it listens (truco_cli.main); "store:" comes last.
GRPC_LINE = re.compile(r"^gRPC listening on (\S+)", re.MULTILINE)
REST_LINE = re.compile(r"^REST/JSON listening on (\S+)", re.MULTILINE)
METRICS_LINE = re.compile(r"^metrics on :(\d+)", re.MULTILINE)
DONE_LINE = re.compile(r"^store: ", re.MULTILINE)
#: How `truco serve` reports a refused setting before it exits with code 2 (truco_cli.serve).
CONFIG_ERROR_LINE = re.compile(r"^truco serve: (.+)$", re.MULTILINE)
CONFIG_ERROR_EXIT = 2

POLL_SECONDS = 0.05
TAIL_LINES = 25


class ClusterError(RuntimeError):
    """Starting or running the cluster failed; the message says why."""


@dataclass
class RedisSide:
    """The Redis this script started: one server, a Redis Cluster or a Sentinel group."""

    url: str
    description: str
    #: (label, process) of every redis-server / sentinel process, e.g. ("node 1 primary", p).
    processes: list[tuple[str, RedisProcess]]
    stop: Callable[[float], None]

    @property
    def pids(self) -> list[int]:
        return [p.pid for _, p in self.processes]


@dataclass(frozen=True)
class WorkerSpec:
    """Where one worker should listen (0: a free port; for metrics: disabled)."""

    index: int
    grpc_port: int
    http_port: int
    metrics_port: int


@dataclass
class WorkerProcess:
    """A started worker and, once it is ready, where it listens."""

    spec: WorkerSpec
    proc: subprocess.Popen[bytes]
    log_path: Path
    grpc_address: str = ""
    rest_url: str = ""
    metrics_url: str = ""

    @property
    def name(self) -> str:
        return f"worker {self.spec.index}"


class StopSignal:
    """Counts SIGINT/SIGTERM instead of raising, so every wait can look at it."""

    def __init__(self) -> None:
        self.count = 0
        self.name = ""

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        self.name = signal.Signals(signum).name

    @property
    def requested(self) -> bool:
        return self.count > 0


# ------------------------------------------------------------------------------ helpers
def say(message: str) -> None:
    """A progress or result line on stdout (flushed: callers may read it through a pipe).

    A reader that went away must not stop the clean-up, so a broken stdout is ignored.
    """
    with contextlib.suppress(BrokenPipeError, ValueError):
        print(message, flush=True)


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of a log file, indented for display."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"    (cannot read {path}: {exc})"
    last = text.splitlines()[-lines:] or ["(no output)"]
    return "\n".join(f"    {line}" for line in last)


def port_for(base: int, index: int) -> int:
    """Port of worker `index` (1-based): consecutive from `base`, or 0 (free / disabled)."""
    return 0 if base == 0 else base + index - 1


def worker_specs(workers: int, grpc_port: int, http_port: int, metrics_port: int) -> list[WorkerSpec]:
    specs = [
        WorkerSpec(
            index=i,
            grpc_port=port_for(grpc_port, i),
            http_port=port_for(http_port, i),
            metrics_port=port_for(metrics_port, i),
        )
        for i in range(1, workers + 1)
    ]
    highest = max(max(s.grpc_port, s.http_port, s.metrics_port) for s in specs)
    if highest > 65535:
        raise ClusterError(f"port {highest} is out of range: lower the base ports or --workers")
    return specs


def describe_ports(spec: WorkerSpec) -> str:
    """E.g. 'gRPC 50051, REST 8080, metrics 9100' or 'gRPC free port, ..., metrics off'."""
    grpc_port = spec.grpc_port or "free port"
    http_port = spec.http_port or "free port"
    metrics_port = spec.metrics_port or "off"
    return f"gRPC {grpc_port}, REST {http_port}, metrics {metrics_port}"


def worker_command(spec: WorkerSpec, host: str, extra_args: Sequence[str]) -> list[str]:
    """`truco serve` for one worker, run by this interpreter (the active virtualenv)."""
    return [
        sys.executable, "-m", "truco_cli.main", "serve",
        "--host", host,
        "--grpc-port", str(spec.grpc_port),
        "--http-port", str(spec.http_port),
        "--metrics-port", str(spec.metrics_port),
        "--workers", "1",  # one process per listed worker (each on its own ports)
        *extra_args,
    ]  # fmt: skip


def worker_env(redis_url: str) -> dict[str, str]:
    """The caller's environment with REDIS_URL set (an environment variable rather than a
    flag, so a password in the URL does not show up in `ps`)."""
    env = dict(os.environ)
    env["REDIS_URL"] = redis_url
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


# ------------------------------------------------------------------------------ start
def start_own_redis(host: str) -> RedisSide:
    say(f"starting redis-server on a free port of {host} ...")
    try:
        proc = start_redis(host=host)
    except RuntimeError as exc:  # RedisServerMissing included
        raise ClusterError(str(exc)) from None
    return RedisSide(url=proc.url, description="one Redis", processes=[("server", proc)], stop=proc.stop)


def start_own_redis_cluster() -> RedisSide:
    """Six redis-server processes on loopback made one Redis Cluster (3 primaries + 3 replicas)."""
    say("starting a Redis Cluster on loopback (3 primaries, 3 replicas) ...")
    try:
        cluster: LocalRedisCluster = start_cluster()
    except RuntimeError as exc:  # RedisServerMissing and TopologyTimeout included
        raise ClusterError(str(exc)) from None
    primaries = {n.node_id for n in cluster.primaries()}
    processes = [
        (f"node {n.index} {'primary' if n.node_id in primaries else 'replica'}", n.process)
        for n in cluster.nodes
    ]
    return RedisSide(url=cluster.url, description="a Redis Cluster", processes=processes, stop=cluster.stop)


def start_own_redis_sentinel() -> RedisSide:
    """A primary, a replica and three sentinels on loopback."""
    say("starting a Redis Sentinel group on loopback (1 primary, 1 replica, 3 sentinels) ...")
    try:
        group: LocalSentinelGroup = start_sentinel_group()
    except RuntimeError as exc:
        raise ClusterError(str(exc)) from None
    primary = group.current_primary()
    processes = [
        (f"server {i} {'primary' if s is primary else 'replica'}", s)
        for i, s in enumerate(group.servers, start=1)
    ]
    processes += [(f"sentinel {i}", s) for i, s in enumerate(group.sentinels, start=1)]
    return RedisSide(
        url=group.url, description="a Redis Sentinel group", processes=processes, stop=group.stop
    )


def start_worker(
    spec: WorkerSpec, host: str, redis_url: str, log_dir: Path, extra_args: Sequence[str]
) -> WorkerProcess:
    """Start one worker in its own session: a Ctrl-C in the terminal reaches only this
    script, which then stops each worker exactly once."""
    log_path = log_dir / f"worker-{spec.index}.log"
    say(f"starting worker {spec.index} ({describe_ports(spec)}) ...")
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            worker_command(spec, host, extra_args),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=worker_env(redis_url),
            start_new_session=True,
        )
    return WorkerProcess(spec=spec, proc=proc, log_path=log_path)


def read_listen_lines(worker: WorkerProcess) -> bool:
    """Fill in the worker's addresses from its log once its start-up block is complete."""
    try:
        text = worker.log_path.read_text(errors="replace")
    except OSError:
        return False
    grpc_match = GRPC_LINE.search(text)
    if grpc_match is None or DONE_LINE.search(text) is None:
        return False
    worker.grpc_address = grpc_match.group(1)
    rest_match = REST_LINE.search(text)
    worker.rest_url = rest_match.group(1) if rest_match else "off"
    metrics_match = METRICS_LINE.search(text)
    host = worker.grpc_address.rsplit(":", 1)[0]
    worker.metrics_url = f"http://{host}:{metrics_match.group(1)}/metrics" if metrics_match else "off"
    return True


def config_refusal(worker: WorkerProcess) -> str | None:
    """The setting a worker refused, when it exited for that (code 2 and `truco serve: ...`)."""
    if worker.proc.returncode != CONFIG_ERROR_EXIT:
        return None
    try:
        found = CONFIG_ERROR_LINE.findall(worker.log_path.read_text(errors="replace"))
    except OSError:
        return None
    return str(found[-1]).strip() if found else None


def wait_ready(workers: Sequence[WorkerProcess], timeout: float, stop: StopSignal) -> None:
    """Wait until every worker printed where it listens; raise if one exits or is slow.

    A worker that refused its configuration (a malformed REDIS_URL, say) is reported in
    one line.
    """
    pending = list(workers)
    deadline = time.monotonic() + timeout
    while pending:
        for worker in list(pending):
            if read_listen_lines(worker):
                say(f"{worker.name} ready on {worker.grpc_address}")
                pending.remove(worker)
            elif worker.proc.poll() is not None:
                refusal = config_refusal(worker)
                if refusal is not None:
                    raise ClusterError(f"{worker.name} refused its configuration: {refusal}")
                raise ClusterError(
                    f"{worker.name} exited with code {worker.proc.returncode} before it was ready; "
                    f"last lines of {worker.log_path}:\n{tail(worker.log_path)}"
                )
        if not pending:
            return
        if stop.requested:
            raise ClusterError(f"{stop.name} received while starting")
        if time.monotonic() > deadline:
            names = ", ".join(w.name for w in pending)
            details = "\n".join(f"  {w.name} ({w.log_path}):\n{tail(w.log_path)}" for w in pending)
            raise ClusterError(f"not ready after {timeout:g}s: {names}\n{details}")
        time.sleep(POLL_SECONDS)


def print_redis_side(redis: RedisSide) -> None:
    """One line per process of the Redis side, as soon as it is up."""
    if len(redis.processes) == 1:
        return
    for label, proc in redis.processes:
        say(f"redis {label} {proc.address} pid={proc.pid}")


def print_summary(redis_url: str, redis: RedisSide | None, workers: Sequence[WorkerProcess]) -> None:
    if redis is None:
        origin = "external"
    elif len(redis.pids) == 1:
        origin = f"pid={redis.pids[0]}"
    else:
        origin = "pids=" + ",".join(map(str, redis.pids))
    say(f"redis url={redact_url(redis_url)} {origin}")
    for w in workers:
        say(
            f"{w.name} grpc={w.grpc_address} rest={w.rest_url} metrics={w.metrics_url} "
            f"pid={w.proc.pid} log={w.log_path}"
        )


# ------------------------------------------------------------------------------ run / stop
def wait_running(
    workers: Sequence[WorkerProcess], redis: RedisSide | None, duration: float | None, stop: StopSignal
) -> None:
    """Block until a stop signal, the end of `duration`, or a process that dies on its own."""
    deadline = None if duration is None else time.monotonic() + duration
    while not stop.requested:
        if deadline is not None and time.monotonic() >= deadline:
            say(f"--duration {duration:g}s elapsed")
            return
        time.sleep(0.2)
        if stop.requested:  # a terminal Ctrl-C also stops the redis-server started here
            break
        for w in workers:
            if w.proc.poll() is not None:
                raise ClusterError(
                    f"{w.name} exited unexpectedly with code {w.proc.returncode}; "
                    f"last lines of {w.log_path}:\n{tail(w.log_path)}"
                )
        for label, proc in redis.processes if redis is not None else ():
            if proc.proc.poll() is not None:
                raise ClusterError(f"redis {label} (pid {proc.pid}) exited with code {proc.proc.returncode}")
    say(f"{stop.name} received")


def stop_workers(workers: Sequence[WorkerProcess], timeout: float, stop: StopSignal) -> None:
    """SIGTERM every running worker (by pid), wait, then SIGKILL the ones still running.

    A further SIGINT/SIGTERM while waiting cuts the wait short.
    """
    running = [w for w in workers if w.proc.poll() is None]
    if running:
        say(f"stopping {len(running)} worker(s): SIGTERM, SIGKILL after {timeout:g}s ...")
    for w in running:
        w.proc.send_signal(signal.SIGTERM)
    signals_seen = stop.count
    deadline = time.monotonic() + timeout
    while running and time.monotonic() < deadline and stop.count == signals_seen:
        for w in list(running):
            if w.proc.poll() is not None:
                say(f"{w.name} (pid {w.proc.pid}) exited with code {w.proc.returncode}")
                running.remove(w)
        time.sleep(POLL_SECONDS)
    for w in running:
        if w.proc.poll() is None:
            say(f"{w.name} (pid {w.proc.pid}) still running: SIGKILL")
            w.proc.kill()
        w.proc.wait()


def stop_redis(redis: RedisSide | None, timeout: float) -> None:
    if redis is None:
        return
    redis.stop(timeout)
    pids = ", ".join(map(str, redis.pids))
    say(f"redis-server pid{'s' if len(redis.pids) > 1 else ''} {pids} stopped")


# ------------------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Run one Redis and N `truco serve` workers on this machine (see docs/deploy.md).",
    )
    parser.add_argument("--workers", type=int, default=2, help="number of workers (default 2)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--redis", metavar="URL", help="use this Redis instead of starting redis-server")
    source.add_argument(
        "--redis-cluster",
        action="store_true",
        help="start a Redis Cluster on loopback (3 primaries, 3 replicas) and give the workers its URL",
    )
    source.add_argument(
        "--redis-sentinel",
        action="store_true",
        help="start a Sentinel group on loopback (primary, replica, 3 sentinels), give the workers its URL",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface the workers bind (default 127.0.0.1)")
    parser.add_argument(
        "--grpc-port",
        type=int,
        default=50051,
        metavar="PORT",
        help="gRPC port of worker 1, +1 per worker; 0: free ports (default 50051)",
    )
    parser.add_argument(
        "--http-port",
        type=int,
        default=8080,
        metavar="PORT",
        help="REST port of worker 1, +1 per worker; 0: free ports (default 8080)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=9100,
        metavar="PORT",
        help="metrics port of worker 1, +1 per worker; 0: no metrics (default 9100)",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        help="where worker logs go (default: a temporary directory, removed on a clean exit)",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long a worker may take to start (default 30)",
    )
    parser.add_argument(
        "--stop-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="SIGTERM to SIGKILL delay on stop; above the workers' shutdown grace + drain (default 20)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="stop by itself this long after every worker is ready",
    )
    parser.add_argument(
        "worker_args", nargs=argparse.REMAINDER, help="after --: extra `truco serve` flags for every worker"
    )
    return parser


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """Validate the arguments; return the extra worker flags."""
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    for flag in ("grpc_port", "http_port", "metrics_port"):
        if not 0 <= getattr(args, flag) <= 65535:
            parser.error(f"--{flag.replace('_', '-')} must be 0..65535")
    if args.duration is not None and args.duration < 0:
        parser.error("--duration must be >= 0")
    extra = list(args.worker_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    reserved = {"--redis", "--host", "--grpc-port", "--http-port", "--metrics-port"}
    clashes = sorted({a.split("=", 1)[0] for a in extra} & reserved)
    if clashes:
        parser.error(f"set {', '.join(clashes)} as options of this script, not after --")
    return extra


def run(args: argparse.Namespace, extra_args: list[str], stop: StopSignal) -> int:
    """Start everything, wait, stop everything. Returns the exit code."""
    created_log_dir = args.log_dir is None
    log_dir = Path(tempfile.mkdtemp(prefix="truco-cluster-")) if created_log_dir else args.log_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    redis: RedisSide | None = None
    workers: list[WorkerProcess] = []
    code = 0
    try:
        specs = worker_specs(args.workers, args.grpc_port, args.http_port, args.metrics_port)
        if args.redis:
            redis_url = args.redis
        else:
            if args.redis_cluster:
                redis = start_own_redis_cluster()
            elif args.redis_sentinel:
                redis = start_own_redis_sentinel()
            else:
                redis = start_own_redis(args.host)
            redis_url = redis.url
            print_redis_side(redis)
        say(f"redis ready at {redact_url(redis_url)}; worker logs in {log_dir}")
        if stop.requested:
            raise ClusterError(f"{stop.name} received while starting")
        for spec in specs:
            workers.append(start_worker(spec, args.host, redis_url, log_dir, extra_args))
        wait_ready(workers, args.start_timeout, stop)
        print_summary(redis_url, redis, workers)
        where = redis.description if redis is not None else "one Redis"
        say(f"ready: {len(workers)} worker(s) on {where}; Ctrl-C stops them")
        wait_running(workers, redis, args.duration, stop)
    except ClusterError as exc:
        say(f"error: {exc}")
        code = 1
    finally:
        stop_workers(workers, args.stop_timeout, stop)
        stop_redis(redis, args.stop_timeout)
    if created_log_dir and code == 0:
        shutil.rmtree(log_dir, ignore_errors=True)
    elif code != 0:
        say(f"worker logs kept in {log_dir}")
    say("cluster stopped")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    extra_args = check_args(parser, args)
    stop = StopSignal()
    stop.install()
    return run(args, extra_args, stop)


if __name__ == "__main__":
    sys.exit(main())
