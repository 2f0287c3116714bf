"""``truco league lobby`` over a league of more than 100 matches writes nothing to stderr.

Each lobby match's bot once ran its own asyncio loop, with its own ``grpc.aio`` channel, on a
thread of its own; a loop closed while grpc's poller still had something for it, and every
such match left an "Exception in callback PollerCompletionQueue._handle_events ...
RuntimeError: Event loop is closed" traceback on stderr (about 760 over 1,150 matches). The
lobby must run its bots without leaking loops or channels and stay silent when nothing is
wrong: its progress lines go to stdout, stderr is for what went wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.leagues_service.workers import start_serve
from truco_client.leagues import LeagueClient
from truco_contract.pb import league_service_pb2

pytestmark = pytest.mark.timeout(420)


def write_bots(path: Path, bots: Sequence[league_service_pb2.BotAccount]) -> None:
    """A bot file for ``truco league lobby`` (as ``truco league bots create -o`` writes)."""
    path.write_text(json.dumps([{"bot_id": b.bot_id, "token": b.token} for b in bots]))


ENTRANTS = 15  # a round robin of 15: 105 matches, in 15 rounds of 7 (one bye each)


def test_the_lobby_is_silent_over_a_league_of_105_matches(clean_redis_url: str, tmp_path: Path) -> None:
    serve = start_serve(clean_redis_url, tmp_path / "serve.log")
    lobby: subprocess.Popen[str] | None = None
    try:
        with LeagueClient(serve.address) as leagues:
            bots = [leagues.create_bot(f"random {i}", max_concurrent=2) for i in range(ENTRANTS)]
            league = leagues.create_league(
                "quiet",
                "round_robin",
                preset="argentine",
                overrides={"target_points": 3},
                entrants=[b.bot_id for b in bots],
                join_window=60,
            )
            bots_file = tmp_path / "bots.json"
            write_bots(bots_file, bots)
            env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_")}
            lobby = subprocess.Popen(
                [sys.executable, "-m", "truco_cli.main", "league", "lobby", str(bots_file), "--bot", "random",
                 "--until-finished", league.league_id, "--timeout-total", "300", "--server", serve.address],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            )  # fmt: skip
            leagues.start(league.league_id)
            try:
                out, err = lobby.communicate(timeout=360)
            except subprocess.TimeoutExpired:  # its --timeout-total must have ended it: say where it was
                lobby.kill()
                out, err = lobby.communicate(timeout=30)
                pytest.fail(
                    f"the lobby outlived its --timeout-total by 60 s; the league: "
                    f"{leagues.get_league(league.league_id)}; stdout: {out[-2000:]}; stderr: {err[-3000:]}; "
                    f"the worker's log: {serve.log.read_text(errors='replace')[-3000:]}"
                )
            finished = leagues.get_league(league.league_id)
            results = leagues.pairings(league.league_id)
        assert lobby.returncode == 0, (out[-2000:], err[-3000:])
        assert err == "", err[-3000:]
        assert "210 seats played by 15 bots" in out, out  # 105 matches, each two bots of the file
        played = [p for p in results.pairings if p.second]
        assert len(played) == 105 and all(p.tables for p in played)
        assert finished.state == league_service_pb2.LEAGUE_STATE_FINISHED
    finally:
        if lobby is not None and lobby.poll() is None:
            lobby.kill()
            lobby.wait(10)
        serve.kill()


def test_the_lobby_gives_up_within_its_total_timeout_on_a_match_under_way(
    clean_redis_url: str, tmp_path: Path
) -> None:
    """``--timeout-total`` bounds the lobby whatever the league does: here its bot's opponent
    never comes to the lobby, so the bot's match waits under way (for the other seat's join)
    when the time is up; the lobby leaves it, naming it, and exits 1 within its bound."""
    serve = start_serve(clean_redis_url, tmp_path / "serve.log")
    try:
        with LeagueClient(serve.address) as leagues:
            present, absent = (leagues.create_bot(name) for name in ("present", "absent"))
            league = leagues.create_league(
                "half", "round_robin", preset="argentine",
                entrants=[present.bot_id, absent.bot_id], join_window=600,
            )  # fmt: skip
            bots_file = tmp_path / "bots.json"
            write_bots(bots_file, [present])
            leagues.start(league.league_id)
            env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_")}
            started = time.monotonic()
            lobby = subprocess.run(
                [sys.executable, "-m", "truco_cli.main", "league", "lobby", str(bots_file), "--bot", "random",
                 "--until-finished", league.league_id, "--timeout-total", "3", "--server", serve.address],
                capture_output=True, text=True, env=env, timeout=120,
            )  # fmt: skip
            took = time.monotonic() - started
            (match_id,) = [t.match_id for p in leagues.pairings(league.league_id).pairings for t in p.tables]
        assert lobby.returncode == 1, (lobby.stdout, lobby.stderr)
        assert f"{present.bot_id}: left 1 match(es) under way: {match_id}" in lobby.stderr, lobby.stderr
        assert f"{league.league_id} not finished after 3 s" in lobby.stderr, lobby.stderr
        assert "seats played" not in lobby.stdout
        # the 3 s, one last look at the league, closing the channels, and the start-up:
        assert took < 3 + 10 + 30, took
    finally:
        serve.kill()


STEADY_BOT = '''
from pathlib import Path

from truco_client import Bot


class Steady(Bot):
    """Plays the first legal action; writes its label and each result to a file."""

    def __init__(self, label: str, out: str) -> None:
        super().__init__()
        self.label, self.out = label, Path(out)

    def choose(self, observation):
        return observation.legal_actions[0]

    def on_match_end(self, observation):
        with self.out.open("a") as f:
            f.write(f"{self.label} seat {observation.seat} scores {list(observation.scores)}\\n")
'''


def test_the_lobby_plays_a_bot_class_of_the_operators_own(clean_redis_url: str, tmp_path: Path) -> None:
    """``--bot MODULE:Class --param NAME=VALUE``, as for ``truco bot``: the lobby builds the
    class of a module of the current directory with those arguments for every match; a class
    that refuses them is a one-line usage error (exit 2) before the lobby starts."""
    (tmp_path / "steady.py").write_text(STEADY_BOT)
    results = tmp_path / "results.txt"
    serve = start_serve(clean_redis_url, tmp_path / "serve.log")
    try:
        with LeagueClient(serve.address) as leagues:
            bots = [leagues.create_bot(name) for name in ("one", "two")]
            league = leagues.create_league(
                "own", "round_robin", preset="argentine", overrides={"target_points": 3},
                entrants=[b.bot_id for b in bots], join_window=60,
            )  # fmt: skip
            bots_file = tmp_path / "bots.json"
            write_bots(bots_file, bots)
            env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_")}
            command = [
                sys.executable,
                "-m",
                "truco_cli.main",
                "league",
                "lobby",
                str(bots_file),
                "--server",
                serve.address,
            ]
            wrong = subprocess.run(
                [*command, "--bot", "steady:Steady", "--param", "label=x"],
                capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
            )  # fmt: skip
            assert wrong.returncode == 2, (wrong.stdout, wrong.stderr)
            assert "steady:Steady(label): " in wrong.stderr and "out" in wrong.stderr, wrong.stderr
            assert len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
            leagues.start(league.league_id)
            lobby = subprocess.run(
                [*command, "--bot", "steady:Steady", "--param", "label=steady", "--param", f"out={results}",
                 "--until-finished", league.league_id, "--timeout-total", "120"],
                capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180,
            )  # fmt: skip
        assert lobby.returncode == 0, (lobby.stdout, lobby.stderr)
        assert "2 steady:Steady bots in the lobby" in lobby.stdout
        assert "2 seats played by 2 bots" in lobby.stdout, lobby.stdout
        lines = results.read_text().splitlines()
        assert sorted(line.split(" scores")[0] for line in lines) == ["steady seat 0", "steady seat 1"], lines
    finally:
        serve.kill()
