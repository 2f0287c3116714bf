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
from truco_contract.leagues import entrant_names, pairings_rows, results_rows, standings_rows
from truco_contract.pb import league_service_pb2 as lpb

LEAGUE_TIMEOUT = 240.0

TrfRound = tuple[int, str, str]
"""A round of a TRF player line: the opponent's starting number (0: none), colour, result."""


def read_trf(text: str) -> tuple[dict[str, str], dict[int, tuple[str, float, int, list[TrfRound]]]]:
    """The header lines (by code) and the player lines (by starting number: name, points,
    rank, rounds) of a TRF-16 file, read by the columns of FIDE's layout."""
    header: dict[str, str] = {}
    players: dict[int, tuple[str, float, int, list[TrfRound]]] = {}
    for line in text.split("\r\n"):
        if line.startswith("001"):
            rounds = []
            for col in range(91, len(line), 10):  # column 92, 1-based, then every 10
                block = line[col : col + 8].ljust(8)
                rounds.append((int(block[0:4]), block[5], block[7]))
            players[int(line[4:8])] = (line[14:47].rstrip(), float(line[80:84]), int(line[85:89]), rounds)
        elif line:
            header[line[:3]] = line[4:]
    return header, players


def check_trf(
    text: str, league: lpb.League, standings: lpb.GetStandingsResponse, pairings: lpb.ListPairingsResponse
) -> None:
    """Every round of every player line is the league's own pairing and result."""
    header, players = read_trf(text)
    entrants = sorted(league.entrants, key=lambda e: e.seed)
    assert header["012"] == league.name and header["062"] == str(len(entrants)) and header["092"]
    assert len(header["042"]) == 10 and header["042"][4] == header["042"][7] == "/"
    number = {e.entrant_id: i for i, e in enumerate(entrants, 1)}
    assert sorted(players) == list(range(1, len(entrants) + 1))
    rounds = league.current_round
    seen: set[tuple[int, int]] = set()
    for p in pairings.pairings:
        sides = [x for x in (p.first, p.second) if x]
        for me in sides:
            got = players[number[me]][3][p.round - 1]
            seen.add((number[me], p.round))
            if len(sides) == 1:
                assert got == (0, "-", "F" if p.label == "late entry" else "U"), (me, p.round, got)
                continue
            other = p.second if me == p.first else p.first
            won = p.result.winner == me
            code = (
                ("+" if won else "-")
                if p.result.forfeit
                else "1"
                if won
                else "="
                if not p.result.winner
                else "0"
            )
            assert got == (number[other], "-", code), (me, p.round, got)
    for start, (_, _, _, blocks) in players.items():
        assert len(blocks) == rounds
        for r, block in enumerate(blocks, 1):
            if (start, r) not in seen:
                assert block == (0, "-", "Z")  # not in that round: before joining, after withdrawing
    for s in standings.standings:
        name, points, rank, _ = players[number[s.entrant_id]]
        e = entrants[number[s.entrant_id] - 1]
        assert (name, points, rank) == ((e.display_name or e.entrant_id)[:33], s.score, s.rank)


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
        # the FIDE TRF export shows the late bye (F) and the rounds not played (Z)
        trf = ops.export_trf(lid)
        check_trf(trf, ops.get_league(lid), ops.standings(lid), ops.pairings(lid))
        _, players = read_trf(trf)
        assert players[6][3][0][0] > 0 and [blk[2] for blk in players[6][3][1:]] == ["Z", "Z", "Z"]
        assert players[7][3][0] == (0, "-", "F")


def test_exports_with_display_names_and_a_fide_trf(clean_redis_url: str, tmp_path: Path) -> None:
    """A Swiss of five bots, three rounds (a bye each round), one entrant with a display name of
    the operator's, the others with their bot account's name: the CSV/JSON rows carry the names
    beside the ids, and the FIDE TRF export, read back column by column, is the league's own
    pairings and results round by round."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 5)
        entrants = [lpb.Entrant(entrant_id=bots[0].bot_id, display_name="Ana María Pérez")]
        entrants += [lpb.Entrant(entrant_id=x.bot_id) for x in bots[1:]]
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            lg = ops.create_league(
                "club swiss", "swiss", overrides={"target_points": 3}, rounds=3, entrants=entrants,
                join_window=60,
            )  # fmt: skip
            ops.start(lg.league_id)
            league = ops.wait_finished(lg.league_id, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        names = entrant_names(league)
        assert names == {bots[0].bot_id: "Ana María Pérez"} | {x.bot_id: x.name for x in bots[1:]}
        status = requests.get(f"{b.http}/v1/leagues/{lg.league_id}", timeout=30).json()
        assert {e["entrantId"]: e["displayName"] for e in status["league"]["entrants"]} == names
        standings, pairings = ops.standings(lg.league_id), ops.pairings(lg.league_id)
        for row in standings_rows(standings, names):
            assert row["name"] == names[row["entrant"]]
        for row in pairings_rows(pairings, names):
            assert row["first_name"] == names[row["first"]]
            assert row["second_name"] == (names[row["second"]] if row["second"] != "(bye)" else "")
        for row in results_rows(pairings, names):
            assert (row["direction_0_name"], row["direction_1_name"]) == (
                names[row["direction_0"]], names[row["direction_1"]],
            )  # fmt: skip
        trf = ops.export_trf(lg.league_id)
        check_trf(trf, league, standings, pairings)
        _, players = read_trf(trf)
        assert players[1][0] == "Ana María Pérez"
        assert sum(1 for p in players.values() for blk in p[3] if blk[2] == "U") == 3  # one bye a round
        # a knockout has no TRF
        ko = ops.create_league("ko", "single_elimination", entrants=[x.bot_id for x in bots[:2]])
        with pytest.raises(ValueError, match="swiss"):
            ops.export_trf(ko.league_id)


def _round_one(ops: LeagueClient, league_id: str) -> None:
    deadline = time.monotonic() + 60
    while ops.get_league(league_id).current_round < 1:
        assert time.monotonic() < deadline, "round 1 was never paired"
        time.sleep(0.1)


def test_the_late_entry_bye_option_over_the_api(clean_redis_url: str, tmp_path: Path) -> None:
    """late_entry_bye "half" (REST): the late entrant's round-1 bye has no winner, scores half
    a point and is written H in the TRF; "none" (gRPC): no bye, no point; an unknown value is
    INVALID_ARGUMENT."""
    players = ["ana", "bea", "cas", "dan"]
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        with pytest.raises(TrucoApiError) as err:
            ops.create_league("no", "swiss", rounds=3, entrants=players, late_entry_bye="quarter")
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "late_entry_bye" in str(err.value)
        body = {
            "name": "half", "format": "swiss", "rounds": 3, "lateEntryBye": "half",
            "rules": {"preset": "argentine"}, "entrants": [{"entrantId": x} for x in players],
        }  # fmt: skip
        resp = requests.post(f"{b.http}/v1/leagues", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        half = resp.json()["league"]
        assert half["lateEntryBye"] == "half"
        none = ops.create_league("none", "swiss", rounds=3, entrants=players, late_entry_bye="none")
        assert none.late_entry_bye == "none"
        assert ops.create_league("full", "swiss", rounds=3, entrants=players).late_entry_bye == "full"
        for lid in (half["leagueId"], none.league_id):
            ops.start(lid)
            _round_one(ops, lid)
        url = f"{b.http}/v1/leagues/{half['leagueId']}/entrants"
        resp = requests.post(url, json={"entrant": {"entrantId": "late"}}, timeout=30)
        assert resp.status_code == 200, resp.text
        ops.register(none.league_id, "late")
        (bye,) = [p for p in ops.pairings(half["leagueId"], 1).pairings if "late" in (p.first, p.second)]
        assert bye.label == "late entry" and not bye.second and not bye.result.winner
        scores = {s.entrant_id: s for s in ops.standings(half["leagueId"]).standings}
        assert (scores["late"].score, scores["late"].byes) == (0.5, 1)
        trf = ops.export_trf(half["leagueId"]).splitlines()
        (line,) = [x for x in trf if x.startswith("001") and x[14:47].strip() == "late"]
        assert line[91:99] == "0000 - H"
        assert not [p for p in ops.pairings(none.league_id).pairings if "late" in (p.first, p.second)]
        scores = {s.entrant_id: s for s in ops.standings(none.league_id).standings}
        assert (scores["late"].score, scores["late"].byes) == (0.0, 0)
