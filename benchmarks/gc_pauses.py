"""The garbage collector's pauses in a worker under paced load, with and without its tuning.

    python benchmarks/gc_pauses.py                       # 2 alternations, 20 s each
    python benchmarks/gc_pauses.py --pairs 3 --seconds 30 --think-ms 1000

Runs ``truco bench service`` with paced bots (``--think-ms``, unary gRPC only), alternately
with ``TRUCO_GC_TUNING=1`` and ``=0`` (``diagnostics.tune_gc``), with ``benchmarks/gc_probe``
on ``PYTHONPATH`` so that the worker times every collection. Prints, per run, the bench's
SubmitAction and delivery p99 and the worker's full collections (generation 2) after its
start-up (its first 3 s; the bench's 3 s warm-up begins once it serves): how many, their
longest pause, and the pauses of the middle generation.
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

ROOT = Path(__file__).resolve().parent.parent
STARTUP = 3.0


def _run(tuning: bool, args: argparse.Namespace, folder: Path, n: int) -> str:
    out = folder / f"probe-{n}"
    env = dict(os.environ, TRUCO_GC_TUNING="1" if tuning else "0", GC_PROBE_OUT=str(out))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "benchmarks" / "gc_probe"), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "truco_cli.main", "bench", "service", "--quiet", "--no-rest",
               "--no-connection", "--no-workers", "--no-paced", "--think-ms", str(args.think_ms),
               "--seconds", str(args.seconds), "--matches", str(args.matches), "--warmup", "3"]  # fmt: skip
    bench = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=True).stdout
    figures = dict(re.findall(r"^(SubmitAction p99|delivery p99) \(ms\): ([\d.]+)", bench, re.M))
    worker = None
    for path in folder.glob(f"probe-{n}.*"):
        record = json.loads(path.read_text(encoding="utf-8"))
        if "serve" in record["argv"]:
            worker = record
    if worker is None:
        return f"no probe file from the worker; bench said:\n{bench}"
    # after the worker's first 3 s: its start-up (imports, and tune_gc's own collection) is
    # over by then, and the bench's 3 s warm-up starts only once it serves
    later = [(g, at, p) for g, at, p in worker["collections"] if at > STARTUP]
    full = [p for g, _, p in later if g == 2]
    middle = sorted(p for g, _, p in later if g == 1)
    return (
        f"SubmitAction p99 {figures.get('SubmitAction p99', '?')} ms, delivery p99 "
        f"{figures.get('delivery p99', '?')} ms; worker: {len(full)} full collections"
        + (f" (longest {1000 * max(full):.0f} ms)" if full else "")
        + f", {len(middle)} of the middle generation (median {1000 * middle[len(middle) // 2]:.1f} ms, "
        f"longest {1000 * middle[-1]:.1f} ms); {worker['frozen']} objects frozen, "
        f"{worker['objects']} tracked at exit"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=2, help="alternations (default 2)")
    parser.add_argument("--seconds", type=int, default=20, help="measured seconds per run (default 20)")
    parser.add_argument("--think-ms", type=int, default=1500, help="bots' mean pause (default 1500)")
    parser.add_argument("--matches", type=int, default=200, help="concurrent matches (default 200)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="truco-gc-") as tmp:
        n = 0
        for pair in range(args.pairs):
            for tuning in (True, False):
                n += 1
                line = _run(tuning, args, Path(tmp), n)
                print(f"pair {pair + 1}, TRUCO_GC_TUNING={int(tuning)}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
