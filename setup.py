"""Build hook: optional mypyc-compiled builds.

``pip install`` builds the pure-Python project as ever (``pyproject.toml`` holds everything
else); the pure-Python code is the reference the tests run.

- ``TRUCO_MYPYC=1``: the rules engine's hot modules compiled with mypyc (part of mypy) from
  the same source. Build it outside the source tree, so that the checkout keeps running the
  pure engine (docs/engine.md, "Compiled build")::

      TRUCO_MYPYC=1 .venv/bin/uv pip install --python .venv/bin/python \\
          --no-deps --no-build-isolation --target build/mypyc .

- ``TRUCO_MYPYC=move-path``: for measurement only, not for serving. The engine and every
  module of a move's path that mypyc compiles (:data:`MOVE_PATH`), built in place in a copy
  of the checkout that is used for nothing else (docs/benchmarks.md, "Tried": what it gains,
  and the tests it fails)::

      TRUCO_MYPYC=move-path .venv/bin/python setup.py build_ext --inplace
"""

import os
import sys

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

MOVE_PATH = {
    "truco_match": ("views", "match", "table", "lifecycle", "fairness", "operator_events"),
    "contract/truco_contract/codec": ("views", "scalars", "plans", "actions", "operator_events"),
    "server/truco_server": (
        "services/matches",
        "services/relay",
        "services/stored",
        "services/compact",
        "stores/subscription",
        "stores/redis/matches",
        "stores/redis/hub",
        "stores/redis/feed",
        "stores/redis/cluster_feed",
        "stores/redis/batch",
        "stores/redis/lane",
        "api/limits",
    ),
}
"""Beyond the engine, the modules of a move's path the measurement build compiles. Not
compiled: the modules with async generators (mypyc does not compile them: the player
connection, the streams, the WebSocket transport, the API's streams)."""

ext_modules = []
build = os.environ.get("TRUCO_MYPYC")
if build in ("1", "move-path"):
    from mypyc.build import mypycify

    paths = [f"truco_engine/{m}.py" for m in COMPILED]
    if build == "move-path":
        print("TRUCO_MYPYC=move-path: a build for measurement only (setup.py)", file=sys.stderr)
        paths += [f"{folder}/{module}.py" for folder, modules in MOVE_PATH.items() for module in modules]
    ext_modules = mypycify(paths, opt_level="3", multi_file=build == "move-path")

setup(ext_modules=ext_modules)
