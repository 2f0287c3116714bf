"""The modules the compiled builds take (``setup.py``: the engine's, and the served build's
move path) keep clear of what mypyc compiles wrongly.

A coroutine compiled by mypyc (2.4.1) that awaits in an ``except`` or ``finally`` block leaves
the exception it handles as the thread's handled exception while it waits: every task that
runs meanwhile sees it in ``sys.exc_info()``, and any exception raised there takes it as its
``__context__`` (a traceback that reads "During handling of the above exception" for a fault
that happened elsewhere, long before). After an await in a ``finally`` block it also re-raises
the exception its caller is handling, even when its ``try`` ended normally: a Redis call whose
first attempt timed out then ended in the timeout's ``CancelledError`` when the retry closed
the lane (docs/engine.md, "Compiled build"). The source behaves right either way, so only
these checks keep the pattern out: the one of the sources here, and one of a compiled class
that cleans up after a failure. Nor does any compiled class carry a decorator other than
``dataclass``, with which mypyc would compile it as a Python class.
"""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def compiled_modules() -> list[Path]:
    """The source files ``setup.py`` compiles (``COMPILED`` and ``MOVE_PATH``), as it names
    them for the Makefile (``setup.py --compiled-sources``)."""
    done = subprocess.run(
        [sys.executable, "setup.py", "--compiled-sources"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return [ROOT / source for source in done.stdout.split()]


def awaits_in_handlers(source: str) -> list[int]:
    """The lines of every ``await`` (``async with``, ``async for``) inside an ``except`` or
    ``finally`` block, leaving out the functions defined there (they run when called)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try | ast.TryStar):
            blocks = [*(handler.body for handler in node.handlers), node.finalbody]
            stack: list[ast.AST] = [statement for block in blocks for statement in block]
            while stack:
                inner = stack.pop()
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                    continue
                if isinstance(inner, ast.Await | ast.AsyncWith | ast.AsyncFor):
                    found.append(inner.lineno)
                stack.extend(ast.iter_child_nodes(inner))
    return sorted(found)


def test_the_compiled_modules_are_found() -> None:
    paths = compiled_modules()
    missing = [str(p.relative_to(ROOT)) for p in paths if not p.is_file()]
    assert not missing, missing
    assert len(paths) > 20  # the engine's and the move path's


def test_the_check_finds_an_await_in_a_handler() -> None:
    source = textwrap.dedent(
        """
        async def f(x):
            try:
                await x()
            except ValueError:
                async def later():
                    await x()
                if x:
                    await x()
            finally:
                async with x:
                    pass
            await x()
        """
    )
    assert awaits_in_handlers(source) == [9, 11]
    assert awaits_in_handlers(source.replace("async with x", "with x")) == [9]


def test_no_compiled_module_awaits_in_a_handler() -> None:
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in compiled_modules()
        if (lines := awaits_in_handlers(path.read_text()))
    }
    assert offenders == {}, f"an await in an except or finally block of a compiled module: {offenders}"


async def test_a_failure_cleaned_up_leaves_no_handled_exception_to_other_tasks() -> None:
    """``Lane._take`` (compiled in the served build) disconnects a connection it could not
    take: while that waits, the other tasks see no exception being handled, and raise theirs
    with no context."""
    from truco_server.stores.redis.lane import Lane

    disconnecting, go_on = asyncio.Event(), asyncio.Event()

    class Unusable:
        """A connection with no stream writer (``_take`` fails reading its transport)."""

        async def disconnect(self) -> None:
            disconnecting.set()
            await go_on.wait()

    async def release(connection: object) -> None:
        pass

    taking = asyncio.create_task(Lane._take(Unusable(), release))
    await disconnecting.wait()
    seen = sys.exc_info()[1]
    try:
        raise KeyError("here")
    except KeyError as exc:
        context = exc.__context__
    go_on.set()
    with pytest.raises(AttributeError):
        await taking
    assert (seen, context) == (None, None)


def decorated_classes(source: str) -> list[tuple[str, str]]:
    """The classes decorated by anything but ``dataclass`` (and the decorator)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if ast.unparse(target) not in ("dataclass", "dataclasses.dataclass"):
                    found.append((node.name, ast.unparse(decorator)))
    return found


def test_no_compiled_class_has_a_decorator_mypyc_does_not_know() -> None:
    """mypyc compiles a class decorated by anything but ``dataclass`` as a Python class,
    without a word: its attributes are a dict's, its methods called as Python's. A compiled
    module gives a class the faster ``__init__`` with a call after it
    (``fast_init(SeatView)``), never as a decorator."""
    assert decorated_classes("@fast_init\n@dataclass(frozen=True)\nclass A:\n    x: int\n") == [
        ("A", "fast_init")
    ]
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in compiled_modules()
        if (found := decorated_classes(path.read_text()))
    }
    assert offenders == {}, f"a decorated class in a compiled module: {offenders}"
