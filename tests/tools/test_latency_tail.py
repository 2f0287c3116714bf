"""How ``run.py --latency`` describes its tail: the slowest moves grouped into episodes
(``benchmarks/peers/latency.py``), and the worker's probe (``benchmarks/gc_probe``) timing
its event loop's callbacks, counted over a window (``benchmarks/gc_pauses.py``)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


latency = _load("peers_latency", REPO / "benchmarks" / "peers" / "latency.py")
gc_pauses = _load("gc_pauses", REPO / "benchmarks" / "gc_pauses.py")


def test_scattered_slow_moves_make_one_episode_each() -> None:
    at = [i * 0.1 for i in range(100)]  # a move every 100 ms
    ms = [20.0 if i % 10 == 0 else 2.0 for i in range(100)]
    episodes = latency.tail_episodes(at, ms, threshold_ms=10.0)
    assert [e.moves for e in episodes] == [1] * 10
    assert all(e.seconds == 0.0 and e.worst_ms == 20.0 for e in episodes)


def test_a_queue_building_up_makes_one_episode_of_many_moves() -> None:
    at = [i * 0.002 for i in range(500)]  # a move every 2 ms, slow ones from 0.4 s to 0.46 s
    ms = [15.0 + i % 3 if 200 <= i < 230 else 3.0 for i in range(500)]
    episodes = latency.tail_episodes(at, ms, threshold_ms=10.0, gap_ms=50.0)
    assert len(episodes) == 1
    (only,) = episodes
    assert only.moves == 30 and only.worst_ms == 17.0
    assert abs(only.start - 0.4) < 1e-9 and abs(only.seconds - 0.058) < 1e-9
    # slow moves further apart than the gap are two episodes
    assert len(latency.tail_episodes([0.0, 0.2], [20.0, 20.0], threshold_ms=10.0, gap_ms=50.0)) == 2


def test_the_tail_line_says_how_the_slowest_one_percent_came() -> None:
    at = [i * 0.001 for i in range(1000)]
    ms = [30.0 if 500 <= i < 510 else 2.0 + (i % 7) / 10 for i in range(1000)]
    phase = latency.Phase(1000, 1.0, 0.8, 0.1, ms, at, (0.0, 1.0))
    line = latency.tail_line(phase)
    assert "(10 moves of " in line and "came in 1 episodes" in line, line  # the 30 ms ones
    assert "the largest held 10 slow moves (worst 30.0 ms)" in line


PROGRAM = """
import asyncio, time

async def blocks():
    time.sleep(0.03)  # holds the loop for one callback of about 30 ms

async def main():
    await asyncio.sleep(0)
    await asyncio.ensure_future(blocks())

asyncio.run(main())
"""


def test_the_probe_times_the_loops_long_callbacks_and_the_window_counts_them(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "benchmarks" / "gc_probe"), GC_PROBE_OUT=str(tmp_path / "p"))
    before = time.time()
    subprocess.run([sys.executable, "-c", PROGRAM, "serve"], env=env, check=True, timeout=60)
    after = time.time()
    (path,) = tmp_path.glob("p.*")
    record = json.loads(path.read_text(encoding="utf-8"))
    assert before - 1 <= record["began"] <= after
    long = [(took, what) for _, took, what in record["callbacks"] if took >= 0.025]
    assert long and long[0][1] == "blocks", record["callbacks"]
    worker = gc_pauses.worker_record(tmp_path, "p")
    assert worker is not None  # the command line holds "serve", as a worker's does
    inside = gc_pauses.callbacks_line(worker, before - 1, after + 1)
    assert "1 of 10 ms or more" in inside and "ms blocks" in inside, inside
    outside = gc_pauses.callbacks_line(worker, after + 10, after + 20)
    assert "0 of 1 ms" in outside and "longest: -" in outside, outside


def test_the_collectors_share_counts_the_collections_of_the_window_against_its_cpu() -> None:
    worker = {
        "began": 100.0,
        "collections": [(0, 1.0, 0.002), (1, 2.0, 0.004), (0, 0.2, 0.5), (2, 50.0, 0.03)],
    }
    line = gc_pauses.collector_share_line(worker, 100.5, 110.0, 0.6, 100)
    assert "(young / middle / full): 1 / 1 / 0, 6 ms in all = 1.0 % of the worker's CPU" in line, line
    assert "(60 us a move)" in line, line
    assert "no record" in gc_pauses.collector_share_line({"collections": []}, 0, 1, 1, 1)


def test_redis_stalls_are_told_from_its_latency_monitor_over_the_window() -> None:
    history = {"command": [(100, 7), (105, 30)], "fork": [(90, 12)]}
    line = latency.redis_stalls_line(history, 99.0, 110.0)
    assert line.endswith("over the window: 2; longest: command 30 ms at +6 s; command 7 ms at +1 s"), line
    assert latency.redis_stalls_line(history, 200.0, 210.0).endswith("over the window: none")


def test_the_workers_redis_records_its_own_slow_commands() -> None:
    """The benchmark's ``redis-server`` runs with the latency monitor on: a script that holds
    Redis for about 30 ms is one of its events, in the window around it."""
    from truco_tools.redis_proc import start_redis

    redis = start_redis(extra_args=("--latency-monitor-threshold", str(latency.REDIS_LATENCY_MS)))
    try:
        import redis as redis_py

        client = redis_py.Redis.from_url(redis.url)
        busy = (
            "local t = redis.call('TIME') local s = t[1] * 1e6 + t[2] "
            "repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 30000"
        )
        before = time.time()
        client.eval(busy, 0)
        client.close()
        history = latency.redis_history(redis.url)
        assert any(ms >= 25 for _, ms in history.get("command", [])), history
        line = latency.redis_stalls_line(history, before - 1, time.time() + 1)
        assert "over the window: 1; longest: command" in line, line
    finally:
        redis.stop()


def test_the_generators_stalls_are_told_with_the_tail_episodes_they_overlap() -> None:
    at = [i * 0.001 for i in range(1000)]  # a move a millisecond; two slow runs of 10
    ms = [30.0 if 200 <= i < 210 or 700 <= i < 710 else 2.0 for i in range(1000)]
    quiet = latency.Phase(1000, 1.0, 0.8, 0.1, ms, at, (0.0, 1.0))
    assert latency.generator_stalls_line(quiet) == "the generators' event loops: no stall of 5 ms or more"
    # one stall inside the first run's span (0.200 s to 0.239 s), one long after the second's
    stalled = quiet._replace(stalls=((0.215, 12.0), (0.9, 6.5)))
    line = latency.generator_stalls_line(stalled)
    assert "2 stalls of 5 ms or more (longest 12.0 ms, 18 ms together)" in line, line
    assert line.endswith("1 of the tail's 2 episodes overlap one"), line


def test_a_generators_loop_ticks_record_only_the_late_ones_of_the_window() -> None:
    async def run() -> list[tuple[float, float]]:
        found: list[tuple[float, float]] = []
        measuring = [False]
        ticker = asyncio.ensure_future(latency._loop_stalls(found, lambda: measuring[0]))
        await asyncio.sleep(0.01)
        time.sleep(0.03)  # a stall before the window opens: not recorded
        await asyncio.sleep(0.01)
        measuring[0] = True
        await asyncio.sleep(0.01)
        time.sleep(0.04)  # the loop held 40 ms in the window
        await asyncio.sleep(0.01)
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)
        return found

    found = asyncio.run(run())
    assert len(found) == 1, found
    assert found[0][1] >= 35.0, found
