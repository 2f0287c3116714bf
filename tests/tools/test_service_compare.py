"""``benchmarks/service_compare.py`` runs one short pair: a worker of each build under the same
bots, its CPU per action, their ratio and the transport's floor; ``--python`` runs the other
build's worker on a given interpreter, and refuses one that cannot run a worker."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.helpers.scripts import load_script

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "service_compare.py"

pytestmark = pytest.mark.timeout(300)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=280)


def test_one_short_pair_prints_each_build_its_ratio_and_the_floor() -> None:
    done = _run(
        "--against", str(REPO), "--python", sys.executable, "--phases", "ws-memory", "--pairs", "1",
        "--seconds", "1", "--warmup", "0.5", "--matches", "6", "--floors", "--policy", "cards",
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert f"# other: {REPO} on {sys.executable}" in out, out
    runs = re.findall(r"^# pair 1/1 ws-memory +(this|other|floor) +([\d.]+) ms$", out, re.M)
    assert [label for label, _ in runs] == ["this", "other", "floor"], out
    row = re.search(r"^ws-memory +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$", out, re.M)
    assert row, out
    this, other, ratio, floor = (float(v) for v in row.groups())
    assert this > 0 and other > 0 and floor > 0, out
    # the ratio is of the unrounded figures: each printed figure is off by up to 0.0005
    rounding = 0.0005 + (this + 0.0005) / (other - 0.0005) - this / other  # the widest it can be
    assert ratio == pytest.approx(this / other, abs=rounding), out
    # the worker does the service's work, the floor only speaks the protocol
    assert floor < this and floor < other, out


def test_an_interpreter_that_cannot_run_a_worker_is_refused_before_anything_starts(tmp_path: Path) -> None:
    missing = _run("--against", str(REPO), "--python", str(tmp_path / "no-such-python"))
    assert missing.returncode == 2
    assert "cannot be run" in missing.stderr, missing.stderr

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # this interpreter, none of the server's packages
    lacking = _run("--against", str(REPO), "--python", str(bare / "bin" / "python"))
    assert lacking.returncode == 2
    every = "grpc, google.protobuf, aiohttp, redis, structlog, prometheus_client, orjson"
    assert f"lacks {every}" in lacking.stderr, lacking.stderr
    assert "# pair" not in lacking.stdout  # refused before any worker started


def test_the_other_builds_worker_imports_that_builds_engine_not_this_ones(tmp_path: Path) -> None:
    # a stand-in checkout: its own engine package at its root, and a worker command that
    # reports which engine it imported, then says it is listening
    other = tmp_path / "other"
    (other / "truco_engine").mkdir(parents=True)
    (other / "truco_engine" / "__init__.py").write_text("")
    (other / "cli" / "truco_cli").mkdir(parents=True)
    (other / "cli" / "truco_cli" / "__init__.py").write_text("")
    report = tmp_path / "engine.txt"
    (other / "cli" / "truco_cli" / "main.py").write_text(
        "import sys, time, truco_engine\n"
        f"open({str(report)!r}, 'w').write(truco_engine.__file__)\n"
        "print('gRPC listening', flush=True)\n"
        "time.sleep(60)\n"
    )
    service_compare = load_script(SCRIPT)
    with service_compare._worker(other, None):
        pass
    assert Path(report.read_text()).parent == other / "truco_engine"
