"""Which build of the move path this process runs, and whether a compiled one is stale.

The modules of a move's path can be compiled with mypyc (``setup.py``, ``TRUCO_MYPYC=move-path``;
docs/engine.md, "Compiled build"): an extension module sits beside each compiled source, and
Python imports it in place of the source. In a checkout, an extension built before its source
last changed runs the old code: :func:`stale_extensions` finds them, and ``truco serve`` and the
test suite refuse to start on them (``make compiled`` rebuilds them, ``make clean-compiled``
removes them). An installed package (a wheel, the container image) is built once and is never
stale, so the check looks at checkouts only.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("truco_engine", "truco_match", "truco_contract", "truco_server")
"""The packages the compiled build takes modules from."""


@dataclass(frozen=True)
class Extension:
    """A compiled module: its extension file, and the source it was built from."""

    module: str
    path: Path
    source: Path


def _roots(package: str) -> list[Path]:
    spec = importlib.util.find_spec(package)  # (a top-level package: nothing is imported)
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


def extensions() -> list[Extension]:
    """Every module of :data:`PACKAGES` that this interpreter imports from an extension file
    beside its source."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    found = []
    for package in PACKAGES:
        for root in _roots(package):
            for path in sorted(root.rglob("*")):
                suffix = next((s for s in suffixes if path.name.endswith(s)), None)
                if suffix is None:
                    continue
                source = path.with_name(path.name[: -len(suffix)] + ".py")
                if not source.is_file():
                    continue
                parts = path.relative_to(root).with_name(source.stem).parts
                found.append(Extension(".".join((package, *parts)), path, source))
    return found


def describe() -> str:
    """The build in a few words, for the banner and the start-up log."""
    compiled = extensions()
    if not compiled:
        return "pure Python"
    count = len(compiled)
    return f"compiled with mypyc ({count} module{'s' if count != 1 else ''} of the move path)"


def checkout() -> Path | None:
    """The source checkout the packages run from (``setup.py`` beside the engine's package),
    or None for an installed package."""
    return next((r.parent for r in _roots("truco_engine") if (r.parent / "setup.py").is_file()), None)


def stale_extensions() -> list[Extension]:
    """In a checkout, the compiled modules whose source changed after they were built."""
    if checkout() is None:
        return []
    return [e for e in extensions() if e.source.stat().st_mtime > e.path.stat().st_mtime]


def stale_message(stale: list[Extension]) -> str:
    """What to do about :func:`stale_extensions`, in one line."""
    root = checkout()
    first = stale[0].source
    if root is not None and first.is_relative_to(root):
        first = first.relative_to(root)
    more = f" and {len(stale) - 1} more" if len(stale) > 1 else ""
    return (
        f"compiled modules are older than their source ({first}{more}); rebuild them with "
        "`make compiled`, or remove them with `make clean-compiled` to run the source"
    )
