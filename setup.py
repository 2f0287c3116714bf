"""Build hook: an optional mypyc-compiled build of the rules engine.

``pip install`` builds the pure-Python project as ever (``pyproject.toml`` holds everything
else). With ``TRUCO_MYPYC=1`` the engine's hot modules are compiled with mypyc (part of mypy)
from the same source; the pure-Python engine stays the reference the tests run. Build it
outside the source tree, so that the checkout keeps running the pure engine
(docs/engine.md, "Compiled build")::

    TRUCO_MYPYC=1 .venv/bin/uv pip install --python .venv/bin/python \\
        --no-deps --no-build-isolation --target build/mypyc .
"""

import os

from setuptools import setup

COMPILED = (
    "move_frame",
    "moves",
    "calls",
    "tricks",
    "scoring",
    "flor",
    "variants",
    "state",
    "engine",
    "observe",
    "ranking",
    "ranking_spanish",
)
"""Engine modules compiled; the rest (the dataclasses the engine introspects or patches:
events, views, actions, rule sets) stay Python in the compiled build too."""

ext_modules = []
if os.environ.get("TRUCO_MYPYC") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify([f"truco_engine/{m}.py" for m in COMPILED], opt_level="3")

setup(ext_modules=ext_modules)
