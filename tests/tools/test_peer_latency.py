"""``benchmarks/peers/run.py --latency`` runs for a few seconds (no node needed): the load
generator in processes of its own finds the saturating rate, paces half of it and prints the
latency from a move's submission to every seat's observation, from real moves; with
``--gc-probe``, the worker's garbage collections too."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def _run(*args: str) -> str:
    """``run.py --latency`` on the in-memory store with ``args``: its output (it succeeded)."""
    command = [
        sys.executable,
        str(REPO / "benchmarks" / "peers" / "run.py"),
        "--latency",
        "--store",
        "memory",
    ]
    done = subprocess.run(
        [*command, "--warmup", "0.5", *args],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_latency_at_half_the_saturating_load_over_websocket() -> None:
    out = _run("--processes", "2", "--matches", "4", "--gc-probe", "--seconds", "1.5")
    phases = re.findall(r"^(saturation|calibration|half load) +think +([\d.]+) ms +(\d+) moves", out, re.M)
    assert [p[0] for p in phases] == ["saturation", "calibration", "half load"], out
    assert float(phases[0][1]) == 0.0, out  # the saturating phase does not wait
    assert all(int(moves) > 0 for _, _, moves in phases), out
    found = re.search(
        r"^ws-memory: saturating (\d+) moves/s; at (\d+) moves/s \(([\d.]+) of it\), submit -> every seat's "
        r"observation: p50 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms \(2 generator processes",
        out,
        re.M,
    )
    assert found, out
    p50, p99, top = (float(found.group(i)) for i in (4, 5, 6))
    assert 0 < p50 <= p99 <= top, out
    assert re.search(r"^load average before: ", out, re.M) and re.search(r"^load average after: ", out, re.M)
    # the worker ran with the collector's probe and wrote its collections when it stopped (a
    # run this short may make none: the young threshold is 50,000 new objects), with what the
    # worker froze at start
    probed = re.search(
        r"^worker's collections \(the probe's, over its whole run\): .*; (\d+) objects frozen", out, re.M
    )
    assert probed is not None and int(probed[1]) > 0, out


def test_latency_by_move_rate_one_phase_per_think_time() -> None:
    """``--thinks``: one phase per mean think time against one worker; a longer think makes
    fewer moves a second (here one match: each move alone)."""
    out = _run("--processes", "1", "--matches", "1", "--thinks", "0,40", "--seconds", "2")
    phases = re.findall(
        r"^by rate +think +([\d.]+) ms +(\d+) moves +(\d+) moves/s .* p50 ([\d.]+) p99 ([\d.]+)", out, re.M
    )
    assert [float(p[0]) for p in phases] == [0.0, 40.0], out
    closed, paced = (int(p[2]) for p in phases)
    assert 0 < paced < closed, out  # one match waiting ~40 ms a move against none
    assert "saturation" not in out and re.search(r"^load average after: ", out, re.M), out
