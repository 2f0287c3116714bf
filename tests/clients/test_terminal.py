"""The terminal client driven through a pseudo-terminal (pexpect), to the end of a match."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

pytestmark = pytest.mark.timeout(240)

TRUCO = str(Path(sys.executable).with_name("truco"))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _pty(command: str, args: list[str], **options: Any) -> pexpect.spawn:
    """``command`` on a pseudo-terminal, started as a user's shell starts it: with SIGINT at its
    default. A test run started in the background by a script (``make test &``) inherits SIGINT
    ignored, and a Python started that way installs no KeyboardInterrupt handler, so without
    this the Ctrl-C tests would test the launcher, not the client."""
    return pexpect.spawn(
        command,
        args,
        env=_env(),
        encoding="utf-8",
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        **options,
    )


@pytest.mark.parametrize("preset", ["argentine", "paulista-2p"])
def test_play_a_match_in_a_pty(preset: str) -> None:
    child = _pty(
        TRUCO,
        ["play", "--preset", preset, "--delay", "0", "--seed", "pty-test", "--bot-seed", "1", "--no-color"],
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
                # numbered legal actions (on turn, or a truco out of turn while a bot thinks)
                assert ("Your move:" in before or "While you wait, you may:" in before) and "1) " in before
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
    child = _pty(
        TRUCO, ["play", "--preset", "paulista-2p", "--delay", "0", "--seed", "x", "--no-color"], timeout=60
    )
    try:
        child.expect(r"\n> ")
        screen = child.before
        assert "Score" in screen and "Your cards:" in screen and "┌─────┐" in screen
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
    from truco_server.app.embedded import EmbeddedServer

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
            )
            outs = [b.communicate(timeout=60) for b in bots]
        finally:
            for b in bots:
                if b.poll() is None:
                    b.kill()
        assert watch.returncode == 0, (watch.stdout[-2000:], watch.stderr[-2000:], outs)
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


def _prompt(child: pexpect.spawn) -> str:
    child.expect(r"\n> ")
    return str(child.before)


def _spawn(*argv: str) -> pexpect.spawn:
    return _pty(TRUCO, ["play", "--delay", "0", "--no-color", *argv], timeout=60, dimensions=(50, 120))


def test_parse_choice_takes_numbers_card_codes_and_words() -> None:
    from truco_client import actions as A
    from truco_client.terminal import parse_choice

    legal = [A.play("7e"), A.play("7e", face_down=True), A.play("12c"), A.truco(), A.accept(), A.fold()]
    assert parse_choice("3", legal) == A.play("12c")
    assert parse_choice("7e", legal) == A.play("7e")
    assert parse_choice("7E", legal) == A.play("7e")
    assert parse_choice("play 7e", legal) == A.play("7e")
    assert parse_choice("  play   12c ", legal) == A.play("12c")
    assert parse_choice("7e down", legal) == A.play("7e", face_down=True)
    assert parse_choice("truco", legal) == A.truco()
    assert parse_choice("quiero", legal) == A.accept()
    assert parse_choice("mazo", legal) == A.fold()
    for wrong in ("", "0", "7", "1b", "play", "envido", "xyz"):
        assert parse_choice(wrong, legal) is None, wrong


def test_the_hand_marks_its_top_cards_and_shows_the_suit_legend() -> None:
    """Every observation of a local match: the starred cards are exactly the hand's cards that
    outrank every plain card, and the legend spells the deck's suit letters."""
    import random

    import truco_engine as te
    from truco_bots import RandomBot
    from truco_client.local import play_local_match
    from truco_client.table_text import Names, Style, render, top_cards

    seen = {"manilha": 0, "top card": 0}
    for preset in ("paulista-2p", "argentine"):
        rules = te.get_rules(preset)

        def check(seat: int, obs: object, _events: object, rules: te.RuleSet = rules) -> None:
            from truco_client.observation import Observation

            assert isinstance(obs, Observation)
            if not obs.my_cards or obs.is_over:
                return
            marks = top_cards(obs)
            strengths = obs.strengths()
            assert set(marks) == {c for c in obs.my_cards if strengths[c] >= 100}
            text = render(obs, Names(["a", "b"], seat), Style(False))
            legend = "e ⚔ espadas" if rules.deck != te.Deck.FRENCH40 else "C ♣ clubs"
            assert f"Suits: {legend}" in text
            for card, word in marks.items():
                seen[word] += 1
                assert f"{card}" in text and f"★ {word}:" in text

        play_local_match([RandomBot(seed=1), RandomBot(seed=2)], rules, random.Random(7), on_update=check)
    assert seen["manilha"] > 0 and seen["top card"] > 0


ROOT = Path(__file__).resolve().parents[2]
TRUCO_AT_ONCE = "tests.clients.scripted_bots:TrucoAtOnce"  # a bot of our own, found from ROOT
PLAY = re.compile(r"\d+\) play (\w+?)[♣♥♠♦]")


def _spawn_against_truco_at_once(seed: str) -> pexpect.spawn:
    argv = ["play", "--delay", "0", "--no-color", "--preset", "paulista-2p", "--seed", seed]
    argv += ["--bot-seed", "1", "--bot", TRUCO_AT_ONCE]
    return _pty(TRUCO, argv, timeout=60, dimensions=(50, 120), cwd=str(ROOT))


class ScriptedHuman:
    """Seat 0 of ``truco play --preset paulista-2p`` against :class:`TrucoAtOnce`, reading the
    screen as a person does and answering only the prompts no move of the bot can make stale:
    the bot's truco (it waits for our answer: we accept) and, once its truco of the hand was
    accepted, a card in our own turn (it can no longer raise, and it is not its turn). At every
    other prompt a move of the bot is due (its truco, in or out of its turn, or its card), so
    nothing is typed: the client must draw the table again by itself, with the moves legal
    then. Any "not sent", "not played" or "refused" line means a move was sent, or nearly sent,
    on a table the client no longer showed."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.hand = 0
        self.called = False  # the bot called truco in this hand
        self.waits = self.answers = self.cards = 0

    def read(self, pattern: str, timeout: float = 30) -> str:
        self.child.expect(pattern, timeout=timeout)
        screen = str(self.child.before)
        for stale in ("not sent", "not played", "refused"):
            assert stale not in screen, screen[-3000:]
        for line in screen.splitlines():
            hand = re.search(r"— Hand (\d+)", line)
            if hand is not None:
                self.hand, self.called = int(hand.group(1)), False
            elif "-bot 1: TRUCO!" in line:
                self.called = True
        return screen

    def card_turn(self) -> str:
        """Answer (or wait) until a prompt to play a card in our own turn; that table."""
        while True:
            screen = self.read(r"\n> ")
            assert "Match over" not in screen, screen[-2000:]
            table = screen[screen.rfind("══ Truco") :]
            if "Pending: TRUCO by" in table:
                self.child.sendline("quiero")
                self.answers += 1
            elif "Waiting for" in table or not self.called:
                self.waits += 1  # the bot moves next: the table must move without us
            else:
                assert "Your move:" in table and PLAY.search(table), table
                return table

    def play(self, code: str, typed: str | None = None) -> None:
        self.child.sendline(typed or code)
        self.read(f"You played {re.escape(code)}")
        self.cards += 1


def test_paulista_table_follows_the_bots_and_no_move_is_sent_stale() -> None:
    """Paulista lets truco be called out of turn, so the player is at the prompt nearly all the
    time. The table must be drawn again whenever the stream moves (a bot's card, a bot's truco
    out of turn), with the moves legal then, and no move may go out on an older version."""
    child = _spawn_against_truco_at_once("stale")
    human = ScriptedHuman(child)
    try:
        while True:
            table = human.card_turn()
            if human.hand >= 4:
                break
            match = PLAY.search(table)
            assert match is not None
            human.play(match.group(1))
        child.sendline("q")
        child.expect("Bye.")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=True)
    assert human.answers >= 3 and human.cards >= 3, vars(human)
    assert human.waits >= 3, vars(human)  # the table moved by itself at least that often
    assert child.exitstatus == 0


@pytest.mark.parametrize("form", ["code", "play code"])
def test_play_takes_a_card_code(form: str) -> None:
    child = _spawn_against_truco_at_once("codes")
    human = ScriptedHuman(child)
    try:
        table = human.card_turn()
        assert "Suits: C ♣ clubs, H ♥ hearts, S ♠ spades, D ♦ diamonds" in table
        child.sendline("nonsense")
        human.read("is not one of the moves above")
        match = PLAY.search(table)
        assert match is not None
        code = match.group(1)
        human.play(code, code if form == "code" else f"play {code}")
        child.sendline("q")
        child.expect("Bye.")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=False)
    assert child.exitstatus == 0
    assert "Traceback" not in str(child.before)


@pytest.mark.parametrize("how", ["q", "eof", "ctrl-c"])
def test_play_exits_cleanly(how: str) -> None:
    """q, end of input and Ctrl-C at the prompt end the client with status 0 and no traceback
    (from the main thread or the bots' threads), while the bots are still playing."""
    child = _spawn("--preset", "argentine", "--seed", "exit", "--bot", "random,rules", "--players", "4")
    try:
        _prompt(child)
        if how == "q":
            child.sendline("q")
        elif how == "eof":
            child.sendeof()
        else:
            child.sendintr()
        child.expect(pexpect.EOF, timeout=90)  # the in-process server's shutdown, on a loaded machine
        rest = str(child.before)
    finally:
        child.close(force=False)
    assert "Bye." in rest
    assert "Traceback" not in rest and "Exception in thread" not in rest
    assert child.exitstatus == 0, rest


READ_LINE_CHILD = """
import signal, threading, time
from truco_client.terminal import read_line
read = read_line

def poke() -> None:  # a SIGINT handled by another thread: the main thread's read is not interrupted
    time.sleep(0.3)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)

print("typed:", read("> "), flush=True)  # a line typed at the prompt comes back without its newline
threading.Thread(target=poke).start()
try:
    read("> ")
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_at_the_prompt_interrupts_the_read_whichever_thread_takes_the_signal() -> None:
    """The prompt's read ends on a SIGINT even when the signal is handled outside the read:
    by another thread (the bots' or gRPC's, as here) or just before the read begins. ``input``
    waits on in both cases (the client then ignored Ctrl-C: seen under load)."""
    child = _pty(sys.executable, ["-c", READ_LINE_CHILD], timeout=30)
    try:
        child.expect("> ")
        child.sendline("play 7e")
        child.expect(r"typed: play 7e\r\n")
        child.expect("> ")
        assert child.expect(["interrupted", pexpect.TIMEOUT], timeout=10) == 0
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_a_line_read_after_the_stream_moved_is_not_sent(server: object) -> None:
    """Where the prompt's read cannot be woken (a pipe, not POSIX: ``input``), a line can come
    back after the stream moved: it is not submitted; the new table is drawn and asked again."""
    import io
    import select

    from truco_client import TrucoClient
    from truco_client import actions as A
    from truco_client.table_text import Names, Style
    from truco_client.terminal import human_loop

    assert hasattr(server, "address")
    with TrucoClient(server.address) as client:
        m = client.create_match("paulista-2p", seed=b"s" * 32)
        bot = client.with_token(m.seat_tokens[1])
        lines: list[str] = []
        before = bot.get_match(m.match_id).observation.version

        def read(prompt: str, wake: int | None) -> str:
            if lines:  # the second prompt: leave
                return "q"
            # Seat 1 calls truco (in its turn or out of it: paulista allows both), then the
            # player's line comes back only once the stream brought that call.
            bot.submit_action(m.match_id, A.truco(), expected_version=before)
            assert wake is not None and select.select([wake], [], [], 10)[0], "no wake"
            lines.append("1")
            return "1"

        out = io.StringIO()
        final = human_loop(
            client.with_token(m.seat_tokens[0]),
            m.match_id,
            Names(["me", "bot"], 0),
            Style(False),
            read=read,
            out=out,
        )
        text = out.getvalue()
        assert final is None
        assert "'1' not sent: the table changed" in text, text
        assert text.index("not sent") < text.rindex("Pending: TRUCO by bot"), text  # drawn again after
        after = bot.get_match(m.match_id).observation
        assert after.version == before + 1 and after.pending is not None  # nothing from seat 0
