"""Random-play benchmark of the engine: ``truco bench engine``, and the same driver run side by
side against another build of the engine.

Each step computes the acting seat's legal actions and observation (what a bot or the
server needs), then applies a random legal action. Randomness lives here, in the driver,
never in the engine. Figures are printed one line per preset and player count.

Against another build (a git revision, checked out in a temporary ``git worktree``)::

    python -m truco_tools.bench_engine --against fb7d88a --case paulista-2p --case argentine-2p

Two worker processes, one per build, run the same driver (this file) in alternating slices
(``--slices``, default 10) so that machine noise hits both alike; it prints hands/s and
actions/s of each build and their ratio. Only the engine (``truco_engine``) differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from truco_engine import (
    apply,
    deal,
    get_rules,
    is_over,
    legal_actions,
    needs_deal,
    new_match,
    observe,
    to_act,
)
from truco_engine.rules import RuleSet


def default_cases() -> list[str]:
    """Every registered preset at every player count it allows (``NAME-Np``)."""
    from truco_engine.errors import InvalidRulesError
    from truco_engine.rules import preset_names

    cases = []
    for name in preset_names():
        for players in range(2, 13):
            try:
                get_rules(f"{name}-{players}p")
            except InvalidRulesError:
                continue
            cases.append(f"{name}-{players}p")
    return cases


@dataclass(frozen=True)
class BenchResult:
    case: str
    hands: int
    actions: int
    seconds: float

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds

    @property
    def actions_per_s(self) -> float:
        return self.actions / self.seconds

    def line(self) -> str:
        return f"{self.case}: {self.hands_per_s:,.0f} hands/s {self.actions_per_s:,.0f} actions/s"


def run_random(rules: RuleSet, *, seconds: float = 1.0, seed: int = 0, case: str = "") -> BenchResult:
    """Play random matches for about ``seconds``; count complete hands and actions."""
    rng = random.Random(seed)
    deck = list(rules.deck_cards)
    hands = acts = 0
    state = new_match(rules)
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        if is_over(state):
            if time.perf_counter() >= deadline:
                break
            state = new_match(rules)
        if needs_deal(state):
            if hands % 16 == 0 and time.perf_counter() >= deadline:
                break
            rng.shuffle(deck)
            state, _ = deal(state, deck)
            hands += 1
            continue
        seat = to_act(state)[0]
        legal = legal_actions(state, seat)
        observe(state, seat)
        state, _ = apply(state, seat, legal[rng.randrange(len(legal))])
        acts += 1
    elapsed = time.perf_counter() - start
    return BenchResult(case or rules.name, hands, acts, elapsed)


def run_cases(cases: Iterable[str], seconds: float, seed: int = 0) -> list[BenchResult]:
    out = []
    for case in cases:
        rules = get_rules(case)
        label = f"{rules.name} {rules.players}p"
        out.append(run_random(rules, seconds=seconds, seed=seed, case=label))
    return out


# ------------------------------------------------------------- against another build
_WORKER = """
import json, sys
sys.path.insert(0, sys.argv[1])  # the build's truco_engine first
sys.path.insert(1, sys.argv[2])  # this checkout's driver
from truco_tools.bench_engine import run_random
from truco_engine import get_rules
for line in sys.stdin:
    case, seconds, seed = json.loads(line)
    try:
        rules = get_rules(case)
    except ValueError:  # a preset or player count this build does not have
        print("null", flush=True)
        continue
    r = run_random(rules, seconds=seconds, seed=seed, case=case)
    print(json.dumps([r.hands, r.actions, r.seconds]), flush=True)
"""


class _Worker:
    """A process running the driver on the engine found under ``root``."""

    def __init__(self, root: Path, tools: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(root), str(tools)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, case: str, seconds: float, seed: int) -> tuple[int, int, float] | None:
        """One slice of ``case``; ``None`` if this build cannot play it."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([case, seconds, seed]) + "\n")
        self.proc.stdin.flush()
        got = json.loads(self.proc.stdout.readline())
        if got is None:
            return None
        hands, actions, took = got
        return int(hands), int(actions), float(took)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def compare_builds(
    against: str, cases: Sequence[str], seconds: float, slices: int, repo: Path, build: Path | None = None
) -> Iterator[tuple[str, BenchResult, BenchResult | None]]:
    """Run ``cases`` on this checkout's engine (or the one under ``build``, e.g. the compiled
    build) and on ``against``'s (a git revision), in alternating slices; yield (case, this
    build, the other build or ``None`` where it cannot play the case) per case."""
    here = Path(__file__).resolve().parents[2]
    tools = here / "tools"
    with tempfile.TemporaryDirectory(prefix="truco-bench-") as tmp:
        other = Path(tmp) / "build"
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "--detach", str(other), against],
            check=True,
            capture_output=True,
        )
        try:
            mine, theirs = _Worker(build or here, tools), _Worker(other, tools)
            try:
                per = seconds / slices
                for case in cases:
                    totals: dict[str, list[float] | None] = {"mine": [0, 0, 0.0], "theirs": [0, 0, 0.0]}
                    for i in range(slices):
                        for name, w in (("mine", mine), ("theirs", theirs)):
                            if totals[name] is None:
                                continue
                            got = w.run(case, per, i)
                            acc = totals[name]
                            if got is None or acc is None:
                                totals[name] = None
                                continue
                            for k in range(3):
                                acc[k] += got[k]
                    m, o = totals["mine"], totals["theirs"]
                    assert m is not None
                    yield (
                        case,
                        BenchResult(case, int(m[0]), int(m[1]), m[2]),
                        None if o is None else BenchResult(case, int(o[0]), int(o[1]), o[2]),
                    )
            finally:
                mine.close()
                theirs.close()
        finally:
            subprocess.run(
                ["git", "-C", str(repo), "worktree", "remove", "--force", str(other)],
                check=False,
                capture_output=True,
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="engine random-play benchmark, optionally against another build")
    ap.add_argument("--case", action="append", help="preset name, e.g. paulista-2p (repeatable)")
    ap.add_argument("--seconds", type=float, default=10.0, help="per case and build (default 10)")
    ap.add_argument("--slices", type=int, default=10, help="alternations per case (default 10)")
    ap.add_argument("--against", help="a git revision whose engine runs side by side with this one")
    ap.add_argument("--build", type=Path, help="run this directory's truco_engine instead of the checkout's")
    args = ap.parse_args(argv)
    cases = args.case or default_cases()
    if not args.against:
        for result in run_cases(cases, args.seconds):
            print(result.line())
        return 0
    repo = Path(os.environ.get("TRUCO_REPO", Path(__file__).resolve().parents[2]))
    this = "this build" if args.build is None else str(args.build)
    print(f"# {this} vs {args.against}: {args.seconds:g} s per case and build, {args.slices} slices")
    runs = compare_builds(args.against, cases, args.seconds, args.slices, repo, args.build)
    for case, mine, theirs in runs:
        if theirs is None:
            print(f"{case}: {mine.line().partition(': ')[2]} | {args.against}: cannot play this case")
            continue
        print(
            f"{case}: {mine.hands_per_s:,.0f} hands/s {mine.actions_per_s:,.0f} actions/s | "
            f"{args.against}: {theirs.hands_per_s:,.0f} hands/s {theirs.actions_per_s:,.0f} actions/s | "
            f"ratio {mine.hands_per_s / max(theirs.hands_per_s, 1e-9):.2f}x hands/s "
            f"{mine.actions_per_s / max(theirs.actions_per_s, 1e-9):.2f}x actions/s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
