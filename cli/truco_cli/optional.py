"""The parts of the ``truco`` command that need the server install, imported when first used.

A client-only install (``pip install .`` in a checkout) has the engine, the contract, the SDK
and the bots, but not the server's dependencies (Redis, aiohttp, structlog, prometheus-client).
:data:`SERVER_MISSING` says which is absent (found without importing anything), and the
subcommands that need them answer with one line instead of a traceback. The modules
themselves (``serve``, ``embedded``, ``bench_service``, ``campaign``) are imported on their
first use, so that a client command such as ``truco match create`` does not pay for the
server's imports (the worker, Redis, aiohttp, the league formats) at every start.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

SERVER_HINT = "install the server from a checkout of the project: pip install '.[server]' (or make serve)"
"""How to get the server: the project is installed from its source (no package index has it)."""

_SERVER_PACKAGES = ("truco_server", "truco_tools", "redis", "aiohttp", "structlog", "prometheus_client")
"""What the server install brings (the top-level packages its modules import)."""

_MODULES = {
    "serve": "truco_cli.serve",
    "embedded": "truco_server.app.embedded",
    "bench_service": "truco_tools.bench_service",
    "campaign": "truco_tools.campaign.run",
}


def _missing() -> str | None:
    for name in _SERVER_PACKAGES:
        if importlib.util.find_spec(name) is None:
            return f"{name}: not installed"
    return None


SERVER_MISSING: str | None = _missing()

serve: ModuleType | None
embedded: ModuleType | None
bench_service: ModuleType | None
campaign: ModuleType | None


def __getattr__(name: str) -> ModuleType | None:
    """``optional.serve`` and the others: the module, imported now, or None without the server."""
    path = _MODULES.get(name)
    if path is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = None if SERVER_MISSING is not None else importlib.import_module(path)
    globals()[name] = module
    return module
