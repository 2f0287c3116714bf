"""CPU and Redis round trips per commit of the Redis store, with N concurrent committers.

Each committer is a task that commits to its own match one action after another (a state
of about 500 bytes, two events, a request id, a reply, a record step: the size of a
paulista action), so N committers keep N commits in flight, as a worker serving N busy
matches does. Against a real ``redis-server`` on a free loopback port, it prints for each
N the worker's CPU time per commit (this process: the store's own work, redis-py's,
asyncio's), the Redis server's CPU per commit (``INFO cpu``), and the round trips per
commit the store counted (``stats.round_trips``).

    python benchmarks/store_commit.py                          # N = 1, 8, 64
    python benchmarks/store_commit.py --committers 1 16 --commits 20000
    python benchmarks/store_commit.py --against ../main-checkout

``--against DIR`` runs this same script on another checkout's source folders
(``PYTHONPATH``), alternately with this checkout (A B A B ...), and prints both and their
ratio: the store found there may be this adapter (``open_store(url).matches``) or the
``RedisMatchStore`` it replaced (``store.commit(match_id, expected_version=...)``). The
first round of each run is a warm-up and is not counted; medians are printed, and the range
of the worker CPU ratio over the pairs (on a shared machine it moves a lot). The Redis CPU
includes the servers' background work over the run's wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

STATE = bytes(range(256)) * 2
EVENTS = [b"e" * 40, b"f" * 36]
RECORD = b"r" * 60


class Committer:
    """The store of the checkout on ``PYTHONPATH``, whichever API it has: ``create(id)`` and
    ``commit(id, version, n) -> version``."""

    def __init__(self, url: str) -> None:
        from truco_server.stores import open_store

        try:
            from truco_server.ports.settings import StoreSettings
        except ImportError:  # the store before the ports
            from truco_server.stores import StoreSettings  # type: ignore[attr-defined,no-redef]
        self.store: Any = open_store(url, StoreSettings())
        self.api = "ports" if hasattr(self.store, "matches") else "MatchStore"
        self.create: Callable[[str], Awaitable[int]]
        self.commit: Callable[[str, int, int], Awaitable[int]]
        if self.api == "ports":
            self._ports()
        else:
            self._match_store()

    def _ports(self) -> None:
        from truco_server.ports.matches import Commit, MatchIndexEntry, NewMatch

        matches = self.store.matches

        async def create(mid: str) -> int:
            return int(
                await matches.create(NewMatch(MatchIndexEntry(mid, "bench", "playing", 1.0), b"m", STATE))
            )

        async def commit(mid: str, version: int, n: int) -> int:
            c = Commit(mid, version, STATE, EVENTS, request_id=f"r{n}", reply=b"ok" * 10, record=RECORD)
            return int((await matches.commit(c)).version)

        self.create, self.commit = create, commit

    def _match_store(self) -> None:
        from truco_server.stores import MatchIndexEntry  # type: ignore[attr-defined]

        store = self.store

        async def create(mid: str) -> int:
            return int(
                await store.create(mid, b"m", STATE, [], MatchIndexEntry(mid, "bench", "playing", 1.0))
            )

        async def commit(mid: str, version: int, n: int) -> int:
            res = await store.commit(
                mid,
                expected_version=version,
                state=STATE,
                events=EVENTS,
                request_id=f"r{n}",
                reply=b"ok" * 10,
                record=RECORD,
            )
            return int(res.version)

        self.create, self.commit = create, commit


def _server_cpu(servers: list[Any]) -> float:
    """CPU seconds the Redis servers used so far (every primary of a cluster)."""
    total = 0.0
    for client in servers:
        info = client.info("cpu")
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


async def _measure(
    url: str, servers: list[Any], committers: int, commits: int, rounds: int
) -> tuple[str, list[tuple[float, float, float]]]:
    """For each measured round: (worker CPU us, Redis CPU us, round trips) per commit."""
    c = Committer(url)
    try:
        ids = [f"bench-{committers}-{time.monotonic_ns()}-{i}" for i in range(committers)]
        versions = {mid: await c.create(mid) for mid in ids}
        per = max(1, commits // committers)
        counter = iter(range(10**9))

        async def drive(mid: str) -> None:
            for _ in range(per):
                versions[mid] = await c.commit(mid, versions[mid], next(counter))

        results = []
        for round_no in range(rounds + 1):
            cpu0, trips0, server0 = time.process_time(), c.store.stats.round_trips, _server_cpu(servers)
            await asyncio.gather(*(drive(mid) for mid in ids))
            done = per * committers
            cpu = time.process_time() - cpu0
            server = _server_cpu(servers) - server0
            trips = c.store.stats.round_trips - trips0
            if round_no:  # round 0 warms the scripts, caches and the allocator
                results.append((1e6 * cpu / done, 1e6 * server / done, trips / done))
        return c.api, results
    finally:
        await c.store.close()


def _raw(committers: list[int], commits: int, rounds: int, topology: str) -> None:
    """One measurement of this process's checkout: a line per N (for --against)."""
    from truco_tools.redis_cluster import start_cluster
    from truco_tools.redis_proc import start_redis

    topo: Any = (
        start_cluster(replicas_per_primary=0) if topology == "cluster" else start_redis(host="127.0.0.1")
    )
    servers = [n.client() for n in topo.primaries()] if topology == "cluster" else [topo.client()]
    try:
        for n in committers:
            api, results = asyncio.run(_measure(topo.url, servers, n, commits, rounds))
            cols = [statistics.median(r[i] for r in results) for i in range(3)]
            print(n, api, *(f"{v:.3f}" for v in cols), flush=True)
    finally:
        for client in servers:
            client.close()
        topo.stop()


def _run_checkout(root: Path, options: list[str]) -> dict[int, tuple[str, list[float]]]:
    env = dict(os.environ)
    folders = ("contract", "server", "clients", "tools", "cli", ".")
    env["PYTHONPATH"] = os.pathsep.join(str(root / p) for p in folders if (root / p).is_dir())
    command = [sys.executable, str(Path(__file__).resolve()), "--raw", *options]
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=True)
    found = {}
    for line in out.stdout.splitlines():
        n, api, *values = line.split()
        found[int(n)] = (api, [float(v) for v in values])
    return found


def _compare(other: Path, options: list[str], pairs: int, committers: list[int]) -> None:
    labels = {"this checkout": ROOT, str(other): other}
    got: dict[str, dict[int, list[list[float]]]] = {label: {n: [] for n in committers} for label in labels}
    apis: dict[str, str] = {}
    for pair in range(pairs):
        for label, root in labels.items():
            for n, (api, values) in _run_checkout(root, options).items():
                apis[label] = api
                got[label][n].append(values)
            print(f"# pair {pair + 1}/{pairs}, {label} done", flush=True)
    this, that = got["this checkout"], got[str(other)]
    for n in committers:
        a = [statistics.median(v[i] for v in this[n]) for i in range(3)]
        b = [statistics.median(v[i] for v in that[n]) for i in range(3)]
        print(f"N={n}:")
        for label, cols in (("this checkout", a), (str(other), b)):
            print(
                f"  {label} ({apis[label]}): worker CPU {cols[0]:.1f} us/commit,"
                f" Redis CPU {cols[1]:.1f} us/commit, {cols[2]:.3f} round trips/commit"
            )
        lo, *_, hi = sorted(x[0] / y[0] for x, y in zip(this[n], that[n], strict=True)) * 2
        print(
            f"  ratio this/other: worker CPU {a[0] / b[0]:.2f} (pairs {lo:.2f}-{hi:.2f}),"
            f" Redis CPU {a[1] / b[1]:.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--committers", type=int, nargs="+", default=[1, 8, 64], help="N (default 1 8 64)")
    parser.add_argument("--commits", type=int, default=6000, help="commits per round (default 6000)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--against", type=Path, help="another checkout to compare with, alternately")
    parser.add_argument("--pairs", type=int, default=3, help="with --against: alternations (default 3)")
    parser.add_argument(
        "--topology",
        choices=["standalone", "cluster"],
        default="standalone",
        help="one redis-server (default) or a local Redis Cluster of 3 primaries",
    )
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.raw:
        _raw(args.committers, args.commits, args.rounds, args.topology)
        return 0
    options = ["--commits", str(args.commits), "--rounds", str(args.rounds), "--topology", args.topology]
    options += ["--committers"]
    options += [str(n) for n in args.committers]
    if args.against is None:
        for n, (api, (cpu, server, trips)) in _run_checkout(ROOT, options).items():
            print(
                f"N={n} ({api}): worker CPU {cpu:.1f} us/commit, Redis CPU {server:.1f} us/commit,"
                f" {trips:.3f} round trips/commit"
            )
        return 0
    other = args.against.resolve()
    if not (other / "server" / "truco_server").is_dir():
        parser.error(f"{other} is not a checkout of this repository (no server/truco_server)")
    _compare(other, options, args.pairs, args.committers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
