"""Client subcommands of ``truco``: ``play``, ``watch``, ``demo``, ``bot``, ``bots eval``.

They speak to a server only through the SDK. ``play`` and ``demo`` start an in-process server
(:mod:`truco_server.embedded`) when no ``--server`` is given and the server is installed."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from truco_cli import optional
from truco_client.bot import Bot


def _load_bot(spec: str) -> type[Bot]:
    """``MODULE:Class`` (or a built-in name: random, rules, mcts)."""
    if ":" not in spec:
        from truco_bots import get_bot

        return get_bot(spec)
    module_name, _, attr = spec.partition(":")
    sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    cls = getattr(module, attr)
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise SystemExit(f"{spec} is not a subclass of truco_client.Bot")
    return cls


def _bot_kwargs(items: list[str]) -> dict[str, Any]:
    import json

    out: dict[str, Any] = {}
    for item in items:
        k, _, v = item.partition("=")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def _cmd_bot(args: argparse.Namespace) -> int:
    from truco_client.runner import run_bot

    cls = _load_bot(args.bot)
    kwargs = _bot_kwargs(args.param)
    bot = cls(**kwargs)
    token = args.token or os.environ.get("TRUCO_TOKEN")
    if not token:
        print("truco bot: give --token (or TRUCO_TOKEN)", file=sys.stderr)
        return 2
    final = run_bot(
        bot, args.server, args.match, token, think_delay=args.delay, heartbeat_timeout=args.heartbeat_timeout
    )
    w = final.winner_team
    print(
        f"match {args.match} over; scores {list(final.scores)}; winner team {w}; this bot's team {final.team}"
    )
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_client.terminal import Names, Style, human_loop, start_bots

    server = None if args.server else _embedded("play").start()
    target = args.server or (server.address if server else "")
    style = Style(False if args.no_color else None)
    try:
        with TrucoClient(target, api_key=args.api_key) as client:
            bots = args.bot.split(",")
            m = client.create_match(args.preset, players=args.players, seed=_seed(args.seed))
            n = len(m.seat_tokens)
            labels = ["You"] + [f"{bots[(i - 1) % len(bots)]}-bot {i}" for i in range(1, n)]
            print(f"Match {m.match_id}: {args.preset}, {n} players. You are seat 0 (team 0).", flush=True)
            start_bots(
                client,
                m.match_id,
                [(i, m.seat_tokens[i]) for i in range(1, n)],
                [_load_bot(b) for b in bots],
                think_delay=args.delay,
                seed=args.bot_seed,
            )
            final = human_loop(client.with_token(m.seat_tokens[0]), m.match_id, Names(labels, 0), style)
            if final is None:
                print("Bye.")
                return 0
            w = final.winner_team
            print(
                "You win!" if w == final.team else "You lose." if w is not None else "Match over.", flush=True
            )
    finally:
        if server is not None:
            server.stop()
    return 0


def _cmd_watch(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_client.terminal import Names, Style, spectate

    style = Style(False if args.no_color else None)
    with TrucoClient(args.server, token=args.token) as client:
        view = client.get_match(args.match)
        names = Names([s.display_name for s in view.match.seats], None)
        spectate(client, args.match, names, style, delay=args.delay)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_client.terminal import Names, Style, spectate, start_bots

    delay = 0.0 if args.fast else args.delay
    style = Style(False if args.no_color else None)
    bots = args.bots.split(",")
    with _embedded("demo") as server, TrucoClient(server.address) as client:
        rules_players = args.players
        m = client.create_match(
            args.preset,
            players=rules_players,
            seats=[
                (f"{bots[i % len(bots)]}-{i}", "bot") for i in range(_players(args.preset, rules_players))
            ],
            seed=_seed(args.seed),
        )
        n = len(m.seat_tokens)
        names = Names([f"{bots[i % len(bots)]}-{i}" for i in range(n)], None)
        print(
            f"Demo match {m.match_id}: {args.preset}, {n} players: " + ", ".join(names(i) for i in range(n))
        )
        threads = start_bots(
            client,
            m.match_id,
            list(enumerate(m.seat_tokens)),
            [_load_bot(b) for b in bots],
            think_delay=delay,
            seed=args.bot_seed,
        )
        final = spectate(client.with_token(m.spectator_token), m.match_id, names, style)
        for t in threads:
            t.join(timeout=10)
        if final is not None:
            print(
                f"Final score {list(final.scores)}; games {list(final.games_won)}; "
                f"winner team {final.winner_team}"
            )
    return 0


def _embedded(command: str) -> Any:
    """An in-process server (not started yet), or a one-line error when the server is not
    installed."""
    if optional.embedded is None:
        raise SystemExit(
            f"truco {command}: no --server given and no server here to start "
            f"({optional.SERVER_MISSING}; {optional.SERVER_HINT})"
        )
    return optional.embedded.EmbeddedServer()


def _seed(text: str | None) -> bytes | None:
    """A text seed as the 32 bytes the server wants (SHA-256 of the text)."""
    import hashlib

    return hashlib.sha256(text.encode()).digest() if text else None


def _friendly(func: Any) -> Any:
    """Print SDK errors as one line (exit 1) instead of a traceback."""

    def run(args: argparse.Namespace) -> int:
        from truco_client.errors import TrucoClientError

        try:
            return int(func(args) or 0)
        except TrucoClientError as exc:
            print(f"truco {args.command}: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130

    return run


def _players(preset: str, players: int | None) -> int:
    import truco_engine as te

    return te.get_rules(preset, **({"players": players} if players else {})).players


def _cmd_bots_eval(args: argparse.Namespace) -> int:
    from truco_bots.eval import run

    return run(args)


def register(sub: Any) -> None:
    """Add ``play``, ``watch``, ``demo``, ``bot`` and ``bots`` to the ``truco`` parser."""
    p = sub.add_parser("play", help="play against built-in bots in the terminal")
    p.add_argument("--preset", default="argentine", help="rule preset (default argentine)")
    p.add_argument("--players", type=int, default=None, help="number of players (default: the preset's)")
    p.add_argument("--bot", default="rules", help="opponent bot(s): random, rules, mcts (comma-separated)")
    p.add_argument("--server", help="HOST:PORT of a server (default: an in-process in-memory server)")
    p.add_argument("--api-key", default=os.environ.get("TRUCO_API_KEY"), help="operator API key for --server")
    p.add_argument("--delay", type=float, default=0.3, help="seconds each bot waits before acting")
    p.add_argument("--seed", help="shuffle seed (text) for a reproducible deal")
    p.add_argument("--bot-seed", type=int, default=None, help="seed of the bots")
    p.add_argument("--no-color", action="store_true", help="no ANSI colours")
    p.set_defaults(func=_friendly(_cmd_play))

    w = sub.add_parser("watch", help="spectate a match")
    w.add_argument("match", help="match id")
    w.add_argument("--server", required=True, help="HOST:PORT")
    w.add_argument("--token", required=True, help="the match's spectator token")
    w.add_argument("--delay", type=float, default=0.0, help="pause after each update")
    w.add_argument("--no-color", action="store_true")
    w.set_defaults(func=_friendly(_cmd_watch))

    d = sub.add_parser("demo", help="watch built-in bots play on an in-process server")
    d.add_argument("--preset", default="argentine")
    d.add_argument("--players", type=int, default=None)
    d.add_argument("--bots", default="rules,random", help="bots per seat, cycled (default rules,random)")
    d.add_argument("--delay", type=float, default=0.6, help="seconds per move (default 0.6)")
    d.add_argument("--fast", action="store_true", help="no delay")
    d.add_argument("--seed", help="shuffle seed (text)")
    d.add_argument("--bot-seed", type=int, default=None)
    d.add_argument("--no-color", action="store_true")
    d.set_defaults(func=_friendly(_cmd_demo))

    b = sub.add_parser("bot", help="run a bot (MODULE:Class or a built-in name) on one seat of a match")
    b.add_argument("bot", help="MODULE:Class (a truco_client.Bot subclass) or random / rules / mcts")
    b.add_argument(
        "--server", default="127.0.0.1:50051", help="HOST:PORT (comma-separated for several workers)"
    )
    b.add_argument("--match", required=True, help="match id")
    b.add_argument("--token", help="seat credential (or TRUCO_TOKEN)")
    b.add_argument("--param", action="append", default=[], help="bot constructor argument NAME=VALUE")
    b.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each action")
    b.add_argument(
        "--heartbeat-timeout", type=float, default=30.0, help="reconnect a silent stream after this"
    )
    b.set_defaults(func=_friendly(_cmd_bot_wrapper))

    bots = sub.add_parser("bots", help="built-in bots: evaluation")
    bsub = bots.add_subparsers(dest="bots_command", metavar="COMMAND")
    ev = bsub.add_parser("eval", help="head-to-head evaluation with Wilson 95%% intervals")
    from truco_bots.eval import add_arguments

    add_arguments(ev)
    ev.set_defaults(func=_cmd_bots_eval)
    bots.set_defaults(func=lambda a: bots.print_help() or 2)


def _cmd_bot_wrapper(args: argparse.Namespace) -> int:
    if "," in args.server:
        args.server = args.server.split(",")
    return _cmd_bot(args)
