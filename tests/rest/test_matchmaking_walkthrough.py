"""docs/matchmaking.md's curl walk-through, run as it is written (bash, curl, jq) against
``truco serve`` on a real Redis: two players queue, are matched, the first ``match.turn``
names who acts, that player resigns, both ratings move, a third ticket is cancelled."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.rest.conftest import ACME_KEY, REPO, Served

pytestmark = pytest.mark.timeout(180)


def walk_through() -> str:
    text = (REPO / "docs" / "matchmaking.md").read_text()
    found = re.search(r"<!-- walk-through -->\n```sh\n(.*?)\n```", text, re.S)
    assert found, "docs/matchmaking.md has its walk-through block"
    return found.group(1)


@pytest.mark.skipif(shutil.which("jq") is None or shutil.which("curl") is None, reason="needs curl and jq")
def test_the_curl_walk_through_runs_as_written(served: Served, tmp_path: Path) -> None:
    env = {**os.environ, "B": served.base, "KEY": ACME_KEY}
    done = subprocess.run(
        ["bash", "-eu", "-c", walk_through()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    pool, waiting, matched, turn, view, acted, ana, bia, cancelled = lines
    assert pool == {"poolId": "quick", "players": 2, "ratingFamily": "paulista-2p", "ticketTtl": "600s"}
    assert waiting["state"] == "TICKET_STATE_WAITING"
    assert matched["state"] == "TICKET_STATE_MATCHED" and [s["playerId"] for s in matched["seats"]] == ["ana"]
    assert turn["type"] == "match.turn" and turn["matchId"] == matched["matchId"]
    assert turn["turn"]["playerId"] in ("ana", "bia") and turn["turn"]["awaiting"] == "play"
    assert turn["turn"]["deadline"]  # the pool's correspondence clock
    assert view["awaited"] == [view.get("seat", 0)]  # the player the event named is awaited
    assert int(acted["version"]) > 0
    assert ana == {"playerId": "ana", "games": 1} and bia == {"playerId": "bia", "games": 1}
    assert cancelled == "TICKET_STATE_CANCELLED"
