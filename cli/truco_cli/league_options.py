"""The options of ``truco league create`` (kept apart from the commands: the longest list)."""

from __future__ import annotations

import argparse

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m`` or ``1h`` (an argparse type)."""
    unit = _UNITS.get(text[-1:].lower())
    try:
        value = float(text[:-1] if unit else text) * (unit or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 30m, 90s, 1h)") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration above 0")
    return value


def add_create_options(c: argparse.ArgumentParser) -> None:
    """Every option of ``truco league create`` but the common ones (server, key)."""
    c.add_argument("name", help="the league's name")
    formats = (
        "round_robin, double_round_robin, swiss, single_elimination, double_elimination, arena, "
        "groups_knockout"
    )
    c.add_argument("--format", required=True, help=formats)
    c.add_argument("--preset", default="argentine", help="rule preset of its matches (default argentine)")
    c.add_argument("--set", action="append", metavar="KEY=VALUE", help="rule override, e.g. target_points=15")
    c.add_argument("--rounds", type=int, help="swiss: the number of rounds")
    c.add_argument("--entrant", action="append", metavar="ID", help="an entrant (player or bot id), by seed")
    c.add_argument("--entrants-from", action="append", metavar="BOTS.json", help="every bot of a bot file")
    c.add_argument("--team", action="append", metavar="NAME=A,B", help="a team entrant and its members")
    c.add_argument(
        "--duplicate", choices=("off", "tables"), help="duplicate deals (two tables, seats swapped)"
    )
    c.add_argument(
        "--deal-sets", choices=("pairing", "round"), help="duplicate: deals shared per pairing or per round"
    )
    c.add_argument(
        "--duplicate-scoring", choices=("net", "imps"), help="duplicate: score by net points or IMPs"
    )
    c.add_argument("--tie-breaks", help="comma-separated order, e.g. sonneborn_berger,buchholz")
    c.add_argument("--join-window", type=float, help="seconds every seat has to join (a no-show forfeits)")
    c.add_argument("--turn-timeout", type=float, help="seconds per decision")
    c.add_argument("--request-id", help="idempotency key (a retry returns the same league)")
    c.add_argument(
        "--third-place", action="store_true", help="single elimination: the semi-final losers play for third"
    )
    c.add_argument(
        "--best-of", type=int, default=1, help="each pairing a series of up to N matches (odd; default 1)"
    )
    c.add_argument(
        "--pairing",
        choices=("weighted", "dutch"),
        help="swiss: the pairing system (default weighted; dutch: FIDE Dutch, at most 128 entrants)",
    )
    c.add_argument(
        "--duration",
        type=parse_duration,
        help="arena: how long it pairs from the start (e.g. 30m, 90s, 1h; default unit s)",
    )
    c.add_argument(
        "--start-time",
        help="it starts by itself then: ISO 8601 (2026-12-04T21:00:00Z) or seconds since the epoch",
    )
    c.add_argument(
        "--round-interval", type=float, help="seconds between a round's last result and the next round"
    )
    c.add_argument(
        "--check-in",
        type=float,
        help="seconds before --start-time a check-in window opens (truco league check-in)",
    )
    c.add_argument(
        "--late-entry-bye",
        choices=("full", "half", "none"),
        help="swiss: a late entrant's bye for round 1 (default full)",
    )
    c.add_argument("--groups", type=int, help="groups_knockout: the number of groups (2 to 26)")
    c.add_argument(
        "--advance", type=int, default=2, help="groups_knockout: how many of each group go on (default 2)"
    )
    c.add_argument(
        "--double-groups", action="store_true", help="groups_knockout: each group a double round robin"
    )
