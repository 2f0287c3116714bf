"""What an idle worker costs: its CPU and the Redis commands it sends when no match is played.

    python benchmarks/idle_worker.py                       # this checkout, 20 s
    python benchmarks/idle_worker.py --against ../other    # and another checkout, side by side

A worker with nothing to do still reads its queues (turn clocks, operator-event relays,
webhook deliveries: each every 0.25 s) and keeps its stream reader blocked on Redis. This
starts one ``redis-server`` and one ``truco serve`` per checkout on free loopback ports (the
other checkout's source folders first on ``PYTHONPATH``, as ``benchmarks/service_path.py``
does), lets them settle, then measures over the same ``--seconds`` window: each worker's CPU
(``/proc/<pid>/stat``, user + system) and the commands its Redis ran (``INFO
commandstats``), per second. Every process is stopped by its pid at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from truco_tools.bench_processes import commandstats, cpu_seconds
from truco_tools.cluster_load import WorkerProcess
from truco_tools.redis_proc import free_port, start_redis

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("contract", "server", "clients", "tools", "cli", ".")


@dataclass
class Subject:
    label: str
    worker: WorkerProcess
    redis_url: str

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.worker.pid)

    def commands(self) -> dict[str, int]:
        with redis.Redis.from_url(self.redis_url) as r:
            return commandstats(r)


@contextmanager
def _subject(label: str, root: Path, folder: Path, index: int) -> Iterator[Subject]:
    rp = start_redis(host="127.0.0.1")
    try:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(str(root / p) for p in FOLDERS if (root / p).is_dir())
        worker = WorkerProcess(
            index, free_port(), env, folder / f"worker-{index}.log", extra_args=("--redis", rp.url)
        )
        worker.start()
        try:
            worker.wait_ready()
            yield Subject(label, worker, rp.url)
        finally:
            worker.stop()
    finally:
        rp.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="measured window (default 20)")
    parser.add_argument("--settle", type=float, default=3.0, help="wait after start-up (default 3)")
    parser.add_argument("--against", type=Path, help="another checkout, measured side by side")
    args = parser.parse_args(argv)
    roots = [("this checkout", ROOT)]
    if args.against is not None:
        other = args.against.resolve()
        if not (other / "server" / "truco_server").is_dir():
            parser.error(f"{other} is not a checkout of this repository (no server/truco_server)")
        roots.append((str(other), other))
    with tempfile.TemporaryDirectory(prefix="truco-idle-") as tmp, ExitStack() as stack:
        subjects = [
            stack.enter_context(_subject(label, root, Path(tmp), i)) for i, (label, root) in enumerate(roots)
        ]
        print(f"# {len(subjects)} idle worker(s) started; settling {args.settle:g} s", flush=True)
        time.sleep(args.settle)
        before = [(s.cpu_seconds(), s.commands()) for s in subjects]
        print(f"# measuring {args.seconds:g} s", flush=True)
        time.sleep(args.seconds)
        after = [(s.cpu_seconds(), s.commands()) for s in subjects]
    for s, (cpu0, cmd0), (cpu1, cmd1) in zip(subjects, before, after, strict=True):
        rate = {k: (n - cmd0.get(k, 0)) / args.seconds for k, n in cmd1.items()}
        rate.pop("info", None)  # this script's own probes
        busy = {k: v for k, v in sorted(rate.items(), key=lambda kv: -kv[1]) if v > 0}
        print(f"{s.label}: worker CPU {100 * (cpu1 - cpu0) / args.seconds:.2f} % of a core; "
              f"Redis {sum(busy.values()):.1f} commands/s "
              f"({', '.join(f'{k} {v:.1f}' for k, v in busy.items())})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
