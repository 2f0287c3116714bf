"""``benchmarks/match_start.py`` runs briefly: it creates matches, subscribes both seats of
each over the WebSocket and prints the worker's CPU a match of each phase."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_match_start_prints_the_cost_of_creating_and_subscribing(store: str) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "match_start.py"), "--matches", "40", "--rounds", "1",
         "--concurrency", "4", "--store", store],
        capture_output=True,
        text=True,
        timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^# round 1/1: create [\d.]+ ms, subscribe both seats [\d.]+ ms", done.stdout, re.M)
    found = re.search(r"create ([\d.]+) ms \+ subscribe both seats ([\d.]+) ms = ([\d.]+) ms", done.stdout)
    assert found, done.stdout
    create, subscribe, total = (float(g) for g in found.groups())
    assert total == pytest.approx(create + subscribe, abs=0.002)
    assert total > 0  # a worker that did the work used CPU for it
