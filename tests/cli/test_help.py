"""``--help`` of every ``truco`` command, walked from the parser itself: each renders and exits 0.

The walk reads the argparse tree (`build_parser()`), so a subcommand added later is covered
without touching this file."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from truco_cli import main as cli
from truco_cli import optional


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path under `parser` (the top level included), depth first."""
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands(child, (*path, name))


ALL = sorted(commands(cli.build_parser()))


def command(path: tuple[str, ...]) -> argparse.ArgumentParser:
    """The parser of one command path."""
    parser = cli.build_parser()
    for name in path:
        parser = next(a.choices[name] for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser


def test_the_walk_finds_the_nested_commands() -> None:
    """The walk itself is checked: it reaches sub-subcommands, not only the first level."""
    assert {("serve",), ("match", "create"), ("bots", "eval"), ("league", "bots", "create")} <= set(ALL)
    assert len(ALL) > 25


def run_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main([*path, "--help"])
    out = capsys.readouterr()
    assert exc.value.code in (0, None), out.err
    assert out.err == ""
    return out.out


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "truco")
def test_help_renders_and_exits_0(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    out = run_help(path, capsys)
    assert out.startswith("usage: " + " ".join(("truco", *path))), out[:200]


def test_serve_help_shows_the_webhook_retry_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    """The option whose help once held a bare ``%`` (argparse read it as a format code)."""
    out = run_help(("serve",), capsys)
    assert "--webhook-retry-schedule" in out and "jitter" in out


def test_help_renders_in_a_client_only_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(optional, "serve", None)
    monkeypatch.setattr(optional, "campaign", None)
    monkeypatch.setattr(optional, "SERVER_MISSING", "redis: not installed")
    for path in commands(cli.build_parser()):
        run_help(path, capsys)


def test_every_argument_has_a_help_text() -> None:
    """`truco demo --help` once listed --preset, --players and --bot-seed with no word."""
    missing = []
    for path in ALL:
        parser = command(path)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            if not (action.help or "").strip():
                missing.append(f"truco {' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


def test_every_server_option_defaults_to_the_local_server() -> None:
    """Every command that talks to a server defaults to the address `truco serve` listens on,
    but for play and demo, which start a server of their own without --server."""
    own_server = {("play",), ("demo",)}
    seen = set()
    for path in ALL:
        parser = command(path)
        for action in parser._actions:
            if "--server" in action.option_strings:
                seen.add(path)
                expected = None if path in own_server else "127.0.0.1:50051"
                assert (action.default, action.required) == (expected, False), path
    assert {("watch",), ("bot",), ("match", "create"), ("league", "lobby")} <= seen


def test_a_percent_sign_in_a_setting_doc_is_shown_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flags of `truco serve` take their help from the settings' docstrings, which argparse
    reads as format strings: a '%' in one is shown as written."""
    pytest.importorskip("truco_server")
    from truco_server.core import config

    docs = config._field_docs()
    name = next(opt.name for opt in config.OPTIONS if opt.flag is not None)
    monkeypatch.setattr(config, "_field_docs", lambda: {**docs, name: "up 10 % (or 100%s)"})
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    assert "up 10 % (or 100%s)" in " ".join(parser.format_help().split())
