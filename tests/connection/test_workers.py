"""``truco serve --workers 2`` on a real Redis: two worker processes serve the same ports, the
metrics endpoint adds up both, SIGTERM to the parent stops them all."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest

from tests.helpers.redis_proc import free_port
from tests.helpers.serve import listening
from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc

pytestmark = [pytest.mark.timeout(240)]


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _metric(port: int, name: str, **labels: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def _create_many(address: str, connections: int, each: int) -> None:
    async def one(i: int) -> None:
        opts = [("grpc.use_local_subchannel_pool", 1), ("truco.test.channel", i)]
        async with grpc.aio.insecure_channel(address, options=opts) as ch:
            stub = match_service_pb2_grpc.MatchServiceStub(ch)
            req = match_service_pb2.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista"))
            for _ in range(each):
                await stub.CreateMatch(req, timeout=10)

    await asyncio.gather(*(one(i) for i in range(connections)))


def test_two_workers_share_the_ports_add_up_their_metrics_and_stop_together(
    clean_redis_url: str, tmp_path: Path
) -> None:
    metrics_port = free_port()
    log_path = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    cmd = [
        sys.executable, "-m", "truco_cli.main", "serve", "--redis", clean_redis_url,
        "--grpc-port", "0", "--http-port", "0", "--metrics-port", str(metrics_port),
        "--host", "127.0.0.1", "--log-level", "warning", "--workers", "2",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 150  # two interpreters starting on a busy machine
        while "workers: 2" not in log_path.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
        text = log_path.read_text()
        found = listening(text)
        assert found is not None, text
        address = found[0]
        pids = [int(p) for p in re.search(r"pids ([\d, ]+);", text).group(1).split(", ")]  # type: ignore[union-attr]
        assert len(pids) == 2 and proc.pid not in pids and all(_alive(p) for p in pids)

        before = [_cpu(p) for p in pids]
        asyncio.run(_create_many(address, connections=16, each=25))
        used = [_cpu(p) - b for p, b in zip(pids, before, strict=True)]
        # the kernel spread the 16 connections over both workers: both did real work
        assert min(used) > 0.15 * sum(used), used

        # one endpoint, both workers' counts: every CreateMatch of the load, whichever served it
        handled = _metric(
            metrics_port, "grpc_server_handled_total", grpc_method="CreateMatch", grpc_code="OK"
        )
        assert handled == 16 * 25

        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not any(_alive(p) for p in pids)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
