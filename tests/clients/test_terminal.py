"""The terminal client driven through a pseudo-terminal (pexpect), to the end of a match."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

pytestmark = pytest.mark.timeout(240)

TRUCO = str(Path(sys.executable).with_name("truco"))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.mark.parametrize("preset", ["argentine", "paulista-2p"])
def test_play_a_match_in_a_pty(preset: str) -> None:
    child = pexpect.spawn(
        TRUCO,
        ["play", "--preset", preset, "--delay", "0", "--seed", "pty-test", "--bot-seed", "1", "--no-color"],
        env=_env(),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 120),
    )
    moves = 0
    try:
        child.expect("You are seat 0")
        while True:
            i = child.expect([r"\n> ", r"You win!", r"You lose\.", r"Match over\.", pexpect.EOF])
            if i == 0:
                before = child.before
                assert "Your move:" in before and "1) " in before  # numbered legal actions
                child.sendline("1")
                moves += 1
                assert moves < 500
                continue
            if i in (1, 2, 3):
                break
            raise AssertionError(f"terminal client ended early: {child.before}")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=True)
    assert moves > 3
    assert child.exitstatus == 0


def test_play_shows_cards_and_score() -> None:
    child = pexpect.spawn(
        TRUCO,
        ["play", "--preset", "paulista-2p", "--delay", "0", "--seed", "x", "--no-color"],
        env=_env(),
        encoding="utf-8",
        timeout=60,
    )
    try:
        child.expect(r"\n> ")
        screen = child.before
        assert "Score" in screen and "Your cards:" in screen and "┌────┐" in screen
        assert any(s in screen for s in "♣♥♠♦")
        assert "Vira:" in screen
        child.sendline("q")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=True)


def test_demo_fast_runs_to_the_end() -> None:
    out = subprocess.run(
        [TRUCO, "demo", "--fast", "--no-color", "--bots", "rules,random", "--bot-seed", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=True,
    )
    assert "Final score" in out.stdout and "Match won by team" in out.stdout


def test_watch_and_bot_commands(server: object) -> None:
    """`truco bot MODULE:Class` plays a seat and `truco watch` spectates, both as processes."""
    from truco_client import TrucoClient
    from truco_server.embedded import EmbeddedServer

    assert isinstance(server, EmbeddedServer)
    with TrucoClient(server.address) as client:
        m = client.create_match("argentine", seats=["high-card", "rules"])
        bots = [
            subprocess.Popen(
                [TRUCO, "bot", spec, "--server", server.address, "--match", m.match_id, "--token", tok],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(),
            )
            for spec, tok in zip(
                ["truco_client.examples.high_card:HighCardBot", "rules"], m.seat_tokens, strict=True
            )
        ]
        try:
            watch = subprocess.run(
                [
                    TRUCO,
                    "watch",
                    m.match_id,
                    "--server",
                    server.address,
                    "--token",
                    m.spectator_token,
                    "--no-color",
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env=_env(),
                check=True,
            )
            outs = [b.communicate(timeout=60) for b in bots]
        finally:
            for b in bots:
                if b.poll() is None:
                    b.kill()
        assert "Match over." in watch.stdout and "played" in watch.stdout
        assert all(b.returncode == 0 for b in bots), outs
        assert all("over" in o for o, _ in outs)
        assert client.get_match(m.match_id, token=m.spectator_token).match.state == "finished"


def test_bots_eval_command() -> None:
    out = subprocess.run(
        [TRUCO, "bots", "eval", "--pair", "rules:random", "--preset", "argentine", "--matches", "4"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=True,
    )
    assert "| rules vs random | argentine | 4 |" in out.stdout
    assert "4/4 matches" in out.stderr  # progress output
