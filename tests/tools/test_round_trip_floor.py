"""``benchmarks/round_trip_floor.py`` runs briefly against a real redis-server: one line per
case, and ten calls in one write cost less per call than one call a round trip."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(120)


def test_the_round_trip_floor_prints_each_case() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "round_trip_floor.py"), "--calls", "400", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    got = dict(re.findall(r"^(.+?) +([\d.]+) us CPU per call", done.stdout, re.M))
    assert set(got) == {
        "asyncio",
        "redis-py GET",
        "redis-py EVALSHA",
        "redis-py pool, one exchange",
        "store lane EVALSHA",
        "redis-py EVALSHA, 10 a pipeline",
    }
    assert all(float(v) > 0 for v in got.values())
    assert float(got["redis-py EVALSHA, 10 a pipeline"]) < float(got["redis-py EVALSHA"])
