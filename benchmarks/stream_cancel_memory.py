"""What a client that cancels its streams costs a worker's memory: two workers side by side.

    python benchmarks/stream_cancel_memory.py                    # 500 .. 3,500 matches
    python benchmarks/stream_cancel_memory.py --stages 1000,3000,5000 --concurrency 8

Starts two independent sets of one ``redis-server`` and one ``truco serve`` worker on free
loopback ports, and plays the same random matches through both at the same time
(``truco_tools.cluster_load.ClusterBots``, same seed): on one set the bots *cancel* each
observation stream as soon as it shows the match is over, as a careless client does; on the
other they read it on until the server ends it, as the SDK does (docs/api.md,
"StreamObservations"). It prints each worker's RSS at each stage and its growth per match from
the first stage to the last.

grpcio's asyncio server (1.85 measured) does not free the batch of operations it had started
on a stream when the client cancels the call while the server completes it (grpc/grpc#43360),
so the cancelling set's worker grows with the matches played and the other stays flat
(docs/operations.md, "Memory"). When a grpcio release fixes that, the two lines meet. Every
process is stopped by its pid at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from truco_tools.campaign.chaos import WORKER_SETTINGS
from truco_tools.cluster_load import ClusterBots, WorkerProcess, start_workers
from truco_tools.redis_proc import RedisProcess, start_redis

SETS = {"cancelling bots": True, "bots that read to the end": False}


async def _drive(name: str, worker: WorkerProcess, cancel: bool, args: argparse.Namespace,
                 stages: list[int], rss: dict[str, list[float]], start: float) -> None:  # fmt: skip
    async with ClusterBots([worker.address], seed=args.seed, cancel_at_end=cancel) as bots:
        gate = asyncio.Semaphore(args.concurrency)
        played = 0

        async def one(i: int) -> None:
            async with gate:
                await bots.play_match(i)

        for stage in stages:
            await asyncio.gather(*(one(i) for i in range(played, stage)))
            played = stage
            rss[name].append(worker.rss() / 2**20)
            print(f"{time.monotonic() - start:6.0f} s  {name}: {stage} matches, worker RSS "
                  f"{rss[name][-1]:.1f} MB", flush=True)  # fmt: skip


async def run(args: argparse.Namespace, folder: Path) -> None:
    stages = sorted({int(s) for s in args.stages.split(",")})
    sets: list[tuple[str, RedisProcess, WorkerProcess]] = []
    rss: dict[str, list[float]] = {name: [] for name in SETS}
    try:
        for n, name in enumerate(SETS):
            rp = start_redis()
            sets.append(
                (name, rp, start_workers(1, rp.url, folder / f"logs-{n}", settings=WORKER_SETTINGS)[0])
            )
        start = time.monotonic()
        await asyncio.gather(*(_drive(name, w, SETS[name], args, stages, rss, start) for name, _, w in sets))
    finally:
        for _, rp, w in sets:
            w.stop()
            rp.stop()
    at = ", ".join(map(str, stages))
    print(f"\nworker RSS (MB) at {at} matches; growth from the first stage to the last:")
    for name, values in rss.items():
        per_match = (values[-1] - values[0]) * 1024 / (stages[-1] - stages[0]) if len(values) > 1 else 0.0
        print(f"  {name:26s} {', '.join(f'{v:.1f}' for v in values)}   {per_match:+.3f} KB per match")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", default="500,1500,2500,3500", help="matches played at each reading")
    parser.add_argument("--concurrency", type=int, default=8, help="matches at once, per set")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="truco-cancel-") as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
