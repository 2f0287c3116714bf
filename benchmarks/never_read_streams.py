"""What streams that are opened and never read leave in a worker once they are closed.

    python benchmarks/never_read_streams.py                     # 10,000 streams: none, release, image
    python benchmarks/never_read_streams.py --streams 3000 --matches 100
    python benchmarks/never_read_streams.py --variants release,arenas2,mmap16k
    python benchmarks/never_read_streams.py --variants image --allocator-stats

Starts a ``redis-server`` and one ``truco serve`` worker on free loopback ports (quotas off:
one client is the whole load). Random bots (``truco_tools.cluster_load.ClusterBots``) play
``--matches`` matches (the warm-up); the worker's RSS then is *before*. The bots play as many
again while a hostile client opens ``--streams`` observation streams of the matches in play
(as their spectator), from version 0, over ``--channels`` connections that grant a stream
1 KiB, and never reads one: the worker has to hold what it cannot send. RSS at the end of
that is *peak*, with the number of streams open then. Every stream is then cancelled; once
the worker's ``truco_stream_subscribers`` gauge is back to 0 the bots play ``--matches``
more (the state *before* was measured in), the worker logs its release of memory (unless it
is off), and RSS is *after*. It prints the three, after
against before, and at each point the worker's own figures (``memory figures`` on SIGUSR1:
glibc's heaps and Python's allocated blocks), for each ``--variants`` in turn. With
``--allocator-stats`` a jemalloc worker prints its statistics as it exits (after *after*), and
the run shows their totals and, per size class, the blocks in use and the slabs that hold them.
Every process it starts it stops, by pid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import tempfile
import time
import tracemalloc
import urllib.request
from pathlib import Path
from typing import Any

import grpc

from truco_contract.pb import match_pb2, match_service_pb2_grpc
from truco_contract.pb import match_service_pb2 as MS
from truco_server.core.diagnostics import read_object_counts
from truco_tools.bench_processes import cpu_seconds
from truco_tools.campaign.chaos import WORKER_SETTINGS
from truco_tools.cluster_load import ClusterBots, WorkerProcess, start_workers
from truco_tools.redis_proc import free_port, start_redis


def files_rss(pid: int) -> int:
    """Resident bytes of the process's file-backed maps (code, shared libraries)."""
    total, counted = 0, False
    with open(f"/proc/{pid}/smaps", encoding="ascii", errors="replace") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a map's first line
                counted = len(head) > 5 and head[5].startswith("/")
            elif head[0] == "Rss:" and counted:
                total += int(head[1]) * 1024
    return total


async def _figures(worker: WorkerProcess) -> dict[str, float]:
    """The worker's RSS, its file-backed part, and the allocators' figures it logs on
    SIGUSR1 (``memory figures``, in MB; docs/operations.md, "Memory")."""
    seen = worker.log_path.read_text(errors="replace").count('"memory figures"')
    os.kill(worker.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 120
    while True:
        lines = [
            x for x in worker.log_path.read_text(errors="replace").splitlines() if '"memory figures"' in x
        ]
        if len(lines) > seen:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("no memory figures")
        await asyncio.sleep(0.1)
    if "PYTHONTRACEMALLOC" in worker.env:  # the same signal wrote a heap snapshot: wait for it
        await _snapshot(worker.pid, Path(worker.env["TRUCO_HEAP_SNAPSHOT_DIR"]), len(lines))
    got = json.loads(lines[-1])
    out = {k: float(v) for k, v in got.items() if k.endswith("_mb") or k == "python_blocks"}
    out.update(rss_mb=worker.rss() / 2**20, files_mb=files_rss(worker.pid) / 2**20)
    return out


def _subscribers(metrics_port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("truco_stream_subscribers "):
                return float(line.split()[1])
    return 0.0


async def _wait_subscribers_gone(metrics_port: int, timeout: float = 300.0) -> float:
    """Seconds until the worker holds no stream (its gauge at 0)."""
    t0 = time.monotonic()
    while await asyncio.to_thread(_subscribers, metrics_port) > 0:
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("the worker still holds streams")
        await asyncio.sleep(0.2)
    return time.monotonic() - t0


def _releases(worker: WorkerProcess) -> int:
    """The worker's ``memory released`` log lines so far (docs/operations.md, "Memory")."""
    return worker.log_path.read_text(errors="replace").count('"memory released"')


async def _released_since(worker: WorkerProcess, seen: int, timeout: float = 30.0) -> bool:
    """Wait for the worker's next release of memory after the streams closed (it looks every
    few seconds; none comes when fewer than its threshold were cut after the last one)."""
    deadline = time.monotonic() + timeout
    while _releases(worker) <= seen:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


async def _snapshot(pid: int, folder: Path, n: int) -> None:
    """Wait for the worker's ``n``-th heap snapshot in ``folder``."""
    deadline = time.monotonic() + 600
    while not (folder / f"heap-{pid}-{n}.types.txt").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("no heap snapshot")
        await asyncio.sleep(0.2)


def _compare_snapshots(folder: Path, pid: int) -> None:
    """What the Python heap holds after the streams closed that it did not before: the
    allocation sites and the object types that grew most (snapshots 1 and 3)."""
    first = tracemalloc.Snapshot.load(str(folder / f"heap-{pid}-1.tracemalloc"))
    last = tracemalloc.Snapshot.load(str(folder / f"heap-{pid}-3.tracemalloc"))
    total = [sum(s.size for s in snap.statistics("filename")) / 2**20 for snap in (first, last)]
    print(f"  traced Python heap before {total[0]:.1f} MB, after {total[1]:.1f} MB")
    for stat in last.compare_to(first, "lineno")[:12]:
        print(f"  {stat}")
    a = read_object_counts(folder / f"heap-{pid}-1.types.txt")
    b = read_object_counts(folder / f"heap-{pid}-3.types.txt")
    grew = sorted(((b[k] - a[k], k) for k in b.keys() | a.keys()), reverse=True)[:12]
    print("  objects by type, after - before: " + ", ".join(f"{k} {n:+d}" for n, k in grew))


async def _hostile(
    address: str, bots: ClusterBots, args: argparse.Namespace, done: asyncio.Event
) -> list[Any]:
    """Open ``args.streams`` streams, never reading them: of the matches in play, or with
    ``args.idle``, of that many matches created for them that nobody plays (every stream then
    stays open until it is cancelled)."""
    # a client that does not read grants a stream no more than its first window: 1 KiB and no
    # window growth here, so a stream holds the worker up once that much is unread
    options = [("grpc.use_local_subchannel_pool", 1), ("grpc.http2.lookahead_bytes", 1024),
               ("grpc.http2.bdp_probe", 0)]  # fmt: skip
    chans = [grpc.aio.insecure_channel(address, options=options) for _ in range(args.channels)]
    stubs = [match_service_pb2_grpc.MatchServiceStub(c) for c in chans]
    idle: dict[str, str] = {}
    for i in range(args.idle):
        rules = match_pb2.RuleSet(preset="paulista")
        create = MS.CreateMatchRequest(rules=rules, players=2, request_id=f"i{i}")
        made = await stubs[0].CreateMatch(create)
        idle[made.match.match_id] = made.spectator_token
    calls: list[Any] = []
    while len(calls) < args.streams and not done.is_set():
        watched = idle or dict(list(bots.spectator_tokens.items())[:50])
        for mid, token in watched.items():  # as a spectator (a match is read only with a token)
            stub = stubs[len(calls) % args.channels]
            req = MS.StreamObservationsRequest(match_id=mid, from_version=0)
            calls.append(stub.StreamObservations(req, metadata=(("authorization", f"Bearer {token}"),)))
            if len(calls) >= args.streams:
                break
        await asyncio.sleep(0.02)  # pace: about as many new streams a second as the matches allow
    calls.append(chans)
    return calls


IMAGE = {
    "LD_PRELOAD": "libjemalloc.so.2",
    "PYTHONMALLOC": "malloc",
    "MALLOC_CONF": "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0",
}
"""The allocator settings the container image runs the worker with (deploy/Dockerfile; a test
checks they are the same): jemalloc, and Python's small-object allocator off."""

VARIANTS: dict[str, dict[str, str]] = {
    "none": {"TRUCO_MEMORY_TRIM_AFTER_STREAMS": "0"},
    "release": {},
    "arenas2": {"MALLOC_ARENA_MAX": "2"},
    "pymalloc-off": {"PYTHONMALLOC": "malloc"},
    "mmap16k": {"MALLOC_MMAP_THRESHOLD_": "16384"},
    "image": IMAGE,
    "jemalloc": {k: v for k, v in IMAGE.items() if k != "PYTHONMALLOC"},
    "jemalloc-eager": {
        **IMAGE,
        "MALLOC_CONF": "background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0,narenas:2",
    },
}
"""Worker settings compared side by side (``--variants``): ``none`` without the release of
memory after closed streams, ``release`` the defaults, and the defaults with glibc limited to
two heaps (``arenas2``), with blocks from 16 KiB mapped apart (``mmap16k``), with Python's
small-object allocator off (``pymalloc-off``); ``image``: jemalloc in place of glibc's
allocator and Python's small-object allocator off, as the container image runs the worker
(deploy/Dockerfile); ``jemalloc`` the same with Python's allocator on, ``jemalloc-eager`` with
freed pages given back at once and two arenas."""


def _jemalloc_exit_stats(log_text: str) -> list[str]:
    """From jemalloc's statistics in a worker's log (``stats_print`` at exit, merged arenas):
    its totals line and, per small size class, ``size: blocks in use / slabs (KiB of slabs)``."""
    lines = log_text.splitlines()
    totals = [x for x in lines if x.startswith("Allocated:")]
    classes, in_bins = [], False
    for x in lines:
        head = x.split()
        if head[:1] == ["bins:"]:
            in_bins = True
        elif head[:1] == ["large:"]:
            in_bins = False
        elif in_bins and len(head) > 14 and head[0].isdigit():
            # size ind allocated nmalloc (#/s) ndalloc (#/s) nrequests (#/s) nshards curregs curslabs ... pgs
            regs, slabs, pages = int(head[10]), int(head[11]), int(head[14])
            classes.append(f"{head[0]}: {regs}/{slabs} ({slabs * pages * 4} KiB)")
    return totals[-1:] + ([" ".join(classes)] if classes else [])


async def run(args: argparse.Namespace, settings: dict[str, str]) -> dict[str, Any]:
    redis = start_redis()
    metrics_port = free_port()
    env = {**WORKER_SETTINGS, **settings}
    if args.allocator_stats and "MALLOC_CONF" in env:
        env["MALLOC_CONF"] += ",stats_print:true,stats_print_opts:dax"
    if args.trace:
        env.update({"PYTHONTRACEMALLOC": "1", "TRUCO_HEAP_SNAPSHOT_DIR": str(Path(args.trace).resolve())})
    try:
        with tempfile.TemporaryDirectory(prefix="truco-never-read-") as tmp:
            (worker,) = start_workers(
                1,
                redis.url,
                Path(tmp),
                settings=env,
                extra_args=("--metrics-port", str(metrics_port), "--log-level", "info"),
            )
            try:
                async with ClusterBots([worker.address], seed=args.seed) as bots:
                    cpu0 = cpu_seconds(worker.pid)
                    await bots.run(args.matches, args.concurrency)
                    warm_cpu = cpu_seconds(worker.pid) - cpu0
                    before, split_before = worker.rss(), await _figures(worker)
                    done = asyncio.Event()
                    hostile = asyncio.ensure_future(_hostile(worker.address, bots, args, done))
                    played = 0
                    while not hostile.done() or played < args.matches:
                        await bots.run(args.concurrency, args.concurrency)
                        played += args.concurrency
                    done.set()
                    calls = await hostile
                    opened = len(calls) - 1
                    peak, split_peak = worker.rss(), await _figures(worker)
                    held = await asyncio.to_thread(_subscribers, metrics_port)
                    releases = _releases(worker)  # the cancels below make it release, maybe at once
                    for call in calls[:-1]:
                        call.cancel()
                    for ch in calls[-1]:
                        await ch.close()
                    drained = await _wait_subscribers_gone(metrics_port)
                    await bots.run(args.matches, args.concurrency)
                    released = env.get("TRUCO_MEMORY_TRIM_AFTER_STREAMS") == "0" or await _released_since(
                        worker, releases
                    )
                    after, split_after = worker.rss(), await _figures(worker)
            finally:
                worker.stop()
                exit_stats = _jemalloc_exit_stats(worker.log_path.read_text(errors="replace"))
    finally:
        redis.stop()
    if args.trace:
        _compare_snapshots(Path(env["TRUCO_HEAP_SNAPSHOT_DIR"]), worker.pid)
    return {
        "before": before,
        "peak": peak,
        "after": after,
        "split": (split_before, split_peak, split_after),
        "streams": opened,
        "held": held,
        "played": played,
        "drained_s": drained,
        "released": released,
        "cpu_per_match": warm_cpu / args.matches,
        "exit_stats": exit_stats,
    }


def _report(name: str, r: dict[str, Any]) -> None:
    mb = 1024 * 1024
    print(f"[{name}] streams opened and never read: {r['streams']:.0f} over {r['played']:.0f} matches, "
          f"{r['held']:.0f} open at the peak; "
          f"streams gone {r['drained_s']:.1f} s after the cancels; "
          f"worker CPU per match of the warm-up {r['cpu_per_match'] * 1000:.1f} ms")  # fmt: skip
    ratio = r["after"] / r["before"]
    print(f"[{name}] worker RSS before {r['before'] / mb:.1f} MB, with them open {r['peak'] / mb:.1f} MB, "
          f"after they closed {r['after'] / mb:.1f} MB: after / before {ratio:.3f}"
          + ("" if r["released"] else " (no release of memory logged after the streams closed)"))  # fmt: skip
    for kind in r["split"][0]:
        b, p, a = (x[kind] for x in r["split"])
        print(f"[{name}]   {kind:<20} {b:10.1f} {p:10.1f} {a:10.1f} ({a - b:+.1f})")
    for line in r["exit_stats"]:
        print(f"[{name}] jemalloc at exit: {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=10_000, help="streams opened and never read")
    parser.add_argument("--matches", type=int, default=300, help="matches played before and after")
    parser.add_argument("--concurrency", type=int, default=16, help="matches at once")
    parser.add_argument("--channels", type=int, default=20, help="connections the streams are spread over")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--idle", type=int, default=0, help="open the streams on this many unplayed matches")
    parser.add_argument(
        "--trace", metavar="DIR", help="trace allocations; heap snapshots before and after in DIR"
    )
    parser.add_argument(
        "--allocator-stats",
        action="store_true",
        help="jemalloc workers print their statistics at exit: totals, blocks and slabs per size class",
    )
    parser.add_argument(
        "--variants",
        default="none,release,image",
        help=f"worker settings side by side, of {','.join(VARIANTS)}",
    )
    args = parser.parse_args(argv)
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    for name in args.variants.split(","):
        _report(name, asyncio.run(run(args, VARIANTS[name])))
    took = time.monotonic() - t0
    print(f"load {load0:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {took:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
