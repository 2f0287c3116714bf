"""The ``truco`` command.

truco serve                 run a worker (truco_cli.serve; server install)
truco replay FILE           replay a record (truco_cli.engine_commands)
truco record / verify       export a match's record, check it (truco_cli.record_commands)
truco bench engine|service  benchmarks (truco_cli.bench_commands)
truco play / watch / demo / bot / bots eval   clients (truco_cli.client_commands)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from truco_cli import bench_commands, client_commands, engine_commands, optional, record_commands


def _needs_server(name: str) -> int:
    print(f"truco {name}: {optional.SERVER_MISSING}; {optional.SERVER_HINT}", file=sys.stderr)
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="truco", description="Truco as a service.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if optional.serve is not None:
        optional.serve.register(sub)
    else:
        p = sub.add_parser("serve", help="run a worker (needs the server install)")
        p.set_defaults(func=lambda args: _needs_server("serve"), any_arguments=True)
    engine_commands.register(sub)
    record_commands.register(sub)
    bench_commands.register(sub)
    if optional.campaign is not None:
        c = sub.add_parser("campaign", help="load, chaos and fuzz on loopback (docs/reliability.md)")
        optional.campaign.add_arguments(c)
        c.set_defaults(func=optional.campaign.command)
    else:
        p = sub.add_parser("campaign", help="load, chaos and fuzz (needs the server install)")
        p.set_defaults(func=lambda args: _needs_server("campaign"), any_arguments=True)
    client_commands.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "any_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
