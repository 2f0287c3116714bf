"""An arena end to end: two ``truco serve`` workers on one real ``redis-server``, built-in
bots through the bot lobby, the operator over REST and gRPC (the SDK). A 30-second arena of
eight bots (a ninth registered after the start), matches to 3 points."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

import requests

from tests.leagues_service.test_control import league_events, walkthrough
from tests.leagues_service.workers import Lobby, make_bots, two_workers
from truco_client.leagues import LeagueClient
from truco_server.leagues import Pairing, arena_scores
from truco_tools.league_arena import CREATE_GRACE

DURATION = 30.0
LEAGUE_TIMEOUT = 240.0


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _matches(http: str) -> dict[str, tuple[float, float]]:
    """Every match of the (open-mode) operator: its creation and last commit times."""
    out: dict[str, tuple[float, float]] = {}
    token = ""
    while True:
        got = requests.get(f"{http}/v1/matches", params={"pageToken": token, "pageSize": 100}, timeout=30)
        assert got.status_code == 200, got.text
        body = got.json()
        for m in body.get("matches", []):
            out[m["matchId"]] = (_ts(m["createTime"]), _ts(m["updateTime"]))
        token = body.get("nextPageToken", "")
        if not token:
            return out


def test_an_arena_of_bots_over_the_api_on_two_workers(clean_redis_url: str, tmp_path: Path) -> None:
    """Every entrant plays (the late one too), nobody is in two matches at once, nothing is
    paired after the end time, the league finishes once the last match is over, the
    standings are the arena scores of the results, and each match is created and rated
    once."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 9)
        body = {
            "name": "blitz arena", "format": "arena", "arena": {"duration": f"{DURATION:g}s"},
            "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
            "settings": {"joinWindow": "60s"},
            "entrants": [{"entrantId": x.bot_id} for x in bots[:8]],
        }  # fmt: skip
        resp = requests.post(f"{b.http}/v1/leagues", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        league = resp.json()["league"]
        assert league["format"] == "arena" and league["arena"] == {"duration": "30s"}
        lid = league["leagueId"]
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            started = ops.start(lid)
            assert started.arena.HasField("end_time")
            end = started.arena.end_time.ToNanoseconds() / 1e9
            assert abs(end - time.time() - DURATION) < 5
            late = requests.post(
                f"{a.http}/v1/leagues/{lid}/entrants",
                json={"entrant": {"entrantId": bots[8].bot_id}},
                timeout=30,
            )
            assert late.status_code == 200, late.text
            final = ops.wait_finished(lid, LEAGUE_TIMEOUT)
            assert time.time() >= end  # it finished after its time, not before
        finally:
            lobby.close()
        assert not lobby.errors
        # the league events on the feed (read from the other worker): started with its end
        # time, one round.paired per wave in order, finished; at least once and in order
        # (docs/leagues.md, "League events": a consumer dedupes by id)
        delivered = league_events(b.address, lid, lambda got: any(e.type == "league.finished" for e in got))
        numbers = [int(e.id.rsplit(":e", 1)[1]) for e in delivered]
        assert numbers == sorted(numbers)  # in order, a redelivery right after its first
        events = [e for i, e in enumerate(delivered) if i == 0 or numbers[i] != numbers[i - 1]]
        assert [e.id for e in events] == [f"{lid}:e{i}" for i in range(1, len(events) + 1)]
        assert events[0].type == "league.started" and abs(float(events[0].labels["ends_at"]) - end) < 0.001
        assert events[-1].type == "league.finished" and {e.type for e in events[1:-1]} == {"round.paired"}
        pairings = ops.pairings(lid).pairings
        assert final.current_round == max(p.round for p in pairings) >= 2  # several waves
        waves = [e for e in events if e.type == "round.paired"]
        assert [int(e.labels["round"]) for e in waves] == list(range(1, final.current_round + 1))
        assert [int(e.labels["pairings"]) for e in waves] == [
            sum(1 for p in pairings if p.round == w) for w in range(1, final.current_round + 1)
        ]
        entrants = [x.bot_id for x in bots]
        tables_of = {e: 0 for e in entrants}
        for p in pairings:
            assert p.second and p.result.winner in (p.first, p.second, "")  # no byes in an arena
            (t,) = p.tables
            assert t.done and t.match_id and list(t.sides) == [p.first, p.second]
            tables_of[p.first] += 1
            tables_of[p.second] += 1
        assert all(n >= 1 for n in tables_of.values()), tables_of  # every entrant played
        assert lobby.played == tables_of  # every match played through the lobby
        # every match created once; none after the end time unless its wave was paired just
        # before it (pairing and creating are two steps of the job: CREATE_GRACE); nobody in
        # two at once
        times = _matches(a.http)
        match_ids = [p.tables[0].match_id for p in pairings]
        assert sorted(times) == sorted(match_ids)
        paired_at = {
            int(e.labels["round"]): e.time.ToNanoseconds() / 1e9 for e in events if e.type == "round.paired"
        }
        for p in pairings:
            created = times[p.tables[0].match_id][0]
            assert created < end or paired_at[p.round] >= end - CREATE_GRACE, (p.round, created - end)
        for e in entrants:
            mine = sorted(times[p.tables[0].match_id] for p in pairings if e in (p.first, p.second))
            for (_, ended), (created, _) in itertools.pairwise(mine):
                assert ended <= created, e
        # the standings (REST) are the arena scores of the results
        body = requests.get(f"{b.http}/v1/leagues/{lid}/standings", timeout=30).json()
        assert body["tieBreaks"] == ["points_difference"] == list(final.tie_breaks)
        got = body["standings"]
        assert all(
            s.get("tieBreaks", [0])[0] == s.get("pointsFor", 0) - s.get("pointsAgainst", 0) for s in got
        )
        results = [
            Pairing(p.round, p.table, p.first, p.second).result(
                p.result.winner or None, (p.result.first_points, p.result.second_points), p.result.forfeit
            )
            for p in pairings
        ]
        scores = arena_scores(entrants, results)
        assert {s["entrantId"]: s.get("score", 0) for s in got} == {e: scores[e].score for e in entrants}
        ordered = [s.get("score", 0) for s in got]
        assert ordered == sorted(ordered, reverse=True)
        assert [s["rank"] for s in got] == list(range(1, 10))
        # each decided match rated once
        rated = {e.player_id: e.games for e in ops.leaderboard(final.rating_family)}
        decided = {e: 0 for e in entrants}
        for p in pairings:
            if p.result.winner and not p.result.forfeit:
                decided[p.first] += 1
                decided[p.second] += 1
        assert {e: n for e, n in rated.items()} == {e: n for e, n in decided.items() if n}


def test_the_arena_walkthrough_of_the_docs(clean_redis_url: str, tmp_path: Path) -> None:
    """docs/leagues.md, "Arena": its curl walk-through, run as written: several waves in its
    10 seconds, then finished with four standings lines whose scores are arena points."""
    assert shutil.which("curl") and shutil.which("jq"), "the walk-through needs curl and jq"
    with two_workers(clean_redis_url, tmp_path, rest=True) as (_a, b):
        env = {**os.environ, "BASE": b.http, "KEY": "any (open mode)"}
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", walkthrough("arena")],
            env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    lines = done.stdout.splitlines()
    assert _ts(lines[0]) > 0  # the end time
    assert int(lines[1]) >= 2, lines  # waves
    standings = [line.split() for line in lines[2:]]
    assert [r[0] for r in standings] == ["1", "2", "3", "4"]
    assert {r[1] for r in standings} == {"ana", "bea", "cas", "dan"}
    scores = [int(float(r[2])) for r in standings]
    assert scores == sorted(scores, reverse=True) and scores[0] >= 2 and all(x % 2 == 0 for x in scores)
