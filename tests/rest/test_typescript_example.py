"""examples/typescript plays whole matches against a running server, in CI.

The example's client code is generated here from proto/ by buf (protoc-gen-es, with the
protoc image scripts/gen_proto.py writes), type-checked and compiled by tsc, then run twice
against ``truco serve`` on loopback: over gRPC (Connect-ES, gRPC protocol) and over REST/SSE
with fetch. Each run must end with the match finished, as the server confirms. Missing node
or npm is a failure, not a skip; ``npm ci`` prefers the local npm cache and is bounded.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.rest.conftest import ACME_KEY, REPO, Served

pytestmark = pytest.mark.timeout(420)

EXAMPLE = REPO / "examples" / "typescript"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: the TypeScript example needs Node.js and npm", pytrace=False)
    return found


def _run(args: list[str], timeout: float, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=EXAMPLE, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def built_example() -> Path:
    """npm ci, buf generate from proto/, tsc: the compiled example in examples/typescript/dist."""
    npm = _tool("npm")
    lock = EXAMPLE / "package-lock.json"
    marker = EXAMPLE / "node_modules" / ".package-lock.json"
    if not marker.exists() or marker.stat().st_mtime < lock.stat().st_mtime:
        _run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline"], timeout=240)
    image = EXAMPLE / "gen" / "truco.binpb"
    image.parent.mkdir(exist_ok=True)
    _run([sys.executable, str(REPO / "scripts" / "gen_proto.py"), "--image", str(image)], timeout=120)
    shutil.rmtree(EXAMPLE / "src" / "gen", ignore_errors=True)
    shutil.rmtree(EXAMPLE / "dist", ignore_errors=True)
    _run([npm, "run", "--silent", "generate"], timeout=120)  # buf generate gen/truco.binpb
    assert (EXAMPLE / "src" / "gen" / "truco" / "v1" / "match_service_pb.ts").is_file()
    _run([npm, "run", "--silent", "build"], timeout=180)  # tsc: type-checks and compiles
    return EXAMPLE / "dist"


def _play(dist: Path, script: str, env: dict[str, str]) -> dict[str, Any]:
    out = _run([_tool("node"), str(dist / script)], timeout=120, env={"PATH": "/usr/bin:/bin", **env})
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _server_state(served: Served, match_id: str) -> str:
    req = urllib.request.Request(
        f"{served.base}/v1/matches/{match_id}", headers={"Authorization": f"Bearer {ACME_KEY}"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        state: str = json.load(resp)["match"]["state"]
    return state


def test_the_grpc_example_plays_a_match_to_the_end(built_example: Path, served: Served) -> None:
    assert served.grpc_address
    result = _play(
        built_example, "grpc_match.js", {"TRUCO_GRPC": served.grpc_address, "TRUCO_API_KEY": ACME_KEY}
    )
    assert result["transport"] == "grpc"
    assert result["state"] == "MATCH_STATE_FINISHED", result
    assert result["winnerTeam"] in (0, 1), result
    assert max(result["scores"]) >= 12, result  # paulista is played to 12
    assert all(n >= 1 for n in result["actions"]), result  # both seats played
    assert _server_state(served, result["matchId"]) == "MATCH_STATE_FINISHED"


def test_the_rest_example_plays_a_match_to_the_end(built_example: Path, served: Served) -> None:
    result = _play(built_example, "rest_match.js", {"TRUCO_URL": served.base, "TRUCO_API_KEY": ACME_KEY})
    assert result["transport"] == "rest"
    assert result["state"] == "MATCH_STATE_FINISHED", result
    assert result["winnerTeam"] in (0, 1), result
    assert max(result["scores"]) >= 12, result
    assert all(n >= 1 for n in result["actions"]), result
    assert _server_state(served, result["matchId"]) == "MATCH_STATE_FINISHED"
