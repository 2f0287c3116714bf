"""Side-by-side random-play speed: truco_engine vs the `pytruco` package (Uruguayan truco).

Both engines play random legal actions without folding (pytruco's ``allow_mazo=False``;
our random player skips ``fold``) for the same wall time, alternating short slices so
machine noise hits both alike. pytruco is used only through its public API
(``Partida``, ``chi.random_action``, ``chi.is_done``); none of its code is copied.

    pip install -e '.[bench]'          # installs pytruco==0.1.3 (benchmark-only extra)
    python benchmarks/compare_pytruco.py --seconds 20 [--players 4] [--build build/mypyc]

Prints hands/s and actions/s for each and the ratio. ``--build DIR`` runs the engine found
under DIR (the compiled build, docs/engine.md) instead of this checkout's.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

te: Any = None  # truco_engine, imported in main() once --build is known


def ours(seconds: float, players: int, rng: random.Random) -> tuple[int, int]:
    rules = te.get_rules("uruguayan", players=players)
    deck = list(rules.deck_cards)
    hands = actions = 0
    state = te.new_match(rules)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        if te.is_over(state):
            state = te.new_match(rules)
        if te.needs_deal(state):
            rng.shuffle(deck)
            state, _ = te.deal(state, deck)
            hands += 1
            continue
        seat = te.to_act(state)[0]
        legal = [a for a in te.legal_actions(state, seat) if a.kind != "fold"]
        te.observe(state, seat)
        state, _ = te.apply(state, seat, rng.choice(legal))
        actions += 1
    return hands, actions


def theirs(seconds: float, players: int) -> tuple[int, int]:
    from pytruco.pdt.chi import random_action
    from pytruco.pdt.partida import Partida

    blue, red = ["A1", "A2", "A3"][: players // 2], ["B1", "B2", "B3"][: players // 2]
    hands = actions = 0
    end = time.perf_counter() + seconds

    def dealt(p: Partida) -> tuple[str, ...]:
        # A new deal changes the muestra and the cards of the first hand (pytruco emits no
        # round packets with verbose=False, so hands are counted by watching the deal).
        return (str(p.ronda.muestra), *(str(c) for c in p.ronda.manojos[0].cartas))

    p = Partida(30, blue, red, verbose=False)
    last = dealt(p)
    while time.perf_counter() < end:
        random_action(p, allow_mazo=False).hacer(p)
        actions += 1
        if p.terminada():
            hands += 1
            p = Partida(30, blue, red, verbose=False)
            last = dealt(p)
            continue
        now = dealt(p)
        if now != last:
            hands += 1
            last = now
    return hands, actions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="total time per engine (default 20)")
    ap.add_argument("--players", type=int, default=2, choices=[2, 4, 6])
    ap.add_argument("--slices", type=int, default=10, help="alternations (default 10)")
    ap.add_argument("--build", help="run the truco_engine under this directory (e.g. build/mypyc)")
    args = ap.parse_args()
    global te
    if args.build:
        sys.path.insert(0, args.build)
    import truco_engine

    te = truco_engine
    print(f"# truco_engine from {truco_engine.__file__}", flush=True)
    rng = random.Random(0)
    random.seed(0)  # pytruco draws from the module-level generator
    per = args.seconds / args.slices
    totals = {"truco_engine": [0, 0], "pytruco": [0, 0]}
    for i in range(args.slices):
        h, a = ours(per, args.players, rng)
        totals["truco_engine"][0] += h
        totals["truco_engine"][1] += a
        h, a = theirs(per, args.players)
        totals["pytruco"][0] += h
        totals["pytruco"][1] += a
        print(f"# slice {i + 1}/{args.slices} done", flush=True)
    for name, (h, a) in totals.items():
        rate_h, rate_a = h / args.seconds, a / args.seconds
        print(f"{name} uruguayan {args.players}p: {rate_h:,.0f} hands/s {rate_a:,.0f} actions/s")
    ours_h, theirs_h = totals["truco_engine"][0], totals["pytruco"][0]
    ours_a, theirs_a = totals["truco_engine"][1], totals["pytruco"][1]
    print(
        f"ratio hands/s: {ours_h / max(theirs_h, 1):.1f}x  ratio actions/s: {ours_a / max(theirs_a, 1):.1f}x"
    )


if __name__ == "__main__":
    main()
