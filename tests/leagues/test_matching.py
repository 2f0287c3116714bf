"""The Swiss pairing's matching: as many pairs as possible, then the greatest total weight.

Checked against two independent answers: a brute force over every matching of small
graphs, and networkx's ``max_weight_matching(maxcardinality=True)`` (a different
implementation of the blossom algorithm) on larger ones, including the degenerate weights
the Swiss pairing produces (many equal weights, forbidden pairs).
"""

from __future__ import annotations

import random
from functools import cache

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from truco_server.leagues.matching import max_weight_matching

Matrix = list[list[int | None]]


def random_matrix(rnd: random.Random, n: int, density: float, top: int) -> Matrix:
    w: Matrix = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if rnd.random() < density:
                w[i][j] = w[j][i] = rnd.randint(0, top)
    return w


def checked_value(w: Matrix, mate: list[int]) -> tuple[int, int]:
    """(pairs, total weight) of ``mate``, after checking it is a matching of ``w``."""
    assert len(mate) == len(w)
    pairs = total = 0
    for v, m in enumerate(mate):
        if m == -1:
            continue
        assert mate[m] == v and m != v, f"{v} and {m} are not each other's mate"
        weight = w[v][m]
        assert weight is not None, f"{v}-{m} is not an edge"
        if v < m:
            pairs += 1
            total += weight
    return pairs, total


def brute_force(w: Matrix) -> tuple[int, int]:
    """The best (pairs, total weight) over every matching."""
    n = len(w)

    @cache
    def best(mask: int) -> tuple[int, int]:
        if mask == 0:
            return (0, 0)
        v = (mask & -mask).bit_length() - 1
        rest = mask & ~(1 << v)
        out = best(rest)  # v stays unmatched
        for u in range(v + 1, n):
            weight = w[v][u]
            if rest >> u & 1 and weight is not None:
                p, t = best(rest & ~(1 << u))
                out = max(out, (p + 1, t + weight))
        return out

    return best((1 << n) - 1)


def networkx_value(w: Matrix) -> tuple[int, int]:
    g: nx.Graph[int] = nx.Graph()
    g.add_nodes_from(range(len(w)))
    for i, row in enumerate(w):
        for j in range(i + 1, len(row)):
            weight = row[j]
            if weight is not None:
                g.add_edge(i, j, weight=weight)
    found = nx.max_weight_matching(g, maxcardinality=True)
    return len(found), sum(w[i][j] or 0 for i, j in found)


@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(0, 11),
    density=st.sampled_from([0.2, 0.5, 0.8, 1.0]),
    top=st.sampled_from([0, 1, 3, 50, 10**12]),
    seed=st.integers(0, 2**32),
)
def test_small_graphs_match_a_brute_force(n: int, density: float, top: int, seed: int) -> None:
    w = random_matrix(random.Random(seed), n, density, top)
    assert checked_value(w, max_weight_matching(w)) == brute_force(w)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(12, 48),
    density=st.sampled_from([0.1, 0.3, 0.7, 0.95, 1.0]),
    top=st.sampled_from([2, 7, 1000, 10**15]),
    seed=st.integers(0, 2**32),
)
def test_larger_graphs_match_networkx(n: int, density: float, top: int, seed: int) -> None:
    w = random_matrix(random.Random(seed), n, density, top)
    assert checked_value(w, max_weight_matching(w)) == networkx_value(w)


def test_lexicographic_weights_like_the_swiss_brackets() -> None:
    """Large weights made of a few levels (a big base, a few mano costs, small folds), with
    some pairs forbidden: the shape of a real bracket, where ties are everywhere."""
    rnd = random.Random(7)
    for _ in range(40):
        n = rnd.choice([20, 33, 46, 49])
        w: Matrix = [[None] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                if rnd.random() < 0.93:
                    w[i][j] = w[j][i] = 10**10 - rnd.randint(0, 6) * 10**6 - abs(abs(i - j) - n // 2)
        assert checked_value(w, max_weight_matching(w)) == networkx_value(w)


def test_maximum_cardinality_comes_before_weight() -> None:
    """A path a-b-c-d whose heavy middle edge would leave two vertices unmatched."""
    w: Matrix = [[None, 1, None, None], [1, None, 100, None], [None, 100, None, 1], [None, None, 1, None]]
    assert max_weight_matching(w) == [1, 0, 3, 2]


def test_an_odd_cycle_needs_a_blossom() -> None:
    """A triangle 0-1-2 with a tail 2-3 and 0-4: the best matching goes round the cycle."""
    w: Matrix = [[None] * 6 for _ in range(6)]
    for i, j, x in [(0, 1, 8), (1, 2, 9), (0, 2, 10), (2, 3, 7), (0, 4, 2), (3, 5, 1)]:
        w[i][j] = w[j][i] = x
    assert checked_value(w, max_weight_matching(w)) == brute_force(w) == (3, 12)
