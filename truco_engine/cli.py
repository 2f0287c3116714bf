"""Engine commands of the ``truco`` CLI: ``truco replay`` and ``truco bench engine``.

The full ``truco`` command (with ``serve`` and the clients) lives in ``truco_server.cli``;
it registers these subcommands through :func:`register_subcommands`. ``main`` here runs the
engine commands alone, for an install without the server.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from truco_engine.errors import TrucoError
from truco_engine.record import MatchRecord, canonical_json, replay


def _replay(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.record == "-" else Path(args.record).read_text()
        state = replay(MatchRecord.from_json(text))
    except (OSError, TrucoError) as exc:
        print(f"truco replay: {exc}", file=sys.stderr)
        return 2
    out: dict[str, Any] = {
        "scores": state.scores,
        "games": state.games,
        "winner": state.winner,
        "phase": state.phase,
        "state": state.to_dict(),
    }
    print(json.dumps(out, indent=2, sort_keys=True) if args.pretty else canonical_json(out))
    return 0


def _bench_engine(args: argparse.Namespace) -> int:
    from truco_engine.bench import default_cases, run_cases

    seconds = 1.0 if args.seconds is None else args.seconds
    cases = args.case or default_cases()
    print(f"# random play, {seconds:g} s per case, one core; legal actions + observation each step")
    for result in run_cases(cases, seconds, args.seed):
        print(result.line(), flush=True)
    return 0


BenchHandler = Callable[[argparse.Namespace], int]
BENCH_TARGETS: dict[str, tuple[BenchHandler, Callable[[argparse.ArgumentParser], None] | None]] = {
    "engine": (_bench_engine, None)
}
"""``truco bench TARGET``: handler and extra options per target. Other packages add theirs
with :func:`register_bench_target` before the parser is built (the server adds
``service``)."""


def register_bench_target(
    name: str, handler: BenchHandler, add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
) -> None:
    """Make ``truco bench NAME`` run ``handler``; ``add_arguments`` adds its options."""
    BENCH_TARGETS[name] = (handler, add_arguments)


def _bench(args: argparse.Namespace) -> int:
    return BENCH_TARGETS[args.target][0](args)


def register_subcommands(sub: Any) -> None:
    """Add ``replay`` and ``bench`` to an ``argparse`` subparsers object."""
    p = sub.add_parser("replay", help="replay a match record and print scores and final state as JSON")
    p.add_argument("record", help="path of a record JSON file, or - for standard input")
    p.add_argument("--pretty", action="store_true", help="indent the JSON output")
    p.set_defaults(func=_replay)
    targets = sorted(BENCH_TARGETS)
    b = sub.add_parser("bench", help=f"benchmarks: truco bench {{{','.join(targets)}}}")
    b.add_argument("target", choices=targets, help="what to measure")
    b.add_argument("--seconds", type=float, default=None, help="measured time (engine: per case, default 1)")
    b.add_argument("--case", action="append", help="engine: preset name, e.g. paulista-2p (repeatable)")
    b.add_argument("--seed", type=int, default=0, help="seed of the random players")
    for _, add_arguments in BENCH_TARGETS.values():
        if add_arguments is not None:
            add_arguments(b)
    b.set_defaults(func=_bench)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="truco", description="Truco rules engine commands")
    sub = parser.add_subparsers(dest="command", required=True)
    register_subcommands(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
