"""Best-of-N series end to end: two ``truco serve`` workers on one real ``redis-server``,
built-in bots through the bot lobby, the operator over REST and gRPC (the SDK). Matches are
short (argentine to 3 points)."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import requests

from tests.leagues_service.workers import Lobby, make_bots, two_workers
from truco_client.errors import TrucoApiError
from truco_client.leagues import LeagueClient
from truco_contract.leagues import pairings_rows

LEAGUE_TIMEOUT = 300.0


def test_a_best_of_three_knockout_over_the_api(clean_redis_url: str, tmp_path: Path) -> None:
    """A knockout of four bots, each pairing a best of three, created over REST: every
    series ends at two wins (game 3 only after 1-1), seats alternate game by game, the
    series' winner goes through, and each series is rated once, as one match."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 4)
        with pytest.raises(TrucoApiError) as err:  # an even series has no majority (gRPC)
            ops.create_league("no", "round_robin", entrants=[x.bot_id for x in bots], series_best_of=2)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "series_best_of" in str(err.value)
        body = {
            "name": "bo3 cup", "format": "single_elimination", "seriesBestOf": 3,
            "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
            "settings": {"joinWindow": "60s"},
            "entrants": [{"entrantId": x.bot_id} for x in bots],
        }  # fmt: skip
        resp = requests.post(f"{b.http}/v1/leagues", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        league = resp.json()["league"]
        assert league["seriesBestOf"] == 3
        lid = league["leagueId"]
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            ops.start(lid)
            final_league = ops.wait_finished(lid, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        assert final_league.series_best_of == 3
        pairings = ops.pairings(lid)
        tables_of: dict[str, int] = {}
        for p in pairings.pairings:
            games = list(p.tables)
            assert 2 <= len(games) <= 3, p
            assert [t.key for t in games] == [f"r{p.round}.t{p.table}"] + [
                f"r{p.round}.t{p.table}.g{g}" for g in range(2, len(games) + 1)
            ]
            for g, t in enumerate(games, 1):
                assert t.done and t.match_id
                assert list(t.sides) == ([p.first, p.second] if g % 2 else [p.second, p.first])
                for side in t.sides:
                    tables_of[side] = tables_of.get(side, 0) + 1
            wins = (p.series_first_wins, p.series_second_wins)
            assert max(wins) == 2 and sum(wins) == len(games)  # ended at the majority
            assert p.result.winner == (p.first if wins[0] == 2 else p.second)
        semis = [p for p in pairings.pairings if p.round == 1]
        (final,) = [p for p in pairings.pairings if p.round == 2]
        assert {final.first, final.second} == {p.result.winner for p in semis}
        standings = {s.entrant_id: s for s in ops.standings(lid).standings}
        assert standings[final.result.winner].rank == 1
        assert standings[final.result.winner].wins == 2  # two series won, however many games
        # every game was played through the lobby
        assert lobby.played == tables_of
        # the series, not each game, is rated: one rated match per series a bot played
        series_of = {
            x.bot_id: sum(1 for p in pairings.pairings if x.bot_id in (p.first, p.second)) for x in bots
        }
        rated = {e.player_id: e.games for e in ops.leaderboard(final_league.rating_family)}
        assert rated == series_of
        rows = pairings_rows(pairings)
        assert {r["series"] for r in rows} <= {"2-0", "0-2", "2-1", "1-2"}
