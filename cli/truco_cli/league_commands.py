"""``truco league ...``: run leagues and tournaments on a server, and bots in its lobby.

    truco league bots create --count 8 -o bots.json     bot accounts (ids and credentials)
    truco league create "Friday" --format swiss --rounds 3 --entrants-from bots.json
    truco league lobby bots.json --bot rules            the bots play what they are paired in
    truco league start LEAGUE
    truco league follow LEAGUE                          each round as it is played, to the end
    truco league standings LEAGUE --format csv          standings (table, csv or json)
    truco league pairings LEAGUE --format json          pairings and results
    truco league results LEAGUE                         one line per match
    truco league records LEAGUE --dir records/          every match's record (truco verify reads them)
    truco league leaderboard argentine-2p               a rating family's leaderboard

The operator's API key comes from ``--api-key`` or ``TRUCO_API_KEY``. Exit status: 0 when it
worked; 1 when the server refused (one line on stderr); 2 for a file that cannot be read or
written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from truco_cli.league_options import add_create_options
from truco_cli.match_commands import DEFAULT_SERVER


def _client(args: argparse.Namespace) -> Any:
    from truco_client.leagues import LeagueClient

    return LeagueClient(
        args.server, api_key=args.api_key or os.environ.get("TRUCO_API_KEY"), timeout=args.timeout
    )


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _overrides(items: list[str]) -> dict[str, Any]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"truco league: --set takes KEY=VALUE, got {item!r}")
        out[key.strip()] = _value(value.strip())
    return out


def _start_time(text: str | None) -> float | None:
    """``--start-time``: an ISO 8601 time (``2026-12-04T21:00:00Z``; UTC when it has no
    offset) or seconds since the epoch."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise SystemExit(
            "truco league create: --start-time takes an ISO 8601 time or seconds since the epoch; "
            f"got {text!r}"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _read_bots(path: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"truco league: {path}: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(b, dict) and "bot_id" in b for b in data):
        raise SystemExit(f"truco league: {path}: not a bot file (truco league bots create -o FILE)")
    return data


def _emit(rows: list[dict[str, Any]], fmt: str, output: str | None) -> int:
    from truco_contract.leagues import rows_to_csv, rows_to_json

    if fmt == "csv":
        text = rows_to_csv(rows)
    elif fmt == "json":
        text = rows_to_json(rows)
    else:
        text = _table(rows)
    if output in (None, "-"):
        sys.stdout.write(text)
        return 0
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"truco league: {output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(none)\n"
    cols = list(rows[0])
    cells = [[_cell(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _state(league: Any) -> str:
    from truco_contract.pb import league_service_pb2 as lpb

    return lpb.LeagueState.Name(league.state).removeprefix("LEAGUE_STATE_").lower()


def _summary(league: Any) -> str:
    progress = f"round {league.current_round}/{league.total_rounds}"
    if league.format == "arena":  # no rounds: waves of pairings for a fixed time
        progress = f"wave {league.current_round}, {league.arena.duration.ToSeconds()}s"
    return (
        f"{league.league_id} {league.name!r}: {league.format}, {_state(league)}, {progress}, "
        f"{len(league.entrants)} entrants, rating family {league.rating_family}"
        + (f", public page /leagues/{league.public_id}" if league.public_id else "")
    )


# ---------------------------------------------------------------------------- commands
def _bots_create(args: argparse.Namespace) -> int:
    with _client(args) as c:
        made = []
        for i in range(args.count):
            name = args.name if args.count == 1 else f"{args.name} {i + 1}"
            bot = c.create_bot(name, args.max_concurrent)
            made.append({"bot_id": bot.bot_id, "name": bot.name, "token": bot.token})
    text = json.dumps(made, indent=2) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
            os.chmod(args.output, 0o600)  # bot credentials
        except OSError as exc:
            print(f"truco league: {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"{len(made)} bot accounts written to {args.output}", file=sys.stderr)
    return 0


def _bots_list(args: argparse.Namespace) -> int:
    with _client(args) as c:
        rows = [
            {"bot_id": b.bot_id, "name": b.name, "max_concurrent": b.max_concurrent} for b in c.list_bots()
        ]
    return _emit(rows, args.format, None)


def _create(args: argparse.Namespace) -> int:
    entrants: list[Any] = list(args.entrant or [])
    for path in args.entrants_from or []:
        entrants += [b["bot_id"] for b in _read_bots(path)]
    for team in args.team or []:
        name, _, members = team.partition("=")
        entrants.append((name, [m for m in members.split(",") if m]))
    with _client(args) as c:
        league = c.create_league(
            args.name,
            args.format,
            preset=args.preset,
            overrides=_overrides(args.set or []),
            rounds=args.rounds,
            entrants=entrants,
            duplicate=args.duplicate or "",
            deal_sets=args.deal_sets or "",
            duplicate_scoring=args.duplicate_scoring or "",
            tie_breaks=[t for t in (args.tie_breaks or "").split(",") if t],
            join_window=args.join_window,
            turn_timeout=args.turn_timeout,
            request_id=args.request_id,
            third_place=args.third_place,
            series_best_of=args.best_of,
            swiss_pairing=args.pairing or "",
            arena_duration=args.duration,
            groups=args.groups or 0,
            advance=args.advance,
            double_round_robin_groups=args.double_groups,
            start_time=_start_time(args.start_time),
            round_interval=args.round_interval,
            check_in=args.check_in,
            late_entry_bye=args.late_entry_bye or "",
        )
    print(league.league_id)
    print(_summary(league), file=sys.stderr)
    return 0


def _register(args: argparse.Namespace) -> int:
    entrant: Any = (args.entrant, args.members.split(",")) if args.members else args.entrant
    with _client(args) as c:
        print(_summary(c.register(args.league, entrant, args.seed)))
    return 0


def _check_in(args: argparse.Namespace) -> int:
    with _client(args) as c:
        entrant = c.check_in(args.league, args.entrant)
    print(f"{entrant.entrant_id} checked in")
    return 0


def _simple(method: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        with _client(args) as c:
            if method == "withdraw":
                league = c.withdraw(args.league, args.entrant)
            else:
                league = getattr(c, method)(args.league)
            print(_summary(league))
        return 0

    return run


def _standings(args: argparse.Namespace) -> int:
    from truco_contract.leagues import entrant_names, group_standings_rows, standings_rows

    with _client(args) as c:
        names = entrant_names(c.get_league(args.league))
        rows = group_standings_rows if args.groups else standings_rows
        return _emit(rows(c.standings(args.league), names), args.format, args.output)


def _pairings(args: argparse.Namespace) -> int:
    from truco_contract.leagues import entrant_names, pairings_rows

    with _client(args) as c:
        names = entrant_names(c.get_league(args.league))
        return _emit(pairings_rows(c.pairings(args.league, args.round), names), args.format, args.output)


def _results(args: argparse.Namespace) -> int:
    from truco_contract.leagues import entrant_names, results_rows

    with _client(args) as c:
        names = entrant_names(c.get_league(args.league))
        return _emit(results_rows(c.pairings(args.league, args.round), names), args.format, args.output)


def _trf(args: argparse.Namespace) -> int:
    with _client(args) as c:
        try:
            text = c.export_trf(args.league)
        except ValueError as exc:
            print(f"truco league trf: {exc}", file=sys.stderr)
            return 1
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8", newline="")
    else:
        sys.stdout.write(text)
    return 0


def _records(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient
    from truco_contract import record_file

    out = Path(args.dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"truco league: {args.dir}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    api_key = args.api_key or os.environ.get("TRUCO_API_KEY") or "-"
    n = 0
    with _client(args) as c, TrucoClient(args.server, api_key=api_key, timeout=args.timeout) as matches:
        for p in c.pairings(args.league).pairings:
            for t in p.tables:
                if not t.match_id:
                    continue
                # the table's spectator token reads the whole record of a finished match (on a
                # server without API keys nothing else does); the operator key for tables
                # stored before tables kept one
                record = matches.get_match_record(t.match_id, token=t.spectator_token or None)
                text = record_file.record_to_json(record)
                try:
                    (out / f"{t.key}.{t.match_id}.json").write_text(text, encoding="utf-8")
                except OSError as exc:
                    print(f"truco league: {out}: {exc.strerror or exc}", file=sys.stderr)
                    return 2
                n += 1
    print(f"{n} match records written to {out}", file=sys.stderr)
    return 0


def _follow(args: argparse.Namespace) -> int:
    from truco_contract.leagues import pairings_rows, standings_rows
    from truco_contract.pb import league_service_pb2 as lpb

    shown: set[tuple[int, int]] = set()
    deadline = None if args.timeout_total is None else time.monotonic() + args.timeout_total
    with _client(args) as c:
        while True:
            league = c.get_league(args.league)
            for row in pairings_rows(c.pairings(args.league)):
                key = (row["round"], row["table"])
                if row["winner"] != "" and key not in shown:
                    shown.add(key)
                    score = (
                        "" if row["second"] == "(bye)" else f" {row['first_points']}-{row['second_points']}"
                    )
                    forfeit = " (forfeit)" if row["forfeit"] is True else ""
                    where = f"round {row['round']} table {row['table']}"
                    print(f"{where}: {row['first']} v {row['second']}{score} -> {row['winner']}{forfeit}")
            if league.state == lpb.LEAGUE_STATE_FINISHED:
                print(_summary(league) + (f" ({league.finish_reason})" if league.finish_reason else ""))
                sys.stdout.write(_table(standings_rows(c.standings(args.league))))
                return 0
            if deadline is not None and time.monotonic() > deadline:
                print(f"truco league follow: not finished after {args.timeout_total:g}s", file=sys.stderr)
                return 1
            time.sleep(args.poll)


def _leaderboard(args: argparse.Namespace) -> int:
    with _client(args) as c:
        rows = [
            {"rank": e.rank, "player": e.player_id, "ordinal": round(e.ordinal, 3), "mu": round(e.mu, 3),
             "sigma": round(e.sigma, 3), "games": e.games}
            for e in c.leaderboard(args.family, args.limit)
        ]  # fmt: skip
    return _emit(rows, args.format, args.output)


def _lobby(args: argparse.Namespace) -> int:
    """Every account of the bot file in the lobby, on one event loop on a thread of its own
    (:func:`truco_client.leagues.run_lobbies`); this thread waits for the league, or Ctrl-C.
    Once the league is finished the lobby plays the matches under way to their end, within
    ``--timeout-total`` when given: past it, or on Ctrl-C, it leaves them and closes its
    channels. Progress goes to stdout; stderr carries only what went wrong."""
    from truco_cli.client_commands import bot_factory
    from truco_client.leagues import run_lobbies

    bots = _read_bots(args.bots)
    make_bot = bot_factory(args.bot, args.param)
    stop, abandon = threading.Event(), threading.Event()
    servers = args.server.split(",")
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["played"] = run_lobbies(
                servers, [(b["bot_id"], b["token"]) for b in bots], make_bot,
                max_concurrent=args.max_concurrent, stop=stop, abandon=abandon,
                log=lambda m: print(m, file=sys.stderr, flush=True),
            )  # fmt: skip
        except Exception as exc:  # reported by the command, as one line
            outcome["error"] = exc

    deadline = None
    if args.until_finished and args.timeout_total is not None:
        deadline = time.monotonic() + args.timeout_total
    lobby = threading.Thread(target=run, name="lobby", daemon=True)
    lobby.start()
    print(f"{len(bots)} {args.bot} bots in the lobby of {args.server}", flush=True)
    finished, under_way = True, False
    try:
        if args.until_finished:
            finished = _until_finished(args, servers[0], lobby, deadline)
            stop.set()
        while lobby.is_alive() and (deadline is None or time.monotonic() < deadline):
            lobby.join(0.2)
        under_way = lobby.is_alive()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        abandon.set()  # the matches still under way (each logged), then the channels
        lobby.join(10)
    if "error" in outcome:
        raise outcome["error"]
    if not finished or under_way:
        what = f"{args.until_finished} not finished" if not finished else "matches still under way"
        print(f"truco league lobby: {what} after {args.timeout_total:g} s", file=sys.stderr)
        return 1
    played = outcome.get("played", {})
    # (a match between two of the file's bots is two seats played, one by each)
    print(f"{sum(played.values())} seats played by {len(played)} bots", flush=True)
    return 0


def _until_finished(
    args: argparse.Namespace, server: str, lobby: threading.Thread, deadline: float | None
) -> bool:
    """Wait while the lobby runs until the league is finished (``False``: not by
    ``deadline``, a ``time.monotonic()``)."""
    from truco_client.leagues import LeagueClient
    from truco_contract.pb import league_service_pb2

    with LeagueClient(server, api_key=args.api_key or os.environ.get("TRUCO_API_KEY")) as c:
        while lobby.is_alive():
            if c.get_league(args.until_finished).state == league_service_pb2.LEAGUE_STATE_FINISHED:
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            lobby.join(0.5)  # the lobby ending (an error) ends the wait too
    return True


# ---------------------------------------------------------------------------- parser
def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server",
        default=DEFAULT_SERVER,
        help=f"HOST:PORT (default {DEFAULT_SERVER}; comma-separated for several)",
    )
    p.add_argument("--api-key", help="the operator's API key (or TRUCO_API_KEY)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")


def _export(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format", choices=("table", "csv", "json"), default="table", help="output (default table)"
    )
    p.add_argument("-o", "--output", help="file to write (default: standard output)")


def _add_bots(cmds: Any) -> None:
    """``truco league bots create|list``."""
    bots = cmds.add_parser("bots", help="bot accounts (entrants that play through the lobby)")
    bcmds = bots.add_subparsers(dest="bots_command", metavar="COMMAND", required=True)
    b = bcmds.add_parser("create", help="create bot accounts; prints (or writes) their ids and credentials")
    b.add_argument("--name", default="bot", help="name of the accounts, numbered when several (default bot)")
    b.add_argument("--count", type=int, default=1, help="how many accounts (default 1)")
    b.add_argument("--max-concurrent", type=int, default=1, help="matches at once (default 1)")
    b.add_argument("-o", "--output", help="JSON file of the accounts (default: standard output)")
    _common(b)
    b.set_defaults(func=_bots_create)
    b = bcmds.add_parser("list", help="the operator's bot accounts")
    b.add_argument(
        "--format", choices=("table", "csv", "json"), default="table", help="output (default table)"
    )
    _common(b)
    b.set_defaults(func=_bots_list)


def _add_reads(cmds: Any) -> None:
    """The commands that read a league (follow, standings, exports, records) and the lobby."""
    f = cmds.add_parser("follow", help="print results as they come, then the standings")
    f.add_argument("league", help="league id")
    f.add_argument("--poll", type=float, default=1.0, help="seconds between looks (default 1)")
    f.add_argument("--timeout-total", type=float, help="give up after this many seconds")
    _common(f)
    f.set_defaults(func=_follow)
    for name, func, help_text in (
        ("standings", _standings, "the standings"),
        ("pairings", _pairings, "the pairings and their results"),
        ("results", _results, "one line per match"),
    ):
        p = cmds.add_parser(name, help=help_text)
        p.add_argument("league", help="league id")
        if name != "standings":
            p.add_argument("--round", type=int, default=0, help="only this round")
        else:
            p.add_argument("--groups", action="store_true", help="groups_knockout: each group's table")
        _export(p)
        _common(p)
        p.set_defaults(func=func)
    t = cmds.add_parser("trf", help="a swiss as a FIDE Tournament Report File (TRF-16)")
    t.add_argument("league", help="league id")
    t.add_argument("-o", "--output", help="file to write (default: standard output)")
    _common(t)
    t.set_defaults(func=_trf)
    rec = cmds.add_parser("records", help="write every match's record to a directory")
    rec.add_argument("league", help="league id")
    rec.add_argument("--dir", required=True, help="directory to write the records to (created if missing)")
    _common(rec)
    rec.set_defaults(func=_records)
    lb = cmds.add_parser("leaderboard", help="a rating family's leaderboard")
    lb.add_argument("family", help="e.g. argentine-2p (truco league show gives a league's family)")
    lb.add_argument("--limit", type=int, default=50, help="most entries (default 50)")
    _export(lb)
    _common(lb)
    lb.set_defaults(func=_leaderboard)
    lo = cmds.add_parser("lobby", help="run built-in bots for the accounts of a bot file")
    lo.add_argument("bots", help="a bot file (truco league bots create -o FILE)")
    lo.add_argument(
        "--bot",
        default="rules",
        help="random, rules, mcts (built in) or MODULE:Class, a truco_client.Bot subclass (default rules)",
    )
    lo.add_argument("--param", action="append", default=[], help="bot constructor argument NAME=VALUE")
    lo.add_argument(
        "--max-concurrent", type=int, default=0, help="matches at once per bot (0: the account's)"
    )
    lo.add_argument("--until-finished", metavar="LEAGUE", help="stop once this league is finished")
    lo.add_argument(
        "--timeout-total",
        type=float,
        help="with --until-finished: give up after this many seconds, matches under way included",
    )
    _common(lo)
    lo.set_defaults(func=_lobby)


def register(sub: Any) -> None:
    """Add ``league`` to the ``truco`` parser."""
    lg = sub.add_parser("league", help="leagues and tournaments: create, register, start, follow, export")
    cmds = lg.add_subparsers(dest="league_command", metavar="COMMAND", required=True)

    _add_bots(cmds)

    c = cmds.add_parser("create", help="create a league (prints its id)")
    add_create_options(c)
    _common(c)
    c.set_defaults(func=_create)

    r = cmds.add_parser("register", help="register an entrant")
    r.add_argument("league", help="league id")
    r.add_argument("entrant", help="entrant id (a player or bot id, or a team's name)")
    r.add_argument("--members", help="comma-separated members of a team entrant")
    r.add_argument("--seed", type=int, default=0, help="its seed (default: the next free)")
    _common(r)
    r.set_defaults(func=_register)
    w = cmds.add_parser("withdraw", help="withdraw an entrant")
    w.add_argument("league", help="league id")
    w.add_argument("entrant", help="entrant id")
    _common(w)
    w.set_defaults(func=_simple("withdraw"))
    ci = cmds.add_parser(
        "check-in",
        help="check an entrant in during its check-in window (--api-key: the operator's key, or a bot "
        "entrant's own credential tb1....)",
    )
    ci.add_argument("league", help="league id")
    ci.add_argument("entrant", help="entrant id")
    _common(ci)
    ci.set_defaults(func=_check_in)
    for name, help_text in (
        ("start", "start a league (round 1 is paired)"),
        ("pause", "pause: no new round is paired"),
        ("resume", "resume a paused league"),
        ("show", "a league's state"),
    ):
        p = cmds.add_parser(name, help=help_text)
        p.add_argument("league", help="league id")
        _common(p)
        p.set_defaults(func=_simple("get_league" if name == "show" else name))

    _add_reads(cmds)
