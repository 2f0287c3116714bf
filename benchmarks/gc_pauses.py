"""The garbage collector's pauses in a worker under paced load, with each tuning.

    python benchmarks/gc_pauses.py                       # 2 rounds, 20 s each run
    python benchmarks/gc_pauses.py --pairs 3 --seconds 30 --think-ms 1000
    python benchmarks/gc_pauses.py --configs 300,3,1000 700,10,1000   # thresholds side by side

Runs ``truco bench service`` with paced bots (``--think-ms``, unary gRPC only) once per
configuration in turn, ``--pairs`` rounds: a configuration is ``TRUCO_GC_THRESHOLDS`` for a
tuned worker (``diagnostics.tune_gc``), or ``off`` (``TRUCO_GC_TUNING=0``, Python's
defaults); by default this build's thresholds, the build before's (``700,10,1000``) and off.
``benchmarks/gc_probe`` is on ``PYTHONPATH`` so that the worker times every collection.
Prints, per run, the bench's SubmitAction and delivery p99 and the worker's CPU per action,
and its collections after its start-up (its first 3 s; the bench's 3 s warm-up begins once
it serves): the full ones (generation 2), how many and the longest; the middle and young
ones, how many, median and longest pause.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from truco_server.core.config import Settings

ROOT = Path(__file__).resolve().parent.parent
STARTUP = 3.0


def _run(config: str, args: argparse.Namespace, folder: Path, n: int) -> str:
    out = folder / f"probe-{n}"
    env = dict(os.environ, GC_PROBE_OUT=str(out))
    if config == "off":
        env["TRUCO_GC_TUNING"] = "0"
    else:
        env.update(TRUCO_GC_TUNING="1", TRUCO_GC_THRESHOLDS=config)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "benchmarks" / "gc_probe"), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "truco_cli.main", "bench", "service", "--quiet", "--no-rest",
               "--no-connection", "--no-workers", "--no-paced", "--think-ms", str(args.think_ms),
               "--seconds", str(args.seconds), "--matches", str(args.matches), "--warmup", "3"]  # fmt: skip
    bench = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=True).stdout
    figures = dict(
        re.findall(r"^(SubmitAction p99|delivery p99|worker CPU per action) \(ms\): ([\d.]+)", bench, re.M)
    )
    worker = worker_record(folder, f"probe-{n}")
    if worker is None:
        return f"no probe file from the worker; bench said:\n{bench}"
    return (
        f"SubmitAction p99 {figures.get('SubmitAction p99', '?')} ms, delivery p99 "
        f"{figures.get('delivery p99', '?')} ms, worker CPU {figures.get('worker CPU per action', '?')} "
        f"ms per action; collections: {collections_line(worker)}"
    )


def worker_record(folder: Path, prefix: str) -> dict[str, Any] | None:
    """The probe's record of the worker (``truco serve``) among the files ``prefix.<pid>``
    in ``folder``, or None."""
    for path in folder.glob(f"{prefix}.*"):
        record = json.loads(path.read_text(encoding="utf-8"))
        if "serve" in record["argv"]:
            return record  # type: ignore[no-any-return]
    return None


def collections_line(worker: dict[str, Any]) -> str:
    """A worker's collections after its start-up (its first 3 s: imports, and tune_gc's own
    collection): the full ones, how many and the longest, the middle and young ones, how many,
    median and longest pause; then the objects frozen and tracked at exit, and what each
    generation's collections found unreachable (cyclic garbage) over its whole life."""
    later = [(g, at, p) for g, at, p in worker["collections"] if at > STARTUP]
    full = [p for g, _, p in later if g == 2]

    def pauses(generation: int, name: str) -> str:
        found = sorted(p for g, _, p in later if g == generation)
        if not found:
            return f"no {name} collections"
        return (f"{len(found)} {name} (median {1000 * found[len(found) // 2]:.1f} ms, "
                f"longest {1000 * found[-1]:.1f} ms)")  # fmt: skip

    return (
        f"{len(full)} full"
        + (f" (longest {1000 * max(full):.0f} ms)" if full else "")
        + f", {pauses(1, 'middle')}, {pauses(0, 'young')}; {worker['frozen']} objects frozen, "
        f"{worker['objects']} tracked at exit; found unreachable over the worker's life (cyclic "
        f"garbage), young / middle / full: {' / '.join(str(g['collected']) for g in worker['stats'])}"
    )


def callbacks_line(worker: dict[str, Any], opened: float, closed: float) -> str:
    """The worker's event-loop callbacks of 1 ms or more that began in the window from
    ``opened`` to ``closed`` (seconds since the epoch): how many took 1, 2, 5 and 10 ms or
    more, and the three longest with what ran."""
    began = worker.get("began")
    if began is None:
        return "no record of the event loop's callbacks (a probe from before they were timed)"
    inside = sorted(
        ((took, what) for at, took, what in worker["callbacks"] if opened <= began + at <= closed),
        reverse=True,
    )
    counts = ", ".join(f"{sum(1 for t, _ in inside if t * 1000 >= b)} of {b} ms" for b in (1, 2, 5, 10))
    longest = "; ".join(f"{1000 * t:.1f} ms {what}" for t, what in inside[:3]) or "-"
    return f"callbacks of the worker's event loop over the window: {counts} or more; longest: {longest}"


def collector_share_line(worker: dict[str, Any], opened: float, closed: float, cpu: float, moves: int) -> str:
    """The worker's collections that began in the window from ``opened`` to ``closed`` (seconds
    since the epoch): how many of each generation, their pauses together, and that as a share
    of the worker's CPU over the window (``cpu`` seconds, ``moves`` moves) and per move."""
    began = worker.get("began")
    if began is None:
        return "no record of when the worker's probe began"
    inside = [(g, p) for g, at, p in worker["collections"] if opened <= began + at <= closed]
    counts = " / ".join(str(sum(1 for g, _ in inside if g == gen)) for gen in (0, 1, 2))
    total = sum(p for _, p in inside)
    return (
        f"collections over the window (young / middle / full): {counts}, {1000 * total:.0f} ms in all"
        f" = {100 * total / max(cpu, 1e-9):.1f} % of the worker's CPU"
        f" ({1e6 * total / max(moves, 1):.0f} us a move)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=2, help="rounds of every configuration (default 2)")
    parser.add_argument(
        "--configs",
        nargs="+",
        default=[Settings().gc_thresholds, "700,10,1000", "off"],
        help="TRUCO_GC_THRESHOLDS values, or off (default: this build's, 700,10,1000, off)",
    )
    parser.add_argument("--seconds", type=int, default=20, help="measured seconds per run (default 20)")
    parser.add_argument("--think-ms", type=int, default=1500, help="bots' mean pause (default 1500)")
    parser.add_argument("--matches", type=int, default=200, help="concurrent matches (default 200)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="truco-gc-") as tmp:
        n = 0
        for pair in range(args.pairs):
            for config in args.configs:
                n += 1
                line = _run(config, args, Path(tmp), n)
                print(f"round {pair + 1}, {config}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
