"""Best-of-N series in the league service in process (typed calls, no transport) on the
in-memory store and on a real ``redis-server``: the next game's table is added once, the
series is rated once as one match, and a corrected series is rated again in its place."""

from __future__ import annotations

from tests.leagues_service.conftest import OPERATOR, Stack, run_league, spec
from truco_server.leagues import Pairing, SeriesGame, series_result
from truco_server.services.leagues import series_wins
from truco_server.services.leagues.series import series_games


async def test_a_round_robin_of_best_of_three_series(any_stack: Stack) -> None:
    s = any_stack
    doc = await s.leagues.create_league(OPERATOR, spec("round_robin", 3, series_best_of=3))
    await s.leagues.start(OPERATOR, doc.league_id)
    done = await run_league(s, doc.league_id, seed=7)
    for _ in range(3):  # more wakeups than needed change nothing
        await s.leagues.job.advance(doc.league_id)
    again = await s.leagues.get_league(OPERATOR, doc.league_id)
    assert again.pairings == done.pairings and again.tables == done.tables
    played = [p for p in done.pairings if p.second is not None]
    assert len(played) == 3
    for p in played:
        games = series_games(done, p)
        assert len(games) == len(p.tables) and 2 <= len(p.tables) <= 3
        expected = series_result(3, Pairing(p.round, p.table, p.first, p.second), games)
        assert expected is not None and p.result is not None
        assert (p.result["winner"], p.result["first_points"]) == (expected.winner, expected.first_points)
        assert max(series_wins(done, p)) == 2 or None in (g.winner for g in games)
    board = {
        e.player_id: e.rating.games for e in await s.leagues.ratings.leaderboard(OPERATOR, done.family, 0)
    }
    assert board == {"p01": 2, "p02": 2, "p03": 2}  # two series each, however many games
    # a corrected series is rated again in place of the first rating, not beside it
    p = played[0]
    assert p.result is not None and p.second is not None
    loser = p.second if p.result["winner"] == p.first else p.first
    before = {e.player_id: e.rating.mu for e in await s.leagues.ratings.leaderboard(OPERATOR, done.family, 0)}
    await s.leagues.correct(OPERATOR, doc.league_id, p.round, p.table, (loser, 0, 0, False), "the test")
    await s.leagues.job.advance(doc.league_id)
    after = await s.leagues.ratings.leaderboard(OPERATOR, done.family, 0)
    assert {e.player_id: e.rating.games for e in after} == board
    assert {e.player_id: e.rating.mu for e in after}[loser] > before[loser]


def test_series_games_read_each_table_from_the_pairings_sides() -> None:
    from truco_server.services.leagues import LeagueDoc, PairingDoc, TableDoc

    doc = LeagueDoc("lg", "o", "n", "round_robin", "", "argentine", 2, "f", "00", 0.0, series_best_of=3)
    p = PairingDoc(1, 1, "a", "b", tables=["r1.t1", "r1.t1.g2"])
    doc.pairings = [p]
    doc.tables = {
        "r1.t1": TableDoc("r1.t1", "r1.t1", ["a", "b"], done=True, winner_side=0, points=[3, 1]),
        "r1.t1.g2": TableDoc("r1.t1.g2", "r1.t1", ["b", "a"], done=True, winner_side=0, points=[3, 2]),
    }
    assert series_games(doc, p) == [SeriesGame("a", 3, 1), SeriesGame("b", 2, 3)]
    assert series_wins(doc, p) == (1, 1)
