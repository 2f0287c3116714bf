"""Groups then knockout: snake seeding, group tables, advancement, the knockout's seeding."""

from __future__ import annotations

import itertools

import pytest

from truco_server.leagues import (
    Entrant,
    EventSpec,
    FormatKind,
    GroupStage,
    InvalidOptionError,
    RoundOrderError,
    SeriesGame,
    TieBreak,
    bracket_size,
    create_event,
    knockout_seeds,
    meeting_round,
    seed_order,
    snake_groups,
)
from truco_server.leagues.results import Pairing, Result


def field(n: int) -> list[Entrant]:
    return [Entrant(f"e{i}", i) for i in range(1, n + 1)]


def better_seed_wins(p: Pairing) -> Result:
    if p.is_bye:
        return p.bye_result()
    return p.result(min(p.entrants, key=lambda e: int(e[1:])), (3, 1))


def play(event, decide=better_seed_wins, upto: int | None = None) -> list[Result]:  # type: ignore[no-untyped-def]
    results: list[Result] = []
    for r in range(1, (upto or event.total_rounds()) + 1):
        results += [decide(p) for p in event.pairings(r, results)]
    return results


def test_snake_seeding_deals_the_seeds_back_and_forth() -> None:
    groups = snake_groups(field(10), 3)
    assert [[e.id for e in g] for g in groups] == [
        ["e1", "e6", "e7"],
        ["e2", "e5", "e8"],
        ["e3", "e4", "e9", "e10"],
    ]


def test_eight_in_two_groups_then_a_knockout_of_four() -> None:
    cup = create_event(
        EventSpec(FormatKind.GROUPS_KNOCKOUT, group_stage=GroupStage(2, 2), third_place=True), field(8)
    )
    assert cup.total_rounds() == 3 + 2
    round1 = cup.pairings(1, [])
    assert [(p.label, p.first, p.second) for p in round1] == [
        ("A", "e1", "e8"), ("A", "e4", "e5"), ("B", "e2", "e7"), ("B", "e3", "e6"),
    ]  # fmt: skip
    results = play(cup)
    assert cup.is_finished(results)
    tables = cup.group_tables(results)
    assert [(t.label, [s.entrant_id for s in t.standings]) for t in tables] == [
        ("A", ["e1", "e4", "e5", "e8"]), ("B", ["e2", "e3", "e6", "e7"]),
    ]  # fmt: skip
    semis = cup.pairings(4, results)
    # group winners against the other group's runner-up
    assert [(p.label, p.first, p.second) for p in semis] == [("W1.1", "e1", "e3"), ("W1.2", "e2", "e4")]
    assert [(p.label, p.first, p.second) for p in cup.pairings(5, results)] == [
        ("W2.1", "e1", "e2"),
        ("3P", "e4", "e3"),
    ]
    places = [(s.rank, s.entrant_id) for s in cup.standings(results)]
    assert places == [(1, "e1"), (2, "e2"), (3, "e3"), (4, "e4"), (5, "e5"), (5, "e6"), (7, "e8"), (7, "e7")]
    assert cup.is_knockout_round(4) and not cup.is_knockout_round(3)
    assert cup.result_locked_by(2) == 4 and cup.result_locked_by(4) == 5


def test_the_knockout_waits_for_the_group_stage() -> None:
    cup = create_event(EventSpec(FormatKind.GROUPS_KNOCKOUT, group_stage=GroupStage(2, 2)), field(8))
    results = play(cup, upto=3)
    with pytest.raises(RoundOrderError):
        cup.pairings(4, results[:-1])
    assert not cup.is_finished(results)
    # before the knockout everyone is placed by group place
    assert [s.rank for s in cup.standings(results[:-1])] == [1, 1, 3, 3, 5, 5, 7, 7]


def test_ties_in_a_group_go_to_the_league_tie_breaks_and_a_withdrawn_entrant_ranks_last() -> None:
    spec = EventSpec(
        FormatKind.GROUPS_KNOCKOUT, group_stage=GroupStage(2, 2), tie_breaks=(TieBreak.POINTS_DIFFERENCE,)
    )
    cup = create_event(spec, field(8))

    def decide(p: Pairing) -> Result:
        # group A: a three-way tie on 2 points among e1, e4, e5 (e8 loses all): e5 wins big
        ids = set(p.entrants)
        if ids == {"e1", "e4"}:
            return p.result("e4", (1, 3) if p.first == "e1" else (3, 1))
        if ids == {"e4", "e5"}:
            return p.result("e5", (10, 0) if p.first == "e5" else (0, 10))
        if ids == {"e1", "e5"}:
            return p.result("e1", (3, 2) if p.first == "e1" else (2, 3))
        return better_seed_wins(p)

    results = play(cup, decide, upto=3)
    group_a = cup.group_tables(results)[0]
    assert [s.entrant_id for s in group_a.standings] == ["e5", "e1", "e4", "e8"]
    ko = cup.format.knockout(results)  # type: ignore[attr-defined]
    assert [e.id for e in ko.entrants] == ["e5", "e2", "e1", "e3"]
    # e5 withdraws before the knockout: e4 (third) does not take its place, e5 ranks last
    ko = cup.format.knockout(results, {"e5"})  # type: ignore[attr-defined]
    assert [e.id for e in ko.entrants] == ["e1", "e2", "e4", "e3"]


@pytest.mark.parametrize("groups", [2, 4, 8, 16])
def test_winners_meet_another_groups_runner_up_and_group_mates_only_in_the_final(groups: int) -> None:
    advancers = [[f"1{g}", f"2{g}"] for g in range(groups)]
    seeds = knockout_seeds(advancers)
    size = bracket_size(2 * groups)
    lines = {x: seed_order(size).index(k) for k, x in enumerate(seeds, 1)}
    at_line = {v: k for k, v in lines.items()}
    for line in range(0, size, 2):
        a, b = sorted((at_line[line], at_line[line + 1]))
        assert a[0] == "1" and b[0] == "2" and a[1:] != b[1:]
    final = size.bit_length() - 1
    assert all(meeting_round(lines[f"1{g}"], lines[f"2{g}"]) == final for g in range(groups))


@pytest.mark.parametrize(("groups", "advance"), [(2, 2), (3, 2), (2, 3), (3, 3), (4, 2), (2, 4)])
def test_group_mates_meet_as_late_as_any_tiered_seeding_allows(groups: int, advance: int) -> None:
    """Brute force over every order within each tier: none lets the earliest meeting of two
    group mates come later than ours."""
    advancers = [[f"{p}{g}" for p in range(advance)] for g in range(groups)]
    order = seed_order(bracket_size(groups * advance))

    def earliest(seeds: tuple[str, ...]) -> int:
        line = {x: order.index(k) for k, x in enumerate(seeds, 1)}
        return min(
            meeting_round(line[a], line[b])
            for g in range(groups)
            for a, b in itertools.combinations(advancers[g], 2)
        )

    tiers = [list(itertools.permutations([advancers[g][p] for g in range(groups)])) for p in range(advance)]
    best = max(earliest(tuple(x for tier in combo for x in tier)) for combo in itertools.product(*tiers))
    assert earliest(knockout_seeds(advancers)) == best


def test_options_are_checked() -> None:
    with pytest.raises(InvalidOptionError) as err:
        create_event(EventSpec(FormatKind.GROUPS_KNOCKOUT), field(8))
    assert err.value.field == "group_stage"
    with pytest.raises(InvalidOptionError) as err:
        create_event(EventSpec(FormatKind.SWISS, rounds=3, group_stage=GroupStage(2)), field(8))
    assert err.value.field == "group_stage"
    with pytest.raises(InvalidOptionError) as err:
        create_event(EventSpec(FormatKind.GROUPS_KNOCKOUT, group_stage=GroupStage(3, 2)), field(8))
    assert err.value.field == "group_stage" and "more than the 2 advancing" in err.value.message
    with pytest.raises(InvalidOptionError) as err:
        GroupStage(1)
    assert err.value.field == "group_stage.groups"


def test_a_double_round_robin_group_stage_and_best_of_three_knockout_series() -> None:
    spec = EventSpec(FormatKind.GROUPS_KNOCKOUT, group_stage=GroupStage(2, 1, double=True), series_best_of=3)
    cup = create_event(spec, field(6))
    assert cup.total_rounds() == 6 + 1  # groups of 3: 3 rounds twice, then the final
    results = play(cup, upto=6)
    final = cup.pairings(7, results)[0]
    assert (final.first, final.second) == ("e1", "e2")
    level = [SeriesGame("e1", 3, 1), SeriesGame("e2", 1, 3), SeriesGame(None, 2, 2)]
    decided = cup.series_result(final, level)
    assert decided is not None and decided.winner == "e1"  # a knockout: the better seed goes through
    group_pairing = cup.pairings(1, [])[0]
    assert group_pairing.second is not None
    games = [SeriesGame(group_pairing.first, 3, 1), SeriesGame(group_pairing.second, 1, 3), level[2]]
    drawn = cup.series_result(group_pairing, games)
    assert drawn is not None and drawn.winner is None  # a group game can be drawn
