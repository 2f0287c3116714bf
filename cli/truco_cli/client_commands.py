"""Client subcommands of ``truco``: ``play``, ``watch``, ``demo``, ``bot``, ``bots eval``, ``bots ladder``.

They speak to a server only through the SDK. ``play`` and ``demo`` start an in-process server
(:mod:`truco_server.app.embedded`) when no ``--server`` is given and the server is installed."""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

from truco_cli import optional
from truco_cli.errors import UsageError
from truco_cli.match_commands import DEFAULT_SERVER
from truco_client.bot import Bot
from truco_client.observation import Observation


def _load_bot(spec: str) -> type[Bot]:
    """``MODULE:Class`` or a built-in name (random, rules, mcts); a one-line error otherwise."""
    from truco_bots import load_bot

    try:
        return load_bot(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _bot_kwargs(items: list[str]) -> dict[str, Any]:
    import json

    out: dict[str, Any] = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not k or not eq:
            raise UsageError(f"--param wants NAME=VALUE, got {item!r}")
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def bot_factory(spec: str, params: list[str]) -> Callable[[], Bot]:
    """A new bot per call: ``spec`` (``MODULE:Class`` or a built-in name) built with the
    ``--param NAME=VALUE`` arguments ``params``; a one-line usage error, raised here, when the
    class cannot be found or refuses them (the first bot is built here to check, and is the
    first call's)."""
    cls = _load_bot(spec)
    kwargs = _bot_kwargs(params)
    try:
        checked = [cls(**kwargs)]
    except TypeError as exc:
        raise UsageError(f"{spec}({', '.join(kwargs)}): {exc}") from None

    def make() -> Bot:
        return checked.pop() if checked else cls(**kwargs)

    return make


def _match_of_token(token: str) -> str | None:
    """The match id inside a match credential (``tc1.<match_id>.<seat or s>.<mac>``)."""
    parts = token.split(".")
    return parts[1] if len(parts) == 4 and parts[0] == "tc1" else None


class _Progress(Bot):
    """Wraps the user's bot: one line when the match starts, after each hand and at the end."""

    def __init__(self, inner: Bot, match_id: str) -> None:
        super().__init__()
        self.inner = inner
        self.match_id = match_id
        self.hand = 0
        self.decisions = 0

    def choose(self, observation: Observation) -> Any:
        self.decisions += 1
        return self.inner.choose(observation)

    def on_match_start(self, seat: int) -> None:
        print(f"playing seat {seat} of match {self.match_id} with {self.inner!r}", flush=True)
        self.inner.on_match_start(seat)

    def _hand_over(self, observation: Observation) -> None:
        print(
            f"hand {self.hand} over; scores {list(observation.scores)}; {self.decisions} decisions so far",
            flush=True,
        )

    def on_observation(self, observation: Observation) -> None:
        if observation.hand_number != self.hand:
            if self.hand:
                self._hand_over(observation)
            self.hand = observation.hand_number
        self.inner.on_observation(observation)

    def on_match_end(self, observation: Observation) -> None:
        if self.hand:  # the last hand has its line too (a hand worth the game is the first)
            self._hand_over(observation)
            self.hand = 0
        self.inner.on_match_end(observation)

    def __repr__(self) -> str:
        return repr(self.inner)


def _cmd_bot(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_client.runner import run_bot

    bot = bot_factory(args.bot, args.param)()
    token = args.token or os.environ.get("TRUCO_TOKEN")
    if not token:
        raise UsageError("give --token (a seat token, printed by truco match create) or TRUCO_TOKEN")
    match_id = args.match or _match_of_token(token)
    if not match_id:
        raise UsageError(
            "the --token given is not a match credential: a seat token looks like "
            "tc1.<match id>.<seat>.<signature> (truco match create prints one per seat); "
            "an operator API key plays no seat"
        )
    servers = args.server.split(",") if "," in args.server else args.server
    with TrucoClient(servers, token=token, timeout=args.timeout) as client:
        view = client.get_match(match_id)
    if view.observation.seat is None:
        what = "the match's spectator token" if _match_of_token(token) else "an operator API key"
        raise UsageError(f"that is {what}, not a seat's: give the token of the seat the bot plays")
    print(f"match {match_id}: {view.match.preset}, {len(view.match.seats)} players", flush=True)
    final = run_bot(
        _Progress(bot, match_id),
        servers,
        match_id,
        token,
        think_delay=args.delay,
        heartbeat_timeout=args.heartbeat_timeout,
    )
    w = final.winner_team
    print(
        f"match {match_id} over; scores {list(final.scores)}; winner team {w}; this bot's team {final.team}"
    )
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_client.table_text import Names, Style
    from truco_client.terminal import human_loop, start_bots

    bots = args.bot.split(",")
    classes = [_load_bot(b) for b in bots]  # a bad name fails before anything is created
    style = Style(False if args.no_color else None)
    server = None if args.server else _embedded("play").start()
    target = args.server or (server.address if server else "")
    stop = threading.Event()
    try:
        with TrucoClient(target, api_key=args.api_key) as client:
            m = client.create_match(args.preset, players=args.players, seed=text_seed(args.seed))
            n = len(m.seat_tokens)
            labels = ["You"] + [f"{bots[(i - 1) % len(bots)]}-bot {i}" for i in range(1, n)]
            print(f"Match {m.match_id}: {args.preset}, {n} players. You are seat 0 (team 0).", flush=True)
            start_bots(
                client,
                m.match_id,
                [(i, m.seat_tokens[i]) for i in range(1, n)],
                classes,
                think_delay=args.delay,
                seed=args.bot_seed,
                stop=stop,
            )
            try:
                final = human_loop(client.with_token(m.seat_tokens[0]), m.match_id, Names(labels, 0), style)
            except KeyboardInterrupt:
                final = None
            stop.set()
            if final is None:
                print("Bye.")
                return 0
            w = final.winner_team
            print(
                "You win!" if w == final.team else "You lose." if w is not None else "Match over.", flush=True
            )
    finally:
        stop.set()
        if server is not None:
            server.stop()
    return 0


def _cmd_watch(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_client.table_text import Names, Style
    from truco_client.terminal import spectate

    style = Style(False if args.no_color else None)
    with TrucoClient(args.server, token=args.token) as client:
        view = client.get_match(args.match)
        names = Names([s.display_name for s in view.match.seats], None)
        spectate(client, args.match, names, style, delay=args.delay)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_client.table_text import Names, Style
    from truco_client.terminal import spectate, start_bots

    delay = 0.0 if args.fast else args.delay
    style = Style(False if args.no_color else None)
    bots = args.bots.split(",")
    classes = [_load_bot(b) for b in bots]
    n_players = _players(args.preset, args.players)
    seat_names = [f"{bots[i % len(bots)]}-{i}" for i in range(n_players)]
    stop = threading.Event()
    with contextlib.ExitStack() as stack:
        target = args.server or stack.enter_context(_embedded("demo")).address
        client = stack.enter_context(TrucoClient(target, api_key=args.api_key))
        stack.callback(stop.set)
        m = client.create_match(
            args.preset,
            players=args.players,
            seats=[(name, "bot") for name in seat_names],
            seed=text_seed(args.seed),
        )
        names = Names(seat_names, None)
        where = f" on {args.server}" if args.server else ""
        print(
            f"Demo match {m.match_id}{where}: {args.preset}, {n_players} players: "
            + ", ".join(names(i) for i in range(n_players)),
            flush=True,
        )
        if args.server:
            print(f"spectator token: {m.spectator_token}", flush=True)
        threads = start_bots(
            client,
            m.match_id,
            list(enumerate(m.seat_tokens)),
            classes,
            think_delay=delay,
            seed=args.bot_seed,
            stop=stop,
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
        raise UsageError(
            f"no --server given and no server here to start "
            f"({optional.SERVER_MISSING}; {optional.SERVER_HINT})"
        )
    return optional.embedded.EmbeddedServer()


def text_seed(text: str | None) -> bytes | None:
    """A text seed as the 32 bytes the server wants (SHA-256 of the text)."""
    import hashlib

    return hashlib.sha256(text.encode()).digest() if text else None


def _players(preset: str, players: int | None) -> int:
    import truco_engine as te

    return te.get_rules(preset, **({"players": players} if players else {})).players


def _cmd_bots_eval(args: argparse.Namespace) -> int:
    from truco_bots.eval import run

    try:
        return run(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _cmd_bots_ladder(args: argparse.Namespace) -> int:
    from truco_bots.ladder import run

    try:
        return run(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def register(sub: Any) -> None:
    """Add ``play``, ``watch``, ``demo``, ``bot`` and ``bots`` to the ``truco`` parser."""
    p = sub.add_parser("play", help="play against bots in the terminal")
    p.add_argument("--preset", default="argentine", help="rule preset (default argentine)")
    p.add_argument("--players", type=int, default=None, help="number of players (default: the preset's)")
    p.add_argument(
        "--bot",
        default="rules",
        help="opponent bot(s): random, rules, mcts or MODULE:Class (comma-separated)",
    )
    p.add_argument("--server", help="HOST:PORT of a server (default: an in-process in-memory server)")
    p.add_argument("--api-key", default=os.environ.get("TRUCO_API_KEY"), help="operator API key for --server")
    p.add_argument("--delay", type=float, default=0.3, help="seconds each bot waits before acting")
    p.add_argument("--seed", help="shuffle seed (text) for a reproducible deal")
    p.add_argument("--bot-seed", type=int, default=None, help="seed of the bots")
    p.add_argument("--no-color", action="store_true", help="no ANSI colours")
    p.set_defaults(func=_cmd_play)

    w = sub.add_parser("watch", help="spectate a match")
    w.add_argument("match", help="match id")
    w.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"HOST:PORT of the server (default {DEFAULT_SERVER})"
    )
    w.add_argument("--token", required=True, help="the match's spectator token")
    w.add_argument("--delay", type=float, default=0.0, help="pause after each update")
    w.add_argument("--no-color", action="store_true", help="no ANSI colours")
    w.set_defaults(func=_cmd_watch)

    d = sub.add_parser("demo", help="watch bots play (on an in-process server, or on --server)")
    d.add_argument("--preset", default="argentine", help="rule preset (default argentine)")
    d.add_argument("--players", type=int, default=None, help="number of players (default: the preset's)")
    d.add_argument(
        "--bots", default="rules,random", help="bots per seat, cycled: built-in names or MODULE:Class"
    )
    d.add_argument("--server", help="HOST:PORT of a running server (default: an in-process in-memory server)")
    d.add_argument("--api-key", default=os.environ.get("TRUCO_API_KEY"), help="operator API key for --server")
    d.add_argument("--delay", type=float, default=0.6, help="seconds per move (default 0.6)")
    d.add_argument("--fast", action="store_true", help="no delay")
    d.add_argument("--seed", help="shuffle seed (text)")
    d.add_argument("--bot-seed", type=int, default=None, help="seed of the bots, for a reproducible demo")
    d.add_argument("--no-color", action="store_true", help="no ANSI colours")
    d.set_defaults(func=_cmd_demo)

    b = sub.add_parser("bot", help="run a bot (MODULE:Class or a built-in name) on one seat of a match")
    b.add_argument("bot", help="MODULE:Class (a truco_client.Bot subclass) or random / rules / mcts")
    b.add_argument("--server", default=DEFAULT_SERVER, help="HOST:PORT (comma-separated for several workers)")
    b.add_argument("--match", help="match id (default: the one in the seat token)")
    b.add_argument("--token", help="seat credential (or TRUCO_TOKEN)")
    b.add_argument("--param", action="append", default=[], help="bot constructor argument NAME=VALUE")
    b.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each action")
    b.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")
    b.add_argument(
        "--heartbeat-timeout", type=float, default=30.0, help="reconnect a silent stream after this"
    )
    b.set_defaults(func=_cmd_bot)

    bots = sub.add_parser("bots", help="bots: head-to-head evaluation")
    bsub = bots.add_subparsers(dest="subcommand", metavar="COMMAND")
    ev = bsub.add_parser("eval", help="head-to-head evaluation with Wilson 95%% intervals")
    from truco_bots.eval import add_arguments

    add_arguments(ev)
    ev.set_defaults(func=_cmd_bots_eval)
    lad = bsub.add_parser("ladder", help="the levels 1 to 6: each against the one below and against rules")
    from truco_bots.ladder import add_arguments as ladder_arguments

    ladder_arguments(lad)
    lad.set_defaults(func=_cmd_bots_ladder)
    bots.set_defaults(func=lambda a: bots.print_help() or 2)
