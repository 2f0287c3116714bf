"""Run the engine tests on another build of the engine: ``TRUCO_ENGINE_BUILD=DIR`` puts
``DIR`` (holding a ``truco_engine`` package, e.g. the mypyc-compiled build of ``setup.py``)
first on the path before anything imports the engine. The tests then check that build
against the same goldens and properties as the pure-Python engine, which stays the reference
(``docs/engine.md``, "Compiled build")."""

from __future__ import annotations

import os
import sys
from pathlib import Path

BUILD = os.environ.get("TRUCO_ENGINE_BUILD")
if BUILD:
    assert "truco_engine" not in sys.modules, "the engine was imported before tests/engine/conftest.py"
    sys.path.insert(0, str(Path(BUILD).resolve()))
    import truco_engine.moves

    where = str(truco_engine.moves.__file__)
    assert not where.endswith(".py"), f"not a compiled build: {where}"


def pytest_report_header() -> str:
    import truco_engine.moves

    where = Path(str(truco_engine.moves.__file__))
    return f"truco_engine: {where.parent} ({where.name})"
