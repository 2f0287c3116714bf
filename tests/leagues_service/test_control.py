"""The operator's manual control over the API, end to end: two ``truco serve`` workers on
one real ``redis-server``, each control called over gRPC (the SDK, on worker a) and over
REST/JSON (on worker b): forbidden pairs, the operator's own pairings and byes of a round,
result corrections (recorded, standings and ratings recomputed), the rating policy.

The entrants are the operator's own players; their matches are ended by AdjudicateMatch,
so the league's own work is what is tested and it takes seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests

from tests.leagues_service.workers import two_workers
from truco_client import TrucoClient
from truco_client.errors import TrucoApiError
from truco_client.leagues import LeagueClient
from truco_contract.pb import league_service_pb2 as lpb
from truco_contract.pb import operator_service_pb2, operator_service_pb2_grpc
from truco_server.leagues import RatedMatch, RatingBook, ranks_from_winner

ENTRANTS = [f"e{i}" for i in range(1, 9)]


def wait_for(what: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return got


def rest(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    resp = requests.request(method, base + path, json=body, timeout=30)
    return resp.status_code, resp.json()


def fields(err: dict[str, Any]) -> list[str]:
    """The fields a REST error's details name."""
    return [v["field"] for d in err["details"] for v in d.get("fieldViolations", [])]


def end_round(ops: LeagueClient, address: str, league_id: str, round_no: int) -> None:
    """End every match of the round: the first entrant of each pairing wins."""

    def created() -> list[Any]:
        got = ops.pairings(league_id, round_no).pairings
        return got if all(t.match_id for p in got for t in p.tables) else []

    pairings = wait_for(created)  # a round's matches are created just after it is paired
    with TrucoClient(address, api_key="any (open mode)") as c:
        for p in pairings:
            for t in p.tables:
                c.adjudicate_match(t.match_id, 0 if t.sides[0] == p.first else 1, "the test")


def round_paired(ops: LeagueClient, league_id: str, round_no: int) -> Callable[[], bool]:
    return lambda: ops.get_league(league_id).current_round >= round_no


def book_of(pairings: lpb.ListPairingsResponse, family: str) -> RatingBook:
    """The rating book the league's matches make, in the order they were played, from the
    results as the league now holds them."""
    book = RatingBook()
    for p in sorted(pairings.pairings, key=lambda p: (p.round, p.table)):
        if p.second and p.result.winner:
            (t,) = p.tables
            sides = ((t.sides[0],), (t.sides[1],))
            book.apply(
                RatedMatch(
                    t.match_id, family, sides, ranks_from_winner(sides, list(t.sides).index(p.result.winner))
                )
            )
    return book


def test_forbidden_pairs_round_pairings_and_corrections(clean_redis_url: str, tmp_path: Path) -> None:
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        lg = ops.create_league(
            "controlled", "swiss", overrides={"target_points": 3}, rounds=3, entrants=ENTRANTS
        )
        lid = lg.league_id
        # forbidden pairs: over gRPC, then replaced over REST (round 1 would pair e1-e5, e6-e2...)
        lg = ops.set_forbidden_pairs(lid, [("e1", "e5")])
        assert [(p.first, p.second) for p in lg.forbidden_pairs] == [("e1", "e5")]
        two = {"pairs": [{"first": "e1", "second": "e5"}, {"first": "e2", "second": "e6"}]}
        status, got = rest(b.http, "POST", f"/v1/leagues/{lid}/forbiddenPairs:set", two)
        assert status == 200, got
        assert [(p["first"], p["second"]) for p in got["league"]["forbiddenPairs"]] == [
            ("e1", "e5"),
            ("e2", "e6"),
        ]
        # round 1: the operator pairs e8 v e1 (e8 mano) over gRPC and gives e3 a bye over REST
        ops.set_round_pairings(lid, 1, pairs=[("e8", "e1")])
        status, got = rest(b.http, "POST", f"/v1/leagues/{lid}/rounds/1:setPairings",
                           {"pairs": [{"first": "e8", "second": "e1"}], "byes": ["e3"]})  # fmt: skip
        assert status == 200 and got["league"]["roundPairings"][0]["byes"] == ["e3"], got
        ops.start(lid)
        wait_for(round_paired(ops, lid, 1))
        r1 = ops.pairings(lid, 1).pairings
        assert (r1[0].first, r1[0].second) == ("e8", "e1")
        assert [p.first for p in r1 if not p.second] == ["e3", "e7"]  # the operator's bye, then the system's
        paired = {frozenset((p.first, p.second)) for p in r1 if p.second}
        assert not paired & {frozenset(("e1", "e5")), frozenset(("e2", "e6"))}
        assert sorted(e for p in r1 for e in (p.first, p.second) if e) == sorted(ENTRANTS)
        assert not ops.get_league(lid).round_pairings  # used up once paired
        # a paired round takes no more pairings; a knockout takes none at all
        status, err = rest(b.http, "POST", f"/v1/leagues/{lid}/rounds/1:setPairings", {"byes": ["e4"]})
        assert status == 400 and err["details"][0]["reason"] == "LEAGUE_STATE", err
        ko = ops.create_league("ko", "single_elimination", entrants=ENTRANTS[:4])
        with pytest.raises(TrucoApiError) as failed:
            ops.set_forbidden_pairs(ko.league_id, [("e1", "e2")])
        assert (
            failed.value.code == grpc.StatusCode.INVALID_ARGUMENT and "fixed schedule" in failed.value.message
        )
        end_round(ops, a.address, lid, 1)
        wait_for(round_paired(ops, lid, 2))
        family = ops.get_league(lid).rating_family
        # correct round 1 table 1 (e8 won) to e1 over REST, with a reason
        fix = {"winner": "e1", "firstPoints": 0, "secondPoints": 3, "reason": "scoring slip"}
        status, got = rest(b.http, "POST", f"/v1/leagues/{lid}/pairings/1/1:correct", fix)
        assert status == 200, got
        pairing = got["pairing"]
        assert pairing["result"]["winner"] == "e1"
        (c,) = pairing["corrections"]
        assert (
            c["reason"] == "scoring slip" and c["before"]["winner"] == "e8" and c["after"]["winner"] == "e1"
        )
        score = {s.entrant_id: s.score for s in ops.standings(lid).standings}
        assert (score["e1"], score["e8"]) == (1.0, 0.0)  # the standings follow at once

        # the rating book is rated again as if e1 had won from the start (the job does it)
        def book_matches() -> bool:
            board = {e.player_id: (e.mu, e.sigma, e.games) for e in ops.leaderboard(family, 100)}
            want = book_of(ops.pairings(lid), family)
            expected = {p: (r.mu, r.sigma, r.games) for p in board for r in [want.rating(family, p)]}
            return len(board) == 6 and board == expected

        wait_for(book_matches)
        # a second correction, over gRPC, back to e8: two corrections on record
        back = ops.correct_result(lid, 1, 1, "e8", (3, 0), reason="the slip was not one")
        assert back.result.winner == "e8" and [x.reason for x in back.corrections] == [
            "scoring slip",
            "the slip was not one",
        ]
        wait_for(book_matches)
        # errors: a bye has no result to correct; a winner who did not play
        bye_table = next(p.table for p in r1 if not p.second)
        with pytest.raises(TrucoApiError) as failed:
            ops.correct_result(lid, 1, bye_table, "e3")
        assert (
            failed.value.code == grpc.StatusCode.FAILED_PRECONDITION and failed.value.reason == "LEAGUE_STATE"
        )
        status, err = rest(b.http, "POST", f"/v1/leagues/{lid}/pairings/1/1:correct", {"winner": "e2"})
        assert status == 400 and "did not play" in err["message"], err
        status, got = rest(b.http, "GET", f"/v1/leagues/{lid}", None)
        assert status == 200 and got["league"]["ratingPolicy"]["count"] == ["played", "adjudicated"]


def test_an_unrated_league_rates_nothing(clean_redis_url: str, tmp_path: Path) -> None:
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        status, got = rest(b.http, "POST", "/v1/leagues", {
            "name": "friendly", "format": "round_robin", "rules": {"preset": "argentine"},
            "entrants": [{"entrantId": "u1"}, {"entrantId": "u2"}], "ratingPolicy": {"unrated": True},
        })  # fmt: skip
        assert status == 200 and got["league"]["ratingPolicy"]["unrated"], got
        lid = got["league"]["leagueId"]
        only_played = ops.create_league(
            "played only", "round_robin", entrants=["p1", "p2"], rated_endings=["played"]
        )
        status, err = rest(b.http, "POST", "/v1/leagues", {
            "name": "bad", "format": "round_robin", "rules": {"preset": "argentine"},
            "ratingPolicy": {"count": ["played", "luck"]},
        })  # fmt: skip
        assert status == 400 and fields(err) == ["rating_policy.count[1]"], err
        for league_id in (lid, only_played.league_id):
            ops.start(league_id)
            wait_for(round_paired(ops, league_id, 1))
            end_round(ops, a.address, league_id, 1)  # adjudicated: not "played"
            wait_for(lambda league_id=league_id: ops.get_league(league_id).state == lpb.LEAGUE_STATE_FINISHED)
        players = {e.player_id for e in ops.leaderboard("argentine-2p", 100)}
        assert not players & {"u1", "u2", "p1", "p2"}


def walkthrough(name: str) -> str:
    """The ``sh`` block of docs/leagues.md after ``<!-- walkthrough: NAME -->``."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "leagues.md").read_text()
    after = text.split(f"<!-- walkthrough: {name} -->\n```sh\n", 1)[1]
    return after.split("\n```\n", 1)[0]


def test_the_walkthrough_of_the_docs(clean_redis_url: str, tmp_path: Path) -> None:
    """docs/leagues.md, "Manual control": its curl walk-through, run as written."""
    assert shutil.which("curl") and shutil.which("jq"), "the walk-through needs curl and jq"
    with two_workers(clean_redis_url, tmp_path, rest=True) as (_a, b):
        env = {**os.environ, "BASE": b.http, "KEY": "any (open mode)"}
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", walkthrough("control")],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    lines = done.stdout.splitlines()
    assert lines[0] == "1 fer v ana"
    paired = [line.split()[1::2] for line in lines[:4] if " v " in line]
    assert not any(set(p) == {"ana", "bea"} for p in paired)  # the forbidden pair
    assert '{"reason":"score card signed by both","before":"fer","after":"ana"}' in lines
    standings = [line.split() for line in lines[-6:]]
    score = {entrant: float(points) for _rank, entrant, points in standings}
    assert len(score) == 6 and (score["ana"], score["fer"]) == (1.0, 0.0), lines


def league_events(address: str, league_id: str, until: Callable[[list[Any]], bool]) -> list[Any]:
    """The operator's feed, read from its start on ``address`` (gRPC), until ``until`` holds
    for the events of ``league_id``: those events, each with its id, type and labels."""
    got: list[Any] = []
    with grpc.insecure_channel(address) as ch:
        call = operator_service_pb2_grpc.OperatorServiceStub(ch).StreamOperatorEvents(
            operator_service_pb2.StreamOperatorEventsRequest(from_cursor="0-0"), timeout=120
        )
        for msg in call:
            if msg.HasField("event") and msg.event.labels.get("league") == league_id:
                if not msg.event.type.startswith("match."):  # the league's own, not its matches'
                    got.append(msg.event)
                if until(got):
                    call.cancel()
                    return got
    raise AssertionError(f"the feed ended first: {[e.type for e in got]}")


def test_league_events_arrive_once_each_in_order(clean_redis_url: str, tmp_path: Path) -> None:
    """league.started, round.paired, entrant.forfeited (nobody joins: every match a double
    no-show), league.finished, result.corrected: on the operator's feed (read from the other
    worker), in order, each once, with their labels; none carries a match event."""
    with two_workers(clean_redis_url, tmp_path) as (a, b), LeagueClient(a.address) as ops:
        lg = ops.create_league(
            "no shows",
            "swiss",
            overrides={"target_points": 3},
            rounds=2,
            entrants=ENTRANTS[:4],
            join_window=1,
        )
        lid = lg.league_id
        ops.start(lid)
        wait_for(lambda: ops.get_league(lid).state == lpb.LEAGUE_STATE_FINISHED, timeout=120)
        ops.correct_result(lid, 1, 1, ops.pairings(lid, 1).pairings[0].first, (3, 0), reason="walked over")
        events = league_events(b.address, lid, lambda got: any(e.type == "result.corrected" for e in got))
    kinds = [e.type for e in events]
    assert kinds == [
        "league.started",
        "round.paired", *["entrant.forfeited"] * 4,
        "round.paired", *["entrant.forfeited"] * 4,
        "league.finished", "result.corrected",
    ], kinds  # fmt: skip
    assert [e.id for e in events] == [f"{lid}:e{i}" for i in range(1, len(events) + 1)]  # once each
    assert [e.labels.get("round") for e in events if e.type == "round.paired"] == ["1", "2"]
    forfeited = [(e.labels["round"], e.labels["entrant"]) for e in events if e.type == "entrant.forfeited"]
    assert sorted(forfeited) == sorted((r, e) for r in ("1", "2") for e in ENTRANTS[:4])
    assert all(e.match_id for e in events if e.type == "entrant.forfeited")
    assert events[0].labels["entrants"] == "4" and not any(e.HasField("event") for e in events)
    assert events[-1].labels["reason"] == "walked over"


def test_a_league_starts_at_its_start_time_and_pauses_between_rounds(
    clean_redis_url: str, tmp_path: Path
) -> None:
    """A round robin of four created over REST with a start time 2 s ahead and 3 s between
    rounds: nobody calls StartLeague, yet it starts then (league.started no earlier); round 2
    is paired no earlier than 3 s after round 1's last result; an interval over 7 days is
    refused."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        start = time.time() + 2
        at = datetime.fromtimestamp(start, UTC).isoformat().replace("+00:00", "Z")
        status, got = rest(b.http, "POST", "/v1/leagues", {
            "name": "scheduled", "format": "round_robin",
            "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
            "entrants": [{"entrantId": e} for e in ENTRANTS[:4]],
            "schedule": {"startTime": at, "roundInterval": "3s"},
        })  # fmt: skip
        assert status == 200 and got["league"]["schedule"]["roundInterval"] == "3s", got
        lid = got["league"]["leagueId"]
        assert ops.get_league(lid).state == lpb.LEAGUE_STATE_REGISTRATION
        wait_for(round_paired(ops, lid, 1))
        end_round(ops, a.address, lid, 1)
        ended = time.time()  # round 1's matches all ended before this
        wait_for(round_paired(ops, lid, 2))
        events = league_events(b.address, lid, lambda got: [e.type for e in got].count("round.paired") == 2)
        too_long = {"name": "x", "format": "round_robin", "schedule": {"roundInterval": "700000s"}}
        status, err = rest(b.http, "POST", "/v1/leagues", too_long | {"rules": {"preset": "argentine"}})
        assert status == 400 and fields(err) == ["schedule.round_interval"], err
    started, paired = events[0], [e for e in events if e.type == "round.paired"]
    assert started.type == "league.started" and started.time.ToNanoseconds() / 1e9 >= start - 0.001
    # the job sees the last result after that match ended, before `ended` at the earliest
    assert paired[1].time.ToNanoseconds() / 1e9 >= ended - 0.5 + 3
