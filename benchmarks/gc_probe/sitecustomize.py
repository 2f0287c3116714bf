"""The garbage collector's pauses of a process, written when it exits (used by
``benchmarks/gc_pauses.py``; active only when ``GC_PROBE_OUT`` is set).

With this folder on ``PYTHONPATH``, Python imports this module at start-up: it times every
collection (``gc.callbacks``) and, at exit, writes ``<GC_PROBE_OUT>.<pid>`` as JSON: the
process's command line, each collection's generation, start (seconds since the process
started) and pause (seconds), the objects tracked and frozen at exit, and per generation the
collections and the objects they found unreachable (``gc.get_stats()``).
"""

from __future__ import annotations

import os

if os.environ.get("GC_PROBE_OUT"):
    import atexit
    import gc
    import json
    import sys
    import time

    _began = time.perf_counter()
    _start = [0.0]
    _pauses: list[tuple[int, float, float]] = []

    def _timed(phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            _start[0] = now
        else:
            _pauses.append((info["generation"], _start[0] - _began, now - _start[0]))

    def _write() -> None:
        record = {
            "argv": sys.argv,
            "collections": _pauses,
            "objects": len(gc.get_objects()),
            "frozen": gc.get_freeze_count(),
            "stats": gc.get_stats(),
            "ran": time.perf_counter() - _began,
        }
        try:
            with open(f"{os.environ['GC_PROBE_OUT']}.{os.getpid()}", "w", encoding="utf-8") as f:
                json.dump(record, f)
        except FileNotFoundError:
            pass  # a helper process (a load generator) outlived the run that asked for records

    gc.callbacks.append(_timed)
    atexit.register(_write)
