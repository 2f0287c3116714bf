"""Child processes that end with the process that started them."""

from __future__ import annotations

import contextlib
import ctypes
import signal

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the thread that started it ends (``prctl``
    ``PR_SET_PDEATHSIG``): a worker killed with SIGKILL leaves no child behind. Elsewhere it
    does nothing."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
