"""The ``truco`` command.

truco serve                 run a worker (truco_cli.serve; server install)
truco match create          create a match, print its id and credentials (truco_cli.match_commands)
truco replay FILE           replay a record (truco_cli.engine_commands)
truco record / verify       export a match's record, check it (truco_cli.record_commands)
truco bench engine|service  benchmarks (truco_cli.bench_commands)
truco play / watch / demo / bot / bots eval   clients (truco_cli.client_commands)
truco league ...            leagues, bot accounts, the bot lobby (truco_cli.league_commands)

Every user mistake is one line on stderr and a non-zero exit (truco_cli.errors).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from truco_cli import (
    bench_commands,
    client_commands,
    engine_commands,
    league_commands,
    match_commands,
    optional,
    record_commands,
)
from truco_cli.errors import run_command


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``truco play: unrecognized arguments: --x (see truco play
    --help)`` and exit status 2, for the command and every subcommand."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("truco-service")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def _needs_server(name: str) -> int:
    print(f"truco {name}: {optional.SERVER_MISSING}; {optional.SERVER_HINT}", file=sys.stderr)
    return 2


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole ``truco`` parser, or, given the ``command`` being run (``""`` for none), one
    whose other commands leave out the arguments that import the server's tools (the service
    benchmark's, the campaign's): a client command then starts without them."""

    def whole(name: str) -> bool:
        return command is None or command == name

    parser = Parser(prog="truco", description="Truco as a service.")
    parser.add_argument("--version", action="version", version=f"truco {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if optional.serve is not None:
        optional.serve.register(sub)
    else:
        p = sub.add_parser("serve", help="run a worker (needs the server install)")
        p.set_defaults(func=lambda args: _needs_server("serve"), any_arguments=True)
    match_commands.register(sub)
    engine_commands.register(sub)
    record_commands.register(sub)
    bench_commands.register(sub, whole("bench"))
    campaign_help = "load, chaos and fuzz on loopback (docs/reliability.md)"
    if optional.SERVER_MISSING is not None or (whole("campaign") and optional.campaign is None):
        p = sub.add_parser("campaign", help="load, chaos and fuzz (needs the server install)")
        p.set_defaults(func=lambda args: _needs_server("campaign"), any_arguments=True)
    elif whole("campaign"):
        assert optional.campaign is not None
        c = sub.add_parser("campaign", help=campaign_help)
        optional.campaign.add_arguments(c)
        c.set_defaults(func=optional.campaign.command)
    else:
        sub.add_parser("campaign", help=campaign_help)
    client_commands.register(sub)
    league_commands.register(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand named in ``argv`` (the top level has no option that takes a value)."""
    return next((a for a in argv if not a.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(_command_of(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "any_arguments", False):
        prog = " ".join(["truco", *(p for p in (args.command, getattr(args, "subcommand", None)) if p)])
        print(f"{prog}: unrecognized arguments: {' '.join(unknown)} (see {prog} --help)", file=sys.stderr)
        return 2
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return run_command(func, args)


if __name__ == "__main__":
    sys.exit(main())
