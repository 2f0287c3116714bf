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
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def compiled_modules() -> list[Path]:
    """The source files ``setup.py`` compiles (``COMPILED`` and ``MOVE_PATH``)."""
    values: dict[str, object] = {}
    for node in ast.parse((ROOT / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in ("COMPILED", "MOVE_PATH"):
                values[target.id] = ast.literal_eval(node.value)
    engine = values["COMPILED"]
    move_path = values["MOVE_PATH"]
    assert isinstance(engine, tuple) and isinstance(move_path, dict)
    paths = [ROOT / "truco_engine" / f"{module}.py" for module in engine]
    paths += [ROOT / folder / f"{module}.py" for folder, modules in move_path.items() for module in modules]
    return paths


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
