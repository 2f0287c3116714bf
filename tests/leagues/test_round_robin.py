"""Round robin: Berger tables, every pair once (or twice with mano swapped), byes."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.leagues.helpers import field, play
from truco_server.leagues import (
    EventSpec,
    FormatKind,
    InvalidResultError,
    RoundOrderError,
    berger_round,
    create_event,
)

# FIDE Handbook C.05, Annex 1 (Berger tables), written out by hand.
FIDE_4 = [[(1, 4), (2, 3)], [(4, 3), (1, 2)], [(2, 4), (3, 1)]]
FIDE_6 = [
    [(1, 6), (2, 5), (3, 4)],
    [(6, 4), (5, 3), (1, 2)],
    [(2, 6), (3, 1), (4, 5)],
    [(6, 5), (1, 4), (2, 3)],
    [(3, 6), (4, 2), (5, 1)],
]


@pytest.mark.parametrize(("n", "table"), [(4, FIDE_4), (6, FIDE_6)])
def test_berger_rounds_match_the_fide_tables(n: int, table: list[list[tuple[int, int]]]) -> None:
    assert [berger_round(n, r) for r in range(1, n)] == table


def test_seed_k_is_berger_number_k_and_an_odd_count_gets_byes() -> None:
    event = create_event(EventSpec(FormatKind.ROUND_ROBIN), field(5))
    round1 = event.pairings(1, [])
    # Berger round 1 for 6 numbers: 1-6 (6 is the dummy: a bye for e1), 2-5, 3-4.
    assert [(p.table, p.first, p.second) for p in round1] == [
        (1, "e2", "e5"),
        (2, "e3", "e4"),
        (3, "e1", None),
    ]


def _play_all(kind: FormatKind, n: int, seed: int) -> list:
    event = create_event(EventSpec(kind), field(n))
    rnd = random.Random(seed)
    results = []
    for r in range(1, event.total_rounds() + 1):
        assert not event.is_finished(results)
        tables = event.pairings(r, results)
        playing = [e for p in tables for e in p.entrants]
        assert len(playing) == len(set(playing)) == n, "everyone once a round"
        results += play(tables, rnd)
    assert event.is_finished(results)
    return results


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 24), seed=st.integers(0, 2**32))
def test_single_round_robin_every_pair_meets_exactly_once(n: int, seed: int) -> None:
    results = _play_all(FormatKind.ROUND_ROBIN, n, seed)
    pairs = Counter(frozenset((r.first, r.second)) for r in results if r.second is not None)
    assert len(pairs) == n * (n - 1) // 2 and set(pairs.values()) == {1}
    byes = Counter(r.first for r in results if r.second is None)
    assert (set(byes.values()) == {1} and len(byes) == n) if n % 2 else not byes


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 20), seed=st.integers(0, 2**32))
def test_double_round_robin_every_pair_meets_twice_with_mano_swapped(n: int, seed: int) -> None:
    results = _play_all(FormatKind.DOUBLE_ROUND_ROBIN, n, seed)
    seatings = Counter((r.first, r.second) for r in results if r.second is not None)
    assert len(seatings) == n * (n - 1) and set(seatings.values()) == {1}
    for a, b in seatings:
        assert (b, a) in seatings


def test_mano_alternates_in_a_round_robin_of_ten() -> None:
    results = _play_all(FormatKind.ROUND_ROBIN, 10, 1)
    mano = Counter(r.first for r in results)
    # Berger colours: with 9 rounds everyone is first 4 or 5 times.
    assert set(mano.values()) <= {4, 5}


def test_a_withdrawn_entrants_opponent_gets_a_bye() -> None:
    event = create_event(EventSpec(FormatKind.ROUND_ROBIN), field(4))
    rnd = random.Random(3)
    results = play(event.pairings(1, []), rnd)
    round2 = event.pairings(2, results, withdrawn={"e4"})
    assert ("e3", None) in [(p.first, p.second) for p in round2]
    assert all("e4" not in p.entrants for p in round2)


def test_rounds_in_order_and_results_on_the_schedule() -> None:
    event = create_event(EventSpec(FormatKind.ROUND_ROBIN), field(4))
    with pytest.raises(RoundOrderError, match="round 1 is not complete"):
        event.pairings(2, [])
    with pytest.raises(RoundOrderError, match="does not exist"):
        event.pairings(4, [])
    first = event.pairings(1, [])[0]
    wrong = first.result(first.first)
    wrong = type(wrong)(1, 1, "e1", "e2", "e1")  # e1 v e2 is not a table of round 1
    with pytest.raises(InvalidResultError, match="not a table of round 1"):
        event.pairings(2, [wrong])


def test_the_same_round_asked_twice_is_the_same() -> None:
    event = create_event(EventSpec(FormatKind.DOUBLE_ROUND_ROBIN), field(7))
    results = play(event.pairings(1, []), random.Random(0))
    assert event.pairings(2, results) == event.pairings(
        2, results + play(event.pairings(2, results), random.Random(1))
    )
