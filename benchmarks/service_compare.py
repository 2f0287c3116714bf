"""Worker CPU per action of this checkout against another build, side by side in one run.

For each transport and store -- by default unary gRPC on Redis, the player connection
(``Connect``) on Redis, REST/JSON on the in-memory store; any of ``unary``, ``connect``,
``ws`` (the player connection over WebSocket) and ``rest`` on ``redis`` or ``memory`` with
``--phases`` -- a worker of each build (``truco serve`` in a
process of its own, its source folders on ``PYTHONPATH``) is started on free loopback ports
and driven by the same random bots from this process (``truco bench service``'s load
generators: each seat acts as soon as its stream says it is its turn, a finished match is
replaced at once), alternately: this build, the other, this, the other... Each measurement is
a fresh worker (and Redis) with a warm-up, then the measured window; the figure is the
worker's CPU time over the window divided by the actions in it. The medians of each build and
their ratio are printed per phase, with the load average before and after (the machine is
shared: only ratios within one run are solid).

    python benchmarks/service_compare.py --against ../old-checkout
    python benchmarks/service_compare.py --against ../old-checkout --pairs 3 --seconds 10
    python benchmarks/service_compare.py --against ../old-checkout --phases rest-memory --pairs 1

With ``--python`` the other build's worker runs on another interpreter (a virtualenv's
``python`` with the server's packages installed: ``uv pip install --python VENV/bin/python
'.[server]'``); with ``--against .`` that compares two interpreters on this checkout::

    python benchmarks/service_compare.py --against . --python /tmp/py312/bin/python

Not part of the test suite (``tests/tools/test_service_compare.py`` runs one short pair);
everything it starts it stops, by pid, and nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import aiohttp

from truco_contract.pb import match_service_pb2_grpc
from truco_tools.bench_connection import ConnectionBots, WebSocketBots, pattern_connect_load, stubs_of
from truco_tools.bench_load import Bots, Figures, bench_channel
from truco_tools.bench_policy import POLICIES
from truco_tools.bench_processes import HOST, PATTERN_SERVICE, child, cpu_seconds, echo_cmd
from truco_tools.bench_rest import RestBots
from truco_tools.bench_service import measure_window
from truco_tools.redis_proc import free_port, start_redis

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("unary-redis", "connect-redis", "rest-memory")
"""The default phases."""
TRANSPORTS = ("unary", "connect", "ws", "rest")
ALL_PHASES = tuple(f"{t}-{store}" for t in TRANSPORTS for store in ("redis", "memory"))
SOURCES = ("contract", "server", "clients", "tools", "cli", ".")
"""The source folders of a checkout (``[tool.setuptools.packages.find] where``)."""


class Window(NamedTuple):
    """One measured window: the server's CPU seconds in it, the actions (moves) in it and its
    length in seconds."""

    cpu: float
    actions: int
    seconds: float
    matches: int = 0
    """Matches finished in the window (0: not counted)."""

    @property
    def ms(self) -> float:
        """Server CPU ms per action."""
        return 1000 * self.cpu / max(self.actions, 1)


def _pythonpath(root: Path) -> str:
    """The worker's source folders; with ``GC_PROBE_OUT`` set, the collector's probe too
    (``benchmarks/gc_probe``: it writes the worker's collections when it exits)."""
    paths = [str(root / p) for p in SOURCES if (root / p).is_dir()]
    if os.environ.get("GC_PROBE_OUT"):
        paths.append(str(root / "benchmarks" / "gc_probe"))
    return os.pathsep.join(paths)


@contextmanager
def _worker(root: Path, redis_url: str | None, python: str | None = None) -> Iterator[tuple[int, int, int]]:
    """A worker of the build at ``root`` on ``python`` (default: this interpreter): (its pid,
    gRPC port, HTTP port). It runs in ``root``: ``python -m`` puts the working directory
    first on the module path, and from another checkout that one's root packages (the engine,
    the match) would be imported instead of the build's own."""
    port, http_port = free_port(HOST), free_port(HOST)
    cmd = [
        python or sys.executable, "-m", "truco_cli.main", "serve", "--host", HOST,
        "--grpc-port", str(port), "--http-port", str(http_port), "--metrics-port", "0",
        "--log-level", "warning", "--max-concurrent-rpcs", "0", "--workers", "1",
    ]  # fmt: skip
    if redis_url:
        cmd += ["--redis", redis_url]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = _pythonpath(root)
    try:
        with child(cmd, "gRPC listening", timeout=60, cwd=root) as proc:
            yield proc.pid, port, http_port
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


async def _load(phase: str, port: int, http_port: int, pid: int, args: argparse.Namespace) -> Window:
    """Drive the worker with ``args.matches`` bots; its CPU and the actions in the window."""
    fig = Figures()
    stop = asyncio.Event()
    n_channels = max(1, -(-args.matches // 25))
    transport = phase.split("-")[0]
    policy = getattr(args, "policy", "random")
    if transport in ("rest", "ws"):
        connector = aiohttp.TCPConnector(limit=0)
        base = f"http://{HOST}:{http_port}"
        async with aiohttp.ClientSession(connector=connector) as session:
            if transport == "rest":
                rest = RestBots(session, base, args.preset, 2, args.seed, 0, fig, stop, policy)
                elapsed, cpu = await measure_window(
                    rest.run_slot, args.matches, fig, stop, args.warmup, args.seconds, pid
                )
            else:
                ws = WebSocketBots(session, base, n_channels, args.preset, 2, args.seed, 0, fig, stop, policy)
                await ws.start()
                try:
                    elapsed, cpu = await measure_window(
                        ws.run_slot, args.matches, fig, stop, args.warmup, args.seconds, pid
                    )
                finally:
                    await ws.close()
        return Window(cpu, fig.actions, elapsed, fig.matches_finished)
    channels = [bench_channel(f"{HOST}:{port}", i) for i in range(n_channels)]
    try:
        if transport == "unary":
            stubs = [match_service_pb2_grpc.MatchServiceStub(ch) for ch in channels]
            bots = Bots(
                stubs,
                argparse.Namespace(preset=args.preset, players=2, seed=args.seed, think_ms=0, policy=policy),
                fig,
                stop,
            )
            elapsed, cpu = await measure_window(
                bots.run_slot, args.matches, fig, stop, args.warmup, args.seconds, pid
            )
        else:
            conn = ConnectionBots(stubs_of(channels), args.preset, 2, args.seed, 0, fig, stop, policy)
            await conn.start()
            try:
                elapsed, cpu = await measure_window(
                    conn.run_slot, args.matches, fig, stop, args.warmup, args.seconds, pid
                )
            finally:
                await conn.close()
    finally:
        for ch in channels:
            await ch.close()
    return Window(cpu, fig.actions, elapsed, fig.matches_finished)


async def measure(phase: str, root: Path, args: argparse.Namespace, python: str | None = None) -> Window:
    """One window of ``phase`` (``<transport>-<store>``) against a fresh worker of the build at
    ``root`` on ``python`` (default: this interpreter; and a fresh Redis for ``-redis``),
    driven from this process by ``args.matches`` bots playing ``args.preset`` (``args.warmup``
    then ``args.seconds``)."""
    redis = start_redis(host=HOST) if phase.endswith("-redis") else None
    try:
        with _worker(root, redis.url if redis else None, python) as (pid, port, http_port):
            return await _load(phase, port, http_port, pid, args)
    finally:
        if redis is not None:
            redis.stop()


async def _floor(phase: str, args: argparse.Namespace) -> float:
    """The CPU ms per action of a server that speaks the protocol and does no work, under the
    same load: ``truco_tools.floor_server`` for unary gRPC, REST and WebSocket (the same bots), the
    no-work server's player-connection pattern for ``Connect`` (the same messages per action)."""
    if phase.startswith("connect-"):
        port = free_port(HOST)
        with child(echo_cmd(port), "echo listening") as echo:
            channels = [bench_channel(f"{HOST}:{port}", i) for i in range(max(1, -(-args.matches // 25)))]
            try:
                _, cpu = await pattern_connect_load(
                    channels, PATTERN_SERVICE, args.matches, 2, args.seconds, lambda: cpu_seconds(echo.pid)
                )
            finally:
                for ch in channels:
                    await ch.close()
            return cpu
    port, http_port = free_port(HOST), free_port(HOST)
    cmd = [
        sys.executable,
        "-m",
        "truco_tools.floor_server",
        "--grpc-port",
        str(port),
        "--http-port",
        str(http_port),
    ]
    with child(cmd, "floor listening") as proc:
        return (await _load(phase, port, http_port, proc.pid, args)).ms


async def compare(args: argparse.Namespace) -> dict[str, tuple[float, float, float]]:
    """The median CPU ms per action of each build and of the floor (NaN without
    ``--floors``), per phase: (this, other, floor)."""
    builds = (("this", ROOT, None), ("other", args.against.resolve(), args.python))
    got: dict[str, dict[str, list[float]]] = {p: {"this": [], "other": [], "floor": []} for p in args.phases}
    for pair in range(args.pairs):
        for phase in args.phases:
            runs = list(builds if pair % 2 == 0 else builds[::-1])
            for label, root, python in runs:
                value = (await measure(phase, root, args, python)).ms
                got[phase][label].append(value)
                print(f"# pair {pair + 1}/{args.pairs} {phase:14s} {label:5s} {value:.3f} ms", flush=True)
            if args.floors:
                value = await _floor(phase, args)
                got[phase]["floor"].append(value)
                print(f"# pair {pair + 1}/{args.pairs} {phase:14s} floor {value:.3f} ms", flush=True)
    return {
        p: (
            statistics.median(v["this"]),
            statistics.median(v["other"]),
            statistics.median(v["floor"]) if v["floor"] else math.nan,
        )
        for p, v in got.items()
    }


SERVER_PACKAGES = ("grpc", "google.protobuf", "aiohttp", "redis", "structlog", "prometheus_client", "orjson")
"""What a worker imports besides the checkout's own source folders."""


def _interpreter_problem(python: str, root: Path) -> str | None:
    """Why ``python`` cannot run a worker of the build at ``root`` (``None``: it can): its
    version and which of :data:`SERVER_PACKAGES` it lacks, asked of the interpreter itself with
    the worker's ``PYTHONPATH``."""
    probe = (
        "import importlib.util, sys\n"
        "def found(name):\n"
        "    try:\n"
        "        return importlib.util.find_spec(name) is not None\n"
        "    except ImportError:\n"
        "        return False\n"
        "print(sys.version_info >= (3, 11), ' '.join(m for m in sys.argv[1:] if not found(m)))"
    )
    env = {**os.environ, "PYTHONPATH": _pythonpath(root)}
    try:
        done = subprocess.run(
            [python, "-c", probe, *SERVER_PACKAGES], capture_output=True, text=True, timeout=60, env=env
        )
    except OSError as exc:
        return f"cannot be run ({exc.strerror})"
    if done.returncode != 0:
        return f"exited with {done.returncode}: {done.stderr.strip()[-200:]}"
    recent, _, missing = done.stdout.strip().partition(" ")
    if recent != "True":
        return "is older than Python 3.11"
    if missing:
        return f"lacks {missing.replace(' ', ', ')} (install the server's packages into its environment)"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", type=Path, required=True, help="another checkout of this repository")
    parser.add_argument(
        "--python",
        help="the other build's interpreter (default: this one), with the server's packages installed",
    )
    parser.add_argument("--pairs", type=int, default=2, help="alternations of the two builds (default 2)")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured window per run (default 8)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring (default 2)")
    parser.add_argument("--matches", type=int, default=200, help="concurrent matches (default 200)")
    parser.add_argument("--preset", default="paulista", help="two-player preset (default paulista)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        default="random",
        help="how the bots choose their actions (truco_tools.bench_policy; default random)",
    )
    parser.add_argument(
        "--phases",
        type=lambda s: tuple(s.split(",")),
        default=PHASES,
        help=f"comma-separated, of {','.join(ALL_PHASES)} (default {','.join(PHASES)})",
    )
    parser.add_argument(
        "--floors",
        action="store_true",
        help="also measure each transport's floor: a server that speaks the protocol and does no work",
    )
    args = parser.parse_args(argv)
    if not (args.against / "server" / "truco_server").is_dir():
        parser.error(f"{args.against} is not a checkout of this repository")
    if unknown := set(args.phases) - set(ALL_PHASES):
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    if args.python is not None and (problem := _interpreter_problem(args.python, args.against)):
        parser.error(f"--python {args.python}: {problem}")
    load0 = os.getloadavg()[0]
    started = time.time()
    print(f"# this: {ROOT} on {sys.executable}", flush=True)
    print(f"# other: {args.against.resolve()} on {args.python or sys.executable}", flush=True)
    results = asyncio.run(compare(args))
    print(
        f"load average (1 min): {load0:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores"
    )
    print(f"{'phase':14s} {'this (ms)':>10s} {'other (ms)':>11s} {'this/other':>11s} {'floor (ms)':>11s}")
    for phase, (this, other, floor) in results.items():
        print(f"{phase:14s} {this:10.3f} {other:11.3f} {this / other:11.3f} {floor:11.3f}")
    took = time.time() - started
    print(f"({args.pairs} pairs of {args.warmup:g}+{args.seconds:g} s, {args.matches} matches; {took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
