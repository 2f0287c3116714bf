"""Which build runs (pure Python or the compiled move path), and the refusal to run a compiled
module older than its source (truco_server.core.build; ``make compiled``)."""

from __future__ import annotations

import importlib.machinery
import os
import sys
from pathlib import Path

import pytest

from truco_cli import main as cli
from truco_server.core import build

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def fake_tree(root: Path, monkeypatch: pytest.MonkeyPatch, *, checkout: bool) -> Path:
    """A package ``truco_engine`` under ``root`` with two sources, one of them compiled, and the
    compiled group's shared library (no source of its own)."""
    package = root / "truco_engine"
    (package / "sub").mkdir(parents=True)
    for name in ("engine.py", "sub/moves.py", f"engine{SUFFIX}", f"move_path__mypyc{SUFFIX}"):
        (package / name).write_text("")
    if checkout:
        (root / "setup.py").write_text("")
    monkeypatch.setattr(build, "_roots", lambda name: [package] if name == "truco_engine" else [])
    return package


def age(path: Path, seconds: float) -> None:
    now = path.stat().st_mtime
    os.utime(path, (now - seconds, now - seconds))


def test_a_compiled_module_is_found_beside_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = fake_tree(tmp_path, monkeypatch, checkout=True)
    found = build.extensions()
    assert [(e.module, e.path, e.source) for e in found] == [
        ("truco_engine.engine", package / f"engine{SUFFIX}", package / "engine.py")
    ]
    assert build.describe() == "compiled with mypyc (1 module of the move path)"
    (package / f"engine{SUFFIX}").unlink()
    assert build.describe() == "pure Python"


def test_a_compiled_module_older_than_its_source_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = fake_tree(tmp_path, monkeypatch, checkout=True)
    assert build.stale_extensions() == []
    age(package / f"engine{SUFFIX}", 10)
    stale = build.stale_extensions()
    assert [e.module for e in stale] == ["truco_engine.engine"]
    message = build.stale_message(stale)
    assert message.startswith("compiled modules are older than their source (truco_engine/engine.py)")
    assert "`make compiled`" in message and "`make clean-compiled`" in message


def test_an_installed_package_is_never_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installing a wheel writes its files in any order: only a checkout is checked."""
    package = fake_tree(tmp_path, monkeypatch, checkout=False)
    age(package / f"engine{SUFFIX}", 10)
    assert build.checkout() is None
    assert build.stale_extensions() == []


def test_serve_refuses_stale_compiled_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    package = fake_tree(tmp_path, monkeypatch, checkout=True)
    age(package / f"engine{SUFFIX}", 10)
    assert cli.main(["serve", "--grpc-port", "0", "--http-port", "0", "--metrics-port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "truco serve: compiled modules are older than their source (truco_engine/engine.py)"
    )


def test_the_suite_runs_the_build_it_describes() -> None:
    """What ``describe`` reports is what the interpreter imported; ``make test`` asks for the
    compiled build (``TRUCO_TEST_BUILD=compiled``) and fails here if it did not get it."""
    import truco_server.services.matches  # noqa: F401 (imported for its file)

    compiled = {e.module for e in build.extensions()}
    imported = sys.modules["truco_server.services.matches"].__file__ or ""
    assert ("truco_server.services.matches" in compiled) == imported.endswith(SUFFIX)
    wanted = os.environ.get("TRUCO_TEST_BUILD")
    if wanted == "compiled":
        assert imported.endswith(SUFFIX), f"the compiled build was asked for, {imported} runs"
        assert build.describe().startswith("compiled with mypyc")
    elif wanted == "pure":
        assert not compiled and build.describe() == "pure Python"
