"""How the service benchmarks' bots choose among their legal actions.

- ``random``: any legal action, calls, answers and folds included -- the whole game's mix.
  A paulista match lasts about 35 moves (shorter than the peer benchmark's game, 30-58).
- ``cards``: a card whenever one may be played (chosen at random among them), another
  action only when none may -- the peer game's kind of move (one card per move,
  ``benchmarks/peers/game.mjs``). A paulista match lasts about 94 moves (longer than the
  peer game's).

Under both a deal comes every 4.5-5 moves (the peer game's every 6); what differs is the
kind of move and how often a match is created, joined and ended. How long matches and hands
last under each (the rules engine alone, no server)::

    python -m truco_tools.bench_policy --preset paulista --matches 500
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Sequence
from typing import Any, TypeVar

__all__ = ["POLICIES", "choose", "is_card_json", "is_card_proto", "match_lengths", "play"]

POLICIES = ("random", "cards")

A = TypeVar("A")


def is_card_proto(action: Any) -> bool:
    """Whether a ``truco.v1.Action`` message plays a card."""
    return bool(action.WhichOneof("action") == "play_card")


def is_card_json(action: Any) -> bool:
    """Whether an action in the proto3 JSON mapping (the REST face's) plays a card."""
    return "playCard" in action


def choose(rng: random.Random, legal: Sequence[A], policy: str, is_card: Any = is_card_proto) -> A:
    """The action ``policy`` picks among ``legal`` (not empty); ``random`` draws exactly as
    ``rng.choice(legal)``, so its runs repeat those made before the policies existed."""
    if policy == "cards":
        cards = [a for a in legal if is_card(a)]
        if cards:
            return rng.choice(cards)
    elif policy != "random":
        raise ValueError(f"unknown policy {policy!r}: one of {', '.join(POLICIES)}")
    return rng.choice(legal)


def match_lengths(preset: str, policy: str, matches: int, seed: int = 0) -> list[int]:
    """The moves of ``matches`` two-player matches of ``preset`` whose seats choose by
    ``policy`` (played by the rules engine and the match table alone, each from its own seed)."""
    return [moves for moves, _ in play(preset, policy, matches, seed)]


def play(preset: str, policy: str, matches: int, seed: int = 0) -> list[tuple[int, int]]:
    """:func:`match_lengths`, with the hands dealt in each match: (moves, hands) per match."""
    import truco_engine as te
    from truco_match import table
    from truco_match.lifecycle import Lifecycle

    rules = te.get_rules(preset, players=2)
    out: list[tuple[int, int]] = []
    for k in range(matches):
        rng = random.Random(f"{seed}:{k}")
        setup = table.Setup(rules=rules, seed=rng.randbytes(32), lifecycle=Lifecycle())
        step = table.start(setup, table.seats_of(rules, []), b"", 0)
        state, life, moves = step.state, step.life, 0
        while not te.is_over(state):
            seat = life.awaited
            assert seat is not None, "an active match awaits a seat"
            action = choose(rng, te.observe(state, seat).legal_actions, policy, _is_card_engine)
            step = table.act(setup, state, life, seat, action, 0)
            state, life, moves = step.state, step.life, moves + 1
        out.append((moves, state.hands))
    return out


def _is_card_engine(action: Any) -> bool:
    return bool(action.kind == "play")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Moves per match under each policy (the engine alone).")
    parser.add_argument("--preset", default="paulista")
    parser.add_argument("--matches", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for policy in POLICIES:
        played = play(args.preset, policy, args.matches, args.seed)
        got = [moves for moves, _ in played]
        per_hand = sum(got) / max(sum(hands for _, hands in played), 1)
        print(
            f"{args.preset} {policy:6s} moves per match: mean {statistics.mean(got):.1f}, median"
            f" {statistics.median(got):g}, min {min(got)}, max {max(got)}; moves per hand"
            f" {per_hand:.2f} ({args.matches} matches)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
