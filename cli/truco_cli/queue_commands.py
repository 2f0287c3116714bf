"""``truco queue ...``: matchmaking pools and tickets on a server (docs/matchmaking.md).

    truco queue pool create quick --preset paulista --players 2 --rated --window 5,1,50
    truco queue pool create solo --players 2 --bot-fill-after 30 --bot-fill-level 2
    truco queue pool list
    truco queue join quick ana --name Ana [--partner bia] [--wait 60]   a ticket (JSON)
    truco queue status quick TICKET                                    the ticket (JSON)
    truco queue wait quick TICKET --within 600                         until matched (JSON)
    truco queue cancel quick TICKET
    truco queue rating ana paulista-2p                                 a player's rating

The key comes from ``--api-key`` or ``TRUCO_API_KEY``: the operator's, or a ticket's token
(``tk1...``) for ``status``, ``wait`` and ``cancel`` of that ticket. Tickets print as JSON (the
REST mapping); ``join --wait`` also waits for the match. Exit status: 0 when it worked, 1 when
the server refused or a wait ended without a match (one line on stderr), 2 for a mistake in
the arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from truco_cli.errors import UsageError
from truco_cli.match_commands import DEFAULT_SERVER


def _client(args: argparse.Namespace) -> Any:
    from truco_client.matchmaking import MatchmakingClient

    key = args.api_key or os.environ.get("TRUCO_API_KEY")
    return MatchmakingClient(args.server, api_key=key, timeout=args.timeout)


def _json(message: Any) -> str:
    from truco_contract.json_mapping import message_to_dict

    return json.dumps(message_to_dict(message), indent=2, ensure_ascii=False)


def _window(text: str | None) -> tuple[float, float, float] | None:
    if not text:
        return None
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 3:
        raise UsageError(f"--window takes INITIAL,PER_SECOND,MAX (e.g. 5,1,50), got {text!r}")
    return values[0], values[1], values[2]


def _pool_create(args: argparse.Namespace) -> int:
    with _client(args) as c:
        pool = c.create_pool(
            args.pool,
            preset=args.preset,
            players=args.players,
            rated=args.rated,
            rating_window=_window(args.window),
            ticket_ttl=args.ticket_ttl,
            bot_fill_after=args.bot_fill_after,
            bot_fill_level=args.bot_fill_level,
            bot_fill_partners=args.bot_fill_partners,
        )
    print(_json(pool))
    return 0


def _pool_list(args: argparse.Namespace) -> int:
    with _client(args) as c:
        for p in c.list_pools():
            print(f"{p.pool_id}: {p.rules.preset}, {p.players} players, rating family {p.rating_family}")
    return 0


def _join(args: argparse.Namespace) -> int:
    players = [(args.player, args.name or "")] + [(p, "") for p in args.partner or []]
    props = {}
    for item in args.property or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--property takes KEY=VALUE, got {item!r}")
        props[key] = value
    with _client(args) as c:
        made = c.create_ticket(args.pool, players, properties=props, request_id=args.request_id)
        if not args.wait:
            print(_json(made))
            return 0
        print(f"ticket {made.ticket.ticket_id} waiting in {args.pool}", file=sys.stderr)
        ticket = c.wait_matched(args.pool, made.ticket.ticket_id, timeout=args.wait)
    return _done(ticket)


def _done(ticket: Any) -> int:
    from truco_client.matchmaking import MATCHED, state_name

    print(_json(ticket))
    if ticket.state != MATCHED:
        print(f"truco queue: the ticket is {state_name(ticket.state)}, not matched", file=sys.stderr)
        return 1
    return 0


def _status(args: argparse.Namespace) -> int:
    with _client(args) as c:
        print(_json(c.get_ticket(args.pool, args.ticket)))
    return 0


def _wait(args: argparse.Namespace) -> int:
    with _client(args) as c:
        ticket = c.wait_matched(args.pool, args.ticket, timeout=args.wait)
    return _done(ticket)


def _cancel(args: argparse.Namespace) -> int:
    with _client(args) as c:
        print(_json(c.cancel_ticket(args.pool, args.ticket)))
    return 0


def _rating(args: argparse.Namespace) -> int:
    with _client(args) as c:
        r = c.player_rating(args.player, args.family)
    numbers = f"mu {r.mu:.2f}, sigma {r.sigma:.2f}, ordinal {r.ordinal:.2f}, games {r.games}"
    print(f"{r.player_id} {r.family}: {numbers}")
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", default=DEFAULT_SERVER, help=f"HOST:PORT (default {DEFAULT_SERVER})")
    p.add_argument("--api-key", help="the operator's API key, or a ticket's token (or TRUCO_API_KEY)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")


def register(sub: Any) -> None:
    """Add ``queue`` to the ``truco`` parser."""
    q = sub.add_parser("queue", help="matchmaking: pools, tickets, ratings (docs/matchmaking.md)")
    cmds = q.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)

    pool = cmds.add_parser("pool", help="pools: create, list")
    pcmds = pool.add_subparsers(dest="pool_command", metavar="COMMAND", required=True)
    p = pcmds.add_parser("create", help="create a pool (the same definition again returns it)")
    p.add_argument("pool", help="pool id: 1 to 40 of A-Z a-z 0-9 _ -")
    p.add_argument("--preset", default="paulista", help="rule preset (default paulista)")
    p.add_argument("--players", type=int, default=2, help="seats of its matches (default 2)")
    p.add_argument("--rated", action="store_true", help="its matches move the players' ratings")
    p.add_argument("--window", metavar="INITIAL,PER_SECOND,MAX", help="rating window, e.g. 5,1,50")
    p.add_argument("--ticket-ttl", type=float, metavar="SECONDS", help="how long a ticket waits")
    p.add_argument(
        "--bot-fill-after",
        type=float,
        metavar="SECONDS",
        help="a ticket waiting this long gets the server's bots in the other seats",
    )
    p.add_argument("--bot-fill-level", type=int, default=0, metavar="1-6", help="their level (default 3)")
    p.add_argument("--bot-fill-partners", action="store_true", help="bots may sit as a party's partners too")
    _common(p)
    p.set_defaults(func=_pool_create)
    p = pcmds.add_parser("list", help="the operator's pools")
    _common(p)
    p.set_defaults(func=_pool_list)

    j = cmds.add_parser("join", help="queue a player (and partners): prints the ticket and its token")
    j.add_argument("pool", help="the pool's id")
    j.add_argument("player", help="the player's id")
    j.add_argument("--name", help="the player's display name")
    j.add_argument("--partner", action="append", metavar="ID", help="a partner of the party")
    j.add_argument("--property", action="append", metavar="KEY=VALUE", help="a property to match on")
    j.add_argument("--request-id", help="makes a retry return the same ticket")
    j.add_argument("--wait", type=float, metavar="SECONDS", help="then wait for the match this long")
    _common(j)
    j.set_defaults(func=_join)

    for name, func, what in (
        ("status", _status, "a ticket (JSON)"),
        ("cancel", _cancel, "cancel a waiting ticket"),
        ("wait", _wait, "wait until the ticket is matched (its seats and their tokens)"),
    ):
        s = cmds.add_parser(name, help=what)
        s.add_argument("pool", help="the pool's id")
        s.add_argument("ticket", help="the ticket id")
        if name == "wait":
            s.add_argument(
                "--within",
                dest="wait",
                type=float,
                default=600.0,
                metavar="SECONDS",
                help="at most (default 600)",
            )
        _common(s)
        s.set_defaults(func=func)

    r = cmds.add_parser("rating", help="a player's rating in a rule family")
    r.add_argument("player", help="the player's id")
    r.add_argument("family", help="e.g. paulista-2p")
    _common(r)
    r.set_defaults(func=_rating)
