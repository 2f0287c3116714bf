"""What latency a single worker's queue alone gives: moves arriving at random (Poisson) at a
worker that serves them one at a time, each taking ``--service-ms`` of its CPU, simulated at
each ``--busy`` fraction of a core. Prints the p50 and p99 of the time from a move's arrival
to the end of its service, for a fixed service time (M/D/1) and for an exponential one
(M/M/1), which bracket a real worker's.

It is the yardstick of the half-load latency goal (docs/benchmarks.md, "p99 ... at half the
saturating load"): ``run.py --latency`` measures the worker's busy fraction and CPU per move
at half load; this says what p99 a queue with those two figures has before any other cost.

    python benchmarks/queue_model.py                         # 1.1 ms a move, 50-85 % busy
    python benchmarks/queue_model.py --service-ms 0.8 --busy 0.6 0.7 0.79
"""

from __future__ import annotations

import argparse
import random


def simulate(busy: float, service_ms: float, moves: int, seed: int, exponential: bool) -> tuple[float, float]:
    """p50 and p99 (ms) of arrival-to-done over ``moves`` simulated moves."""
    rng = random.Random(seed)
    rate = busy / service_ms  # arrivals per ms
    now = free = 0.0
    waits = []
    for _ in range(moves):
        now += rng.expovariate(rate)
        work = rng.expovariate(1 / service_ms) if exponential else service_ms
        free = max(now, free) + work
        waits.append(free - now)
    waits.sort()
    return waits[len(waits) // 2], waits[int(len(waits) * 0.99)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--service-ms", type=float, default=1.1, help="CPU per move, ms (default 1.1)")
    parser.add_argument(
        "--busy", type=float, nargs="+", default=[0.5, 0.6, 0.7, 0.75, 0.79, 0.85], help="fractions of a core"
    )
    parser.add_argument("--moves", type=int, default=400_000, help="simulated moves per figure")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"{'busy':>5s} {'fixed service p50/p99 (ms)':>27s} {'exponential p50/p99 (ms)':>25s}")
    for busy in args.busy:
        if not 0 < busy < 1:
            parser.error(f"--busy {busy}: a fraction between 0 and 1")
        d50, d99 = simulate(busy, args.service_ms, args.moves, args.seed, exponential=False)
        m50, m99 = simulate(busy, args.service_ms, args.moves, args.seed, exponential=True)
        print(f"{busy:5.2f} {d50:16.1f} / {d99:5.1f} {m50:16.1f} / {m99:5.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
