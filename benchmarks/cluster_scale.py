"""Throughput and Redis cost per action with 1, 2 and 3 workers on a local Redis Cluster,
in one run. Everything on loopback, started and
stopped by pid.

    python benchmarks/cluster_scale.py                      # 1, 2, 3 workers; 60 matches; 10 s each
    python benchmarks/cluster_scale.py --workers 1 3 --matches 120 --seconds 20

What runs: a Redis Cluster of six ``redis-server`` processes (3 primaries, 3 replicas, no
persistence; ``truco_tools.redis_cluster``); for each worker count N, N ``truco serve``
processes on its ``redis+cluster://`` URL; in this process, ``--matches`` concurrent
matches of random bots (``truco_tools.cluster_load.ClusterBots``: each seat streams from
one random worker and acts through another, so with N > 1 most events reach a seat
through the cluster's doorbells, not the local fan-out), a finished match replaced at once.
After ``--warmup`` seconds it measures ``--seconds`` seconds:

* actions/s (accepted SubmitActions / window);
* CPU per action (``/proc/<pid>/stat`` user+system delta / actions) of the Redis primaries,
  the replicas, the workers and this client process; the share of a core each used;
* Redis commands per action (``INFO commandstats`` of the primaries, all commands: those the
  scripts run inside count too), EVALSHA and SPUBLISH per action;
* bytes of Redis memory per live match (``MEMORY USAGE`` of every key of 10 live matches,
  sampled every second; primaries only -- a replica holds a second copy).

What one commit costs on one server and on the cluster, alone and batched, is
``benchmarks/store_commit.py``'s (``--topology cluster``).

On 2 cores the six Redis processes, the workers and the bots share two cores: adding
workers adds processes competing for the same CPU, so the figures show the *overhead* of
spreading a match over workers (doorbells, a stream per node), not a speed-up.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from truco_tools.bench_processes import cpu_seconds as _cpu_seconds
from truco_tools.cluster_load import ClusterBots, LoadStats, start_workers
from truco_tools.redis_cluster import LocalRedisCluster, start_cluster


def commandstats(cluster: LocalRedisCluster, primary_ids: set[str]) -> dict[str, int]:
    total: dict[str, int] = {}
    for node in cluster.nodes:
        if node.node_id not in primary_ids:
            continue
        with node.client() as c:
            for name, stats in c.info("commandstats").items():
                key = name.removeprefix("cmdstat_")
                total[key] = total.get(key, 0) + int(stats["calls"])
    return total


def match_bytes(cluster: LocalRedisCluster, match_ids: list[str]) -> list[int]:
    sizes = []
    with cluster.client() as rc:
        for mid in match_ids:
            keys = [f"truco:{{{mid}}}:{k}" for k in ("match", "events", "req")]
            sizes.append(sum(int(rc.memory_usage(k, samples=0) or 0) for k in keys))
    return sizes


async def measure(
    cluster: LocalRedisCluster, workers: int, args: argparse.Namespace, log_dir: Path
) -> dict[str, Any]:
    procs = start_workers(workers, cluster.url, log_dir / f"n{workers}", settings={})
    primaries = {n.node_id for n in cluster.primaries()}
    try:
        stats = LoadStats()
        stop = asyncio.Event()
        async with ClusterBots([w.address for w in procs], seed=workers, stats=stats) as bots:
            play = asyncio.ensure_future(bots.run_until(args.matches, stop, first_index=workers * 10**7))
            await asyncio.sleep(args.warmup)
            pids = {
                "primaries": [n.pid for n in cluster.nodes if n.node_id in primaries],
                "replicas": [n.pid for n in cluster.nodes if n.node_id not in primaries],
                "workers": [w.pid for w in procs],
                "client": [os.getpid()],
            }
            cpu0 = {k: sum(map(_cpu_seconds, v)) for k, v in pids.items()}
            cmd0 = await asyncio.to_thread(commandstats, cluster, primaries)
            actions0 = stats.actions
            t0 = time.perf_counter()
            sizes: list[int] = []
            sampler = random.Random(workers)
            while time.perf_counter() - t0 < args.seconds:
                await asyncio.sleep(1.0)
                live = sorted(bots.live)
                sizes += await asyncio.to_thread(
                    match_bytes, cluster, sampler.sample(live, min(10, len(live)))
                )
            elapsed = time.perf_counter() - t0
            actions = stats.actions - actions0
            cpu = {k: sum(map(_cpu_seconds, v)) - cpu0[k] for k, v in pids.items()}
            cmd1 = await asyncio.to_thread(commandstats, cluster, primaries)
            stop.set()
            await play
    finally:
        for w in procs:
            w.stop()
    calls = {k: cmd1.get(k, 0) - cmd0.get(k, 0) for k in cmd1 if not k.startswith(("memory", "info", "scan"))}
    n = max(actions, 1)
    out: dict[str, Any] = {
        "workers": workers,
        "actions_per_s": actions / elapsed,
        "redis_commands_per_action": sum(calls.values()) / n,
        "evalsha_per_action": calls.get("evalsha", 0) / n,
        "spublish_per_action": calls.get("spublish", 0) / n,
        "bytes_per_live_match": statistics.mean(sizes) if sizes else float("nan"),
        "stream_gaps_reported": stats.gaps_reported,
        "unreported_gaps": len(stats.unreported_gaps),
    }
    for who, seconds in cpu.items():
        out[f"{who}_cpu_ms_per_action"] = 1000 * seconds / n
        out[f"{who}_cpu_share"] = seconds / elapsed
    top = sorted(((v, k) for k, v in calls.items() if v), reverse=True)[:8]
    out["top_commands"] = ", ".join(f"{k}={v / n:.2f}" for v, k in top)
    return out


def report(row: dict[str, Any], first: dict[str, Any]) -> None:
    """The figures of one worker count, one ``name: value`` line each."""
    n = row["workers"]

    def say(text: str) -> None:
        print(f"workers {n}: {text}")

    share = row["actions_per_s"] / first["actions_per_s"]
    say(f"actions/s: {row['actions_per_s']:.0f} ({share:.2f} of {first['workers']} worker(s))")
    for who in ("primaries", "replicas", "workers", "client"):
        ms, core = row[f"{who}_cpu_ms_per_action"], 100 * row[f"{who}_cpu_share"]
        say(f"{who} CPU per action (ms): {ms:.3f} ({core:.0f}% of a core)")
    say(f"redis commands per action: {row['redis_commands_per_action']:.2f} ({row['top_commands']})")
    say(f"EVALSHA per action: {row['evalsha_per_action']:.2f}")
    say(f"SPUBLISH per action: {row['spublish_per_action']:.2f}")
    say(f"redis bytes per live match (primaries): {row['bytes_per_live_match']:.0f}")
    say(f"stream gaps reported: {row['stream_gaps_reported']}; unreported: {row['unreported_gaps']}")


async def main(args: argparse.Namespace) -> None:
    from truco_server.core.logging import configure_logging

    configure_logging("warning")
    print("# starting a local Redis Cluster (3 primaries, 3 replicas) ...", flush=True)
    cluster = await asyncio.to_thread(start_cluster)
    try:
        with tempfile.TemporaryDirectory(prefix="truco-cluster-bench-") as tmp:
            rows = []
            for n in args.workers:
                print(
                    f"# {n} worker(s), {args.matches} matches, {args.warmup:g} s + {args.seconds:g} s",
                    flush=True,
                )
                rows.append(await measure(cluster, n, args, Path(tmp)))
                await asyncio.to_thread(cluster.flushall)
            for row in rows:
                report(row, rows[0])
    finally:
        cluster.stop()
    print(f"machine load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2, 3], help="worker counts (default 1 2 3)"
    )
    parser.add_argument("--matches", type=int, default=60, help="concurrent matches (default 60)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per worker count")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    asyncio.run(main(parser.parse_args()))
