"""The modules the compiled builds take (``setup.py``: the engine's, and the served build's
move path) keep clear of what mypyc compiles wrongly.

A coroutine compiled by mypyc (2.4.1) that awaits in a ``finally`` block re-raises, after the
block, the exception its caller is handling, even when its ``try`` ended normally: a Redis
call whose first attempt timed out then ended in the timeout's ``CancelledError`` when the
retry closed the lane (docs/engine.md, "Compiled build"). The pure build behaves the same
either way, so only this check keeps the pattern out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def compiled_modules() -> list[Path]:
    """The source files ``setup.py`` compiles (``COMPILED`` and ``MOVE_PATH``), as it names
    them for the Makefile (``setup.py --compiled-sources``)."""
    done = subprocess.run(
        [sys.executable, "setup.py", "--compiled-sources"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return [ROOT / source for source in done.stdout.split()]


def awaits_in_finally(source: str) -> list[int]:
    """The lines of every ``await`` (``async with``, ``async for``) inside a ``finally`` block."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try | ast.TryStar):
            for statement in node.finalbody:
                for inner in ast.walk(statement):
                    if isinstance(inner, ast.Await | ast.AsyncWith | ast.AsyncFor):
                        found.append(inner.lineno)
    return found


def test_the_compiled_modules_are_found() -> None:
    paths = compiled_modules()
    missing = [str(p.relative_to(ROOT)) for p in paths if not p.is_file()]
    assert not missing, missing
    assert len(paths) > 20  # the engine's and the move path's


def test_the_check_finds_an_await_in_a_finally() -> None:
    source = textwrap.dedent(
        """
        async def f(x):
            try:
                await x()
            finally:
                if x:
                    await x()
        """
    )
    assert awaits_in_finally(source) == [7]
    assert awaits_in_finally(source.replace("finally:", "except BaseException:")) == []


def test_no_compiled_module_awaits_in_a_finally() -> None:
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in compiled_modules()
        if (lines := awaits_in_finally(path.read_text()))
    }
    assert offenders == {}, f"an await in a finally block of a compiled module: {offenders}"
