"""`truco bench service` runs end to end (tiny and bounded) and reports every figure, for
gRPC and REST, from real traffic."""

from __future__ import annotations

import argparse
import math

import pytest

from truco_tools import bench_processes, bench_service

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
        "no-work server CPU per action (ms)",
        "paced actions/s",
        "paced SubmitAction p99 (ms)",
        "paced delivery p99 (ms)",
        "paced SubmitAction p50/p99 in the worker's handler (ms, its histogram, interpolated)",
        "no-work server, same RPC pattern paced the same way, Act p50/p99 (ms)",
        "connection actions/s",
        "connection rejected actions (stale view or version conflict)",
        "no-work server CPU per action, connection pattern (ms)",
        "the service's own work per action (ms, unary worker less its pattern)",
        "REST actions/s",
        "REST SubmitAction p99 (ms)",
    ):
        assert name in names, name
    assert results["actions_per_s"] > 0 and results["rest_actions_per_s"] > 0
    assert results["pattern_actions_per_s"] > 0 and results["echo_rpc_per_s"] > 0
    assert results["pattern_server_cpu_ms_per_action"] > 0  # measured on the no-work process
    assert results["connection_actions_per_s"] > 0
    assert results["connection_pattern_server_cpu_ms_per_action"] > 0  # the bidirectional pattern's too
    # the paced run offers 30 % of the closed loop's rate: each match waits between actions
    assert results["paced_think_ms"] > 0
    assert 0 < results["paced_actions_per_s"] < results["actions_per_s"]
    # the worker's own share of it, from its histogram over the same window
    assert 0 < results["paced_handler_p50_ms"] <= results["paced_handler_p99_ms"]
    # and the no-work server under the same paced pattern: the latency floor of the calls
    assert 0 < results["paced_pattern_act_p50_ms"] <= results["paced_pattern_act_p99_ms"]
    assert 0.9 <= results["redis_commit_round_trips_per_action"] <= 1.2  # one round trip on the write path
    assert results["redis_evalsha_per_action"] >= results["redis_commit_round_trips_per_action"]


def test_histogram_quantiles_interpolate_inside_their_bucket() -> None:
    before = (
        'h_bucket{m="A",le="0.001"} 1.0\nh_bucket{m="A",le="0.01"} 1.0\nh_bucket{m="A",le="+Inf"} 1.0\n'
        'h_bucket{m="B",le="0.001"} 7.0\nh_bucket{m="B",le="0.01"} 7.0\nh_bucket{m="B",le="+Inf"} 7.0\n'
    )
    after = (
        'h_bucket{m="A",le="0.001"} 51.0\nh_bucket{m="A",le="0.01"} 91.0\nh_bucket{m="A",le="+Inf"} 101.0\n'
        'h_bucket{m="B",le="0.001"} 9.0\nh_bucket{m="B",le="0.01"} 9.0\nh_bucket{m="B",le="+Inf"} 9.0\n'
    )
    grown = bench_processes.bucket_delta(before, after, "h", m="A")
    assert grown == [(0.001, 50.0), (0.01, 90.0), (float("inf"), 100.0)]
    assert bench_processes.bucket_quantile(grown, 0.25) == pytest.approx(0.0005)  # half of the first bucket
    assert bench_processes.bucket_quantile(grown, 0.70) == pytest.approx(0.001 + 0.009 * 20 / 40)
    assert bench_processes.bucket_quantile(grown, 0.99) == 0.01  # beyond the last finite bound
    assert math.isnan(bench_processes.bucket_quantile([], 0.5))
