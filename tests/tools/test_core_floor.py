"""``benchmarks/core_floor.py`` runs briefly: every stage plays the same moves and prints its
CPU per move, and all of them together cost several times the step alone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def test_the_core_floor_prints_each_stage_over_the_same_moves() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "core_floor.py"), "--matches", "8", "--moves", "1500",
         "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the same moves in each" in done.stdout
    got = dict(re.findall(r"^(\w+) +([\d.]+) us CPU per move", done.stdout, re.M))
    assert list(got) == [
        "step", "views", "events", "observations", "messages", "state", "entries", "record", "operator"
    ]  # fmt: skip
    values = [float(v) for v in got.values()]
    assert all(v > 0 for v in values)
    # all of it is several times the step alone: far more than the noise of a short run
    assert values[-1] > 2 * values[0]
