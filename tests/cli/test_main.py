"""The `truco` command's parser: one owner, the server's subcommands, the client-only path."""

from __future__ import annotations

import pytest

from truco_cli import main as cli
from truco_cli import optional, serve
from truco_server.core.config import Settings, load_settings


def test_cli_has_serve_replay_bench_and_client_subcommands() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["serve", "--grpc-port", "0", "--metrics-port", "0"])
    assert args.func is serve.run
    s = load_settings(args, {})
    assert (s.grpc_port, s.metrics_port) == (0, 0)
    evaluation = ["bots", "eval", "--pair", "rules:random", "--preset", "argentine"]
    for argv in (["replay", "x.json"], ["bench", "engine"], ["play"], evaluation):
        assert parser.parse_args(argv).func is not None


def test_without_the_server_install_serve_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(optional, "serve", None)
    monkeypatch.setattr(optional, "SERVER_MISSING", "redis: not installed")
    assert cli.main(["serve", "--grpc-port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["truco serve: redis: not installed; " + optional.SERVER_HINT]


def test_the_server_hint_names_an_install_that_works() -> None:
    """No package index has truco-service: the server comes from a checkout."""
    assert "pip install '.[server]'" in optional.SERVER_HINT and "checkout" in optional.SERVER_HINT
    assert "truco-service[server]" not in optional.SERVER_HINT


def test_cli_announces_where_it_listens(capsys: pytest.CaptureFixture[str]) -> None:
    class FakeWorker:
        grpc_address = "127.0.0.1:50051"
        http_port = None
        metrics_port = 9100

    serve._print_listening(Settings(redis_url="redis://:pw@r:6379/0"), FakeWorker())  # type: ignore[arg-type]
    captured = capsys.readouterr()
    out = captured.err  # the banner is for people: stdout carries JSON log lines only
    assert "gRPC listening on 127.0.0.1:50051" in out
    assert "metrics on :9100" in out
    assert "store: redis://:***@r:6379/0" in out
    assert "pw" not in out.replace("***", "")


def test_a_client_command_starts_without_the_server_modules() -> None:
    """``truco match create`` once imported the whole worker (Redis, aiohttp, the league
    formats and networkx) before its first line: 2.5 s of CPU at every start instead of 1."""
    import subprocess
    import sys

    heavy = ("truco_server.app", "truco_server.transports", "truco_server.leagues")
    heavy += ("redis", "aiohttp", "networkx")
    probe = (
        "import sys\n"
        "from truco_cli.main import build_parser\n"
        "build_parser('match').parse_args(['match', 'create'])\n"
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))\n"
    )
    command = [sys.executable, "-c", probe]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout[:500]


def test_the_command_being_run_gets_its_whole_parser() -> None:
    """Only the other commands are built without their server-side arguments."""
    args = cli.build_parser("bench").parse_args(["bench", "service", "--matches", "3"])
    assert args.matches == 3
    assert cli.build_parser("campaign").parse_args(["campaign"]).func is not None
    with pytest.raises(SystemExit):
        cli.build_parser("match").parse_args(["bench", "service", "--matches", "3"])
