"""Child processes end with their parent (truco_server.core.processes): a child that asks to
after its parent already ended -- a bot decision process still importing when its worker
stopped -- ends at once instead of waiting for work forever (it was left running, reparented
to init, before)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")

CHILD = "from truco_server.core.processes import die_with_parent; die_with_parent({parent}); print('alive')"


def run_child(parent: str) -> subprocess.CompletedProcess[str]:
    code = CHILD.format(parent=parent)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ
    )


def test_a_child_whose_parent_is_still_there_goes_on() -> None:
    done = run_child("__import__('os').getppid()")
    assert (done.returncode, done.stdout.strip()) == (0, "alive"), done.stderr


def test_a_child_whose_parent_already_ended_ends_at_once() -> None:
    # another pid than the child's parent: what the child sees when the process that started
    # it died and it was reparented
    done = run_child(str(os.getpid() + 1_000_000))
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
