"""``truco match create``: create a match on a server and print its id and credentials, so a
bot developer can start ``truco bot`` on a seat (and ``truco watch`` with the spectator token)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

DEFAULT_SERVER = "127.0.0.1:50051"


def _create(args: argparse.Namespace) -> int:
    from truco_cli.client_commands import text_seed
    from truco_client.client import TrucoClient

    with TrucoClient(args.server, api_key=args.api_key, timeout=args.timeout) as client:
        m = client.create_match(
            args.preset,
            players=args.players,
            seats=[(name, "bot" if args.bots else "human") for name in args.seat] or None,
            seed=text_seed(args.seed),
            turn_timeout=args.turn_timeout,
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
    for seat, token in enumerate(m.seat_tokens):
        print(f"seat {seat} token: {token}")
    print(f"spectator token: {m.spectator_token}")
    print(f"play a seat:  truco bot rules --server {args.server} --token {m.seat_tokens[-1]}")
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
