"""``truco serve``: run a worker (gRPC, REST/JSON and metrics) until SIGTERM or Ctrl-C; with
``--workers N`` (default: the cores this process may use, with a Redis store) N workers
behind the same ports (:mod:`truco_server.worker_group`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from truco_server.config import ConfigError, Settings, add_arguments, load_settings
from truco_server.grpc_server import Worker, serve
from truco_server.logging import configure_logging
from truco_server.service_wiring import servicer_factory


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "serve",
        help="run a worker (gRPC, REST/JSON, metrics)",
        description="Run a worker. Flags override environment variables (see docs/operations.md).",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args)
    except ConfigError as exc:
        print(f"truco serve: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    if settings.effective_workers > 1:
        if settings.redis_url is None:
            print("truco serve: --workers above 1 needs a Redis store (--redis)", file=sys.stderr)
            return 2
        from truco_server.worker_group import WorkerGroup

        argv = sys.argv[sys.argv.index("serve") + 1 :] if "serve" in sys.argv else []
        return WorkerGroup(settings, argv).run()

    def announce(worker: Worker) -> None:
        _print_listening(settings, worker)

    with contextlib.suppress(KeyboardInterrupt):  # signal handlers normally catch it
        asyncio.run(serve(settings, servicer_factory, on_started=announce))
    return 0


def _print_listening(settings: Settings, worker: Worker) -> None:
    lines = [f"gRPC listening on {worker.grpc_address}"]
    http_port = worker.http_port
    if http_port:
        host = settings.host if ":" not in settings.host else f"[{settings.host}]"
        lines.append(
            f"REST/JSON listening on http://{host}:{http_port} (OpenAPI /openapi.json, reference page /play)"
        )
    metrics_port = worker.metrics_port
    lines.append(f"metrics on :{metrics_port}" if metrics_port else "metrics disabled")
    lines.append(f"store: {settings.store_description}")
    print("\n".join(lines), flush=True)
