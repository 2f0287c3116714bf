"""Child processes that end with the process that started them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Ask Linux to SIGKILL this process when the thread that started it ends (``prctl``
    ``PR_SET_PDEATHSIG``): a worker killed with SIGKILL leaves no child behind. Elsewhere it
    does nothing.

    ``parent`` is the pid of the process that started this one, for a child that calls this
    some time after it started (a pool's process, after its imports): a parent that died
    before the call sends no signal, so the child, now an orphan, ends at once instead."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(0)
