"""Groups then knockout end to end: two ``truco serve`` workers on one real ``redis-server``,
built-in bots through the bot lobby, the operator over REST and gRPC (the SDK). Matches are
short (argentine to 3 points)."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import requests

from tests.leagues_service.workers import Lobby, every_match, make_bots, two_workers
from truco_client.errors import TrucoApiError
from truco_client.leagues import LeagueClient
from truco_contract.leagues import group_standings_rows

LEAGUE_TIMEOUT = 300.0


def test_eight_bots_in_two_groups_of_four_then_a_knockout_over_the_api(
    clean_redis_url: str, tmp_path: Path
) -> None:
    """Eight bots, two groups of four (snake seeding), the top two of each to a knockout
    with a match for third place, created over REST: three group rounds of four tables, the
    semi-finals pair each group's winner with the other group's runner-up, the standings
    show both group tables and the final ranking, every table has one match, played once
    through the lobby, and a group result can no longer be corrected once the knockout is
    paired."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 8)
        ids = [x.bot_id for x in bots]
        with pytest.raises(TrucoApiError) as err:  # a group stage needs the format (gRPC)
            ops.create_league("no", "swiss", rounds=3, entrants=ids, groups=2)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "group_stage" in str(err.value)
        body = {
            "name": "cup", "format": "groups_knockout", "thirdPlace": True,
            "groupStage": {"groups": 2, "advance": 2},
            "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
            "settings": {"joinWindow": "60s"},
            "entrants": [{"entrantId": x} for x in ids],
        }  # fmt: skip
        resp = requests.post(f"{b.http}/v1/leagues", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        league = resp.json()["league"]
        assert (
            league["groupStage"] == {"groups": 2, "advance": 2, "doubleRoundRobin": False}
            and league["totalRounds"] == 5
        )
        lid = league["leagueId"]
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            ops.start(lid)
            final_league = ops.wait_finished(lid, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        assert final_league.group_stage.groups == 2 and final_league.group_stage.advance == 2
        pairings = ops.pairings(lid).pairings
        # snake seeding: seeds 1, 4, 5, 8 in group A; 2, 3, 6, 7 in group B
        group_a, group_b = {ids[i] for i in (0, 3, 4, 7)}, {ids[i] for i in (1, 2, 5, 6)}
        for r in (1, 2, 3):
            tables = [p for p in pairings if p.round == r]
            assert [p.label for p in tables] == ["A", "A", "B", "B"]
            for p in tables:
                assert {p.first, p.second} <= (group_a if p.label == "A" else group_b)
        standings = ops.standings(lid)
        tables_ = {g.label: [s.entrant_id for s in g.standings] for g in standings.groups}
        assert set(tables_["A"]) == group_a and set(tables_["B"]) == group_b
        semis = {frozenset((p.first, p.second)) for p in pairings if p.round == 4}
        assert semis == {
            frozenset((tables_["A"][0], tables_["B"][1])),
            frozenset((tables_["B"][0], tables_["A"][1])),
        }
        last = [p for p in pairings if p.round == 5]
        assert [p.label for p in last] == ["W2.1", "3P"]
        ranks = {s.entrant_id: s.rank for s in standings.standings}
        final, third = last
        assert ranks[final.result.winner] == 1 and ranks[third.result.winner] == 3
        out_in_groups = {x for t in tables_.values() for x in t[2:]}
        assert sorted(ranks[x] for x in out_in_groups) == [5, 5, 7, 7]
        rows = group_standings_rows(standings)
        assert [r["group"] for r in rows] == ["A"] * 4 + ["B"] * 4
        # every table has its match, created once and played once through the lobby
        keys = [t for p in pairings for t in p.tables]
        assert all(t.match_id and t.done for t in keys) and len(keys) == 4 * 3 + 2 + 2
        assert len({t.match_id for t in keys}) == len(keys) == len(every_match(a.address))
        assert sum(lobby.played.values()) == 2 * len(keys)
        # the knockout is seeded from the groups: their results are final now (REST)
        g1 = next(p for p in pairings if p.round == 1)
        url = f"{a.http}/v1/leagues/{lid}/pairings/1/{g1.table}:correct"
        resp = requests.post(url, json={"winner": g1.second, "reason": "late report"}, timeout=30)
        assert resp.status_code == 400 and "group-stage result" in resp.text, resp.text
