"""The parts of the ``truco`` command that need the server install.

A client-only install (``pip install .`` in a checkout) has the engine, the contract, the SDK
and the bots, but not the server's dependencies (Redis, aiohttp, structlog, prometheus-client).
Everything that needs them is imported here, once; the subcommands that use them check
:data:`SERVER_MISSING` and answer with one line instead of a traceback.
"""

from __future__ import annotations

from types import ModuleType

SERVER_HINT = "install the server from a checkout of the project: pip install '.[server]' (or make serve)"
"""How to get the server: the project is installed from its source (no package index has it)."""

embedded: ModuleType | None
serve: ModuleType | None
bench_service: ModuleType | None
campaign: ModuleType | None
try:
    from truco_cli import serve
    from truco_server.app import embedded
    from truco_tools import bench_service
    from truco_tools.campaign import run as campaign
except ImportError as exc:  # a client-only install
    embedded = serve = bench_service = campaign = None
    SERVER_MISSING: str | None = f"{exc.name or exc}: not installed"
else:
    SERVER_MISSING = None
