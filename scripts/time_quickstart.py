#!/usr/bin/env python3
"""Time the README's quick start from a fresh clone: ``make serve`` until gRPC health answers.

    .venv/bin/python scripts/time_quickstart.py [--runs 2] [--repo .]

Each run clones the repository's committed HEAD into a new temporary directory, starts
``make serve`` there (its own ``.venv``; free loopback ports, metrics off), polls the standard
gRPC health service every 0.1 s and prints the seconds from the start of ``make`` to the first
SERVING answer, with the output ``make serve`` printed. Then it stops the server (SIGTERM to
the process group it started) and deletes the clone. The first run may fill uv's package cache;
later runs are the warm-cache figure the README quotes. Runs only on loopback; each run gives up
after ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            resp = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=0.5)
        except grpc.RpcError:
            return False
    return bool(resp.status == health_pb2.HealthCheckResponse.SERVING)


def one_run(repo: Path, timeout: float) -> tuple[float, str]:
    work = Path(tempfile.mkdtemp(prefix="truco-quickstart-"))
    clone = work / "truco"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    grpc_port = _free_port()
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env.update(TRUCO_GRPC_PORT=str(grpc_port), TRUCO_HTTP_PORT=str(_free_port()), TRUCO_METRICS_PORT="0")
    env.pop("REDIS_URL", None)
    log = work / "make.log"
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["make", "serve"],
            cwd=clone,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        while not _serving(f"127.0.0.1:{grpc_port}"):
            if proc.poll() is not None:
                raise SystemExit(f"make serve exited ({proc.returncode}):\n{log.read_text()}")
            if time.perf_counter() - start > timeout:
                raise SystemExit(f"not serving after {timeout:g} s:\n{log.read_text()}")
            time.sleep(0.1)
        seconds = time.perf_counter() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        text = log.read_text()
        shutil.rmtree(work, ignore_errors=True)
    return seconds, text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repo", default=".", help="repository to clone (default: this checkout)")
    p.add_argument("--runs", type=int, default=2, help="fresh clones to time (default 2)")
    p.add_argument("--timeout", type=float, default=180.0, help="give up a run after this (default 180 s)")
    args = p.parse_args()
    repo = Path(args.repo).resolve()
    for i in range(args.runs):
        seconds, text = one_run(repo, args.timeout)
        print(f"--- run {i + 1}: make serve output")
        print(text.rstrip())
        print(f"run {i + 1}: fresh clone, make serve until gRPC health SERVING: {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
