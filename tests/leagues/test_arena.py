"""Arena: waiting entrants paired by rank, the streak scoring, no pairing after the end."""

from __future__ import annotations

import random

import pytest

from tests.leagues.helpers import field
from truco_server.leagues import (
    Entrant,
    EventSpec,
    FormatKind,
    InvalidOptionError,
    Pairing,
    RoundOrderError,
    arena_over,
    arena_pairs,
    arena_scores,
    arena_standings,
    busy,
    create_event,
    waiting_entrants,
)


def _arena(n: int, duration: float = 60.0):  # type: ignore[no-untyped-def]
    return create_event(EventSpec(FormatKind.ARENA, arena_duration=duration), field(n))


def test_a_win_scores_two_a_draw_one_and_two_wins_in_a_row_double_the_next_results() -> None:
    p = [Pairing(w, 1, "a", "b") for w in range(1, 8)]
    results = [
        p[0].result("a"),  # a 2
        p[1].result("a"),  # a 2: two in a row, on fire
        p[2].result("a"),  # a 4 (double)
        p[3].result(None),  # a 2 (a draw on fire is doubled), ends the streak
        p[4].result("a"),  # a 2
        p[5].result("b"),  # a 0
        p[6].result("a"),  # a 2
    ]
    got = arena_scores(["a", "b"], results)
    assert got["a"].score == 2 + 2 + 4 + 2 + 2 + 0 + 2
    assert got["a"].streak == 1 and not got["a"].on_fire
    assert got["b"].score == 1 + 2  # the draw, the win
    assert arena_scores(["a"], results[:3])["a"].on_fire


def test_a_forfeit_loss_scores_nothing_and_ends_the_streak_a_forfeit_win_counts() -> None:
    p = [Pairing(w, 1, "a", "b") for w in range(1, 5)]
    results = [p[0].result("a"), p[1].result("a"), p[2].result("b", forfeit=True), p[3].result("a")]
    got = arena_scores(["a", "b"], results)
    assert got["a"].score == 2 + 2 + 0 + 2  # the streak ended with the forfeit lost: the last win is 2
    assert got["b"].score == 2  # a win by forfeit scores as a win
    double_forfeit = [Pairing(1, 1, "a", "b").result(None, forfeit=True)]
    assert {k: v.score for k, v in arena_scores(["a", "b"], double_forfeit).items()} == {"a": 0, "b": 0}


def test_waiting_entrants_are_paired_with_the_nearest_in_rank() -> None:
    entrants = field(6)
    # e6 won twice (4), e5 once (2): the ranks are e6, e5, e1, e2, e3, e4
    results = [Pairing(1, 1, "e6", "e4").result("e6"), Pairing(2, 1, "e6", "e3").result("e6"),
               Pairing(2, 2, "e5", "e2").result("e5")]  # fmt: skip
    ranked = [s.entrant_id for s in arena_standings(entrants, results)]
    assert ranked[:3] == ["e6", "e5", "e1"]
    got = arena_pairs(entrants, results, {"e6", "e5", "e1", "e4"}, others_playing=True, wave=3)
    assert [(p.round, p.table) for p in got] == [(3, 1), (3, 2)]
    assert [set(p.entrants) for p in got] == [{"e6", "e5"}, {"e1", "e4"}]
    # e6 was mano twice, e5 once: e5 is mano in the first hand
    assert got[0].first == "e5"


def test_the_last_opponent_is_avoided_when_another_is_waiting() -> None:
    entrants = field(4)
    results = [Pairing(1, 1, "e1", "e2").result("e1"), Pairing(1, 2, "e3", "e4").result("e3")]
    got = arena_pairs(entrants, results, {"e1", "e2", "e3", "e4"}, others_playing=False, wave=2)
    assert {frozenset(p.entrants) for p in got} == {frozenset({"e1", "e3"}), frozenset({"e2", "e4"})}


def test_two_who_just_met_wait_while_others_play_and_meet_again_when_nobody_else_will_come() -> None:
    entrants = field(4)
    results = [Pairing(1, 1, "e1", "e2").result("e1")]
    assert arena_pairs(entrants, results, {"e1", "e2"}, others_playing=True, wave=2) == ()
    (again,) = arena_pairs(entrants, results, {"e1", "e2"}, others_playing=False, wave=2)
    assert set(again.entrants) == {"e1", "e2"} and again.first == "e2"  # e1 was mano
    # with a third waiting, e1 gets it, and e2 waits for the next one to come back
    (got,) = arena_pairs(entrants, results, {"e1", "e2", "e3"}, others_playing=True, wave=2)
    assert set(got.entrants) == {"e1", "e3"}


def test_an_odd_entrant_waits_and_nobody_is_paired_twice_in_a_wave() -> None:
    rnd = random.Random(7)
    entrants = field(9)
    results = []
    for wave in range(1, 30):
        waiting = {e.id for e in entrants if rnd.random() < 0.7}
        got = arena_pairs(entrants, results, waiting, others_playing=True, wave=wave)
        seen = [e for p in got for e in p.entrants]
        assert len(seen) == len(set(seen)) and set(seen) <= waiting
        assert len(waiting) - len(seen) <= max(1, len(waiting) % 2) or len(waiting) == 2
        results += [p.result(p.first if rnd.random() < 0.5 else p.second, (3, 1)) for p in got]
    table = arena_standings(entrants, results)
    scores = arena_scores([e.id for e in entrants], results)
    assert [s.score for s in table] == sorted((float(v.score) for v in scores.values()), reverse=True)


def test_standings_break_ties_by_points_difference_then_fewer_games() -> None:
    entrants = field(4)
    results = [
        Pairing(1, 1, "e1", "e2").result("e1", (3, 2)),  # e1 2, diff +1
        Pairing(1, 2, "e3", "e4").result("e3", (3, 0)),  # e3 2, diff +3
    ]
    assert [s.entrant_id for s in arena_standings(entrants, results)] == ["e3", "e1", "e2", "e4"]
    # e2 then e4 both 0; e2 lost by 1, e4 by 3
    more = [*results, Pairing(2, 1, "e4", "e2").result(None, (1, 1))]  # a draw each: 1 point
    table = arena_standings(entrants, more)
    assert [(s.entrant_id, s.score) for s in table] == [("e3", 2.0), ("e1", 2.0), ("e2", 1.0), ("e4", 1.0)]
    assert table[0].tie_breaks == (3.0,)


def test_nothing_is_paired_after_the_end_and_the_pool_is_everyone_not_playing() -> None:
    assert not arena_over(99.9, 100.0) and arena_over(100.0, 100.0)
    live = [Pairing(3, 1, "e1", "e2")]
    assert busy(live) == {"e1", "e2"}
    assert waiting_entrants(field(5), {"e5"}, busy(live)) == ("e3", "e4")


def test_an_arena_event_needs_a_duration_and_takes_no_rounds_series_or_tie_breaks() -> None:
    with pytest.raises(InvalidOptionError) as err:
        create_event(EventSpec(FormatKind.ARENA), field(4))
    assert err.value.field == "arena.duration"
    with pytest.raises(InvalidOptionError):
        EventSpec(FormatKind.ARENA, arena_duration=0.5)
    with pytest.raises(InvalidOptionError) as err:
        EventSpec(FormatKind.SWISS, rounds=3, arena_duration=60)
    assert err.value.field == "arena.duration"
    with pytest.raises(InvalidOptionError):
        EventSpec(FormatKind.ARENA, arena_duration=60, series_best_of=3)
    with pytest.raises(InvalidOptionError) as err:
        create_event(EventSpec(FormatKind.ARENA, arena_duration=60, rounds=3), field(4))
    assert err.value.field == "rounds"
    event = _arena(2)
    assert event.total_rounds() == 0 and not event.is_finished([])
    with pytest.raises(RoundOrderError):
        event.pairings(1, [])


def test_a_late_entrant_joins_the_pool_without_a_bye() -> None:
    event = _arena(4)
    results = [Pairing(1, 1, "e1", "e2").result("e1"), Pairing(1, 2, "e3", "e4").result("e3")]
    event = event.register(Entrant("late", 5), rounds_started=7)
    assert event.late_entry_bye("late", []) is None
    got = event.arena_pairings(8, results, {"late", "e1"}, others_playing=True)
    assert [set(p.entrants) for p in got] == [{"e1", "late"}]
    assert event.scores(results)["e1"] == 2.0 and event.scores(results)["late"] == 0.0
    assert [s.entrant_id for s in event.standings(results)][:2] == ["e1", "e3"]


def test_an_arena_refuses_forbidden_pairs_and_the_operators_pairings() -> None:
    from truco_server.leagues import RoundOverrides

    event = _arena(4)
    with pytest.raises(InvalidOptionError) as err:
        event.pairings(1, [], forbidden=[frozenset({"e1", "e2"})])
    assert (
        err.value.field == "forbidden_pairs"
        and "an arena pairs its entrants as they wait" in err.value.message
    )
    with pytest.raises(InvalidOptionError) as err:
        event.pairings(1, [], overrides=RoundOverrides((("e1", "e2"),), ()))
    assert err.value.field == "pairs"
