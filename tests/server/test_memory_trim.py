"""The worker hands freed memory back after many streams were cut (truco_server.app.memory);
what it gives back is measured by ``benchmarks/never_read_streams.py``."""

from __future__ import annotations

import asyncio
import ctypes.util
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from tests.deploy.test_deploy_files import ROOT, dockerfile_env
from tests.helpers.scripts import load_script
from truco_server.app import memory
from truco_server.app.memory import MemoryTrim


class Streams:
    cut = 0


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_released_once_enough_streams_were_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    streams = Streams()
    monkeypatch.setattr(memory, "release", lambda: calls.append(streams.cut) or True)
    trim = MemoryTrim(streams, 100, every=0.01)
    await trim.start()
    try:
        streams.cut = 99
        streams.cut = 250
        while not calls:
            await asyncio.sleep(0.01)  # poll: the trimmer looks every 10 ms
        streams.cut = 300  # 50 more: not enough for another, whatever ticks pass
        for _ in range(3):
            await asyncio.sleep(0.01)
        streams.cut = 400
        while len(calls) < 2:
            await asyncio.sleep(0.01)
        assert calls == [250, 400] and trim.trims == 2
    finally:
        await trim.stop()


@pytest.mark.asyncio
async def test_zero_turns_it_off() -> None:
    trim = MemoryTrim(Streams(), 0, every=0.01)
    await trim.start()
    assert trim._task is None
    await trim.stop()


PROBE = """
import json
from truco_server.app.memory import release
from truco_server.core.diagnostics import allocator, allocator_name
junk = [bytearray(4096) for _ in range(20_000)]  # 80 MB, then freed
del junk
print(json.dumps({"name": allocator_name(), "figures": allocator(), "released": release()}))
"""


def _probe(env: dict[str, str]) -> dict[str, Any]:
    import json

    out = subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_glibc_is_read_and_trimmed() -> None:
    got = _probe({})
    assert got["name"] == "glibc" and got["released"] is True
    assert got["figures"]["in_use"] > 0 and got["figures"]["python_blocks"] > 0


def test_jemalloc_is_recognised_read_and_purged() -> None:
    """As the container image runs the worker (deploy/Dockerfile): jemalloc, and Python's own
    small-object allocator off (docs/operations.md, "Memory")."""
    assert ctypes.util.find_library("jemalloc"), (
        "libjemalloc2 is not installed (make system-deps installs it)"
    )
    image = dockerfile_env()
    got = _probe({k: image[k] for k in ("LD_PRELOAD", "PYTHONMALLOC", "MALLOC_CONF")})
    figures = got["figures"]
    assert got["name"] == "jemalloc" and got["released"] is True
    assert figures["held"] >= figures["in_use"] > 0 and figures["python_blocks"] == 0
    # the pages of its runs cover what is in use, its bookkeeping is counted, and no free
    # page is left muzzy (the image's muzzy_decay_ms:0)
    assert figures["active"] >= figures["in_use"] and figures["metadata"] > 0
    assert "dirty" in figures and figures["muzzy"] == 0


def test_the_memory_benchmark_reads_jemallocs_exit_statistics() -> None:
    """``never_read_streams.py --allocator-stats``: a Python under the image's allocator with
    ``stats_print`` writes jemalloc's statistics as it exits; the benchmark reads their totals
    and, per size class, the blocks in use and the slabs holding them."""
    assert ctypes.util.find_library("jemalloc"), (
        "libjemalloc2 is not installed (make system-deps installs it)"
    )
    bench = load_script(ROOT / "benchmarks" / "never_read_streams.py")
    image = dockerfile_env()
    env = {k: image[k] for k in ("LD_PRELOAD", "PYTHONMALLOC")}
    env["MALLOC_CONF"] = image["MALLOC_CONF"] + ",stats_print:true,stats_print_opts:dax"
    # 5,000 blocks of 150 bytes never freed, as grpcio's interrupted sends leave theirs
    kept = (
        "import ctypes; m = ctypes.CDLL(None).malloc; m.restype = ctypes.c_void_p; "
        "[m(150) for _ in range(5000)]"
    )
    out = subprocess.run(
        [sys.executable, "-c", kept], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    totals, classes = bench._jemalloc_exit_stats(out.stderr)
    assert totals.startswith("Allocated: ") and "metadata: " in totals
    rows = {
        size: (int(n), int(slabs))
        for size, n, slabs, _ in re.findall(r"(\d+): (\d+)/(\d+) \((\d+) KiB\)", classes)
    }
    blocks, slabs = rows["160"]  # the size class of 150 bytes
    assert blocks >= 5000 and slabs >= 5000 // 128  # at most 128 blocks in a slab of 20 KiB
