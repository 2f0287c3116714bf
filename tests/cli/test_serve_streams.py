"""``truco serve`` keeps its two output streams apart: stdout is JSON log lines only (what a
log collector parses), the human banner and command errors go to stderr. With ``--workers``
the children's log lines reach the same stdout and one banner is printed for the group."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc

pytestmark = pytest.mark.timeout(300)


def _serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    cmd = [
        sys.executable, "-m", "truco_cli.main", "serve", "--grpc-port", "0", "--http-port", "0",
        "--metrics-port", "0", "--host", "127.0.0.1", "--log-level", "info", *args,
    ]  # fmt: skip
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e, env=env)
    return proc, out, err


def _wait_for_banner(proc: subprocess.Popen[bytes], err: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while "store: " not in err.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError("truco serve did not start: " + err.read_text(errors="replace"))
        time.sleep(0.05)
    text = err.read_text()
    return text.split("gRPC listening on ", 1)[1].split()[0]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _log_lines(out: Path) -> list[dict[str, object]]:
    lines = out.read_text().splitlines()
    assert lines, "no log line on stdout"
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"a line on stdout is not JSON: {line!r}") from None
    return parsed


def _create_a_match(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        match_service_pb2_grpc.MatchServiceStub(channel).CreateMatch(
            match_service_pb2.CreateMatchRequest(
                rules=match_pb2.RuleSet(preset="paulista"), request_id="streams-1"
            ),
            timeout=30,
        )


def test_one_worker_writes_only_json_to_stdout_and_its_banner_to_stderr(tmp_path: Path) -> None:
    proc, out, err = _serve(tmp_path)
    try:
        address = _wait_for_banner(proc, err, timeout=60)
        _create_a_match(address)
    finally:
        _stop(proc)
    logs = _log_lines(out)
    serving = [line for line in logs if line["event"] == "serving"]
    assert len(serving) == 1 and serving[0]["grpc_address"] == address
    assert "listening" not in out.read_text()


def test_a_worker_group_passes_its_workers_logs_to_stdout_and_prints_one_banner(
    clean_redis_url: str, tmp_path: Path
) -> None:
    proc, out, err = _serve(tmp_path, "--redis", clean_redis_url, "--workers", "2")
    try:
        address = _wait_for_banner(proc, err, timeout=150)
        _create_a_match(address)
    finally:
        _stop(proc)
    logs = _log_lines(out)
    # each worker's own "serving" line reached the group's stdout
    assert len([line for line in logs if line["event"] == "serving"]) == 2, logs
    banner = err.read_text()
    assert banner.count("gRPC listening on ") == 1
    assert "workers: 2" in banner
