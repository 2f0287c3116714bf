"""Head-to-head evaluation of bots on the local engine, with Wilson 95% intervals.

    python -m truco_bots.eval --pair rules:random --pair mcts:rules \\
        --preset paulista --preset argentine --matches 1000 --jobs 2
    truco bots eval ...   (same flags)

Matches come in duplicate pairs (same deals, seats swapped). Progress goes to stderr; the
final Markdown table to stdout (and to ``--out`` when given, as JSON lines too).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any


def wilson(wins: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class PairResult:
    a: str
    b: str
    preset: str
    matches: int
    wins_a: int
    wins_b: int
    hands: int
    seconds: float
    illegal: int

    def row(self) -> str:
        lo, hi = wilson(self.wins_a, self.matches)
        rate = self.wins_a / self.matches if self.matches else 0.0
        return (
            f"| {self.a} vs {self.b} | {self.preset} | {self.matches} | {self.wins_a}–{self.wins_b} | "
            f"{rate:.1%} | [{lo:.1%}, {hi:.1%}] | {self.hands} | {self.seconds:.0f} s |"
        )


HEADER = (
    "| pair (A vs B) | preset | matches | A–B wins | A win rate | 95% CI (Wilson) | hands | time (CPU) |\n"
    "|---|---|---|---|---|---|---|---|"
)


def _chunk(
    a: str, b: str, preset: str, first: int, n: int, seed: int, bot_args: dict[str, dict[str, Any]]
) -> tuple[int, int, int, int, int, float]:
    from truco_bots import load_bot
    from truco_kit.local import run_local

    def factory(name: str) -> Any:
        cls = load_bot(name)
        kwargs = bot_args.get(name, {})

        class Configured(cls):  # type: ignore[valid-type,misc]
            def __init__(self, seed: int | None = None) -> None:
                super().__init__(seed=seed, **kwargs)

        Configured.name = name
        return Configured

    res = run_local([factory(a), factory(b)], preset, n, seed=seed, first_match=first, strict=False)
    return res.matches, res.wins[0], res.wins[1], res.hands, res.illegal, res.seconds


def evaluate(
    a: str,
    b: str,
    preset: str,
    matches: int,
    *,
    jobs: int = 1,
    seed: int = 1,
    chunk: int = 20,
    bot_args: dict[str, dict[str, Any]] | None = None,
    progress: bool = True,
) -> PairResult:
    """Play ``matches`` between bots ``a`` and ``b`` (built-in names or ``MODULE:Class``) on
    ``preset``."""
    chunk += chunk % 2  # keep duplicate pairs in one chunk
    out = PairResult(a, b, preset, 0, 0, 0, 0, 0.0, 0)
    start = time.perf_counter()
    tasks = [(first, min(chunk, matches - first)) for first in range(0, matches, chunk)]
    args = bot_args or {}

    def add(r: tuple[int, int, int, int, int, float]) -> None:
        out.matches += r[0]
        out.wins_a += r[1]
        out.wins_b += r[2]
        out.hands += r[3]
        out.illegal += r[4]
        out.seconds += r[5]
        if progress:
            lo, hi = wilson(out.wins_a, out.matches)
            print(
                f"[{time.perf_counter() - start:7.1f}s] {a} vs {b} on {preset}: {out.matches}/{matches} "
                f"matches, {a} won {out.wins_a} ({out.wins_a / out.matches:.1%}, 95% CI {lo:.1%}–{hi:.1%})",
                file=sys.stderr,
                flush=True,
            )

    if jobs <= 1:
        for first, n in tasks:
            add(_chunk(a, b, preset, first, n, seed, args))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_chunk, a, b, preset, first, n, seed, args) for first, n in tasks]
            for f in as_completed(futures):
                add(f.result())
    return out


def parse_bot_args(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``mcts.iterations=200`` -> {"mcts": {"iterations": 200}} (``mybot:MyBot.depth=3`` for a
    bot of your own)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, _, value = item.partition("=")
        bot, _, param = key.rpartition(".")
        if not bot or not param or "=" not in item:
            raise ValueError(f"--bot-arg wants BOT.PARAM=VALUE, got {item!r}")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(bot, {})[param] = parsed
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pair",
        action="append",
        required=True,
        help="A:B, each a built-in bot or MODULE:Class, e.g. rules:random, mybot:MyBot:rules (repeatable)",
    )
    p.add_argument("--preset", action="append", required=True, help="preset, e.g. paulista (repeatable)")
    p.add_argument("--matches", type=int, default=1000, help="matches per pair and preset (default 1000)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--seed", type=int, default=1, help="seed of the deals and bots (default 1)")
    p.add_argument("--chunk", type=int, default=20, help="matches per work unit (default 20)")
    p.add_argument("--bot-arg", action="append", default=[], help="BOT.PARAM=VALUE, e.g. mcts.iterations=200")
    p.add_argument("--out", help="append JSON lines of the results to this file")


def run(args: argparse.Namespace) -> int:
    """Evaluate every pair on every preset. A bad pair, bot, preset or ``--bot-arg`` raises
    :class:`ValueError` (one line) before any match is played."""
    import truco_engine as te
    from truco_bots import load_bot, split_pair

    bot_args = parse_bot_args(args.bot_arg)
    pairs = [split_pair(pair) for pair in args.pair]
    for a, b in pairs:
        load_bot(a)
        load_bot(b)
    for preset in args.preset:
        te.get_rules(preset)
    results = []
    for a, b in pairs:
        for preset in args.preset:
            r = evaluate(
                a,
                b,
                preset,
                args.matches,
                jobs=args.jobs,
                seed=args.seed,
                chunk=args.chunk,
                bot_args=bot_args,
            )
            results.append(r)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as f:
                    lo, hi = wilson(r.wins_a, r.matches)
                    f.write(
                        json.dumps({**r.__dict__, "ci95": [lo, hi], "bot_args": bot_args, "seed": args.seed})
                        + "\n"
                    )
    print(HEADER)
    for r in results:
        print(r.row())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m truco_bots.eval", description=__doc__.split("\n")[0])
    add_arguments(p)
    try:
        return run(p.parse_args(argv))
    except ValueError as exc:
        print(f"{p.prog}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
