"""The ladder's table: each level against the level below it and against ``rules``, with Wilson
95 % intervals, and the CPU time of one decision per level (median and 99th percentile).

    truco bots ladder --preset paulista-2p --preset argentine --matches 2000
    python -m truco_bots.ladder ...   (same flags)

Level 1's level below is ``random``; level 4 is the ``rules`` bot itself (no row against
``rules``, and level 5's row against level 4 is its row against ``rules``). Matches come in
duplicate pairs (same deals, seats swapped), as in :mod:`truco_bots.eval`.
``--search-matches`` plays fewer matches in the pairs of the searching levels (5 and 6), which
cost far more CPU. Progress goes to stderr; the Markdown table to stdout, its header first and
each row as its pair finishes (and JSON lines to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from truco_bots.eval import wilson

DEFAULT_CPU_MS = 250
"""The CPU budget of one decision (ms): :data:`truco_bots.levels.DEFAULT_CPU_MS` (the bots are
imported only when the ladder runs, not when the command line is built)."""

HEADER = (
    "| level | preset | against | matches | wins–losses | win rate | 95% CI (Wilson) |"
    " CPU per decision: median | p99 |\n|---|---|---|---|---|---|---|---|---|"
)


@dataclass
class Row:
    level: int
    preset: str
    against: str
    matches: int = 0
    wins: int = 0
    losses: int = 0
    cpu: list[float] = field(default_factory=list)
    """CPU seconds of each decision of the level's bot with a choice to make."""

    def line(self) -> str:
        lo, hi = wilson(self.wins, self.matches)
        rate = self.wins / self.matches if self.matches else 0.0
        med, p99 = cpu_figures(self.cpu)
        return (
            f"| {self.level} | {self.preset} | {self.against} | {self.matches} | {self.wins}–{self.losses} | "
            f"{rate:.1%} | [{lo:.1%}, {hi:.1%}] | {med * 1000:.2f} ms | {p99 * 1000:.2f} ms |"
        )


def cpu_figures(samples: Sequence[float]) -> tuple[float, float]:
    """Median and 99th percentile of ``samples`` (0 without any)."""
    if not samples:
        return 0.0, 0.0
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def _opponent(name: str) -> tuple[str, int]:
    """``("level", N)`` for ``levelN``, else the built-in name and 0."""
    return ("level", int(name[5:])) if name.startswith("level") else (name, 0)


def _chunk(
    level: int, against: str, preset: str, first: int, n: int, seed: int, cpu_ms: int
) -> tuple[int, int, int, list[float]]:
    from truco_bots import get_bot
    from truco_bots.levels import LevelBot
    from truco_kit.local import run_local

    timings: list[float] = []

    class Timed(LevelBot):
        name = f"level{level}"

        def __init__(self, seed: int | None = None) -> None:
            super().__init__(seed, level, cpu_ms)

        def choose(self, observation):  # type: ignore[no-untyped-def]
            started = time.process_time()
            action = super().choose(observation)
            if len(observation.legal_actions) > 1:
                timings.append(time.process_time() - started)
            return action

    kind, other_level = _opponent(against)
    if kind == "level":

        class Other(LevelBot):
            name = against

            def __init__(self, seed: int | None = None) -> None:
                super().__init__(seed, other_level, cpu_ms)

        opponent: type = Other
    else:
        opponent = get_bot(against)
    res = run_local([Timed, opponent], preset, n, seed=seed, first_match=first, strict=True)
    return res.matches, res.wins[0], res.wins[1], timings


def play(
    level: int,
    against: str,
    preset: str,
    matches: int,
    *,
    jobs: int = 1,
    seed: int = 1,
    chunk: int = 10,
    cpu_ms: int = DEFAULT_CPU_MS,
    progress: bool = True,
) -> Row:
    """``matches`` of level ``level`` against ``against`` (``levelN`` or a built-in bot)."""
    chunk += chunk % 2  # duplicate pairs stay in one chunk
    row = Row(level, preset, against)
    tasks = [(first, min(chunk, matches - first)) for first in range(0, matches, chunk)]
    started = time.perf_counter()

    def add(r: tuple[int, int, int, list[float]]) -> None:
        row.matches += r[0]
        row.wins += r[1]
        row.losses += r[2]
        row.cpu.extend(r[3])
        if progress:
            lo, hi = wilson(row.wins, row.matches)
            print(
                f"[{time.perf_counter() - started:7.1f}s] level{level} vs {against} on {preset}: "
                f"{row.matches}/{matches}, won {row.wins} ({row.wins / row.matches:.1%}, "
                f"95% CI {lo:.1%}–{hi:.1%})",
                file=sys.stderr,
                flush=True,
            )

    if jobs <= 1:
        for first, n in tasks:
            add(_chunk(level, against, preset, first, n, seed, cpu_ms))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_chunk, level, against, preset, f, n, seed, cpu_ms) for f, n in tasks]
            for future in futures:
                add(future.result())
    return row


def pairs(levels: Sequence[int], against: Sequence[str] = ("below", "rules")) -> list[tuple[int, str]]:
    """Each level against the level below (``below``: ``random`` below level 1) and against
    ``rules`` (level 4 is ``rules``: not for level 4, nor for level 5 when it plays level 4),
    or only the opponents named in ``against``."""
    out: list[tuple[int, str]] = []
    for level in levels:
        if "below" in against:
            out.append((level, f"level{level - 1}" if level > 1 else "random"))
        # Level 4 is the rules bot itself: its row against rules, and level 5's when level 5
        # plays level 4 already, would be the same matches again.
        if "rules" in against and level != 4 and not ("below" in against and level == 5):
            out.append((level, "rules"))
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", action="append", required=True, help="preset, e.g. paulista-2p (repeatable)")
    p.add_argument("--matches", type=int, default=2000, help="matches per pair and preset (default 2000)")
    p.add_argument(
        "--search-matches",
        type=int,
        default=None,
        help="matches per pair and preset of the searching levels 5 and 6 (default: --matches)",
    )
    p.add_argument("--level", type=int, action="append", help="only these levels (repeatable; default: all)")
    p.add_argument(
        "--against",
        action="append",
        choices=("below", "rules"),
        help="only these opponents: the level below, rules (repeatable; default both)",
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--seed", type=int, default=1, help="seed of the deals and bots (default 1)")
    p.add_argument("--cpu-ms", type=int, default=DEFAULT_CPU_MS, help="CPU budget of one decision (ms)")
    p.add_argument("--out", help="append JSON lines of the results to this file")


def run(args: argparse.Namespace) -> int:
    import truco_engine as te
    from truco_bots.levels import LEVELS, SEARCH

    for preset in args.preset:
        te.get_rules(preset)
    levels = args.level or list(LEVELS)
    for level in levels:
        if level not in LEVELS:
            raise ValueError(f"level {level}: the levels are 1 to 6")
    rows = []
    print(HEADER, flush=True)  # then each row as its pair finishes: a long run shows them as it goes
    for level, against in pairs(levels, args.against or ("below", "rules")):
        searching = level in SEARCH or _opponent(against)[1] in SEARCH
        n = args.search_matches if searching and args.search_matches is not None else args.matches
        for preset in args.preset:
            row = play(level, against, preset, n, jobs=args.jobs, seed=args.seed, cpu_ms=args.cpu_ms)
            rows.append(row)
            print(row.line(), flush=True)
            if args.out:
                med, p99 = cpu_figures(row.cpu)
                lo, hi = wilson(row.wins, row.matches)
                record = {
                    "level": level,
                    "preset": preset,
                    "against": against,
                    "matches": row.matches,
                    "wins": row.wins,
                    "losses": row.losses,
                    "ci95": [lo, hi],
                    "cpu_median_s": med,
                    "cpu_p99_s": p99,
                    "decisions": len(row.cpu),
                    "seed": args.seed,
                    "cpu_ms": args.cpu_ms,
                }
                with open(args.out, "a", encoding="utf-8") as f:
                    f.write(json.dumps(record) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m truco_bots.ladder", description=__doc__.split("\n")[0])
    add_arguments(p)
    try:
        return run(p.parse_args(argv))
    except ValueError as exc:
        print(f"{p.prog}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
