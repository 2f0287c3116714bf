"""Heap snapshots of a running worker, for finding what holds memory; and the garbage
collector's tuning after start-up (:func:`tune_gc`).

Start the worker with ``PYTHONTRACEMALLOC=1`` (the standard library's allocation tracing,
from the first import; it costs CPU and memory, so never in normal service) and send it
SIGUSR1: it writes ``heap-<pid>-<n>.tracemalloc`` (a :class:`tracemalloc.Snapshot`) and
``heap-<pid>-<n>.types.txt`` (live objects tracked by the garbage collector, counted by
type) to ``TRUCO_HEAP_SNAPSHOT_DIR``. Compare two snapshots with
``Snapshot.load(b).compare_to(Snapshot.load(a), "lineno")``; ``benchmarks/worker_heap.py``
does it for workers under load.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import itertools
import os
import sys
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import cast

import structlog

log = structlog.get_logger("truco.diagnostics")

_numbers = itertools.count(1)


def tune_gc(thresholds: str) -> int:
    """Tune the garbage collector of a worker that has started (``TRUCO_GC_TUNING``).

    A full collection walks every object the collector tracks, and a started worker holds
    about 130,000 of them, nearly all made by its imports (functions, modules, protobuf
    descriptors, rule tables). On a 2-core test machine each full collection stopped the
    event loop for 80-150 ms, about every 20 s at 130 actions/s and more often under more
    load (docs/benchmarks.md, "Where the paced tail comes from"). So: one collection, then
    ``gc.freeze()`` moves what survives out of every later collection, and ``thresholds``
    (``TRUCO_GC_THRESHOLDS``: young, middle, full; see ``gc.set_threshold``) decide how much
    of the rest is walked: a worker's states, views, tasks and messages live for a move, so
    with a young threshold far above what the moves in flight hold (50,000) nearly all of
    them are freed by reference counting before a young collection comes and are never
    walked; with a small one (300) each was walked by a young collection and again by a
    middle one, in many short pauses. Returns the number of objects frozen."""
    young, middle, full = (int(x) for x in thresholds.split(","))
    gc.collect()
    gc.freeze()
    gc.set_threshold(young, middle, full)
    return gc.get_freeze_count()


_MALLINFO2 = (
    "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
)  # fmt: skip


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2]


def _jemalloc_mallctl() -> Callable[..., int] | None:
    """jemalloc's ``mallctl`` when this process allocates with it (``LD_PRELOAD``, as the
    container image runs the worker; docs/operations.md, "Memory"), else ``None``."""
    try:
        mallctl = ctypes.CDLL(None).mallctl
    except (OSError, AttributeError):
        return None
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    mallctl.restype = ctypes.c_int
    return cast("Callable[..., int]", mallctl)


_JEMALLOC_STATS = {
    "resident": b"stats.resident",
    "allocated": b"stats.allocated",
    "active": b"stats.active",
    "metadata": b"stats.metadata",
    "dirty": b"stats.arenas.4096.pdirty",  # 4096: every arena (MALLCTL_ARENAS_ALL); in pages
    "muzzy": b"stats.arenas.4096.pmuzzy",
    "page": b"arenas.page",
}


def _jemalloc_stats(mallctl: Callable[..., int]) -> dict[str, int]:
    """jemalloc's figures after refreshing them (``epoch``), in bytes: ``resident`` (pages it
    holds in memory), ``allocated`` (what the program uses), ``active`` (the pages of the
    allocated runs: above ``allocated`` by what half-used slabs waste), ``metadata`` (its own
    bookkeeping), ``dirty`` and ``muzzy`` (free pages not yet given back)."""
    epoch = ctypes.c_uint64(1)
    size = ctypes.c_size_t(ctypes.sizeof(epoch))
    mallctl(b"epoch", ctypes.byref(epoch), ctypes.byref(size), ctypes.byref(epoch), size)
    out = {}
    for name, key in _JEMALLOC_STATS.items():
        value, size = ctypes.c_size_t(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
        mallctl(key, ctypes.byref(value), ctypes.byref(size), None, 0)
        out[name] = value.value
    page = out.pop("page") or 4096
    out.update(dirty=out["dirty"] * page, muzzy=out["muzzy"] * page)
    return out


def allocator_name() -> str:
    """``jemalloc`` or ``glibc`` (what ``malloc`` is in this process), else ``other``."""
    if _jemalloc_mallctl() is not None:
        return "jemalloc"
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallinfo2  # noqa: B018
    except (OSError, AttributeError):
        return "other"
    return "glibc"


def allocator() -> dict[str, int]:
    """The allocator's own account of its memory, in bytes: ``held`` (what it got from the
    system and keeps), ``in_use`` and ``free`` of that, and ``mapped`` (glibc's large blocks
    mapped apart, given back when freed); and ``python_blocks``, the blocks Python's
    allocator has handed out (``sys.getallocatedblocks``; 0 with ``PYTHONMALLOC=malloc``).
    From glibc's ``mallinfo2`` (every arena), or jemalloc's ``stats.resident`` (held) and
    ``stats.allocated`` (in use), with its ``active``, ``metadata``, ``dirty`` and ``muzzy``
    (:func:`_jemalloc_stats`); only ``python_blocks`` elsewhere."""
    out = {"python_blocks": sys.getallocatedblocks()}
    mallctl = _jemalloc_mallctl()
    if mallctl is not None:
        got = _jemalloc_stats(mallctl)
        held, in_use = got["resident"], got["allocated"]
        out.update(held=held, in_use=in_use, free=max(0, held - in_use), mapped=0)
        out.update((k, got[k]) for k in ("active", "metadata", "dirty", "muzzy"))
        return out
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        info = libc.mallinfo2
    except (OSError, AttributeError):
        return out
    info.restype = _MallInfo2
    got2 = info()
    out.update(held=got2.arena, in_use=got2.uordblks, free=got2.fordblks, mapped=got2.hblkhd)
    return out


def release_free_memory() -> bool:
    """Hand what the allocator keeps free back to the system: jemalloc purges every arena
    (``arena.<all>.purge``), glibc trims every heap (``malloc_trim(0)``). Whether it could."""
    mallctl = _jemalloc_mallctl()
    if mallctl is not None:
        return mallctl(b"arena.4096.purge", None, None, None, 0) == 0  # 4096: MALLCTL_ARENAS_ALL
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))


def allocator_fields(prefix: str = "") -> dict[str, float]:
    """:func:`allocator` for a log line: megabytes (``held_mb``...) and ``python_blocks``."""
    out: dict[str, float] = {}
    for k, v in allocator().items():
        out.update({prefix + k: v} if k == "python_blocks" else {f"{prefix}{k}_mb": round(v / 2**20, 1)})
    return out


def on_sigusr1(directory: str | None) -> None:
    """A worker's SIGUSR1: the allocators' figures in the log (:func:`allocator`), and a heap
    snapshot when tracing, else a warning saying how."""
    log.info("memory figures", allocator=allocator_name(), **allocator_fields())
    if not tracemalloc.is_tracing():
        log.warning("SIGUSR1: no heap snapshot, allocations are not traced (start with PYTHONTRACEMALLOC=1)")
        return
    write_heap_snapshot(directory)


def write_heap_snapshot(directory: str | None) -> Path:
    """Write the next snapshot of this process and its object counts; returns the snapshot's
    path. A full collection runs first, so only what is reachable is counted."""
    folder = Path(directory or ".")
    folder.mkdir(parents=True, exist_ok=True)
    frozen = gc.get_freeze_count() > 0
    if frozen:  # count what tune_gc froze too (gc.get_objects() leaves it out)
        gc.unfreeze()
    gc.collect()
    base = folder / f"heap-{os.getpid()}-{next(_numbers)}"
    path = base.with_suffix(".tracemalloc")
    tracemalloc.take_snapshot().dump(str(path))
    counts = Counter(type(o).__name__ for o in gc.get_objects())
    if frozen:
        gc.freeze()
    lines = [f"{n} {name}" for name, n in counts.most_common()]
    # written under another name, then renamed: a reader that waits for the counts (the
    # last file) never sees half of them
    partial = base.with_suffix(".types.partial")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(partial, base.with_suffix(".types.txt"))
    traced, _peak = tracemalloc.get_traced_memory()
    log.info("heap snapshot written", path=str(path), traced_bytes=traced)
    return path


def read_object_counts(path: Path) -> Counter[str]:
    """The object counts by type of a snapshot's ``.types.txt``."""
    out: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        n, name = line.split(" ", 1)
        out[name] = int(n)
    return out
