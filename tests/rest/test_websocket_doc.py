"""docs/api.md's browser block for the WebSocket player connection runs as it stands in
Debian's headless chromium (driven by playwright-core, as tests/rest/test_browser.py does):
on a page of the server's origin it opens ``/v1/connect`` with the JSON subprotocol,
subscribes both seats of a match created over REST and plays them to the end. Missing
chromium or node is a failure, not a skip."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.rest.conftest import ACME_KEY, REPO, Served
from tests.rest.test_browser import BROWSER_DIR, CHROMIUM, _node, _rest

pytestmark = pytest.mark.timeout(300)

DOC = REPO / "docs" / "api.md"
MARKER = "<!-- tests/rest/test_websocket_doc.py runs this block in chromium as it stands -->"


def documented_block() -> str:
    text = DOC.read_text()
    assert text.count(MARKER) == 1, f"{DOC.name}: the marker {MARKER!r} must appear once"
    found = re.search(re.escape(MARKER) + r"\n```js\n(.*?)\n```", text, re.S)
    assert found is not None, f"{DOC.name}: no ```js block right after {MARKER!r}"
    return found.group(1) + "\n"


def _run_block(served: Served, tmp_path: Path, match_id: str, tokens: list[str]) -> dict[str, Any]:
    node = _node()
    snippet = tmp_path / "snippet.js"
    snippet.write_text(documented_block())
    env = {
        **os.environ,
        "BASE": served.base,
        "MATCH_ID": match_id,
        "TOKENS": json.dumps(tokens),
        "SNIPPET": str(snippet),
        "CHROMIUM": CHROMIUM,
    }
    done = subprocess.run(
        [node, "run_snippet.mjs"], cwd=BROWSER_DIR, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("preset", ["paulista", "argentine"])
def test_the_documented_browser_block_plays_a_match_over_websocket(
    served: Served, tmp_path: Path, preset: str
) -> None:
    body = {"requestId": str(uuid.uuid4()), "rules": {"preset": preset}, "players": 2}
    created = _rest(served, "POST", "/v1/matches", ACME_KEY, body)
    match_id = created["match"]["matchId"]
    tokens = [c["token"] for c in created["seatCredentials"]]
    out = _run_block(served, tmp_path, match_id, tokens)
    assert out["problems"] == [], out
    result = out["result"]
    assert result["ended"] == 2, result  # both subscriptions ended: the match is over
    for status in result["errors"]:  # a refusal (two seats awaited at once) comes typed
        assert status["code"] and status["message"] and status["details"], status
    match = _rest(served, "GET", f"/v1/matches/{match_id}", ACME_KEY)["match"]
    assert match["state"] == "MATCH_STATE_FINISHED", match
    assert int(match["version"]) > 10, match
