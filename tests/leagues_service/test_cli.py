"""``truco league``: the walkthrough of docs/leagues.md against a ``truco serve`` worker on a
real ``redis-server``: bot accounts, a league, the lobby (a ``truco league lobby`` child
process), start, follow, standings and results as CSV and JSON, every match's record."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.leagues_service.workers import start_serve
from truco_cli import main as cli
from truco_client.leagues import LeagueClient


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_bot_league_from_nothing_with_the_cli(
    clean_redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve = start_serve(clean_redis_url, tmp_path / "serve.log")
    lobby: subprocess.Popen[bytes] | None = None
    try:
        srv = ("--server", serve.address)
        bots_file = tmp_path / "bots.json"
        code, _, err = run(capsys, "league", "bots", "create", "--count", "4", "-o", str(bots_file), *srv)
        assert code == 0 and "4 bot accounts" in err
        bots = json.loads(bots_file.read_text())
        assert len(bots) == 4 and all(b["token"].startswith("tb1.") for b in bots)
        code, out, err = run(
            capsys, "league", "create", "Friday", "--format", "round_robin", "--preset", "argentine",
            "--set", "target_points=3", "--entrants-from", str(bots_file), "--join-window", "60", *srv,
        )  # fmt: skip
        assert code == 0, err
        league = out.strip()
        assert "round_robin, registration, round 0/3, 4 entrants" in err
        log = (tmp_path / "lobby.log").open("wb")
        env = {k: v for k, v in os.environ.items() if k != "TRUCO_API_KEY"}
        lobby = subprocess.Popen(
            [sys.executable, "-m", "truco_cli.main", "league", "lobby", str(bots_file), "--bot", "rules",
             "--until-finished", league, "--timeout-total", "120", *srv],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        log.close()
        code, out, _ = run(capsys, "league", "start", league, *srv)
        assert code == 0 and "running" in out
        code, out, err = run(
            capsys, "league", "follow", league, "--poll", "0.2", "--timeout-total", "120", *srv
        )
        assert code == 0, err
        assert out.count(" -> ") == 6 and "finished, round 3/3" in out  # six matches, then the table
        code, out, _ = run(capsys, "league", "standings", league, "--format", "csv", *srv)
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [r["rank"] for r in rows] == ["1", "2", "3", "4"]
        assert sum(float(r["score"]) for r in rows) == 6.0  # one point per match
        assert {"buchholz", "sonneborn_berger", "points_difference"} <= set(rows[0])
        name_of = {b["bot_id"]: b["name"] for b in bots}  # a bot entrant shows its account's name
        assert [r["name"] for r in rows] == [name_of[r["entrant"]] for r in rows]
        code, out, _ = run(capsys, "league", "pairings", league, "--format", "json", *srv)
        pairings = json.loads(out)
        assert len(pairings) == 6 and all(p["winner"] for p in pairings)
        assert all(p["first_name"] == name_of[p["first"]] for p in pairings)
        code, out, _ = run(capsys, "league", "results", league, "--format", "csv", *srv)
        matches = list(csv.DictReader(io.StringIO(out)))
        assert len(matches) == 6 and all(m["done"] == "True" for m in matches)
        assert all(m["direction_1_name"] == name_of[m["direction_1"]] for m in matches)
        code, _, err = run(capsys, "league", "trf", league, *srv)
        assert code == 1 and "written for a swiss" in err  # a round robin has no TRF
        code, _, err = run(capsys, "league", "records", league, "--dir", str(tmp_path / "records"), *srv)
        assert code == 0 and "6 match records" in err
        files = sorted((tmp_path / "records").iterdir())
        assert len(files) == 6
        code, out, _ = run(capsys, "verify", "-q", str(files[0]))
        assert code == 0
        code, out, _ = run(capsys, "league", "leaderboard", "argentine-2p", *srv)
        assert code == 0 and len(out.strip().splitlines()) == 5  # a header and the four bots
        code, _, err = run(capsys, "league", "create", "x", "--format", "ladder", *srv)
        assert code == 1 and "unknown format 'ladder'" in err
        assert lobby.wait(30) == 0
        assert "12 seats played by 4 bots" in (tmp_path / "lobby.log").read_text()  # 6 matches, 2 seats each
    finally:
        if lobby is not None and lobby.poll() is None:
            lobby.kill()
            lobby.wait(10)
        serve.kill()


def test_create_takes_a_best_of_n_series(
    clean_redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--best-of N`` makes each pairing a series (League.series_best_of); an even N is
    refused naming the option."""
    from truco_client.leagues import LeagueClient

    serve = start_serve(clean_redis_url, tmp_path / "serve.log")
    try:
        srv = ("--server", serve.address)
        base = (
            "league",
            "create",
            "bo3",
            "--format",
            "single_elimination",
            "--entrant",
            "ana",
            "--entrant",
            "bea",
        )
        code, out, err = run(capsys, *base, "--best-of", "3", *srv)
        assert code == 0, err
        with LeagueClient(serve.address) as ops:
            assert ops.get_league(out.strip()).series_best_of == 3
        code, _, err = run(capsys, *base, "--best-of", "2", *srv)
        assert code == 1 and "series_best_of" in err
    finally:
        serve.kill()


def test_create_takes_an_arena_duration(
    clean_redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format arena --duration 30m`` stores a 30-minute arena (League.arena.duration);
    an arena without a duration is refused naming ``arena.duration``, a bad duration by the
    CLI itself."""
    from truco_client.leagues import LeagueClient

    serve = start_serve(clean_redis_url, tmp_path / "serve.log")
    try:
        srv = ("--server", serve.address)
        base = ("league", "create", "blitz", "--format", "arena", "--entrant", "ana", "--entrant", "bea")
        code, out, err = run(capsys, *base, "--duration", "30m", *srv)
        assert code == 0, err
        assert "arena, registration, wave 0, 1800s, 2 entrants" in err
        with LeagueClient(serve.address) as ops:
            league = ops.get_league(out.strip())
            assert league.arena.duration.ToSeconds() == 1800 and not league.arena.HasField("end_time")
        code, _, err = run(capsys, *base, *srv)
        assert code == 1 and "arena.duration" in err
        with pytest.raises(SystemExit):
            run(capsys, *base, "--duration", "soon", *srv)
        assert "not a duration" in capsys.readouterr().err
    finally:
        serve.kill()


def test_create_with_a_schedule_and_check_in_with_the_cli(
    clean_redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``truco league create --start-time --round-interval --check-in`` stores the schedule;
    ``truco league check-in`` checks entrants in during the window, with the operator's key or
    a bot's own credential, and says why when the league has no window."""
    serve = start_serve(clean_redis_url, tmp_path / "serve.log")
    try:
        srv = ("--server", serve.address)
        bots_file = tmp_path / "bots.json"
        code, _, err = run(capsys, "league", "bots", "create", "--count", "4", "-o", str(bots_file), *srv)
        assert code == 0, err
        bots = json.loads(bots_file.read_text())
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
        code, out, err = run(
            capsys, "league", "create", "Friday", "--format", "round_robin",
            "--entrants-from", str(bots_file), "--start-time", start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "--round-interval", "30",
            "--check-in", "7200", *srv,
        )  # fmt: skip
        assert code == 0, err
        league = out.strip()
        code, out, err = run(capsys, "league", "check-in", league, bots[0]["bot_id"], *srv)
        assert code == 0 and out.strip() == f"{bots[0]['bot_id']} checked in", err
        code, out, err = run(
            capsys, "league", "check-in", league, bots[1]["bot_id"], "--api-key", bots[1]["token"], *srv
        )
        assert code == 0, err
        code, out, err = run(
            capsys, "league", "check-in", league, bots[2]["bot_id"], "--api-key", bots[1]["token"], *srv
        )
        assert code != 0 and "PERMISSION_DENIED" in err  # another bot's credential
        with LeagueClient(serve.address) as ops:
            lg = ops.get_league(league)
        assert lg.schedule.start_time.ToSeconds() == int(start.timestamp())
        assert lg.schedule.round_interval.ToSeconds() == 30 and lg.schedule.check_in.ToSeconds() == 7200
        assert [e.checked_in for e in lg.entrants] == [True, True, False, False]
        code, out, err = run(capsys, "league", "create", "Now", "--format", "round_robin",
                             "--entrants-from", str(bots_file), *srv)  # fmt: skip
        code, _, err = run(capsys, "league", "check-in", out.strip(), bots[0]["bot_id"], *srv)
        assert code != 0 and "FAILED_PRECONDITION" in err and "check-in" in err
        with pytest.raises(SystemExit, match="--start-time takes an ISO 8601 time"):
            run(capsys, "league", "create", "Bad", "--format", "round_robin", "--start-time", "soon", *srv)
    finally:
        serve.kill()
