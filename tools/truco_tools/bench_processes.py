"""The processes of the service benchmarks and what is measured on them: a child process
started and waited for by its ready line, the worker's and the echo server's command lines,
the bare gRPC echo and pattern server (the transport's floor), CPU time and child processes
from ``/proc``, the worker's Prometheus histograms, Redis command counts and memory."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import redis

from truco_tools.bench_connection import PATTERN_CONNECT, pattern_connect_handler
from truco_tools.redis_proc import STARTUP_TIMEOUT

HOST = "127.0.0.1"
ECHO_METHOD = "/truco.bench.Echo/Echo"
MAX_SECONDS = 600.0


# ------------------------------------------------------------------------------ processes
@contextlib.contextmanager
def child(
    cmd: list[str], ready: str, timeout: float = STARTUP_TIMEOUT, cwd: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``cmd`` (in ``cwd``: ``python -m`` puts it first on the module path); wait until its
    output contains ``ready``; SIGTERM (then SIGKILL) it by pid."""
    with tempfile.TemporaryDirectory(prefix="truco-bench-") as tmp:
        log_path = Path(tmp) / "out.log"
        with log_path.open("wb") as log:
            env = {k: v for k, v in os.environ.items() if k != "TRUCO_API_KEYS"}
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
            try:
                deadline = time.monotonic() + timeout
                while ready not in log_path.read_text(errors="replace"):
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"{cmd[2:5]} did not start:\n{log_path.read_text()[-2000:]}")
                    time.sleep(0.05)
                yield proc
            finally:
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(15)
                    except subprocess.TimeoutExpired:
                        os.kill(proc.pid, signal.SIGKILL)
                        proc.wait(5)


def worker_cmd(
    redis_url: str,
    port: int,
    http_port: int,
    args: argparse.Namespace,
    metrics_port: int = 0,
    workers: int = 1,
) -> list[str]:
    cmd = [
        sys.executable, "-m", "truco_cli.main", "serve",
        "--redis", redis_url, "--host", HOST, "--grpc-port", str(port),
        "--metrics-port", str(metrics_port), "--http-port", str(http_port), "--log-level", "warning",
        "--max-concurrent-rpcs", "0", "--workers", str(workers),
    ]  # fmt: skip
    if args.event_log_max_len:
        cmd += ["--event-log-max-len", str(args.event_log_max_len)]
    return cmd


def echo_cmd(port: int) -> list[str]:
    return [sys.executable, "-m", "truco_tools.bench_processes", str(port)]


PATTERN_SERVICE = "truco.bench.Pattern"
PATTERN_MESSAGE_BYTES = 1024
"""Size of each reply and stream message of the pattern load (a typical observation
update of a two-player match is 0.5 to 2 KB)."""


async def echo_server(port: int) -> None:
    """The baselines' server until SIGTERM, doing no work at all:

    * ``Echo`` -- a unary echo (bytes in, same bytes out): the transport's ceiling;
    * ``Act`` / ``Stream`` -- the match service's RPC pattern: each seat holds a server
      stream, and a unary ``Act`` answers and pushes one message to every seat's stream
      of its match, the next seat's flagged as "your turn". The same calls and messages
      per action as the real service, with no game, no storage and no proto building.
    """
    streams: dict[bytes, list[asyncio.Queue[bytes]]] = {}
    body = b"x" * PATTERN_MESSAGE_BYTES

    async def echo(request: bytes, context: Any) -> bytes:
        return request

    async def act(request: bytes, context: Any) -> bytes:
        match, seat = request[:-1], request[-1]
        queues = streams.get(match, [])
        for i, q in enumerate(queues):
            q.put_nowait((b"\x01" if i == (seat + 1) % len(queues) else b"\x00") + body)
        return body

    async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
        match, seat, players = request[:-2], request[-2], request[-1]
        queues = streams.setdefault(match, [asyncio.Queue() for _ in range(players)])
        try:
            yield (b"\x01" if seat == 0 else b"\x00") + body
            while True:
                yield await queues[seat].get()
        finally:
            streams.pop(match, None)

    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "truco.bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
            ),
            grpc.method_handlers_generic_handler(
                PATTERN_SERVICE,
                {
                    "Act": grpc.unary_unary_rpc_method_handler(act),
                    "Stream": grpc.unary_stream_rpc_method_handler(stream),
                    PATTERN_CONNECT: pattern_connect_handler(body),
                },
            ),
        )
    )
    server.add_insecure_port(f"{HOST}:{port}")
    await server.start()
    print(f"echo listening on {HOST}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1)


def cpu_seconds(pid: int) -> float:
    """user + system CPU time of a process (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metrics_text(metrics_port: int) -> str:
    """The worker's ``/metrics`` page."""
    import urllib.request

    with urllib.request.urlopen(f"http://{HOST}:{metrics_port}/metrics", timeout=10) as resp:
        return str(resp.read().decode())


def bucket_delta(before: str, after: str, name: str, **labels: str) -> list[tuple[float, float]]:
    """``(upper bound, cumulative count)`` of histogram ``name``'s buckets whose labels
    include ``labels``, as grown from the ``before`` page to the ``after`` one."""
    from prometheus_client.parser import text_string_to_metric_families  # the server's extra

    def buckets(text: str) -> dict[float, float]:
        found: dict[float, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == f"{name}_bucket" and labels.items() <= sample.labels.items():
                    bound = float(sample.labels["le"])
                    found[bound] = found.get(bound, 0.0) + sample.value
        return found

    old, new = buckets(before), buckets(after)
    return sorted((bound, count - old.get(bound, 0.0)) for bound, count in new.items())


def bucket_quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """The ``q`` quantile of a histogram, interpolated linearly inside its bucket (as
    Prometheus's ``histogram_quantile``); NaN without observations."""
    if not buckets or buckets[-1][1] <= 0:
        return float("nan")
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower  # beyond the last finite bound: that bound is what is known
            return lower + (bound - lower) * (rank - below) / (count - below) if count > below else bound
        lower, below = bound, count
    return lower


def commit_count(metrics_port: int) -> float:
    """Commits the worker made so far (its own ``truco_redis_seconds`` count for the commit
    script): one Redis round trip each, the write path of an action."""
    text = metrics_text(metrics_port)
    for line in text.splitlines():
        if line.startswith('truco_redis_seconds_count{operation="commit"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def commandstats(r: redis.Redis) -> dict[str, int]:
    """Calls so far of each command Redis ran (``INFO commandstats``; inside scripts too)."""
    info: dict[str, Any] = r.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()}


def match_memory(r: redis.Redis, match_ids: list[str]) -> list[int]:
    sizes = []
    for mid in match_ids:
        total = 0
        for key in r.scan_iter(match=f"truco:{{{mid}}}:*", count=1000):
            total += int(r.memory_usage(key, samples=0) or 0)
        sizes.append(total)
    return sizes


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux ``/proc``)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def main(argv: list[str] | None = None) -> int:
    """``python -m truco_tools.bench_processes PORT``: run the echo server alone."""
    parser = argparse.ArgumentParser(prog="python -m truco_tools.bench_processes")
    parser.add_argument("port", type=int)
    asyncio.run(echo_server(parser.parse_args(argv).port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
