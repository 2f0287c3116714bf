"""A heap snapshot on SIGUSR1 (docs/operations.md, "Memory"): a worker started with
``PYTHONTRACEMALLOC=1`` writes one the standard ``tracemalloc`` module reads, and its object
counts; a worker without tracing only logs a warning (SIGUSR1 must never end a worker)."""

from __future__ import annotations

import os
import signal
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.serve import Served, serve_apart
from truco_server.diagnostics import read_object_counts

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
        assert any(f.endswith(os.path.join("truco_server", "service.py")) for f in files)
        assert read_object_counts(types)["dict"] > 1000
        assert served.proc.poll() is None  # still serving
    assert "heap snapshot written" in served.stdout.read_text()


def test_sigusr1_without_tracing_only_warns(tmp_path: Path) -> None:
    with serve_apart(tmp_path) as served:
        os.kill(served.proc.pid, signal.SIGUSR1)
        _wait_for(served, lambda: "PYTHONTRACEMALLOC=1" in served.stdout.read_text(), "warning")
        assert served.proc.poll() is None
        pid = served.proc.pid
    assert not list(Path.cwd().glob(f"heap-{pid}-*"))  # nothing written where it would go


def test_a_worker_group_passes_sigusr1_to_every_worker(tmp_path: Path, clean_redis_url: str) -> None:
    with serve_apart(tmp_path, "--redis", clean_redis_url, "--workers", "2", timeout=150) as served:
        os.kill(served.proc.pid, signal.SIGUSR1)
        _wait_for(served, lambda: served.stdout.read_text().count("PYTHONTRACEMALLOC=1") >= 2, "warnings")
        assert served.proc.poll() is None  # the group goes on serving
