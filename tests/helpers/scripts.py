"""A script of the repository (a benchmark, a docs verifier, a deploy helper) loaded as a
module: scripts are not packages, so tests load them by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """The module of the script at ``path`` (named ``name``, else its file's stem), registered
    in ``sys.modules`` while it runs: dataclasses look their module up there."""
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
