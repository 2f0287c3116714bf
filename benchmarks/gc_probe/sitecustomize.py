"""The pauses of a process: its garbage collector's and its event loop's longest callbacks,
written when it exits (used by ``benchmarks/gc_pauses.py`` and ``run.py --latency
--gc-probe``; active only when ``GC_PROBE_OUT`` is set).

With this folder on ``PYTHONPATH``, Python imports this module at start-up: it times every
collection (``gc.callbacks``) and every callback an asyncio event loop runs (a wrapper around
``asyncio.events.Handle._run``: a task's step is one), and at exit writes
``<GC_PROBE_OUT>.<pid>`` as JSON: the process's command line, each collection's generation,
start (seconds since the process started) and pause (seconds), the objects tracked and frozen
at exit, per generation the collections and the objects they found unreachable
(``gc.get_stats()``); the time the probe started (``began``, seconds since the epoch); and
each of the loop's callbacks that took at least 1 ms (at most :data:`KEPT` of them): start
(seconds since the process started), seconds, and what ran (a task's coroutine, or the
callback's name). A collection inside a callback counts in both.
"""

from __future__ import annotations

import os

KEPT = 200_000
"""The most callbacks of 1 ms or more a record lists (the first ones)."""

if os.environ.get("GC_PROBE_OUT"):
    import asyncio.events
    import atexit
    import gc
    import json
    import sys
    import time

    _began = time.perf_counter()
    _began_epoch = time.time()
    _start = [0.0]
    _pauses: list[tuple[int, float, float]] = []
    _long: list[tuple[float, float, str]] = []

    def _timed(phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            _start[0] = now
        else:
            _pauses.append((info["generation"], _start[0] - _began, now - _start[0]))

    def _what(handle: asyncio.events.Handle) -> str:
        callback = handle._callback
        owner = getattr(callback, "__self__", None)
        coro = owner.get_coro() if isinstance(owner, asyncio.Task) else None
        named = coro if coro is not None else callback
        return str(getattr(named, "__qualname__", type(named).__name__))[:120]

    _run = asyncio.events.Handle._run

    def _run_timed(handle: asyncio.events.Handle) -> None:
        t0 = time.perf_counter()
        try:
            _run(handle)
        finally:
            took = time.perf_counter() - t0
            if took >= 0.001 and len(_long) < KEPT:
                _long.append((t0 - _began, took, _what(handle)))

    asyncio.events.Handle._run = _run_timed  # type: ignore[method-assign, assignment]

    def _write() -> None:
        record = {
            "argv": sys.argv,
            "collections": _pauses,
            "objects": len(gc.get_objects()),
            "frozen": gc.get_freeze_count(),
            "stats": gc.get_stats(),
            "ran": time.perf_counter() - _began,
            "began": _began_epoch,
            "callbacks": _long,
        }
        try:
            with open(f"{os.environ['GC_PROBE_OUT']}.{os.getpid()}", "w", encoding="utf-8") as f:
                json.dump(record, f)
        except FileNotFoundError:
            pass  # a helper process (a load generator) outlived the run that asked for records

    gc.callbacks.append(_timed)
    atexit.register(_write)
