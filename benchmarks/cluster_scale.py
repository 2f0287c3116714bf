"""Throughput and Redis cost per action with 1, 2 and 3 workers on a local Redis Cluster,
in one run; and what one commit costs on each path. Everything on loopback, started and
stopped by pid.

    python benchmarks/cluster_scale.py                      # 1, 2, 3 workers; 60 matches; 10 s each
    python benchmarks/cluster_scale.py --workers 1 3 --matches 120 --seconds 20
    python benchmarks/cluster_scale.py --commits-only       # only the commit-path comparison

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

Then (and alone with ``--commits-only``) the commit path: sequential commits on one match,
in-process, alternating three paths in rounds -- the store's packed ``EVALSHA`` on one
server, the store's packed ``EVALSHA`` on the cluster (its own slot lookup on the cluster
client's slot map), and redis-py's ``RedisCluster`` script call (its routing and command
layer) -- and prints, for each, the median wall time per commit (the round trip included)
and the median CPU time of this process per commit (what the path costs the worker; robust
to a busy machine).

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

from truco_tools.bench_service import _cpu_seconds
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


async def commit_paths(
    cluster: LocalRedisCluster, rounds: int, commits: int
) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) µs per sequential commit on each path (module docstring)."""
    from truco_server.stores import RedisMatchStore, StoreSettings
    from truco_server.stores.redis_store import COMMIT_LUA
    from truco_tools.redis_proc import start_redis

    one = start_redis(host="127.0.0.1")
    settings = StoreSettings(max_events=64)
    stores = {"one server, packed EVALSHA": RedisMatchStore.from_url(one.url, settings)}
    stores["cluster, packed EVALSHA"] = RedisMatchStore.from_url(cluster.url, settings)
    routed = RedisMatchStore.from_url(cluster.url, settings)
    script = routed.client.register_script(COMMIT_LUA)
    results: dict[str, list[tuple[float, float]]] = {
        name: [] for name in [*stores, "cluster, redis-py script call"]
    }
    try:
        versions: dict[str, int] = {}
        for name, store in [*stores.items(), ("cluster, redis-py script call", routed)]:
            versions[name] = await store.create(name.replace(" ", "-"), b"m", b"s", [b"e"], _entry(name))

        async def packed(name: str, store: RedisMatchStore) -> None:
            mid = name.replace(" ", "-")
            for _ in range(commits):
                res = await store.commit(
                    mid, expected_version=versions[name], state=b"s" * 700, events=[b"e" * 70],
                    request_id=None, reply=b"",
                )  # fmt: skip
                versions[name] = res.version

        async def via_redis_py(name: str) -> None:
            mid = name.replace(" ", "-")
            keys = routed.keys_for(mid)
            for _ in range(commits):
                v = versions[name]
                res = await script(
                    keys=[keys.match, keys.events, keys.requests],
                    args=[v, b"s" * 700, "", b"", 86400, 64, "", 0, repr(time.time()), b"", "", "h", "",
                          1, b"e" * 70],
                )  # fmt: skip
                versions[name] = int(res[1])

        def timed(t0: float, c0: float) -> tuple[float, float]:
            return (time.perf_counter() - t0) / commits * 1e6, (time.process_time() - c0) / commits * 1e6

        for r in range(rounds + 1):
            for name, store in stores.items():
                t0, c0 = time.perf_counter(), time.process_time()
                await packed(name, store)
                if r:
                    results[name].append(timed(t0, c0))
            name = "cluster, redis-py script call"
            t0, c0 = time.perf_counter(), time.process_time()
            await via_redis_py(name)
            if r:
                results[name].append(timed(t0, c0))
    finally:
        for store in [*stores.values(), routed]:
            await store.close()
        one.stop()
    return {
        name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for name, v in results.items()
    }


def _entry(name: str) -> Any:
    from truco_server.stores import MatchIndexEntry

    mid = name.replace(" ", "-")
    return MatchIndexEntry(match_id=mid, owner="bench", status="active", created_at=time.time())


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
            if not args.commits_only:
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
            print(
                f"# commit paths: {args.rounds} rounds x {args.commits} sequential commits each", flush=True
            )
            for name, (wall, cpu) in (await commit_paths(cluster, args.rounds, args.commits)).items():
                print(f"commit, {name}: wall {wall:.0f} µs, client CPU {cpu:.0f} µs")
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
    parser.add_argument("--rounds", type=int, default=3, help="commit-path rounds (default 3)")
    parser.add_argument("--commits", type=int, default=1000, help="commits per path and round")
    parser.add_argument("--commits-only", action="store_true", help="only the commit-path comparison")
    asyncio.run(main(parser.parse_args()))
