"""Shared helpers of the league library tests: entrants and random play from a seed."""

from __future__ import annotations

import random
from collections.abc import Sequence

from truco_server.leagues import Entrant, Pairing, Result


def field(n: int, prefix: str = "e") -> tuple[Entrant, ...]:
    """``n`` single entrants ``e1``..``en`` with seed = number."""
    return tuple(Entrant(f"{prefix}{i}", i) for i in range(1, n + 1))


def play(pairings: Sequence[Pairing], rnd: random.Random, draws: bool = False) -> list[Result]:
    """A random result for every table (a bye result for every bye)."""
    out: list[Result] = []
    for p in pairings:
        if p.second is None:
            out.append(p.bye_result())
            continue
        loser_points = rnd.randrange(30)
        roll = rnd.random()
        if draws and roll < 0.1:
            out.append(p.result(None, (loser_points, loser_points)))
        elif roll < 0.55:
            out.append(p.result(p.first, (30, loser_points)))
        else:
            out.append(p.result(p.second, (loser_points, 30)))
    return out
