"""A heap snapshot on SIGUSR1 (docs/operations.md, "Memory"): a worker started with
``PYTHONTRACEMALLOC=1`` writes one the standard ``tracemalloc`` module reads, and its object
counts; a worker without tracing only logs a warning (SIGUSR1 must never end a worker)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.serve import Served, serve_apart
from truco_server.core.config import ConfigError, load_settings
from truco_server.core.diagnostics import read_object_counts

pytestmark = pytest.mark.timeout(300)


def _wait_for(served: Served, predicate: Callable[[], bool], what: str, timeout: float = 150) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if served.proc.poll() is not None:
            raise AssertionError(f"the worker ended (code {served.proc.returncode}) before the {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:g} s")
        time.sleep(0.1)


def test_sigusr1_writes_a_heap_snapshot_when_tracing(tmp_path: Path) -> None:
    snapshots = tmp_path / "heap"
    env = {"PYTHONTRACEMALLOC": "1", "TRUCO_HEAP_SNAPSHOT_DIR": str(snapshots)}
    with serve_apart(tmp_path, env=env, timeout=180) as served:
        os.kill(served.proc.pid, signal.SIGUSR1)
        types = snapshots / f"heap-{served.proc.pid}-1.types.txt"
        _wait_for(served, types.exists, "snapshot")
        snap = tracemalloc.Snapshot.load(str(snapshots / f"heap-{served.proc.pid}-1.tracemalloc"))
        files = {stat.traceback[0].filename for stat in snap.statistics("filename")}
        # memory traced to the lines of a worker's module (made from its import on): one that
        # runs as Python in every build (mypyc compiles no module with async generators)
        assert any(f.endswith(os.path.join("truco_server", "services", "streams.py")) for f in files)
        assert read_object_counts(types)["dict"] > 1000
        assert served.proc.poll() is None  # still serving
    assert "heap snapshot written" in served.stdout.read_text()


def test_sigusr1_without_tracing_logs_the_allocators_figures_and_warns(tmp_path: Path) -> None:
    with serve_apart(tmp_path) as served:
        os.kill(served.proc.pid, signal.SIGUSR1)
        _wait_for(served, lambda: "PYTHONTRACEMALLOC=1" in served.stdout.read_text(), "warning")
        assert served.proc.poll() is None
        pid = served.proc.pid
    assert not list(Path.cwd().glob(f"heap-{pid}-*"))  # nothing written where it would go
    line = next(x for x in served.stdout.read_text().splitlines() if "memory figures" in x)
    figures = {k: float(v) for k, v in re.findall(r"(\w+_mb|python_blocks)\W+([\d.]+)", line)}
    assert figures["in_use_mb"] > 1 and figures["held_mb"] >= figures["in_use_mb"]  # glibc's account
    assert figures["python_blocks"] > 10_000


def test_a_worker_group_passes_sigusr1_to_every_worker(tmp_path: Path, clean_redis_url: str) -> None:
    with serve_apart(tmp_path, "--redis", clean_redis_url, "--workers", "2", timeout=150) as served:
        os.kill(served.proc.pid, signal.SIGUSR1)
        _wait_for(served, lambda: served.stdout.read_text().count("PYTHONTRACEMALLOC=1") >= 2, "warnings")
        assert served.proc.poll() is None  # the group goes on serving


def _frozen_objects(log_text: str) -> int | None:
    for line in log_text.splitlines():
        if "garbage collector tuned" in line:
            found = re.search(r"frozen_objects\W+(\d+)", line)
            assert found is not None, line
            return int(found.group(1))
    return None


def test_a_started_worker_freezes_what_its_imports_made(tmp_path: Path) -> None:
    with serve_apart(tmp_path, env={"TRUCO_GC_THRESHOLDS": "400, 4,500"}) as served:
        pass
    log_text = served.stdout.read_text()
    frozen = _frozen_objects(log_text)
    assert frozen is not None and frozen > 20_000  # modules, descriptors, rule tables
    assert re.search(r"thresholds\W+400,4,500", log_text)
    (tmp_path / "off").mkdir()
    with serve_apart(tmp_path / "off", env={"TRUCO_GC_TUNING": "0"}) as served:
        pass
    assert _frozen_objects(served.stdout.read_text()) is None


def test_tune_gc_freezes_and_sets_the_thresholds() -> None:
    code = (
        "import gc; from truco_server.core import diagnostics as d; n = d.tune_gc('300,3,1000'); "
        "print(n, gc.get_freeze_count(), *gc.get_threshold())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    n, count, *thresholds = (int(x) for x in out.stdout.split())
    assert n == count > 1000 and thresholds == [300, 3, 1000]


@pytest.mark.parametrize("text", ["300,3", "300,0,1000", "a,3,1000", "300,3,1000,1", "-1,3,1000"])
def test_gc_thresholds_refuse_what_is_not_three_positive_numbers(text: str) -> None:
    with pytest.raises(ConfigError, match="TRUCO_GC_THRESHOLDS"):
        load_settings(env={"TRUCO_GC_THRESHOLDS": text})
