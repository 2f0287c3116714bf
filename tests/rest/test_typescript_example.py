"""examples/typescript plays whole matches against a running server, in CI, by the steps its
documentation gives.

docs/clients.md shows the steps in one ``sh`` block marked with a comment naming this file.
The test runs that block as it stands (one ``bash -e`` script) in a copy of the checkout's
``examples/typescript``, ``scripts`` and ``proto`` whose ``.venv`` is made as ``make serve``
makes it: a fresh venv with the project and its server extra only (uv, from its warm cache),
so no dev tool and no folder the block does not create itself is there to hide a missing
step. The server is ``truco serve`` on loopback; its addresses and operator key reach the
programs through the environment variables the block names (``TRUCO_GRPC``, ``TRUCO_URL``,
``TRUCO_API_KEY``). Each program must print a finished match, as the server confirms. Missing
node, npm or uv is a failure, not a skip; npm is told to prefer its local cache.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.rest.conftest import ACME_KEY, REPO, Served

pytestmark = pytest.mark.timeout(600)

DOC = REPO / "docs" / "clients.md"
MARKER = "<!-- tests/rest/test_typescript_example.py runs this block as it stands -->"


def documented_steps() -> str:
    """The ``sh`` block right after the marker in docs/clients.md."""
    text = DOC.read_text()
    assert text.count(MARKER) == 1, f"{DOC.name}: the marker {MARKER!r} must appear once"
    found = re.search(re.escape(MARKER) + r"\n```sh\n(.*?)\n```", text, re.S)
    assert found is not None, f"{DOC.name}: no ```sh block right after {MARKER!r}"
    return found.group(1) + "\n"


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed: the TypeScript example test needs it", pytrace=False)
    return found


def _run(args: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def checkout_like_make_serve(root: Path) -> Path:
    """``root`` laid out like the parts of a clone the steps use, with ``.venv`` as ``make
    serve`` makes it (``uv pip install -e '.[server]'`` into a venv without pip)."""
    shutil.copytree(
        REPO / "examples" / "typescript",
        root / "examples" / "typescript",
        ignore=shutil.ignore_patterns("node_modules", "dist", "gen"),
    )
    shutil.copytree(REPO / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "proto", root / "proto")
    venv = root / ".venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root, timeout=120)
    python = venv / "bin" / "python"
    _run([_tool("uv"), "pip", "install", "--python", str(python), "-q", "-e", f"{REPO}[server]"], REPO, 240)
    probe = "import importlib.util as u; print(u.find_spec('grpc_tools'))"
    assert _run([str(python), "-c", probe], root, 60).strip() == "None", "dev tools in a server install"
    return root


def _server_state(served: Served, match_id: str) -> str:
    req = urllib.request.Request(
        f"{served.base}/v1/matches/{match_id}", headers={"Authorization": f"Bearer {ACME_KEY}"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        state: str = json.load(resp)["match"]["state"]
    return state


def test_the_marked_block_holds_every_step() -> None:
    steps = documented_steps()
    for step in ("npm ci", "scripts/proto_image.py gen/truco.binpb", "npm run generate", "npm run build"):
        assert step in steps, steps
    assert "npm run grpc" in steps and "npm run rest" in steps and "npm run ws" in steps


def test_the_documented_steps_play_a_match_over_grpc_rest_and_websocket(
    tmp_path: Path, served: Served
) -> None:
    _tool("node")
    _tool("npm")
    root = checkout_like_make_serve(tmp_path / "clone")
    assert served.grpc_address
    env = {
        **os.environ,
        "TRUCO_GRPC": served.grpc_address,
        "TRUCO_URL": served.base,
        "TRUCO_API_KEY": ACME_KEY,
        "npm_config_prefer_offline": "true",
        "npm_config_audit": "false",
        "npm_config_fund": "false",
    }
    env.pop("VIRTUAL_ENV", None)
    out = _run(["bash", "-e", "-c", documented_steps()], cwd=root, timeout=480, env=env)
    assert (root / "examples" / "typescript" / "gen" / "truco.binpb").is_file()
    results: dict[str, dict[str, Any]] = {}
    for line in out.splitlines():
        if line.startswith("{") and '"transport"' in line:
            result = json.loads(line)
            results[result["transport"]] = result
    assert set(results) == {"grpc", "rest", "websocket"}, out[-3000:]
    for result in results.values():
        assert result["state"] == "MATCH_STATE_FINISHED", result
        assert result["winnerTeam"] in (0, 1), result
        assert max(result["scores"]) >= 12, result  # paulista is played to 12
        assert all(n >= 1 for n in result["actions"]), result  # both seats played
        assert _server_state(served, result["matchId"]) == "MATCH_STATE_FINISHED"
