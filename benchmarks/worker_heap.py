"""What a worker's memory holds as matches go by: heap snapshots of workers under load.

    python benchmarks/worker_heap.py           # 3 workers; snapshots at 300, 1300, 2300 matches
    python benchmarks/worker_heap.py --workers 1 --stages 200,1200 --top 15

Starts a ``redis-server`` and ``--workers`` ``truco serve`` processes with allocation tracing
(``PYTHONTRACEMALLOC=1``, docs/operations.md, "Memory") on free loopback ports, and plays
random matches through them (``truco_tools.cluster_load.ClusterBots``: each seat streams
from one random worker and acts through another, as behind a load balancer), ``--concurrency``
at a time. When the matches played reach each of ``--stages``, every worker writes a heap
snapshot (SIGUSR1). Then it prints, per worker: the traced Python heap and the RSS at each
stage, the lines whose allocations grew most between the first and the last stage, and the
object types whose counts changed most.

Tracing makes the workers several times slower and adds its own memory to their RSS, so
read the RSS here only against itself; the traced heap is the figure. Under a steady load a
worker's heap should not grow with the matches played: everything it keeps per match is
bounded by count and forgotten when unused (docs/architecture.md, "The caches, and why
they stay correct"). Every process is stopped by its pid at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import tempfile
import time
import tracemalloc
from pathlib import Path

from truco_server.core.diagnostics import read_object_counts
from truco_tools.campaign.chaos import WORKER_SETTINGS
from truco_tools.cluster_load import ClusterBots, WorkerProcess, start_workers
from truco_tools.redis_proc import start_redis


async def _snapshot(workers: list[WorkerProcess], folder: Path, n: int, timeout: float = 120.0) -> None:
    """SIGUSR1 to each worker; wait until each has written its ``n``-th snapshot."""
    for w in workers:
        os.kill(w.pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    for w in workers:
        types = folder / f"heap-{w.pid}-{n}.types.txt"
        while not types.exists():
            if time.monotonic() > deadline or not w.running():
                raise RuntimeError(f"worker {w.index} wrote no snapshot {n}")
            await asyncio.sleep(0.2)


async def run(args: argparse.Namespace, folder: Path) -> None:
    stages = sorted({int(s) for s in args.stages.split(",")})
    rp = start_redis()
    workers: list[WorkerProcess] = []
    rss: dict[int, list[float]] = {}
    try:
        settings = {**WORKER_SETTINGS, "PYTHONTRACEMALLOC": "1", "TRUCO_HEAP_SNAPSHOT_DIR": str(folder)}
        # tracing slows the start-up several times
        workers = start_workers(args.workers, rp.url, folder / "logs", settings=settings, ready_timeout=180)
        async with ClusterBots([w.address for w in workers], seed=args.seed) as bots:
            played = 0
            gate = asyncio.Semaphore(args.concurrency)

            async def one(i: int) -> None:
                async with gate:
                    await bots.play_match(i)

            for n, stage in enumerate(stages, 1):
                t0 = time.monotonic()
                await asyncio.gather(*(one(i) for i in range(played, stage)))
                played = stage
                await _snapshot(workers, folder, n)
                for w in workers:
                    rss.setdefault(w.index, []).append(w.rss() / 2**20)
                print(f"{stage} matches played ({time.monotonic() - t0:.0f} s for this stage); snapshot {n}",
                      flush=True)  # fmt: skip
    finally:
        for w in workers:
            w.stop()
        rp.stop()
    _report(args, workers, folder, stages, rss)


def _report(
    args: argparse.Namespace,
    workers: list[WorkerProcess],
    folder: Path,
    stages: list[int],
    rss: dict[int, list[float]],
) -> None:
    last = len(stages)
    for w in workers:
        snaps = [
            tracemalloc.Snapshot.load(str(folder / f"heap-{w.pid}-{n}.tracemalloc"))
            for n in range(1, last + 1)
        ]
        heap = [sum(s.size for s in snap.statistics("filename")) / 2**20 for snap in snaps]
        print(f"\nworker {w.index} (pid {w.pid}), at {', '.join(map(str, stages))} matches:")
        print(f"  traced heap MB: {', '.join(f'{h:.2f}' for h in heap)}")
        print(f"  RSS MB (tracing included): {', '.join(f'{r:.1f}' for r in rss[w.index])}")
        if last < 2:
            continue
        per_k = (heap[-1] - heap[0]) * 1024 / ((stages[-1] - stages[0]) / 1000)
        print(f"  heap growth from the first stage to the last: {per_k:+.1f} KB per 1,000 matches")
        print("  lines that grew most (size, count):")
        for st in snaps[-1].compare_to(snaps[0], "lineno")[: args.top]:
            print(f"    {st.size_diff / 1024:+9.1f} KB {st.count_diff:+7d}  {st.traceback}")
        a = read_object_counts(folder / f"heap-{w.pid}-1.types.txt")
        b = read_object_counts(folder / f"heap-{w.pid}-{last}.types.txt")
        moved = sorted(set(a) | set(b), key=lambda k: -abs(b[k] - a[k]))[: args.top]
        print("  object counts that moved most: " + ", ".join(f"{k} {a[k]}->{b[k]}" for k in moved))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--stages", default="300,1300,2300", help="matches played at each snapshot")
    parser.add_argument("--concurrency", type=int, default=16, help="matches at once")
    parser.add_argument("--top", type=int, default=10, help="lines and types shown per worker")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", metavar="DIR", help="write the snapshots here and keep them")
    args = parser.parse_args()
    if args.keep:
        folder = Path(args.keep)
        folder.mkdir(parents=True, exist_ok=True)
        asyncio.run(run(args, folder))
    else:
        with tempfile.TemporaryDirectory(prefix="truco-heap-") as tmp:
            asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
