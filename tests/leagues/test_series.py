"""Best-of-N series per pairing: seats alternate, the series ends at a majority, its one
result is what standings and brackets see."""

from __future__ import annotations

import pytest

from tests.leagues.helpers import field
from truco_server.leagues import (
    DuplicateMode,
    DuplicateOptions,
    EventSpec,
    FormatKind,
    InvalidOptionError,
    Pairing,
    SeriesGame,
    create_event,
    series_decided,
    series_result,
    series_score,
)

P = Pairing(1, 1, "a", "b")


def test_a_best_of_three_decided_two_nil_ends_after_two_games() -> None:
    games = [SeriesGame("a", 30, 12), SeriesGame("a", 30, 25)]
    assert not series_decided(3, P, games[:1])
    assert series_result(3, P, games[:1]) is None
    assert series_decided(3, P, games)
    result = series_result(3, P, games)
    assert result is not None
    assert (result.winner, result.first_points, result.second_points, result.forfeit) == ("a", 60, 37, False)
    assert series_score(P, games) == (2, 0)


def test_a_best_of_three_decided_two_one_takes_the_third_game() -> None:
    games = [SeriesGame("a", 30, 10), SeriesGame("b", 20, 30)]
    assert series_score(P, games) == (1, 1)
    assert series_result(3, P, games) is None
    games.append(SeriesGame("b", 5, 30))
    result = series_result(3, P, games)
    assert result is not None and result.winner == "b"
    assert (result.first_points, result.second_points) == (55, 70)


def test_games_alternate_who_is_mano_and_have_their_own_keys() -> None:
    event = create_event(EventSpec(FormatKind.ROUND_ROBIN, series_best_of=3), field(2))
    (pairing,) = event.pairings(1, [])
    tables = [event.series_table(pairing, g) for g in (1, 2, 3)]
    assert [t.key for t in tables] == ["r1.t1", "r1.t1.g2", "r1.t1.g3"]
    assert tables[0].sides == (pairing.first, pairing.second)
    assert tables[1].sides == (pairing.second, pairing.first)
    assert tables[2].sides == tables[0].sides
    assert event.tables(pairing)[0].key == "r1.t1"
    with pytest.raises(InvalidOptionError):
        event.series_table(pairing, 4)


def test_a_forfeited_game_counts_for_the_side_present_and_the_series_goes_on() -> None:
    games = [SeriesGame("b", 0, 0, forfeit=True)]
    assert series_result(3, P, games) is None
    games += [SeriesGame("a", 30, 3), SeriesGame("a", 30, 4)]
    result = series_result(3, P, games)
    assert result is not None and result.winner == "a" and not result.forfeit
    only_forfeits = [SeriesGame("b", 0, 0, forfeit=True)] * 2
    result = series_result(3, P, only_forfeits)
    assert result is not None and result.winner == "b" and result.forfeit


def test_a_level_series_is_a_draw_and_a_knockout_sends_the_better_seed_through() -> None:
    games = [SeriesGame("a", 30, 1), SeriesGame(None, 0, 0), SeriesGame("b", 2, 30)]
    result = series_result(3, P, games)
    assert result is not None and result.winner is None
    result = series_result(3, P, games, knockout=True)
    assert result is not None and result.winner == "a"


def test_a_knockout_of_best_of_three_series_advances_each_series_winner() -> None:
    event = create_event(EventSpec(FormatKind.SINGLE_ELIMINATION, series_best_of=3), field(4))
    semis = event.pairings(1, [])
    assert len(semis) == 2
    results = []
    for p in semis:
        # the lower seed (second) wins 2-1 at table 1; the higher seed 2-0 at table 2
        if p.table == 1:
            assert p.second is not None
            games = [SeriesGame(p.first, 30, 2), SeriesGame(p.second, 9, 30), SeriesGame(p.second, 8, 30)]
        else:
            games = [SeriesGame(p.first, 30, 2), SeriesGame(p.first, 30, 20)]
        assert event.series_result(p, games[:-1]) is None
        got = event.series_result(p, games)
        assert got is not None
        results.append(got)
    (final,) = event.pairings(2, results)
    assert {final.first, final.second} == {results[0].winner, results[1].winner}
    assert results[0].winner == semis[0].second
    final_result = event.series_result(final, [SeriesGame(final.second, 1, 30)] * 2)
    assert final_result is not None
    assert event.is_finished([*results, final_result])
    standings = event.standings([*results, final_result])
    assert standings[0].entrant_id == final.second and standings[0].rank == 1


@pytest.mark.parametrize("best_of", [0, 2, 4, 11, -1])
def test_best_of_is_an_odd_number_from_one_to_nine(best_of: int) -> None:
    with pytest.raises(InvalidOptionError) as err:
        EventSpec(FormatKind.ROUND_ROBIN, series_best_of=best_of)
    assert err.value.field == "series_best_of"


def test_a_series_is_not_played_with_duplicate_deals() -> None:
    with pytest.raises(InvalidOptionError) as err:
        EventSpec(FormatKind.ROUND_ROBIN, series_best_of=3, duplicate=DuplicateOptions(DuplicateMode.TABLES))
    assert err.value.field == "series_best_of"
