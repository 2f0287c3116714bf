"""A client-only install (``pip install .`` in a checkout, no extras) in a clean virtualenv has
the engine, the contract, the SDK, the bots and the client side of ``truco``, and none of
the server's runtime (Redis, aiohttp, structlog, prometheus-client); it plays a whole match
against a server started separately (from this checkout's full install)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.serve import listening

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(900)

PLAY = """
import sys, threading
from truco_bots import RulesBot
from truco_client import TrucoClient
from truco_client.runner import run_bot

address = sys.argv[1]
with TrucoClient(address) as client:
    m = client.create_match("argentine", players=2, seats=[("a", "bot"), ("b", "bot")])
    finals = {}
    def play(seat):
        token = m.seat_tokens[seat]
        finals[seat] = run_bot(RulesBot(seed=seat), address, m.match_id, token, log=lambda _m: None)
    threads = [threading.Thread(target=play, args=(s,)) for s in range(2)]
    for t in threads: t.start()
    for t in threads: t.join(300)
    final = finals[0]
    print("over", final.is_over, "winner", final.winner_team, "scores", list(final.scores))
    info = client.get_match(m.match_id, token=m.spectator_token).match
    print("state", info.state)
"""


def _source_copy(target: Path) -> Path:
    """What a source distribution holds (pyproject, the build hook, README, the package
    folders; not the checkout's compiled modules), copied so that building the wheel leaves
    nothing in the checkout."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = project["tool"]["setuptools"]["packages"]["find"]
    # the "." root's packages are the top-level folders its include patterns name
    top = [p.rstrip("*") for p in find["include"] if (ROOT / p.rstrip("*")).is_dir()]
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.so")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    for folder in [w for w in find["where"] if w != "."] + top:
        shutil.copytree(ROOT / folder, target / folder, ignore=ignore)
    return target


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("client-only") / "venv"
    source = _source_copy(tmp_path_factory.mktemp("source"))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run([*pip, str(source)], capture_output=True, text=True, timeout=800, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``truco serve`` from this checkout's full install (in-memory store), on free ports."""
    log = (tmp_path / "serve.log").open("wb")
    cmd = [sys.executable, "-m", "truco_cli.main", "serve", "--grpc-port", "0", "--http-port", "0"]
    cmd += ["--metrics-port", "0"]
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "TRUCO_API_KEYS")}
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 30
        found = None
        while found is None and time.monotonic() < deadline and proc.poll() is None:
            found = listening((tmp_path / "serve.log").read_text(errors="replace"))
            time.sleep(0.05)
        assert found is not None, (tmp_path / "serve.log").read_text(errors="replace")
        yield found[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def _run(venv: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


SERVER_ONLY = ["redis", "aiohttp", "structlog", "prometheus_client", "truco_server.services.matches"]


@pytest.mark.parametrize("module", SERVER_ONLY)
def test_the_server_runtime_is_not_installed(client_venv: Path, module: str) -> None:
    done = _run(client_venv, "-c", f"import {module}")
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr


def test_the_client_parts_import(client_venv: Path) -> None:
    done = _run(
        client_venv,
        "-c",
        "import truco_engine, truco_contract.codec, truco_client, truco_bots, truco_cli.main",
    )
    assert done.returncode == 0, done.stderr


def test_truco_serve_says_how_to_get_the_server(client_venv: Path) -> None:
    done = subprocess.run(
        [str(client_venv / "bin" / "truco"), "serve"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install '.[server]'" in lines[0], done.stderr  # works in a checkout


def test_a_client_only_install_plays_a_match_against_a_separate_server(
    client_venv: Path, server: str
) -> None:
    done = _run(client_venv, "-c", PLAY, server)
    assert done.returncode == 0, done.stderr[-3000:]
    over, state = done.stdout.strip().splitlines()
    assert over.startswith("over True winner ") and state == "state finished", done.stdout
