"""League options end to end: two ``truco serve`` workers on one real ``redis-server``, built-in
bots through the bot lobby, the operator over gRPC (the SDK) and REST. Matches are short
(argentine to 3 points) so a league takes seconds."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest
import requests

from tests.leagues_service.workers import Lobby, make_bots, two_workers
from truco_client.errors import TrucoApiError
from truco_client.leagues import LeagueClient

LEAGUE_TIMEOUT = 240.0


def test_a_third_place_match_over_the_api(clean_redis_url: str, tmp_path: Path) -> None:
    """A knockout of five bots with a match for third place, created over REST: round 3 has
    the final and the match for third, and the standings place all five apart."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 5)
        # only a single elimination has one (gRPC)
        with pytest.raises(TrucoApiError) as err:
            ops.create_league("no", "swiss", rounds=2, entrants=[x.bot_id for x in bots], third_place=True)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "third_place" in str(err.value)
        body = {
            "name": "cup", "format": "single_elimination", "thirdPlace": True,
            "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
            "settings": {"joinWindow": "60s"},
            "entrants": [{"entrantId": x.bot_id} for x in bots],
        }  # fmt: skip
        resp = requests.post(f"{b.http}/v1/leagues", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        league = resp.json()["league"]
        assert league["thirdPlace"] is True and league["totalRounds"] == 3
        lid = league["leagueId"]
        assert ops.get_league(lid).third_place
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            ops.start(lid)
            ops.wait_finished(lid, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        pairings = ops.pairings(lid).pairings
        semis = [p for p in pairings if p.round == 2]
        last = [p for p in pairings if p.round == 3]
        assert [p.label for p in last] == ["W3.1", "3P"]
        final, third = last
        losers = {p.second if p.result.winner == p.first else p.first for p in semis}
        assert {final.first, final.second} == {p.result.winner for p in semis}
        assert {third.first, third.second} == losers  # the semi-finals' losers
        assert all(t.match_id and t.done for p in last for t in p.tables)  # both were played
        places = {s.entrant_id: s.rank for s in ops.standings(lid).standings}
        assert sorted(places.values()) == [1, 2, 3, 4, 5]
        assert places[final.result.winner] == 1
        assert places[third.result.winner] == 3
        assert places[third.first if third.result.winner == third.second else third.second] == 4


def test_a_late_entrant_and_a_withdrawal_over_the_api(clean_redis_url: str, tmp_path: Path) -> None:
    """A Swiss of six bots: after round 1 is paired a seventh registers over REST and the
    sixth withdraws over gRPC. The late one gets one bye for round 1 (Lichess's rule) and is
    paired from round 2; the withdrawn one keeps its round-1 result and is never paired
    again; six are left, so nobody has a bye in rounds 2 to 4."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 7)
        late, gone = bots[6].bot_id, bots[5].bot_id
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            lg = ops.create_league(
                "late swiss", "swiss", overrides={"target_points": 3}, rounds=4,
                entrants=[x.bot_id for x in bots[:6]], join_window=60,
            )  # fmt: skip
            lid = lg.league_id
            ops.start(lid)
            deadline = time.monotonic() + 60
            while ops.get_league(lid).current_round < 1:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            ops.pause(lid)
            resp = requests.post(
                f"{b.http}/v1/leagues/{lid}/entrants", json={"entrant": {"entrantId": late}}, timeout=30
            )
            assert resp.status_code == 200, resp.text
            got = {e["entrantId"]: e for e in resp.json()["league"]["entrants"]}
            assert got[late]["joinedRound"] == 2
            ops.withdraw(lid, gone)
            ops.resume(lid)
            ops.wait_finished(lid, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        pairings = ops.pairings(lid).pairings
        (bye,) = [p for p in pairings if p.first == late and not p.second]
        assert (bye.round, bye.label, bye.result.winner) == (1, "late entry", late)
        assert bye.table == 1 + max(p.table for p in pairings if p.round == 1 and p.first != late)
        for r in (2, 3, 4):
            rnd = [p for p in pairings if p.round == r]
            seated = [e for p in rnd for e in (p.first, p.second) if e]
            assert sorted(seated) == sorted(x.bot_id for x in bots if x.bot_id != gone)
            assert all(p.second for p in rnd)  # no bye: six left
        (kept,) = [p for p in pairings if gone in (p.first, p.second)]
        assert kept.round == 1 and kept.HasField("result")
        standings = {s.entrant_id: s for s in ops.standings(lid).standings}
        wins = sum(1 for p in pairings if p.second and p.result.winner == late)
        assert standings[late].byes == 1 and standings[late].score == 1 + wins
        assert standings[gone].played == 1 and standings[gone].byes == 0
