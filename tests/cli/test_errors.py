"""Every user mistake the `truco` command can meet: one line on stderr, a non-zero exit, no
traceback. The mistakes run the command's ``main`` in-process (fast); the bot and demo runs and
a few mistakes run the installed command as a process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from truco_server.app.embedded import EmbeddedServer
from truco_server.core.config import parse_api_keys

pytestmark = pytest.mark.timeout(120)

TRUCO = str(Path(sys.executable).with_name("truco"))


def truco(*argv: str, timeout: float = 60, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run(
        [TRUCO, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def one_line_error(done: subprocess.CompletedProcess[str] | Done, *fragments: str) -> str:
    assert done.returncode != 0, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


class Done:
    """What an in-process run of ``truco`` left: exit status and output."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> Done:
    from truco_cli.main import main

    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return Done(code, out.out, out.err)


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedServer]:
    """An in-memory worker with an operator key (module-wide: the cases only read it)."""
    srv = EmbeddedServer(api_keys=parse_api_keys("ops=ops-secret")).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_version() -> None:
    done = truco("--version")
    assert done.returncode == 0 and done.stdout.startswith("truco ")


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["play", "--bogus"], ["truco play: unrecognized arguments: --bogus"]),
        (["play", "--players", "x"], ["truco play: argument --players", "invalid int"]),
        (["frobnicate"], ["truco: argument COMMAND: invalid choice"]),
        (["play", "--bot", "alphago"], ["truco play: unknown bot 'alphago'"]),
        (["demo", "--bots", "rules,nosuchmodule:X"], ["truco demo:", "no module named 'nosuchmodule'"]),
        (["bot", "nosuchmodule:X", "--token", "t"], ["truco bot:", "no module named 'nosuchmodule'"]),
        (["bot", "truco_client.examples.high_card:Nope", "--token", "t"], ["has no 'Nope'"]),
        (
            ["bot", "truco_client.observation:Observation", "--token", "t"],
            ["not a subclass of truco_client.Bot"],
        ),
        (["bot", "rules"], ["truco bot: give --token"]),
        (
            ["bot", "rules", "--token", "garbage"],
            ["truco bot: the --token given is not a match credential", "tc1.<match id>.<seat>.<signature>"],
        ),
        (["bots", "eval", "--pair", "rules:alphago", "--preset", "argentine"], ["unknown bot 'alphago'"]),
        (["bots", "eval", "--pair", "rules:random", "--preset", "nosuch"], ["unknown preset 'nosuch'"]),
        (["bots", "eval", "--pair", "rules:random", "--preset", "paulista", "--bot-arg", "x"], ["--bot-arg"]),
        (["play", "--preset", "nosuch"], ["truco play:", "unknown preset 'nosuch'"]),
        (["match", "create", "--server", "127.0.0.1:1", "--timeout", "1"], ["truco match create:"]),
    ],
)
def test_user_mistakes_are_one_line(
    argv: list[str], fragments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    one_line_error(run_main(capsys, *argv), *fragments)


def test_a_mistake_as_a_process_is_one_line_too() -> None:
    one_line_error(truco("play", "--bot", "alphago"), "truco play: unknown bot 'alphago'")
    one_line_error(truco("bot", "nosuchmodule:X", "--token", "t"), "no module named 'nosuchmodule'")


def test_serve_on_a_busy_port_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_main(capsys, "serve", "--grpc-port", str(port), "--http-port", "0", "--metrics-port", "0")
    one_line_error(done, f"truco serve: cannot listen on 127.0.0.1:{port} for gRPC", "--grpc-port")


def test_a_port_left_in_time_wait_by_a_killed_worker_is_not_busy() -> None:
    """A worker SIGKILLed and started again on its port finds the old connections in
    TIME_WAIT; the servers bind through them (SO_REUSEADDR), so the start-up check must too."""
    from truco_cli import serve
    from truco_server.core.config import Settings

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()  # the server's side closes first: its end of the connection is in TIME_WAIT
    listener.close()
    client.close()
    settings = Settings(grpc_port=port, http_port=0, metrics_port=0)
    assert serve._busy_port(settings) is None
    with socket.socket() as busy:  # while something listens on it, it is busy
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", port))
        busy.listen()
        assert f"127.0.0.1:{port}" in (serve._busy_port(settings) or "")


def test_a_bot_of_your_own_in_a_module_that_fails_to_import(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n")
    one_line_error(
        truco("bot", "broken:Bot", "--token", "t", cwd=str(tmp_path)), "importing broken failed", "boom"
    )


def test_match_create_prints_the_id_and_every_token(server: EmbeddedServer) -> None:
    done = truco(
        "match", "create", "--server", server.address, "--api-key", "ops-secret", "--preset", "paulista"
    )
    assert done.returncode == 0, done.stderr
    assert "seat 0 token: tc1." in done.stdout and "seat 1 token: tc1." in done.stdout
    assert "spectator token: tc1." in done.stdout
    as_json = truco(
        "match", "create", "--server", server.address, "--api-key", "ops-secret", "--players", "4", "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    m = json.loads(as_json.stdout)
    assert m["players"] == 4 and len(m["seat_tokens"]) == 4
    assert all(t.startswith(f"tc1.{m['match_id']}.") for t in [*m["seat_tokens"], m["spectator_token"]])


def test_match_create_gives_seats_to_the_computer_and_lets_a_bot_take_over(server: EmbeddedServer) -> None:
    from truco_client.client import TrucoClient

    done = truco(
        "match", "create", "--server", server.address, "--api-key", "ops-secret", "--preset", "argentine",
        "--seat", "ana", "--computer", "2", "--disconnect-grace", "5", "--takeover", "4",
        "--bot-think", "0.5", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    m = json.loads(done.stdout)
    with TrucoClient(server.address, timeout=10) as client:
        info = client.get_match(m["match_id"], token=m["seat_tokens"][0]).match
    assert [(s.display_name, s.kind.value, s.bot_level) for s in info.seats] == [
        ("ana", "human", 0),
        ("computer (level 2)", "bot", 2),
    ]
    lc = info.lifecycle
    assert (lc.takeover, lc.takeover_level, lc.bot_think, lc.disconnect_grace) == (True, 4, 500, 5000)
    shown = truco("match", "create", "--server", server.address, "--api-key", "ops-secret", "--computer", "6")
    assert shown.returncode == 0, shown.stderr
    assert "seat 3: played by the server's bot (level 6)" in shown.stdout  # paulista: 4 seats, the last
    wrong = truco("match", "create", "--server", server.address, "--api-key", "ops-secret", "--computer", "7")
    one_line_error(wrong, "truco match create: --computer 7: the levels are 1 to 6")


def test_match_create_with_a_wrong_key_is_one_line(server: EmbeddedServer) -> None:
    done = truco("match", "create", "--server", server.address, "--api-key", "wrong")
    one_line_error(done, "truco match create: UNAUTHENTICATED")


def test_bot_refuses_a_spectator_token_and_an_operator_key(server: EmbeddedServer) -> None:
    created = truco("match", "create", "--server", server.address, "--api-key", "ops-secret", "--json")
    m = json.loads(created.stdout)
    spectator = truco("bot", "rules", "--server", server.address, "--token", m["spectator_token"], timeout=30)
    one_line_error(spectator, "truco bot: that is the match's spectator token, not a seat's")
    operator = truco(
        "bot",
        "rules",
        "--server",
        server.address,
        "--match",
        m["match_id"],
        "--token",
        "ops-secret",
        timeout=30,
    )
    one_line_error(operator, "truco bot: that is an operator API key, not a seat's")
    no_match = truco("bot", "rules", "--server", server.address, "--token", "ops-secret")
    one_line_error(no_match, "not a match credential", "a seat token looks like tc1.")
    assert "ops-secret" not in no_match.stderr  # a credential is never echoed


def test_bot_shows_progress_and_demo_uses_a_running_server(server: EmbeddedServer) -> None:
    created = truco(
        "match", "create", "--server", server.address, "--api-key", "ops-secret", "--players", "2", "--json"
    )
    m = json.loads(created.stdout)
    env = dict(os.environ, NO_COLOR="1")
    bots = [
        subprocess.Popen(
            [TRUCO, "bot", spec, "--server", server.address, "--token", tok],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for spec, tok in zip(
            ["truco_client.examples.high_card:HighCardBot", "random"], m["seat_tokens"], strict=True
        )
    ]
    try:
        outs = [b.communicate(timeout=90) for b in bots]
    finally:
        for b in bots:
            if b.poll() is None:
                b.kill()
    for b, (out, err) in zip(bots, outs, strict=True):
        assert b.returncode == 0, err
        lines = out.splitlines()
        assert lines[0].startswith(f"match {m['match_id']}: paulista, 2 players")
        assert lines[1].startswith("playing seat ")
        hands = [line for line in lines if line.startswith("hand ")]
        # one line per hand, the last one's too (a match may end in its first hand)
        assert [h.split()[1] for h in hands] == [str(n) for n in range(1, len(hands) + 1)]
        assert lines[-1].startswith(f"match {m['match_id']} over; scores")
        final_scores = lines[-1].split("scores ")[1].split(";")[0]
        assert hands[-1].split("scores ")[1].split(";")[0] == final_scores

    demo = truco(
        "demo",
        "--server",
        server.address,
        "--api-key",
        "ops-secret",
        "--fast",
        "--no-color",
        "--bots",
        "truco_client.examples.high_card:HighCardBot,rules",
        "--bot-seed",
        "2",
        timeout=90,
    )
    assert demo.returncode == 0, demo.stderr
    first = demo.stdout.splitlines()[0]
    assert first.startswith("Demo match ") and f" on {server.address}:" in first
    match_id = first.split()[2]
    assert "Final score" in demo.stdout
    from truco_client import TrucoClient

    with TrucoClient(server.address, api_key="ops-secret") as client:
        assert client.get_match(match_id).match.state == "finished"  # it played on that server


def test_bots_eval_takes_a_bot_of_your_own(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "truco_client.examples.high_card:HighCardBot"
    done = run_main(
        capsys, "bots", "eval", "--pair", f"{spec}:random", "--preset", "paulista-2p", "--matches", "2"
    )
    assert done.returncode == 0, done.stderr
    assert f"| {spec} vs random | paulista-2p | 2 |" in done.stdout
    from truco_bots import split_pair

    assert split_pair("rules:random") == ("rules", "random")
    assert split_pair(f"rules:{spec}") == ("rules", spec)
    assert split_pair(f"{spec}:{spec}") == (spec, spec)
