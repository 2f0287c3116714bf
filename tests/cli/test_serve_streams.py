"""``truco serve`` keeps its two output streams apart: stdout is JSON log lines only (what a
log collector parses), the human banner and command errors go to stderr. With ``--workers``
the children's log lines reach the same stdout and one banner is printed for the group."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from tests.helpers.serve import serve_apart
from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc

pytestmark = pytest.mark.timeout(300)


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
    with serve_apart(tmp_path) as served:
        address = served.grpc_address
        _create_a_match(address)
    out = served.stdout
    logs = _log_lines(out)
    serving = [line for line in logs if line["event"] == "serving"]
    assert len(serving) == 1 and serving[0]["grpc_address"] == address
    assert "listening" not in out.read_text()


def test_a_worker_group_passes_its_workers_logs_to_stdout_and_prints_one_banner(
    clean_redis_url: str, tmp_path: Path
) -> None:
    with serve_apart(tmp_path, "--redis", clean_redis_url, "--workers", "2", timeout=150) as served:
        _create_a_match(served.grpc_address)
    logs = _log_lines(served.stdout)
    # each worker's own "serving" line reached the group's stdout
    assert len([line for line in logs if line["event"] == "serving"]) == 2, logs
    banner = served.stderr.read_text()
    assert banner.count("gRPC listening on ") == 1
    assert "workers: 2" in banner
