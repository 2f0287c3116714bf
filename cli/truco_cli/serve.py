"""``truco serve``: run a worker (gRPC, REST/JSON and metrics) until SIGTERM or Ctrl-C; with
``--workers N`` (default: the cores this process may use, with a Redis store) N workers
behind the same ports (:mod:`truco_server.app.workers`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import sys
from typing import TYPE_CHECKING

from truco_server.core.config import ConfigError, Settings, add_arguments, load_settings

if TYPE_CHECKING:
    from truco_server.transports.grpc.server import Worker


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
    from truco_server.core.build import stale_extensions, stale_message

    stale = stale_extensions()
    if stale:
        print(f"truco serve: {stale_message(stale)}", file=sys.stderr)
        return 2
    # (a worker of a group shares its ports with its siblings: only the group checks them)
    busy = None if settings.reuse_port else _busy_port(settings)
    if busy is not None:
        print(f"truco serve: {busy}", file=sys.stderr)
        return 2
    from truco_server.core.logging import configure_logging

    configure_logging(settings.log_level)
    if settings.effective_workers > 1:
        if settings.redis_url is None:
            print("truco serve: --workers above 1 needs a Redis store (--redis)", file=sys.stderr)
            return 2
        from truco_server.app.workers import WorkerGroup

        argv = sys.argv[sys.argv.index("serve") + 1 :] if "serve" in sys.argv else []
        return WorkerGroup(settings, argv).run()

    # (the worker's own modules: imported here, not by every truco command at its start)
    from truco_server.app.wiring import service_factory
    from truco_server.transports.grpc.server import serve

    def announce(worker: Worker) -> None:
        _print_listening(settings, worker)

    try:
        with contextlib.suppress(KeyboardInterrupt):  # signal handlers normally catch it
            asyncio.run(serve(settings, service_factory, on_started=announce))
    except (RuntimeError, OSError) as exc:
        # grpc raises RuntimeError("Failed to bind to address ..."); aiohttp and the metrics
        # server an OSError (EADDRINUSE) for the HTTP ports.
        if isinstance(exc, RuntimeError) and "Failed to bind" not in str(exc):
            raise
        if isinstance(exc, OSError) and exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise
        print(f"truco serve: {_bind_message(settings, exc)}", file=sys.stderr)
        return 2
    return 0


def _bind_message(settings: Settings, exc: BaseException) -> str:
    busy = _busy_port(settings)
    if busy is not None:
        return busy
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).split(";")[0]
    return f"cannot listen on {settings.host}: {reason}"


def _busy_port(settings: Settings) -> str | None:
    """The first configured port that cannot be bound on the host, as a one-line message."""
    import socket

    for name, port, flag, env in (
        ("gRPC", settings.grpc_port, "--grpc-port", "TRUCO_GRPC_PORT"),
        ("REST", settings.http_port, "--http-port", "TRUCO_HTTP_PORT"),
        ("metrics", settings.metrics_port, "--metrics-port", "TRUCO_METRICS_PORT"),
    ):
        if not port:
            continue
        family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # as the servers themselves bind: a port whose last listener left connections in
            # TIME_WAIT (a worker killed and started again) is free, one being listened on is not
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((settings.host, port))
            except OSError as exc:
                return (
                    f"cannot listen on {settings.host}:{port} for {name} ({exc.strerror or exc}); "
                    f"choose another port with {flag} or {env} (0 picks a free one)"
                )
    return None


def _print_listening(settings: Settings, worker: Worker) -> None:
    from truco_server.core.build import describe

    build = describe()
    lines = [f"gRPC listening on {worker.grpc_address}"]
    http_port = worker.http_port
    if http_port:
        host = settings.host if ":" not in settings.host else f"[{settings.host}]"
        lines.append(
            f"REST/JSON listening on http://{host}:{http_port} (OpenAPI /openapi.json, reference page /play)"
        )
    metrics_port = worker.metrics_port
    lines.append(f"metrics on :{metrics_port}" if metrics_port else "metrics disabled")
    lines.append(f"build: {build}")
    lines.append(f"store: {settings.store_description}")
    # stdout carries JSON log lines only (what a log collector reads); the banner is for people.
    print("\n".join(lines), file=sys.stderr, flush=True)
    from truco_server.core.logging import get_logger

    get_logger("truco_server.serve").info(
        "serving",
        grpc_address=worker.grpc_address,
        http_port=http_port or None,
        metrics_port=metrics_port or None,
        store=settings.store_description,
        build=build,
    )
