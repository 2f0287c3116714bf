"""Single and double elimination: seeded brackets, byes to the top seeds, walkovers."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.leagues.helpers import field
from truco_server.leagues import (
    Elimination,
    Event,
    EventSpec,
    FormatKind,
    InvalidOptionError,
    InvalidResultError,
    Pairing,
    Result,
    RoundOrderError,
    bracket_size,
    create_event,
    seed_order,
)


def test_seed_order_of_eight() -> None:
    assert seed_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]


@pytest.mark.parametrize("size", [2, 4, 8, 16, 32, 64])
def test_top_seeds_are_spread_over_the_bracket(size: int) -> None:
    order = seed_order(size)
    assert sorted(order) == list(range(1, size + 1))
    block = size
    while block >= 2:
        blocks = [order[i : i + block] for i in range(0, size, block)]
        # each block of the bracket holds exactly one of the top (size / block) seeds
        assert sorted(min(b) for b in blocks) == list(range(1, size // block + 1))
        block //= 2


def better_seed_wins(tables: tuple[Pairing, ...], seed: dict[str, int]) -> list[Result]:
    return [
        p.bye_result() if p.second is None else p.result(min(p.entrants, key=lambda x: seed[x]))
        for p in tables
    ]


def run(ko: Elimination, rnd: random.Random) -> tuple[list[Result], int]:
    results: list[Result] = []
    alive = Counter({e.id: 0 for e in ko.entrants})
    limit = 1 if not ko.double else 2
    r = 0
    while not ko.is_finished(results):
        r += 1
        tables = ko.pairings(r, results)
        playing = [e for p in tables for e in p.entrants]
        assert len(playing) == len(set(playing)), "nobody twice in a round"
        for e in playing:
            assert alive[e] < limit, f"{e} plays after being knocked out"
        for p in tables:
            if p.second is None:
                results.append(p.bye_result())
            else:
                res = p.result(rnd.choice(p.entrants))
                results.append(res)
                loser = res.loser()
                assert loser is not None
                alive[loser] += 1
    return results, r


@pytest.mark.parametrize("n", range(2, 41))
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_single_elimination_brackets_are_well_formed(n: int, seed: int) -> None:
    ko = Elimination(field(n))
    size = bracket_size(n)
    round1 = ko.pairings(1, [])
    byes = sorted(int(p.first[1:]) for p in round1 if p.second is None)
    assert byes == list(range(1, size - n + 1)), "byes exactly to the top seeds"
    for p in round1:
        if p.second is not None:
            a, b = int(p.first[1:]), int(p.second[1:])
            assert a + b == size + 1 and a < b, "seed s meets seed size + 1 - s, the better one mano"
    results, rounds = run(ko, random.Random(seed))
    played = [r for r in results if r.second is not None]
    assert len(played) == n - 1
    assert rounds == ko.total_rounds() == size.bit_length() - 1
    champion = ko.champion(results)
    losers = Counter(r.loser() for r in played)
    assert champion not in losers and set(losers.values()) == {1} and len(losers) == n - 1
    places = ko.placements(results)
    assert places[0] == (1, champion) and [p for p, _ in places] == sorted(p for p, _ in places)


@pytest.mark.parametrize("n", range(3, 41))
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32), reset=st.booleans())
def test_double_elimination_brackets_are_well_formed(n: int, seed: int, reset: bool) -> None:
    ko = Elimination(field(n), double=True, grand_final_reset=reset)
    size = bracket_size(n)
    byes = sorted(int(p.first[1:]) for p in ko.pairings(1, []) if p.second is None)
    assert byes == list(range(1, size - n + 1))
    results, _ = run(ko, random.Random(seed))
    played = [r for r in results if r.second is not None]
    champion = ko.champion(results)
    losses = Counter(r.loser() for r in played)
    assert losses[champion] <= 1
    gf = [r for r in results if r.round == 2 * (size.bit_length() - 1)]
    if reset:
        assert all(v == 2 for e, v in losses.items() if e != champion), "everyone else is out at two losses"
        assert len(played) in (2 * n - 2, 2 * n - 1)
    else:
        assert len(played) == 2 * n - 2 and len(gf) == 1
    assert len(losses) == n - (0 if losses[champion] else 1)


def test_an_eleven_entrant_knockout_with_byes() -> None:
    event = create_event(EventSpec(FormatKind.SINGLE_ELIMINATION), field(11))
    seed = {e.id: e.seed for e in event.entrants}
    round1 = event.pairings(1, [])
    assert [(p.label, p.first, p.second) for p in round1] == [
        ("W1.2", "e8", "e9"),
        ("W1.6", "e7", "e10"),
        ("W1.8", "e6", "e11"),
        ("W1.1", "e1", None),
        ("W1.3", "e4", None),
        ("W1.4", "e5", None),
        ("W1.5", "e2", None),
        ("W1.7", "e3", None),
    ]
    results = better_seed_wins(round1, seed)
    round2 = event.pairings(2, results)
    assert [(p.first, p.second) for p in round2] == [("e1", "e8"), ("e4", "e5"), ("e2", "e7"), ("e3", "e6")]
    results += better_seed_wins(round2, seed)
    round3 = event.pairings(3, results)
    assert [(p.first, p.second) for p in round3] == [("e1", "e4"), ("e2", "e3")]
    results += better_seed_wins(round3, seed)
    final = event.pairings(4, results)
    assert [(p.label, p.first, p.second) for p in final] == [("W4.1", "e1", "e2")]
    results += better_seed_wins(final, seed)
    assert event.is_finished(results)
    places = [(s.rank, s.entrant_id) for s in event.standings(results)]
    assert places == [
        (1, "e1"),
        (2, "e2"),
        (3, "e3"),
        (3, "e4"),
        (5, "e5"),
        (5, "e6"),
        (5, "e7"),
        (5, "e8"),
        (9, "e9"),
        (9, "e10"),
        (9, "e11"),
    ]
    with pytest.raises(RoundOrderError):
        event.pairings(5, results)


def test_an_eleven_entrant_double_elimination_worked_by_hand() -> None:
    event = create_event(EventSpec(FormatKind.DOUBLE_ELIMINATION), field(11))
    seed = {e.id: e.seed for e in event.entrants}
    results: list[Result] = []
    rounds: list[list[tuple[str, str, str | None]]] = []
    r = 0
    while not event.is_finished(results):
        r += 1
        tables = event.pairings(r, results)
        rounds.append([(p.label, p.first, p.second) for p in tables])
        results += better_seed_wins(tables, seed)
    assert rounds[1][4:] == [("L1.1", "e9", None), ("L1.3", "e10", None), ("L1.4", "e11", None)]
    assert rounds[2][2:] == [
        ("L2.1", "e6", "e9"),
        ("L2.3", "e5", "e10"),
        ("L2.4", "e8", "e11"),
        ("L2.2", "e7", None),
    ]
    assert rounds[3] == [("W4.1", "e1", "e2"), ("L3.1", "e6", "e7"), ("L3.2", "e5", "e8")]
    assert rounds[4] == [("L4.1", "e4", "e6"), ("L4.2", "e3", "e5")]
    assert rounds[5:] == [[("L5.1", "e3", "e4")], [("L6.1", "e2", "e3")], [("GF", "e1", "e2")]]
    assert event.total_rounds() == 9  # the reset round exists but is not needed
    assert sum(1 for x in results if x.second is not None) == 20
    places = [(s.rank, s.entrant_id) for s in event.standings(results)]
    assert places == [
        (1, "e1"),
        (2, "e2"),
        (3, "e3"),
        (4, "e4"),
        (5, "e5"),
        (5, "e6"),
        (7, "e7"),
        (7, "e8"),
        (9, "e9"),
        (9, "e10"),
        (9, "e11"),
    ]


def test_the_grand_final_reset_swaps_mano() -> None:
    ko = Elimination(field(4), double=True)
    seed = {e.id: e.seed for e in ko.entrants}
    results: list[Result] = []
    for r in range(1, 4):
        results += better_seed_wins(ko.pairings(r, results), seed)
    (gf,) = ko.pairings(4, results)
    assert (gf.label, gf.first, gf.second) == ("GF", "e1", "e2")
    # e2 (the losers' champion: e1 beat him in the winners' final) wins the grand final
    results.append(gf.result("e2"))
    assert not ko.is_finished(results)
    (reset,) = ko.pairings(5, results)
    assert (reset.label, reset.first, reset.second) == ("GF2", "e2", "e1")
    results.append(reset.result("e1"))
    assert ko.champion(results) == "e1"


def test_a_withdrawal_is_a_walkover() -> None:
    ko = Elimination(field(4))
    round1 = ko.pairings(1, [], withdrawn={"e4"})
    assert [(p.first, p.second) for p in round1] == [("e2", "e3"), ("e1", None)]
    results = [round1[0].result("e3")]
    (final,) = ko.pairings(2, results, withdrawn={"e4"})
    assert (final.first, final.second) == ("e1", "e3")


def test_elimination_needs_a_winner_and_the_right_players() -> None:
    ko = Elimination(field(4))
    (a, _) = ko.pairings(1, [])
    with pytest.raises(InvalidResultError, match="needs a winner"):
        ko.pairings(2, [a.result(None), *[p.result(p.first) for p in ko.pairings(1, [])[1:]]])
    with pytest.raises(InvalidResultError, match="not a match of round 1"):
        ko.pairings(2, [Pairing(1, 1, "e1", "e2").result("e1"), Pairing(1, 2, "e3", "e4").result("e3")])
    with pytest.raises(RoundOrderError, match="not complete"):
        ko.pairings(2, [a.result(a.first)])


def worst_seed_wins(tables: tuple[Pairing, ...], seed: dict[str, int]) -> list[Result]:
    return [
        p.bye_result() if p.second is None else p.result(max(p.entrants, key=lambda x: seed[x]))
        for p in tables
    ]


Rounds = list[tuple[Pairing, ...]]


def play_out(event: Event, decide: Callable[..., list[Result]]) -> tuple[list[Result], Rounds]:
    seed = {e.id: e.seed for e in event.entrants}
    results: list[Result] = []
    rounds: Rounds = []
    for r in range(1, event.total_rounds() + 1):
        tables = event.pairings(r, results)
        rounds.append(tables)
        results += decide(tables, seed)
    assert event.is_finished(results)
    return results, rounds


def test_a_third_place_match_of_eight_is_played_with_the_final() -> None:
    event = create_event(EventSpec(FormatKind.SINGLE_ELIMINATION, third_place=True), field(8))
    assert event.total_rounds() == 3
    # the worse seed always wins: e8, e5, e6, e7 reach round 2, e8 and e7 the final
    results, rounds = play_out(event, worst_seed_wins)
    assert [(p.label, p.first, p.second) for p in rounds[1]] == [("W2.1", "e5", "e8"), ("W2.2", "e6", "e7")]
    # round 3: the final (the semi-finals' winners) and the match for third (their losers)
    assert [(p.label, p.first, p.second) for p in rounds[2]] == [("W3.1", "e7", "e8"), ("3P", "e5", "e6")]
    places = [(s.rank, s.entrant_id) for s in event.standings(results)]
    assert places[:4] == [(1, "e8"), (2, "e7"), (3, "e6"), (4, "e5")]
    assert [rank for rank, _ in places[4:]] == [5, 5, 5, 5]
    # while the final round is under way the semi-finals' losers still share third
    before = [(s.rank, s.entrant_id) for s in event.standings(results[:-2])]
    assert before[2:4] == [(3, "e5"), (3, "e6")]
    # without the option: one match in round 3, and the losers share third
    plain = create_event(EventSpec(FormatKind.SINGLE_ELIMINATION), field(8))
    plain_results, plain_rounds = play_out(plain, worst_seed_wins)
    assert [p.label for p in plain_rounds[2]] == ["W3.1"]
    assert [(s.rank, s.entrant_id) for s in plain.standings(plain_results)][:4] == [
        (1, "e8"), (2, "e7"), (3, "e5"), (3, "e6"),
    ]  # fmt: skip


def test_a_third_place_match_of_five_with_byes() -> None:
    event = create_event(EventSpec(FormatKind.SINGLE_ELIMINATION, third_place=True), field(5))
    results, rounds = play_out(event, better_seed_wins)
    # round 1: e4-e5, byes to e1-e3; semi-finals e1-e4, e2-e3; then the final and the 3P
    first = [(p.first, p.second) for p in rounds[0]]
    assert first == [("e4", "e5"), ("e1", None), ("e2", None), ("e3", None)]
    assert [(p.label, p.first, p.second) for p in rounds[2]] == [("W3.1", "e1", "e2"), ("3P", "e3", "e4")]
    assert [(s.rank, s.entrant_id) for s in event.standings(results)] == [
        (1, "e1"), (2, "e2"), (3, "e3"), (4, "e4"), (5, "e5"),
    ]  # fmt: skip


def test_a_third_place_match_against_an_empty_line_is_a_walkover() -> None:
    # three entrants: e1's semi-final is a bye, so e2-e3's loser is third without playing
    event = create_event(EventSpec(FormatKind.SINGLE_ELIMINATION, third_place=True), field(3))
    results, rounds = play_out(event, better_seed_wins)
    assert [(p.label, p.first, p.second) for p in rounds[1]] == [("W2.1", "e1", "e2"), ("3P", "e3", None)]
    assert [(s.rank, s.entrant_id) for s in event.standings(results)] == [(1, "e1"), (2, "e2"), (3, "e3")]


@pytest.mark.parametrize("fmt", [FormatKind.DOUBLE_ELIMINATION, FormatKind.SWISS, FormatKind.ROUND_ROBIN])
def test_only_a_single_elimination_has_a_third_place_match(fmt: FormatKind) -> None:
    with pytest.raises(InvalidOptionError) as err:
        EventSpec(fmt, rounds=3 if fmt is FormatKind.SWISS else None, third_place=True)
    assert err.value.field == "third_place"
