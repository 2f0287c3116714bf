"""benchmarks/peers/run.py runs for a few seconds: both peers (their pinned packages installed
with ``npm ci`` into a temporary copy) and our WebSocket connection, two alternating rounds,
each run making moves, and the table with every contestant and its ratios.

Where ``node`` is not installed, or the npm registry cannot be reached, the test is skipped
with that reason (the peers are not needed by anything else in the suite)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / "benchmarks" / "peers"

pytestmark = pytest.mark.timeout(900)

OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "network")


def _peer_copy(root: Path) -> Path:
    """The peer scripts and their lock file in ``root``, with ``npm ci`` done (or a skip)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm are not installed: the peer benchmark needs them")
    root.mkdir()
    for path in PEERS.iterdir():
        if path.suffix == ".mjs" or path.name in ("package.json", "package-lock.json"):
            shutil.copy(path, root / path.name)
    env = {**os.environ, "npm_config_prefer_offline": "true", "npm_config_audit": "false"}
    env["npm_config_fund"] = "false"
    try:
        cmd = [npm, "ci", "--no-audit", "--no-fund"]
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        pytest.skip("npm ci took over 300 s (the registry is unreachable or slow)")
    if done.returncode != 0:
        if any(word in done.stderr for word in OFFLINE):
            pytest.skip(f"the npm registry cannot be reached: {done.stderr.strip().splitlines()[-1]}")
        pytest.fail(f"npm ci failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return root


def test_the_peer_benchmark_runs_alternating_rounds(tmp_path: Path) -> None:
    peers = _peer_copy(tmp_path / "peers")
    args = ["--rounds", "2", "--warmup", "1", "--seconds", "2", "--matches", "4", "--ours", "ws-memory"]
    done = subprocess.run(
        [sys.executable, str(PEERS / "run.py"), *args, "--peers-dir", str(peers)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = done.stdout
    runs = re.findall(r"^# round (\d)/2 (\S+) +([\d.]+|n/a) ms/move +(\d+) moves", out, re.M)
    assert [(r, name) for r, name, _, _ in runs] == [
        ("1", "boardgame.io"),
        ("1", "colyseus"),
        ("1", "ws-memory"),
        ("2", "ws-memory"),
        ("2", "colyseus"),
        ("2", "boardgame.io"),
    ], out
    for _, name, ms, moves in runs:  # a run may starve on a busy machine: shown as n/a
        assert (ms == "n/a") == (int(moves) == 0), (name, out)
    for name in ("boardgame.io", "colyseus", "ws-memory"):  # ... but not every run of a contestant
        assert any(int(moves) > 0 for _, n, _, moves in runs if n == name), (name, out)
    assert re.search(r"^load average before: [\d.]+ [\d.]+ [\d.]+ on \d+ cores$", out, re.M), out
    assert re.search(r"^load average after: ", out, re.M), out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("contestant "))
    rows = {line.split()[0]: line.split()[1:] for line in lines[head + 1 : head + 4]}
    for name in ("boardgame.io", "colyseus", "ws-memory"):
        ms, per_core, _rate, _finished, to_bgio, to_colyseus = (float(x) for x in rows[name])
        assert per_core == pytest.approx(1000 / ms, rel=0.01, abs=1), rows[name]
        assert to_bgio == pytest.approx(ms / float(rows["boardgame.io"][0]), rel=0.02, abs=0.01), rows[name]
        assert to_colyseus == pytest.approx(ms / float(rows["colyseus"][0]), rel=0.02, abs=0.01), rows[name]
    assert re.search(r"ours playing paulista, policy cards;", out), out
    # the peer game's matches (30-58 moves) finish within two seconds of 4 matches
    assert float(rows["boardgame.io"][3]) > 0 and float(rows["colyseus"][3]) > 0, rows
