"""`truco bench service` runs end to end (tiny and bounded) and reports every figure, for
gRPC and REST, from real traffic."""

from __future__ import annotations

import argparse

import pytest

from truco_tools import bench_service

pytestmark = pytest.mark.timeout(120)


async def test_bench_service_reports_every_figure() -> None:
    parser = argparse.ArgumentParser()
    bench_service.add_arguments(parser)
    args = parser.parse_args(["--matches", "4", "--seconds", "1.5", "--warmup", "0.5", "--quiet"])
    lines: list[str] = []
    results = await bench_service.run(args, out=lines.append)
    names = {line.split(":")[0] for line in lines}
    for name in (
        "actions/s",
        "SubmitAction p99 (ms)",
        "delivery p99 (ms)",
        "redis write round trips (commits) per action",
        "redis scripts (EVALSHA) per action",
        "redis bytes per live match",
        "echo rpc/s (same concurrency)",
        "actions/s / echo rpc/s",
        "no-work server, same RPC pattern, actions/s",
        "actions/s / no-work pattern actions/s",
        "paced actions/s",
        "paced SubmitAction p99 (ms)",
        "paced delivery p99 (ms)",
        "no-work server, same RPC pattern paced the same way, Act p50/p99 (ms)",
        "REST actions/s",
        "REST SubmitAction p99 (ms)",
    ):
        assert name in names, name
    assert results["actions_per_s"] > 0 and results["rest_actions_per_s"] > 0
    assert results["pattern_actions_per_s"] > 0 and results["echo_rpc_per_s"] > 0
    # the paced run offers 30 % of the closed loop's rate: each match waits between actions
    assert results["paced_think_ms"] > 0
    assert 0 < results["paced_actions_per_s"] < results["actions_per_s"]
    # and the no-work server under the same paced pattern: the latency floor of the calls
    assert 0 < results["paced_pattern_act_p50_ms"] <= results["paced_pattern_act_p99_ms"]
    assert 0.9 <= results["redis_commit_round_trips_per_action"] <= 1.2  # one round trip on the write path
    assert results["redis_evalsha_per_action"] >= results["redis_commit_round_trips_per_action"]
