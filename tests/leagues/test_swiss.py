"""Swiss: no rematch ever, one bye at most and to the right entrant, score groups, mano
balance, and a typed error when no rematch-free pairing exists."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.leagues.helpers import field, play
from truco_server.leagues import (
    LATE_ENTRY,
    Entrant,
    EventSpec,
    FormatKind,
    NoValidPairingError,
    Pairing,
    Result,
    RoundOrderError,
    Swiss,
    TieBreak,
    create_event,
)


def perfectly_pairable(players: Iterable[str], met: set[frozenset[str]]) -> bool:
    """Brute force, independent of the library: can ``players`` all be paired without a rematch?"""
    ids = sorted(players)

    @cache
    def go(mask: int) -> bool:
        if mask == 0:
            return True
        i = (mask & -mask).bit_length() - 1
        rest = mask & ~(1 << i)
        j = rest
        while j:
            k = (j & -j).bit_length() - 1
            j &= j - 1
            if frozenset((ids[i], ids[k])) not in met and go(rest & ~(1 << k)):
                return True
        return False

    return len(ids) % 2 == 0 and go((1 << len(ids)) - 1)


def scores_of(results: list[Result], ids: Iterable[str]) -> dict[str, float]:
    score = dict.fromkeys(ids, 0.0)
    for r in results:
        if r.second is None or r.winner is not None:
            score[r.winner or r.first] += 1.0
        else:
            score[r.first] += 0.5
            score[r.second] += 0.5
    return score


def check_round(swiss: Swiss, tables: tuple[Pairing, ...], results: list[Result]) -> None:
    ids = [e.id for e in swiss.entrants]
    met = {frozenset((r.first, r.second)) for r in results if r.second is not None}
    had_bye = {r.first for r in results if r.second is None}
    playing = [e for p in tables for e in p.entrants]
    assert sorted(playing) == sorted(ids), "everyone once a round"
    for p in tables:
        if p.second is not None:
            assert frozenset((p.first, p.second)) not in met, f"rematch {p}"
    byes = [p.first for p in tables if p.second is None]
    assert len(byes) == len(ids) % 2
    if byes:
        (bye,) = byes
        assert bye not in had_bye, "a second bye"
        score = scores_of(results, ids)
        seed = {e.id: e.seed for e in swiss.entrants}
        ranked = sorted(ids, key=lambda x: (-score[x], seed[x]))
        # Everyone ranked below the bye was not eligible: had a bye, or the others could
        # not have been paired without a rematch.
        for lower in ranked[ranked.index(bye) + 1 :]:
            assert lower in had_bye or not perfectly_pairable(set(ids) - {lower}, met)


def no_pairing_exists(swiss: Swiss, results: list[Result]) -> bool:
    ids = {e.id for e in swiss.entrants}
    met = {frozenset((r.first, r.second)) for r in results if r.second is not None}
    if len(ids) % 2 == 0:
        return not perfectly_pairable(ids, met)
    had_bye = {r.first for r in results if r.second is None}
    return all(not perfectly_pairable(ids - {x}, met) for x in ids - had_bye)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(4, 17),
    seed=st.integers(0, 2**32),
    bracket=st.sampled_from([4, 6, 48]),
    draws=st.booleans(),
)
def test_swiss_never_rematches_and_byes_are_right(n: int, seed: int, bracket: int, draws: bool) -> None:
    """Up to the last possible round: every round checked; when the library says no pairing
    exists, a brute-force search agrees."""
    swiss = Swiss(field(n), rounds=n - 1 if n % 2 == 0 else n, bracket_size=bracket)
    rnd = random.Random(seed)
    results: list[Result] = []
    for r in range(1, swiss.rounds + 1):
        try:
            tables = swiss.pairings(r, results)
        except NoValidPairingError:
            assert no_pairing_exists(swiss, results)
            break
        check_round(swiss, tables, results)
        results += play(tables, rnd, draws)
    byes = Counter(x.first for x in results if x.second is None)
    assert all(v == 1 for v in byes.values())


def test_round_one_is_top_half_against_bottom_half_with_mano_alternating() -> None:
    swiss = Swiss(field(16), rounds=5)
    tables = swiss.pairings(1, [])
    assert [(p.first, p.second) for p in tables] == [
        ("e1", "e9"),
        ("e10", "e2"),
        ("e3", "e11"),
        ("e12", "e4"),
        ("e5", "e13"),
        ("e14", "e6"),
        ("e7", "e15"),
        ("e16", "e8"),
    ]


def test_round_two_pairs_within_score_groups_and_balances_mano() -> None:
    swiss = Swiss(field(16), rounds=5)
    results = play(swiss.pairings(1, []), random.Random(7))
    score = scores_of(results, [e.id for e in swiss.entrants])
    was_first = {r.first for r in results}
    for p in swiss.pairings(2, results):
        assert p.second is not None and score[p.first] == score[p.second]
        # Each group of 8 has 4 who were mano and 4 who were not (the two halves of the
        # first round split evenly), so everyone can switch: nobody is mano twice.
        assert p.first not in was_first and p.second in was_first


def test_a_sixteen_entrant_swiss_played_to_the_end() -> None:
    event = create_event(
        EventSpec(FormatKind.SWISS, rounds=7, tie_breaks=(TieBreak.BUCHHOLZ, TieBreak.SONNEBORN_BERGER)),
        field(16),
    )
    rnd = random.Random(2026)
    results: list[Result] = []
    for r in range(1, 8):
        tables = event.pairings(r, results)
        assert event.pairings(r, results) == tables, "asking again gives the same round"
        check_round(event.format, tables, results)  # type: ignore[arg-type]
        results += play(tables, rnd)
    assert event.is_finished(results)
    with pytest.raises(RoundOrderError):
        event.pairings(8, results)
    pairs = Counter(frozenset((r.first, r.second)) for r in results)
    assert len(pairs) == 7 * 8 and set(pairs.values()) == {1}
    for e in event.entrants:
        manos = sum(1 for r in results if r.first == e.id)
        assert manos in (3, 4), f"{e.id} mano {manos} times in 7 rounds"
    # Standings, with each tie-break recomputed from the results by its formula.
    table = event.standings(results)
    score = scores_of(results, [e.id for e in event.entrants])
    for row in table:
        me = row.entrant_id
        opponents = [r.second if r.first == me else r.first for r in results if me in (r.first, r.second)]
        beaten = [r.loser() for r in results if r.winner == row.entrant_id]
        assert row.score == score[row.entrant_id]
        assert row.tie_breaks == (sum(score[o] for o in opponents), sum(score[b] for b in beaten if b))
    keys = [(row.score, *row.tie_breaks) for row in table]
    assert keys == sorted(keys, reverse=True)


def test_a_large_field_uses_brackets_and_still_pairs_by_score_group() -> None:
    swiss = Swiss(field(200), rounds=6, bracket_size=16)
    rnd = random.Random(11)
    results: list[Result] = []
    for r in range(1, 7):
        tables = swiss.pairings(r, results)
        check_round(swiss, tables, results)
        if r == 2:
            score = scores_of(results, [e.id for e in swiss.entrants])
            assert all(p.second is not None and score[p.first] == score[p.second] for p in tables)
        results += play(tables, rnd)


def test_no_rematch_free_pairing_is_a_typed_error() -> None:
    # Six entrants, three rounds: every entrant of {a, b, c} met every one of {x, y, z}.
    # What is left is two triangles, which have no perfect matching.
    entrants = [Entrant(x, i) for i, x in enumerate("abcxyz", start=1)]
    swiss = Swiss(tuple(entrants), rounds=5)
    rounds = [
        [("a", "x"), ("b", "y"), ("c", "z")],
        [("a", "y"), ("b", "z"), ("c", "x")],
        [("a", "z"), ("b", "x"), ("c", "y")],
    ]
    results = [
        Pairing(r, t, first, second).result(first)
        for r, tables in enumerate(rounds, start=1)
        for t, (first, second) in enumerate(tables, start=1)
    ]
    with pytest.raises(NoValidPairingError) as info:
        swiss.pairings(4, results)
    assert info.value.field == "round" and "rematch" in info.value.message


def test_withdrawn_entrants_are_not_paired_and_late_ones_join() -> None:
    event = create_event(EventSpec(FormatKind.SWISS, rounds=5), field(8))
    results = play(event.pairings(1, []), random.Random(5))
    event = event.register(Entrant("late", 20), rounds_started=1)
    round2 = event.pairings(2, results, withdrawn={"e3"})
    playing = {e for p in round2 for e in p.entrants}
    assert "e3" not in playing and "late" in playing and len(playing) == 8


def test_a_late_entrant_gets_one_bye_for_the_first_round_it_missed() -> None:
    """Lichess's late-join rule: joining after two rounds, one bye (round 1), nothing for
    round 2; the bye counts as its one bye, so round 3's bye (nine present) goes to another."""
    event = create_event(EventSpec(FormatKind.SWISS, rounds=5), field(8))
    rnd = random.Random(11)
    results = play(event.pairings(1, []), rnd)
    results += play(event.pairings(2, results), rnd)
    assert event.late_entry_bye("e1", event.pairings(1, [])) is None  # paired from round 1
    event = event.register(Entrant("late", 20), rounds_started=2)
    round_one = [r.pairing for r in results if r.round == 1]
    bye = event.late_entry_bye("late", round_one)
    assert bye == Pairing(1, 5, "late", None, LATE_ENTRY)  # the table after round 1's four
    results.append(bye.bye_result())
    assert event.scores(results)["late"] == 1.0  # a bye's points for round 1, 0 for round 2
    row = next(s for s in event.standings(results) if s.entrant_id == "late")
    assert (row.score, row.played, row.byes) == (1.0, 0, 1)
    round3 = event.pairings(3, results)
    byes = [p.first for p in round3 if p.is_bye]
    assert len(byes) == 1 and byes != ["late"]  # nobody gets a second bye
    assert "late" in {e for p in round3 for e in p.entrants}
    # a second late entrant in the same round: the next table
    event = event.register(Entrant("later", 21), rounds_started=2)
    second = event.late_entry_bye("later", [*round_one, bye])
    assert second is not None and (second.round, second.table) == (1, 6)


def test_a_withdrawn_entrant_keeps_its_results_and_makes_no_bye() -> None:
    """Nine entrants, one withdrawn after round 2: never paired again, its two results kept
    (and counted in its opponents' Buchholz), no bye for it or for anyone in the even rounds
    that follow."""
    event = create_event(EventSpec(FormatKind.SWISS, rounds=5), field(9))
    rnd = random.Random(3)
    results = play(event.pairings(1, []), rnd)
    results += play(event.pairings(2, results), rnd)
    before = event.scores(results)["e3"]
    for r in range(3, 6):
        tables = event.pairings(r, results, withdrawn={"e3"})
        assert "e3" not in {e for p in tables for e in p.entrants}
        assert not [p for p in tables if p.is_bye]  # eight left: nobody has a bye
        results += play(tables, rnd)
    table = {s.entrant_id: s for s in event.standings(results, {"e3"})}
    assert table["e3"].score == before and table["e3"].played + table["e3"].byes == 2
    assert len([r for r in results if "e3" in r.entrants]) == 2
    scores = event.scores(results)
    for opp in {x for r in results if "e3" in r.entrants and r.second for x in r.entrants} - {"e3"}:
        met = [x for r in results if opp in r.entrants and r.second for x in r.entrants if x != opp]
        assert "e3" in met  # e3's score is still in its opponents' Buchholz
        assert table[opp].tie_breaks[0] == sum(scores[x] for x in met)


def test_pairing_rounds_out_of_order() -> None:
    swiss = Swiss(field(8), rounds=3)
    with pytest.raises(RoundOrderError, match="round 1 has no results"):
        swiss.pairings(2, [])


def test_the_bye_skips_the_lowest_ranked_when_the_others_could_not_be_paired() -> None:
    """A recorded run (nine entrants, random results from seed 200) in which round 7's
    lowest-ranked entrant without a bye, e8, cannot take it: without e8 the other eight
    cannot all be paired without a rematch. The next one up, e5, gets it."""
    from truco_server.leagues.results import build_history

    swiss = Swiss(field(9), rounds=9)
    rnd = random.Random(200)
    results: list[Result] = []
    for r in range(1, 7):
        tables = swiss.pairings(r, results)
        check_round(swiss, tables, results)
        results += play(tables, rnd)
    tables = swiss.pairings(7, results)
    check_round(swiss, tables, results)
    history = build_history(results, [e.id for e in swiss.entrants], swiss.scoring)
    ranked = [e.id for e in swiss.ranking(history, {e.id for e in swiss.entrants})]
    without_bye = [x for x in reversed(ranked) if history.byes(x) == 0]
    assert without_bye[:2] == ["e8", "e5"]
    met = {frozenset((r.first, r.second)) for r in results if r.second is not None}
    assert not perfectly_pairable(set(ranked) - {"e8"}, met)
    assert [p.first for p in tables if p.second is None] == ["e5"]


def test_a_leader_who_met_the_next_group_is_paired_close_rather_than_floated_far() -> None:
    """Bracket 1 holds groups 0-2 (L; a1 a2; b1 b2) and L has met a1 and a2. Floating L
    to the next bracket (group 3) costs a gap of 3; pairing him with a b (gap 2) and
    floating the last b one group down costs 2**2 + 1**2. The matching must choose that."""
    from truco_server.leagues.swiss import NO_PREFERENCE, ManoPreference, _Player, pair_players

    none = ManoPreference(None, NO_PREFERENCE)
    layout = [("L", 0), ("a1", 1), ("a2", 1), ("b1", 2), ("b2", 2), ("c1", 3), ("c2", 3), ("c3", 3)]
    sizes = Counter(g for _, g in layout)
    firsts = {g: min(i for i, (_, h) in enumerate(layout) if h == g) for g in sizes}
    players = [_Player(x, i, g, i - firsts[g], sizes[g], none) for i, (x, g) in enumerate(layout)]
    met = {"L": {"a1", "a2"}, "a1": {"L"}, "a2": {"L"}}
    pairs = pair_players(players, met, bracket_size=5)
    assert pairs is not None
    gaps = sorted(abs(a.group - b.group) for a, b in pairs)
    partner = {a.id: b.id for a, b in pairs} | {b.id: a.id for a, b in pairs}
    assert partner["L"] in ("b1", "b2") and gaps == [0, 0, 1, 2]


def test_forbidden_pairs_are_never_paired() -> None:
    """Round 1 of 8 pairs e1-e5, e6-e2, e3-e7, e8-e4; forbidding e1-e5 and e3-e7 moves
    them, and a hundred random rounds never pair a forbidden pair."""
    swiss = Swiss(field(8), rounds=5)
    plain = {frozenset((p.first, p.second)) for p in swiss.pairings(1, [])}
    forbidden = {frozenset(("e1", "e5")), frozenset(("e3", "e7"))}
    assert forbidden <= plain
    tables = swiss.pairings(1, [], forbidden=forbidden)
    check_round(swiss, tables, [])
    assert not forbidden & {frozenset((p.first, p.second)) for p in tables}
    rnd = random.Random(3)
    for _ in range(100):
        ids = [f"e{i}" for i in range(1, 9)]
        pairs = {frozenset(rnd.sample(ids, 2)) for _ in range(5)}
        try:
            tables = swiss.pairings(1, [], forbidden=pairs)
        except NoValidPairingError:
            assert not perfectly_pairable(ids, pairs)
            continue
        assert not pairs & {frozenset((p.first, p.second)) for p in tables}


def test_the_operators_pairings_and_byes_come_first_and_the_rest_is_paired() -> None:
    from truco_server.leagues import RoundOverrides

    swiss = Swiss(field(9), rounds=5)
    overrides = RoundOverrides(pairs=(("e9", "e1"),), byes=("e2", "e3"))
    tables = [(p.table, p.first, p.second) for p in swiss.pairings(1, [], overrides=overrides)]
    # e9-e1 as given (e9 mano) first; e4..e8 are five: two tables and the system's bye to
    # the lowest-ranked, e8, after the operator's byes
    assert tables[0] == (1, "e9", "e1")
    assert [t[1:] for t in tables[3:]] == [("e2", None), ("e3", None), ("e8", None)]
    assert sorted(e for t in tables[1:3] for e in t[1:] if e) == ["e4", "e5", "e6", "e7"]
    assert [t[0] for t in tables] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    ("overrides", "field_name", "message"),
    [
        ((("e1", "e2"), ("e2", "e3")), "pairs[1]", "placed twice"),
        ((("e1", "e1"),), "pairs[0]", "placed twice"),
        ((("e1", "nobody"),), "pairs[0]", "not an entrant present"),
        ((("e1", "e2"),), "pairs[0]", "forbidden pairing"),
    ],
)
def test_bad_overrides_name_the_field(
    overrides: tuple[tuple[str, str], ...], field_name: str, message: str
) -> None:
    from truco_server.leagues import LeagueError, RoundOverrides

    swiss = Swiss(field(8), rounds=3)
    with pytest.raises(LeagueError) as err:
        swiss.pairings(1, [], forbidden={frozenset(("e1", "e2"))}, overrides=RoundOverrides(pairs=overrides))
    assert err.value.field == field_name and message in err.value.message


def test_only_a_swiss_takes_overrides() -> None:
    from truco_server.leagues import InvalidOptionError, RoundOverrides

    event = create_event(EventSpec(FormatKind.ROUND_ROBIN), field(4))
    with pytest.raises(InvalidOptionError):
        event.pairings(1, [], forbidden={frozenset(("e1", "e2"))})
    with pytest.raises(InvalidOptionError):
        event.pairings(1, [], overrides=RoundOverrides(byes=("e1",)))
    assert len(event.pairings(1, [])) == 2
