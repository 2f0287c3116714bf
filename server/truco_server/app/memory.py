"""Handing freed memory back to the system after many streams were cut (docs/operations.md,
"Memory").

A stream a client opens and does not read makes its worker hold what it cannot send (the
transport's buffers, the updates queued for it); when such streams close, that memory is
freed, but what cancelled streams leave in reference cycles waits for a full collection, and
the allocator keeps what was freed (docs/reliability.md, "Never-read streams", measures it:
``python benchmarks/never_read_streams.py``). :class:`MemoryTrim` collects, then asks the
allocator to give its free pages back (:func:`~truco_server.core.diagnostics.release_free_memory`:
jemalloc purges its arenas, glibc trims its heaps) once ``TRUCO_MEMORY_TRIM_AFTER_STREAMS``
streams have been *cut* (cancelled or failed, not run to their match's end) since the last
time, looking every :data:`EVERY_SECONDS`. Streams that end with their match leave nothing
for it to do, and are not counted: a worker playing many matches would otherwise stop for a
full collection every thousand streams (100-400 ms on a 2-core test machine with 200 matches
live; docs/benchmarks.md, "Where the paced tail comes from").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import Protocol

import structlog

from truco_server.core.diagnostics import allocator_fields, allocator_name, release_free_memory

log = structlog.get_logger("truco.memory")

EVERY_SECONDS = 5.0
"""How often the worker looks at the streams cut since its last trim."""


class CutStreams(Protocol):
    @property
    def cut(self) -> int:
        """Streams cancelled or failed since the worker started."""
        ...


def release() -> bool:
    """Collect what only the collector frees (a cancelled stream's frames and exceptions are
    in cycles), then give the allocator's free pages back."""
    gc.collect()
    return release_free_memory()


class MemoryTrim:
    """Calls :func:`release` after every ``after`` cut streams (see the module docstring)."""

    def __init__(self, streams: CutStreams, after: int, *, every: float = EVERY_SECONDS) -> None:
        self.streams = streams
        self.after = after
        self.every = every
        self.trims = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.after > 0 and self._task is None:
            self._task = asyncio.create_task(self._run(self.streams.cut), name="truco-memory-trim")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, last: int) -> None:
        while True:
            await asyncio.sleep(self.every)
            cut = self.streams.cut
            if cut - last < self.after:
                continue
            last = cut
            before = allocator_fields("before_")
            released = release()
            self.trims += 1
            log.info(
                "memory released",
                streams_cut=cut,
                released=released,
                allocator=allocator_name(),
                **before,
                **allocator_fields(),
            )
