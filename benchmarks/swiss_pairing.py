"""Time to pair one Swiss round, and what pairing bracket by bracket costs in quality.

Plays a Swiss of ``--entrants`` entrants for ``--rounds`` rounds with random results
(``random.Random(--seed)``; a tenth of the matches drawn, as duplicate pairings can be).
Each round is paired with every ``--bracket-size`` in turn on the same history (the first
size's pairings are played on) and each pairing is timed (``Swiss.pairings``: history,
ranking, the matchings). Round 1 has one score group and no rematch constraint; later
rounds have many groups and every earlier opponent forbidden, so rounds 2..N are the real
figure. Prints every round, then the median and the max over rounds 2..N for each size.

``--compare N`` (default 200) then replays one history of N entrants twice side by side:
paired in one graph (``bracket_size`` = N, the global optimum of the weights) and with
brackets of the first ``--bracket-size``, and prints the time ratio and the quality of
both: pairs across score groups (floats), the sum of squared group gaps, the
mano-preference cost and the number of entrants given the role they absolutely wanted to
avoid.

    python benchmarks/swiss_pairing.py                        # 1,000 entrants, 9 rounds
    python benchmarks/swiss_pairing.py --bracket-size 32 48 64 --compare 0
    python benchmarks/swiss_pairing.py --entrants 2000 --rounds 11 --bracket-size 32
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from truco_server.leagues import Entrant, Pairing, Result, Swiss  # noqa: E402
from truco_server.leagues.results import build_history  # noqa: E402
from truco_server.leagues.swiss import ABSOLUTE, DEFAULT_BRACKET_SIZE, mano_preference  # noqa: E402


def random_results(tables: tuple[Pairing, ...], rnd: random.Random) -> list[Result]:
    out: list[Result] = []
    for p in tables:
        if p.second is None:
            out.append(p.bye_result())
            continue
        roll = rnd.random()
        low = rnd.randrange(30)
        if roll < 0.1:
            out.append(p.result(None, (low, low)))
        else:
            out.append(
                p.result(p.first if roll < 0.55 else p.second, (30, low) if roll < 0.55 else (low, 30))
            )
    return out


def quality(swiss: Swiss, tables: tuple[Pairing, ...], results: list[Result]) -> dict[str, int]:
    history = build_history(results, (e.id for e in swiss.entrants), swiss.scoring)
    scores = sorted({history.score(e.id) for e in swiss.entrants}, reverse=True)
    group = {e.id: scores.index(history.score(e.id)) for e in swiss.entrants}
    floats = gaps = mano_cost = absolute = 0
    for p in tables:
        if p.second is None:
            continue
        gap = abs(group[p.first] - group[p.second])
        floats += gap > 0
        gaps += gap * gap
        for entrant, first in ((p.first, True), (p.second, False)):
            pref = mano_preference(history, entrant)
            cost = pref.cost(first)
            mano_cost += cost
            absolute += cost == ABSOLUTE
    return {"floats": floats, "gap2": gaps, "mano_cost": mano_cost, "absolute_mano_misses": absolute}


def run(entrants: int, rounds: int, sizes: list[int], seed: int) -> None:
    """Time each round with every bracket size, side by side on one history (generated
    with the first size's pairings)."""
    field = tuple(Entrant(f"p{i}", i) for i in range(1, entrants + 1))
    swisses = [Swiss(field, rounds, bracket_size=b) for b in sizes]
    rnd = random.Random(seed)
    results: list[Result] = []
    times: dict[int, list[float]] = {b: [] for b in sizes}
    print(f"Swiss pairing: {entrants} entrants, {rounds} rounds, bracket sizes {sizes}, seed {seed}")
    for r in range(1, rounds + 1):
        first: tuple[Pairing, ...] = ()
        line = []
        for swiss in swisses:
            t0 = time.perf_counter()
            tables = swiss.pairings(r, results)
            dt = time.perf_counter() - t0
            times[swiss.bracket_size].append(dt)
            q = quality(swiss, tables, results)
            line.append(
                f"[{swiss.bracket_size}] {dt:6.3f} s floats {q['floats']:2d} mano cost {q['mano_cost']:4d}"
                f" absolute misses {q['absolute_mano_misses']}"
            )
            first = first or tables
        print(f"  round {r:2d}: {len(first)} tables  " + "   ".join(line))
        results += random_results(first, rnd)
    for b in sizes:
        later = times[b][1:] or times[b]
        print(
            f"  bracket_size {b}: rounds 2..{rounds}: median {statistics.median(later):.3f} s, "
            f"max {max(later):.3f} s"
        )


def compare(entrants: int, rounds: int, bracket: int, seed: int) -> None:
    """Same history for both: it is generated with the one-graph pairing."""
    field = tuple(Entrant(f"p{i}", i) for i in range(1, entrants + 1))
    whole = Swiss(field, rounds, bracket_size=entrants)
    split = Swiss(field, rounds, bracket_size=bracket)
    rnd = random.Random(seed)
    results: list[Result] = []
    totals = {"whole": 0.0, "split": 0.0}
    qsum: dict[str, dict[str, int]] = {"whole": {}, "split": {}}
    print(f"\nOne graph v brackets of {bracket}: {entrants} entrants, {rounds} rounds, seed {seed}")
    print("  round   one graph (s)  brackets (s)  ratio   floats   gap2   mano cost  absolute misses")
    for r in range(1, rounds + 1):
        timed = {}
        tables = {}
        for name, swiss in (("whole", whole), ("split", split)):
            t0 = time.perf_counter()
            tables[name] = swiss.pairings(r, results)
            timed[name] = time.perf_counter() - t0
            totals[name] += timed[name]
            for k, v in quality(swiss, tables[name], results).items():
                qsum[name][k] = qsum[name].get(k, 0) + v
        qw, qs = quality(whole, tables["whole"], results), quality(split, tables["split"], results)
        ratio = timed["whole"] / timed["split"]
        print(
            f"  {r:5d}   {timed['whole']:12.3f}  {timed['split']:12.3f}  {ratio:5.1f}x"
            f"  {qw['floats']:3d}/{qs['floats']:<3d} {qw['gap2']:3d}/{qs['gap2']:<3d}"
            f"  {qw['mano_cost']:4d}/{qs['mano_cost']:<4d}"
            f"   {qw['absolute_mano_misses']}/{qs['absolute_mano_misses']}"
        )
        results += random_results(tables["whole"], rnd)
    print(
        f"  total: one graph {totals['whole']:.2f} s, brackets {totals['split']:.2f} s "
        f"({totals['whole'] / totals['split']:.1f}x); one graph/brackets: "
        + ", ".join(f"{k} {qsum['whole'][k]}/{qsum['split'][k]}" for k in qsum["whole"])
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entrants", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--bracket-size",
        type=int,
        nargs="+",
        default=[DEFAULT_BRACKET_SIZE],
        help="one or more, timed side by side",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--compare", type=int, default=200, metavar="N", help="entrants of the comparison (0: skip)"
    )
    args = parser.parse_args()
    run(args.entrants, args.rounds, args.bracket_size, args.seed)
    if args.compare:
        compare(args.compare, min(args.rounds, args.compare - 1), args.bracket_size[0], args.seed)


if __name__ == "__main__":
    main()
