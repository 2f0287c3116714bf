"""Handing freed memory back to the system after many streams are gone (docs/operations.md,
"Memory").

A stream a client opens and does not read makes its worker hold what it cannot send (the
transport's buffers, the updates queued for it); when such streams close, that memory is
freed but glibc's allocator keeps most of it in its heaps, and what cancelled streams leave in
reference cycles waits for a full collection (``python benchmarks/never_read_streams.py``:
87 MB before 10,000 such streams, 670 MB after they closed without this, 342 MB with it;
docs/reliability.md, "Never-read streams"). :class:`MemoryTrim` collects, then asks glibc
to give the free pages of every heap back (``malloc_trim(0)``, in a thread) once
``TRUCO_MEMORY_TRIM_AFTER_STREAMS`` streams have closed since the last time, looking every
:data:`EVERY_SECONDS`. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import gc
from typing import Protocol

import structlog

from truco_server.core.diagnostics import allocator_fields

log = structlog.get_logger("truco.memory")

EVERY_SECONDS = 5.0
"""How often the worker looks at the streams closed since its last trim."""


class ClosedStreams(Protocol):
    @property
    def closed(self) -> int:
        """Streams that ended since the worker started."""
        ...


def _malloc_trim() -> bool:
    """glibc's ``malloc_trim(0)``: whether memory was released (False where there is none)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))


def release() -> bool:
    """Collect what only the collector frees (a cancelled stream's frames and exceptions are
    in cycles), then give glibc's free pages back."""
    gc.collect()
    return _malloc_trim()


class MemoryTrim:
    """Calls :func:`release` after every ``after`` closed streams (see the module docstring)."""

    def __init__(self, streams: ClosedStreams, after: int, *, every: float = EVERY_SECONDS) -> None:
        self.streams = streams
        self.after = after
        self.every = every
        self.trims = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.after > 0 and self._task is None:
            self._task = asyncio.create_task(self._run(self.streams.closed), name="truco-memory-trim")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, last: int) -> None:
        while True:
            await asyncio.sleep(self.every)
            closed = self.streams.closed
            if closed - last < self.after:
                continue
            last = closed
            before = allocator_fields("before_")
            released = release()
            self.trims += 1
            log.info(
                "memory released", streams_closed=closed, released=released, **before, **allocator_fields()
            )
