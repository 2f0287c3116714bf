"""``benchmarks/queue_model.py`` agrees with what queueing theory knows in closed form: with
exponential service (M/M/1) a move's time in the system is exponential with mean
``S / (1 - busy)``, so its p99 is ``S * ln(100) / (1 - busy)``; a fixed service time (M/D/1)
waits less; and the command prints one row per busy fraction."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("queue_model", REPO / "benchmarks" / "queue_model.py")
assert spec is not None and spec.loader is not None
queue_model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(queue_model)


@pytest.mark.parametrize("busy", [0.5, 0.8])
def test_exponential_service_matches_the_closed_form(busy: float) -> None:
    p50, p99 = queue_model.simulate(busy, 1.0, 200_000, 3, exponential=True)
    assert p99 == pytest.approx(math.log(100) / (1 - busy), rel=0.06)
    assert p50 == pytest.approx(math.log(2) / (1 - busy), rel=0.06)


def test_a_fixed_service_time_waits_less_and_the_queue_grows_with_the_load() -> None:
    fixed = [queue_model.simulate(b, 1.0, 100_000, 5, exponential=False)[1] for b in (0.5, 0.7, 0.85)]
    spread = [queue_model.simulate(b, 1.0, 100_000, 5, exponential=True)[1] for b in (0.5, 0.7, 0.85)]
    assert fixed == sorted(fixed) and all(f < s for f, s in zip(fixed, spread, strict=True))
    assert queue_model.simulate(0.05, 1.0, 20_000, 5, exponential=False)[0] == pytest.approx(1.0, abs=0.01)


def test_the_command_prints_a_row_per_busy_fraction() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "queue_model.py"),
            "--busy",
            "0.5",
            "0.7",
            "--moves",
            "20000",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [r[0] for r in rows] == ["0.50", "0.70"]
