"""What streams that are opened and never read leave in a worker once they are closed.

    python benchmarks/never_read_streams.py                     # 10,000 streams
    python benchmarks/never_read_streams.py --streams 3000 --matches 100

Starts a ``redis-server`` and one ``truco serve`` worker on free loopback ports (quotas off:
one client is the whole load). Random bots (``truco_tools.cluster_load.ClusterBots``) play
``--matches`` matches (the warm-up); the worker's RSS then is *before*. The bots play as many
again while a hostile client opens ``--streams`` observation streams of the matches in play,
from version 0, over ``--channels`` connections, and never reads one: the worker has to hold
what it cannot send. RSS at the end of that is *peak*. Every stream is then cancelled; once
the worker's ``truco_stream_subscribers`` gauge is back to 0 the bots play ``--matches``
more (the state *before* was measured in), and RSS is *after*. It prints the three, and
after against before. Every process it starts it stops, by pid.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc

from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import match_service_pb2_grpc
from truco_tools.campaign.chaos import WORKER_SETTINGS
from truco_tools.cluster_load import ClusterBots, start_workers
from truco_tools.redis_proc import free_port, start_redis


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


async def _snapshot(pid: int, folder: Path, n: int) -> None:
    """SIGUSR1: the worker writes its ``n``-th heap snapshot into ``folder``; wait for it."""
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 300
    while not (folder / f"heap-{pid}-{n}.types.txt").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("no heap snapshot")
        await asyncio.sleep(0.2)


async def _hostile(
    address: str, bots: ClusterBots, streams: int, channels: int, done: asyncio.Event
) -> list[Any]:
    """Open ``streams`` streams of the matches in play, never reading them."""
    chans = [grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
             for _ in range(channels)]  # fmt: skip
    stubs = [match_service_pb2_grpc.MatchServiceStub(c) for c in chans]
    calls: list[Any] = []
    while len(calls) < streams and not done.is_set():
        for mid in list(bots.live)[:50]:
            stub = stubs[len(calls) % channels]
            calls.append(stub.StreamObservations(MS.StreamObservationsRequest(match_id=mid, from_version=0)))
            if len(calls) >= streams:
                break
        await asyncio.sleep(0.02)  # pace: about as many new streams a second as the matches allow
    calls.append(chans)
    return calls


async def run(args: argparse.Namespace) -> dict[str, float]:
    redis = start_redis()
    metrics_port = free_port()
    try:
        with tempfile.TemporaryDirectory(prefix="truco-never-read-") as tmp:
            (worker,) = start_workers(
                1,
                redis.url,
                Path(tmp),
                settings=WORKER_SETTINGS,
                extra_args=("--metrics-port", str(metrics_port)),
            )
            try:
                async with ClusterBots([worker.address], seed=args.seed) as bots:
                    await bots.run(args.matches, args.concurrency)
                    before = worker.rss()
                    if args.trace:
                        await _snapshot(worker.pid, Path(args.trace), 1)
                    done = asyncio.Event()
                    hostile = asyncio.ensure_future(
                        _hostile(worker.address, bots, args.streams, args.channels, done)
                    )
                    played = 0
                    while not hostile.done() or played < args.matches:
                        await bots.run(args.concurrency, args.concurrency)
                        played += args.concurrency
                    done.set()
                    calls = await hostile
                    opened = len(calls) - 1
                    peak = worker.rss()
                    for call in calls[:-1]:
                        call.cancel()
                    for ch in calls[-1]:
                        await ch.close()
                    drained = await _wait_subscribers_gone(metrics_port)
                    await bots.run(args.matches, args.concurrency)
                    after = worker.rss()
                    if args.trace:
                        await _snapshot(worker.pid, Path(args.trace), 2)
            finally:
                worker.stop()
    finally:
        redis.stop()
    return {
        "before": before,
        "peak": peak,
        "after": after,
        "streams": opened,
        "played": played,
        "drained_s": drained,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=10_000, help="streams opened and never read")
    parser.add_argument("--matches", type=int, default=300, help="matches played before and after")
    parser.add_argument("--concurrency", type=int, default=16, help="matches at once")
    parser.add_argument("--channels", type=int, default=20, help="connections the streams are spread over")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--trace", metavar="DIR", help="trace allocations; heap snapshots before and after in DIR"
    )
    args = parser.parse_args(argv)
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    r = asyncio.run(run(args))
    mb = 1024 * 1024
    print(f"streams opened and never read: {r['streams']:.0f} over {r['played']:.0f} matches")
    ratio = r["after"] / r["before"]
    print(f"worker RSS before {r['before'] / mb:.1f} MB, with them open {r['peak'] / mb:.1f} MB, "
          f"after they closed {r['after'] / mb:.1f} MB: after / before {ratio:.3f}")  # fmt: skip
    print(f"streams gone {r['drained_s']:.1f} s after the cancels; load {load0:.1f} -> "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {time.monotonic() - t0:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
