"""Build hook: the mypyc-compiled builds.

``pip install`` builds the pure-Python project as ever (``pyproject.toml`` holds everything
else). With ``TRUCO_MYPYC`` set, mypyc (part of mypy) compiles modules from the same source;
the build needs mypy installed (``--no-build-isolation``), a C compiler and Python's headers.

- ``TRUCO_MYPYC=move-path``: the build that is served and tested. The engine and every module
  of a move's path that mypyc compiles (:data:`COMPILED`, :data:`MOVE_PATH`). ``make
  compiled`` builds it in place in the checkout (an extension module beside each source,
  imported in its place; ``make test`` runs the suite on it), the container image installs it
  (docs/engine.md, "Compiled build")::

      TRUCO_MYPYC=move-path .venv/bin/python setup.py build_ext --inplace

- ``TRUCO_MYPYC=1``: the rules engine's modules alone, built outside the source tree, for the
  engine's benchmarks (docs/benchmarks.md, "Engine")::

      TRUCO_MYPYC=1 .venv/bin/uv pip install --python .venv/bin/python \\
          --no-deps --no-build-isolation --target build/mypyc .

``python setup.py --compiled-sources`` prints the sources of the move-path build (what the
Makefile rebuilds it on).
"""

import os
import sys

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
    "contract/truco_contract/codec": ("views", "scalars", "plans", "actions", "operator_events", "wire"),
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
        "core/lru",
        "services/live",
    ),
}
"""Beyond the engine, the modules of a move's path the move-path build compiles. Not
compiled: the modules with async generators (mypyc does not compile them: the player
connection, the streams, the WebSocket transport, the API's streams)."""


def sources(build: str) -> list[str]:
    """The source files a build compiles."""
    paths = [f"truco_engine/{m}.py" for m in COMPILED]
    if build == "move-path":
        paths += [f"{folder}/{module}.py" for folder, modules in MOVE_PATH.items() for module in modules]
    return paths


if sys.argv[1:] == ["--compiled-sources"]:
    print(" ".join(sources("move-path")))
    sys.exit(0)

from setuptools import setup  # noqa: E402 (not needed to print the sources)

ext_modules = []
build = os.environ.get("TRUCO_MYPYC")
if build in ("1", "move-path"):
    from mypyc.build import mypycify

    if build == "move-path":
        # The modules' shared library goes inside a package (truco_engine/move_path__mypyc...),
        # not at the top level, where an editable install's path does not reach. mypyc (2.4.1)
        # writes that group's headers to build/truco_engine/ and the modules' C files, which
        # include them, to build/: the extensions get that folder on their include path.
        ext_modules = mypycify(
            sources(build), opt_level="3", multi_file=True, group_name="truco_engine.move_path"
        )
        for extension in ext_modules:
            extension.include_dirs.append(os.path.join("build", "truco_engine"))
    else:
        ext_modules = mypycify(sources(build), opt_level="3")

setup(ext_modules=ext_modules)
