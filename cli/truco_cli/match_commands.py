"""``truco match create``: create a match on a server and print its id and credentials, so a
bot developer can start ``truco bot`` on a seat (and ``truco watch`` with the spectator token)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

DEFAULT_SERVER = "127.0.0.1:50051"


def _seats(args: argparse.Namespace) -> list[Any] | None:
    """The seats asked for: ``--seat`` names (bots with ``--bots``), then the seats of the
    server's bot, one per ``--computer LEVEL``, last; ``None``: the server's default seats."""
    from truco_cli.errors import UsageError

    seats: list[Any] = [(name, "bot" if args.bots else "human") for name in args.seat]
    if not args.computer:
        return seats or None
    import truco_engine as te

    for level in args.computer:
        if not 1 <= level <= 6:
            raise UsageError(f"--computer {level}: the levels are 1 to 6")
    players = args.players or te.get_rules(args.preset).players
    people = players - len(args.computer)
    if people < 0 or len(seats) > people:
        raise UsageError(f"{len(seats)} --seat and {len(args.computer)} --computer for {players} players")
    seats += [("", "human")] * (people - len(seats))
    return seats + [(f"computer (level {level})", "bot", level) for level in args.computer]


def _create(args: argparse.Namespace) -> int:
    from truco_cli.client_commands import text_seed
    from truco_client.client import TrucoClient

    with TrucoClient(args.server, api_key=args.api_key, timeout=args.timeout) as client:
        m = client.create_match(
            args.preset,
            players=args.players,
            seats=_seats(args),
            seed=text_seed(args.seed),
            turn_timeout=args.turn_timeout,
            disconnect_grace=args.disconnect_grace,
            takeover_level=args.takeover,
            bot_think_time=args.bot_think,
        )
    info = m.match
    if args.json:
        out: dict[str, Any] = {
            "match_id": m.match_id,
            "preset": info.preset,
            "players": len(m.seat_tokens),
            "seat_tokens": list(m.seat_tokens),
            "spectator_token": m.spectator_token,
            "server": args.server,
        }
        print(json.dumps(out, indent=2))
        return 0
    print(f"match {m.match_id}: {info.preset}, {len(m.seat_tokens)} players")
    levels = {s.seat: s.bot_level for s in info.seats if s.bot_level}
    for seat, token in enumerate(m.seat_tokens):
        if seat in levels:
            print(f"seat {seat}: played by the server's bot (level {levels[seat]})")
        else:
            print(f"seat {seat} token: {token}")
    print(f"spectator token: {m.spectator_token}")
    free = [t for seat, t in enumerate(m.seat_tokens) if seat not in levels] or list(m.seat_tokens)
    print(f"play a seat:  truco bot rules --server {args.server} --token {free[-1]}")
    print(f"watch it:     truco watch {m.match_id} --server {args.server} --token {m.spectator_token}")
    return 0


def register(sub: Any) -> None:
    """Add ``match create`` to the ``truco`` parser."""
    m = sub.add_parser("match", help="matches on a server: truco match create")
    msub = m.add_subparsers(dest="subcommand", metavar="COMMAND")
    c = msub.add_parser(
        "create",
        help="create a match; print its id, one token per seat and the spectator token",
        description="Create a match on a server (an operator call) and print its id and credentials.",
    )
    c.add_argument("--preset", default="paulista", help="rule preset (default paulista)")
    c.add_argument("--players", type=int, default=None, help="number of players (default: the preset's)")
    c.add_argument("--seat", action="append", default=[], help="display name of the next seat (repeatable)")
    c.add_argument("--bots", action="store_true", help="mark the named seats as bots")
    c.add_argument(
        "--computer",
        type=int,
        action="append",
        default=[],
        metavar="LEVEL",
        help="one more seat, played by the server's bot at LEVEL, 1 to 6 (repeatable)",
    )
    c.add_argument(
        "--disconnect-grace", type=float, default=None, help="seconds a seat may be away while awaited"
    )
    c.add_argument(
        "--takeover",
        type=int,
        default=None,
        metavar="LEVEL",
        help="a bot at LEVEL takes over a seat away for the disconnect grace (needs --disconnect-grace)",
    )
    c.add_argument("--bot-think", type=float, default=None, help="seconds the bots think per decision")
    c.add_argument("--seed", help="shuffle seed (text) for a reproducible deal")
    c.add_argument("--turn-timeout", type=float, default=None, help="seconds per decision (default: none)")
    c.add_argument("--server", default=DEFAULT_SERVER, help=f"HOST:PORT (default {DEFAULT_SERVER})")
    c.add_argument(
        "--api-key",
        default=os.environ.get("TRUCO_API_KEY"),
        help="operator API key (or TRUCO_API_KEY; a server without keys takes any)",
    )
    c.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")
    c.add_argument("--json", action="store_true", help="print the match id and tokens as JSON")
    c.set_defaults(func=_create)
    m.set_defaults(func=lambda a: m.print_help() or 2)
