"""The `truco` command.

    truco serve [--grpc-port 50051 ...]   run a worker (this module)
    truco replay ... / truco bench engine provided by truco_engine.cli
    truco bench service                   truco_server.bench_service (added here)

Other packages add subcommands through `SUBCOMMAND_PROVIDERS`: each provider module has
`register_subcommands(subparsers)` that adds its parsers and sets `func` on each one with
`parser.set_defaults(func=handler)`, where `handler(args) -> int | None` (the exit code).
A provider that cannot be imported does not break the other subcommands: its expected
subcommands are still listed, and using one prints why it is unavailable and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from truco_server.config import ConfigError, Settings, add_arguments, load_settings

#: (module, subcommands it is expected to provide). Imported lazily, in this order.
SUBCOMMAND_PROVIDERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("truco_engine.cli", ("replay", "bench")),
    ("truco_client.cli", ("play", "watch", "demo", "bot", "bots")),
)


def _serve(args: argparse.Namespace) -> int:
    from truco_server.grpc_server import Worker, serve
    from truco_server.logging import configure_logging
    from truco_server.service_wiring import servicer_factory

    try:
        settings = load_settings(args)
    except ConfigError as exc:
        print(f"truco serve: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)

    def announce(worker: Worker) -> None:
        _print_listening(settings, worker)

    with contextlib.suppress(KeyboardInterrupt):  # signal handlers normally catch it
        asyncio.run(serve(settings, servicer_factory, on_started=announce))
    return 0


def _print_listening(settings: Settings, worker: Any) -> None:
    lines = [f"gRPC listening on {worker.grpc_address}"]
    http_port = getattr(worker, "http_port", None)
    if http_port:
        host = settings.host if ":" not in settings.host else f"[{settings.host}]"
        lines.append(
            f"REST/JSON listening on http://{host}:{http_port} (OpenAPI /openapi.json, reference page /play)"
        )
    metrics_port = worker.metrics_port
    lines.append(f"metrics on :{metrics_port}" if metrics_port else "metrics disabled")
    lines.append(f"store: {settings.store_description}")
    print("\n".join(lines), flush=True)


def _unavailable(module: str, error: BaseException) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        print(
            f"truco {args.command}: this subcommand comes from {module}, which could not be "
            f"imported: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return 2

    return handler


def _register_bench_service() -> None:
    """``truco bench service`` (the engine's CLI owns ``truco bench`` and its targets)."""
    try:
        from truco_engine.cli import register_bench_target
    except ImportError:  # pragma: no cover - the engine ships with the server
        return
    from truco_server import bench_service

    register_bench_target("service", bench_service.bench_command, bench_service.add_arguments)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="truco", description="Truco as a service.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = subparsers.add_parser(
        "serve",
        help="run a gRPC worker",
        description="Run a gRPC worker. Flags override environment variables (see docs/operations.md).",
    )
    add_arguments(serve)
    serve.set_defaults(func=_serve)

    _register_bench_service()
    for module_name, expected in SUBCOMMAND_PROVIDERS:
        try:
            module = importlib.import_module(module_name)
            register = module.register_subcommands
        except (ImportError, AttributeError) as exc:
            for name in expected:
                if name in subparsers.choices:
                    continue
                sub = subparsers.add_parser(name, help=f"(unavailable: {module_name})")
                sub.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
                sub.set_defaults(func=_unavailable(module_name, exc))
            continue
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    result = func(args)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
