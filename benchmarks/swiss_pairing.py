"""Time to pair one Swiss round, and what pairing bracket by bracket costs in quality.

Plays a Swiss of each ``--entrants`` size for ``--rounds`` rounds with random results
(``random.Random(--seed)``; a tenth of the matches drawn, as duplicate pairings can be).
Each round is paired by every configuration in turn on the same history (the first one's
pairings are played on): every ``--bracket-size`` with every ``--matcher`` (``blossom``:
the library's own, :mod:`truco_server.leagues.matching`; ``networkx``: networkx's
``max_weight_matching``, installed with the dev extra, for comparison; ``dutch``: the FIDE
Dutch system instead, :mod:`truco_server.leagues.dutch`). Each pairing is
timed (``Swiss.pairings``: history, ranking, the matchings) in wall time and in this
process's CPU time (on a shared machine the wall time also counts other processes' turns).
Round 1 has one score group and no rematch constraint; later rounds have many groups and
every earlier opponent forbidden, so rounds 2..N are the real figure. Prints every round,
then the median and the max over rounds 2..N for each configuration.

``--compare N`` (default 200) then replays one history of N entrants twice side by side:
paired in one graph (``bracket_size`` = N, the global optimum of the weights) and with
brackets of the first ``--bracket-size``, and prints the time ratio and the quality of
both: pairs across score groups (floats), the sum of squared group gaps, the
mano-preference cost and the number of entrants given the role they absolutely wanted to
avoid.

    python benchmarks/swiss_pairing.py                        # 1,000 and 10,000 entrants, 9 rounds
    python benchmarks/swiss_pairing.py --entrants 1000 --matcher blossom networkx --compare 0
    python benchmarks/swiss_pairing.py --entrants 1000 --bracket-size 32 48 64 --compare 0
    python benchmarks/swiss_pairing.py --entrants 32 64 128 --rounds 7 --matcher blossom dutch --compare 0
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

import truco_server.leagues.swiss as swiss_module  # noqa: E402
from truco_server.leagues import Entrant, Pairing, Result, Swiss  # noqa: E402
from truco_server.leagues.results import build_history  # noqa: E402
from truco_server.leagues.swiss import (  # noqa: E402
    ABSOLUTE,
    DEFAULT_BRACKET_SIZE,
    DUTCH,
    WEIGHTED,
    mano_preference,
)

OWN_MATCHER = swiss_module.max_weight_matching


def networkx_matcher(weights: list[list[int | None]]) -> list[int]:
    """networkx's matching behind the library's interface (a weight matrix in, mates out)."""
    import networkx as nx

    graph: nx.Graph[int] = nx.Graph()
    graph.add_nodes_from(range(len(weights)))
    for i, row in enumerate(weights):
        for j in range(i + 1, len(row)):
            if row[j] is not None:
                graph.add_edge(i, j, weight=row[j])
    mate = [-1] * len(weights)
    for i, j in nx.max_weight_matching(graph, maxcardinality=True):
        mate[i], mate[j] = j, i
    return mate


#: ``dutch`` pairs without a matcher of ours (the library's own); the entry keeps the table uniform.
MATCHERS = {"blossom": OWN_MATCHER, "networkx": networkx_matcher, "dutch": OWN_MATCHER}


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


def run(entrants: int, rounds: int, sizes: list[int], matchers: list[str], seed: int) -> None:
    """Time each round with every configuration, side by side on one history (generated
    with the first configuration's pairings)."""
    field = tuple(Entrant(f"p{i}", i) for i in range(1, entrants + 1))
    configs = [
        (b, m, Swiss(field, rounds, bracket_size=b, system=DUTCH if m == "dutch" else WEIGHTED))
        for b in sizes
        for m in matchers
    ]
    rnd = random.Random(seed)
    results: list[Result] = []
    wall: dict[tuple[int, str], list[float]] = {(b, m): [] for b, m, _ in configs}
    cpu: dict[tuple[int, str], list[float]] = {(b, m): [] for b, m, _ in configs}
    print(
        f"Swiss pairing: {entrants} entrants, {rounds} rounds, bracket sizes {sizes}, {matchers}, seed {seed}"
    )
    for r in range(1, rounds + 1):
        first: tuple[Pairing, ...] = ()
        line = []
        for b, m, swiss in configs:
            swiss_module.max_weight_matching = MATCHERS[m]  # type: ignore[assignment]
            t0, c0 = time.perf_counter(), time.process_time()
            tables = swiss.pairings(r, results)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            wall[(b, m)].append(dt)
            cpu[(b, m)].append(dc)
            q = quality(swiss, tables, results)
            line.append(
                f"[{b} {m}] {dt:6.3f} s (cpu {dc:6.3f} s) floats {q['floats']:2d}"
                f" mano cost {q['mano_cost']:4d} absolute misses {q['absolute_mano_misses']}"
            )
            first = first or tables
        print(f"  round {r:2d}: {len(first)} tables  " + "   ".join(line), flush=True)
        results += random_results(first, rnd)
    swiss_module.max_weight_matching = OWN_MATCHER  # type: ignore[assignment]
    for b, m, _ in configs:
        w, c = wall[(b, m)][1:] or wall[(b, m)], cpu[(b, m)][1:] or cpu[(b, m)]
        print(
            f"  {entrants} entrants, bracket_size {b}, {m}: rounds 2..{rounds}: "
            f"median {statistics.median(w):.3f} s, max {max(w):.3f} s "
            f"(cpu median {statistics.median(c):.3f} s, max {max(c):.3f} s)"
        )
    if len(configs) > 1:
        base = statistics.median(wall[(configs[0][0], configs[0][1])][1:] or [1.0])
        for b, m, _ in configs[1:]:
            other = statistics.median(wall[(b, m)][1:] or [1.0])
            print(f"  median ratio [{b} {m}] / [{configs[0][0]} {configs[0][1]}]: {other / base:.1f}x")


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
    parser.add_argument("--entrants", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--bracket-size",
        type=int,
        nargs="+",
        default=[DEFAULT_BRACKET_SIZE],
        help="one or more, timed side by side",
    )
    parser.add_argument(
        "--matcher",
        nargs="+",
        default=["blossom"],
        choices=sorted(MATCHERS),
        help="one or more, side by side",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--compare", type=int, default=200, metavar="N", help="entrants of the comparison (0: skip)"
    )
    args = parser.parse_args()
    for entrants in args.entrants:
        run(entrants, args.rounds, args.bracket_size, args.matcher, args.seed)
    if args.compare:
        compare(args.compare, min(args.rounds, args.compare - 1), args.bracket_size[0], args.seed)


if __name__ == "__main__":
    main()
