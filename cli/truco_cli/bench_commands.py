"""``truco bench engine`` (the rules engine alone) and ``truco bench service`` (a worker under
load on loopback; needs the server install)."""

from __future__ import annotations

import argparse
import sys

from truco_cli import optional
from truco_tools.bench_engine import default_cases, run_cases

TARGETS = ("engine", "service")


def _bench_engine(args: argparse.Namespace) -> int:
    seconds = 1.0 if args.seconds is None else args.seconds
    cases = args.case or default_cases()
    print(f"# random play, {seconds:g} s per case, one core; legal actions + observation each step")
    for result in run_cases(cases, seconds, args.seed):
        print(result.line(), flush=True)
    return 0


def _bench(args: argparse.Namespace) -> int:
    if args.target == "engine":
        return _bench_engine(args)
    if optional.bench_service is None:
        print(f"truco bench service: {optional.SERVER_MISSING}; {optional.SERVER_HINT}", file=sys.stderr)
        return 2
    code: int = optional.bench_service.bench_command(args)
    return code


def register(sub: argparse._SubParsersAction, whole: bool = True) -> None:  # type: ignore[type-arg]
    """``truco bench``; without ``whole``, the service benchmark's own arguments are left out
    (they import the server's tools: the command run is another one)."""
    b = sub.add_parser("bench", help="benchmarks: truco bench {engine,service}")
    b.add_argument("target", choices=TARGETS, help="what to measure")
    b.add_argument("--seconds", type=float, default=None, help="measured time (engine: per case, default 1)")
    b.add_argument("--case", action="append", help="engine: preset name, e.g. paulista-2p (repeatable)")
    b.add_argument("--seed", type=int, default=0, help="seed of the random players")
    if whole and optional.bench_service is not None:
        optional.bench_service.add_arguments(b)
    b.set_defaults(func=_bench)
