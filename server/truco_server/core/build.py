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

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

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


def _source_of(path: Path) -> Path | None:
    """The source beside the extension file ``path`` (None: not an extension, or no source)."""
    suffix = next((s for s in importlib.machinery.EXTENSION_SUFFIXES if path.name.endswith(s)), None)
    if suffix is None:
        return None
    source = path.with_name(path.name[: -len(suffix)] + ".py")
    return source if source.is_file() else None


def extensions() -> list[Extension]:
    """Every module of :data:`PACKAGES` that this interpreter imports from an extension file
    beside its source."""
    found = []
    for package in PACKAGES:
        for root in _roots(package):
            for path in sorted(root.rglob("*")):
                source = _source_of(path)
                if source is None:
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


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of :data:`PACKAGES` as the path finder does, but a compiled one's
    source in place of its extension."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            return spec
        source = _source_of(Path(str(spec.origin)))
        if source is None:
            return spec
        return importlib.util.spec_from_file_location(
            fullname, source, submodule_search_locations=spec.submodule_search_locations
        )


def run_source() -> None:
    """Make this process import every module of :data:`PACKAGES` from its source, compiled or
    not: for tools that follow Python's own execution (the coverage-guided fuzz targets, which
    only see the branches of Python code). Call it before any of them is imported."""
    loaded = [
        name
        for name, module in sys.modules.items()
        if name.partition(".")[0] in PACKAGES
        and isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)
    ]
    if loaded:
        raise RuntimeError(f"run_source() after the compiled {loaded[0]} was imported")
    if not any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFinder())
