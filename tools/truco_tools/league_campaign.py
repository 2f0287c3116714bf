"""A league campaign: a large Swiss played to its end by built-in bots through the bot lobby,
on two workers and a ``redis-server`` with an append-only file of its own, while one worker
is SIGKILLed (and started again) and Redis is restarted; then every pairing, match and
league event is checked and the time of each round is printed.

    python -m truco_tools.league_campaign --entrants 1000 --rounds 9     # docs/leagues.md

The bots are bot accounts of the operator (``CreateBotAccount``), each an entrant, played by
``truco league lobby`` processes (``--bot random``: the cheapest built-in bot; the point is
the league machinery, not play strength), each process running the lobby of its share of the
accounts over both workers. The campaign follows the operator feed from its start
(:mod:`truco_tools.league_feed`, resumed from its cursor after every cut).

What is checked (each must be empty for the run to pass, exit status 1 otherwise):

* the league finished with every round played, and every pairing of every round has a
  result; every table its match, each match created once (one match id per table on the
  feed, none that no table points to) and ended (a terminal event on the feed);
* no entrant twice in a round, no rematch, at most one bye a round and nobody with two
  (a Swiss allows no rematch: the library refuses one and ends the event instead, which
  would show as rounds missing);
* the league events: each id once, ``<league>:e1`` upwards without a gap, in order, none
  twice under two ids, ``league.started`` first, ``round.paired`` 1..R, each
  ``entrant.forfeited`` within its round, ``league.finished`` last (deliveries of an id
  already received are counted: the feed is at least once).

Per round it prints the matches, the forfeits, the *pairing time* (from the last result of
the round before, or ``league.started``, to ``round.paired``) and the *wall time* (from
``round.paired`` to the round's last result), both from the times the server recorded on
the feed. Every process it starts (the redis-server, the workers, the lobbies) is ended by
its pid when it returns, also on failure, Ctrl-C or SIGTERM.

Formats are :class:`SwissFormat` (``--format swiss``) and
:class:`~truco_tools.league_arena.ArenaFormat` (``--format arena --duration 10m``: its checks
and figures are in its module); a format is a class with the methods of :class:`Format` (how
it is created, when a fault falls, its progress lines, what its pairings must satisfy).

    python -m truco_tools.league_campaign --format arena --entrants 256 --duration 10m
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from truco_client.leagues import LeagueClient
from truco_contract.pb import league_service_pb2 as LPB
from truco_tools.cluster_load import WorkerProcess, start_workers
from truco_tools.league_arena import ArenaFigures, ArenaFormat, duration
from truco_tools.league_feed import (
    RESULT_TYPES,
    Feed,
    FeedEvent,
    finish_time,
    forfeits_untold,
    league_sequence,
    round_times,
    unended,
)
from truco_tools.redis_proc import RedisProcess, start_redis

SETTINGS = {"TRUCO_HEARTBEAT_INTERVAL_SECONDS": "1", "TRUCO_SCHEDULER_TICK_SECONDS": "0.1"}
FINISHED = LPB.LEAGUE_STATE_FINISHED
TICK = 0.25
SETTLE_SECONDS = 30.0
"""After the league finished, how long the feed may take to bring the last matches' terminal
events: a commit's operator events are relayed by the worker that made it, or, when that worker
died first, by the relay queue once its claim expires (server/truco_server/services/operators.py,
"Relay": seconds later, at least once)."""
"""Seconds between two looks at the league and the feed."""
CREATE_ENTRANTS = 256
"""The most entrants CreateLeague takes; the others are registered one by one."""


@dataclass(frozen=True)
class Options:
    """One campaign's shape."""

    entrants: int = 1000
    rounds: int = 9
    format: str = "swiss"
    kill_round: int = 3
    """The round during which a worker is SIGKILLed (0: none)."""
    restart_round: int = 6
    """The round during which Redis is restarted (0: none)."""
    fault_at: float = 0.25
    """A fault falls once this share of its round's matches have ended (0: at the pairing)."""
    target_points: int = 3
    bot: str = "random"
    lobbies: int = 2
    """``truco league lobby`` processes sharing the bot accounts."""
    join_window: float = 120.0
    turn_timeout: float = 30.0
    timeout: float = 3 * 3600.0
    """The league must finish within this long."""
    duration: float = 600.0
    """An arena's duration (seconds)."""
    kill_at: float = 0.3
    """An arena: the share of its duration after which a worker is SIGKILLed (0: none)."""
    restart_at: float = 0.6
    """An arena: the share of its duration after which Redis is restarted (0: none)."""


class Format(Protocol):
    """What a campaign needs of a format."""

    name: str
    rounds_wait: bool
    """A round is paired once the one before is over (each ``entrant.forfeited`` within it)."""

    def create(self, ops: LeagueClient, bots: list[str], opts: Options) -> LPB.League: ...

    def faults(self, opts: Options) -> dict[str, float]:
        """When each fault ("kill", "restart") falls, in the format's terms (0: none)."""
        ...

    def fault_due(self, at: float, opts: Options, events: list[FeedEvent], results: Counter[int]) -> bool: ...

    def fault_place(self, at: float, results: Counter[int]) -> str: ...

    def progress(self, deliveries: list[FeedEvent], events: list[FeedEvent], opts: Options) -> list[str]: ...

    def check(
        self,
        pairings: list[LPB.LeaguePairing],
        league: LPB.League,
        opts: Options,
        deliveries: list[FeedEvent],
        events: list[FeedEvent],
    ) -> dict[str, list[str]]: ...


def create_with(
    ops: LeagueClient, bots: list[str], opts: Options, name: str, kind: str, **spec: Any
) -> LPB.League:
    """The league of ``bots`` (the first 256 at its creation, the others registered)."""
    league = ops.create_league(
        name,
        kind,
        overrides={"target_points": opts.target_points},
        entrants=bots[:CREATE_ENTRANTS],
        join_window=opts.join_window,
        turn_timeout=opts.turn_timeout,
        request_id=f"league-campaign-{kind}-{opts.entrants}",
        **spec,
    )
    for seed, bot in enumerate(bots[CREATE_ENTRANTS:], CREATE_ENTRANTS + 1):
        league = ops.register(league.league_id, bot, seed)
    return league


class SwissFormat:
    """A Swiss of ``opts.rounds`` rounds."""

    name = "swiss"
    rounds_wait = True

    def __init__(self) -> None:
        self.printed = 0

    def create(self, ops: LeagueClient, bots: list[str], opts: Options) -> LPB.League:
        name = f"campaign swiss {opts.entrants} x {opts.rounds}"
        return create_with(ops, bots, opts, name, "swiss", rounds=opts.rounds)

    def faults(self, opts: Options) -> dict[str, float]:
        return {"kill": opts.kill_round, "restart": opts.restart_round}

    def fault_due(self, at: float, opts: Options, events: list[FeedEvent], results: Counter[int]) -> bool:
        """During round ``at``: once ``opts.fault_at`` of its matches have ended (0: once it is paired)."""
        paired = next((e for e in events if e.type == "round.paired" and e.round == at), None)
        return paired is not None and results[int(at)] >= opts.fault_at * int(paired.labels["pairings"])

    def fault_place(self, at: float, results: Counter[int]) -> str:
        return f"round {at:g} ({results[int(at)]} results in)"

    def progress(self, deliveries: list[FeedEvent], events: list[FeedEvent], opts: Options) -> list[str]:
        """A line for each round once it is over."""
        complete = {e.round - 1 for e in events if e.type == "round.paired"}
        if any(e.type == "league.finished" for e in events):
            complete |= {max((e.round for e in events if e.type == "round.paired"), default=0)}
        lines = []
        lid = events[0].labels.get("league", "") if events else ""
        for t in round_times(deliveries, events, lid):
            if t.round in complete and t.round > self.printed:
                self.printed = t.round
                lines.append(
                    f"round {t.round}/{opts.rounds}: {t.matches} matches, paired in {t.pairing:.2f} s, "
                    f"its matches made in {t.created:.2f} s, played in {t.wall:.1f} s"
                )
        return lines

    def check(
        self,
        pairings: list[LPB.LeaguePairing],
        league: LPB.League,
        opts: Options,
        deliveries: list[FeedEvent],
        events: list[FeedEvent],
    ) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {k: [] for k in ("entrants twice in a round", "rematches", "byes")}
        if league.current_round != opts.rounds or league.finish_reason:
            out["rounds not all played"] = [f"{league.current_round} rounds: {league.finish_reason!r}"]
        met: set[frozenset[str]] = set()
        byes: Counter[str] = Counter()
        for r in range(1, league.current_round + 1):
            seen: Counter[str] = Counter()
            tables = [p for p in pairings if p.round == r]
            for p in tables:
                seen.update([p.first, *([p.second] if p.second else [])])
                if not p.second:
                    byes[p.first] += 1
                    continue
                pair = frozenset((p.first, p.second))
                if pair in met:
                    out["rematches"].append(f"round {r}: {p.first} v {p.second}")
                met.add(pair)
            out["entrants twice in a round"] += [f"round {r}: {e}" for e, n in seen.items() if n > 1]
            if sum(1 for p in tables if not p.second) > 1:
                out["byes"].append(f"round {r}: more than one bye")
        out["byes"] += [f"{e}: {n} byes" for e, n in byes.items() if n > 1]
        return out


FORMATS: dict[str, Callable[[], Format]] = {"swiss": SwissFormat, "arena": ArenaFormat}


@dataclass
class Report:
    """What the campaign saw; :meth:`failures` must be empty."""

    options: Options
    league_id: str = ""
    rounds: list[Any] = field(default_factory=list)
    forfeits: Counter[int] = field(default_factory=Counter)
    finish_seconds: float = 0.0
    arena: ArenaFigures | None = None
    faults: list[str] = field(default_factory=list)
    checks: dict[str, list[str]] = field(default_factory=dict)
    matches: int = 0
    redelivered: int = 0
    feed_connects: int = 0
    lobby_restarts: int = 0
    lobby_errors: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    """Every process the campaign started (all ended when it returns)."""
    seconds: float = 0.0

    def failures(self) -> dict[str, list[str]]:
        return {k: v for k, v in self.checks.items() if v}

    def table(self) -> str:
        if self.arena is not None:
            return self.arena.table()
        lines = [
            "| round | matches | forfeits | pairing (s) | matches created (s) | half the results in (s) "
            "| wall (s) |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {t.round} | {t.matches} | {self.forfeits[t.round]} | {t.pairing:.2f} | {t.created:.2f} "
            f"| {t.half:.1f} | {t.wall:.1f} |"
            for t in self.rounds
        ]
        return "\n".join(lines)

    def summary(self) -> str:
        o = self.options
        shape = f"{o.duration:g} s" if o.format == "arena" else f"{o.rounds} rounds"
        lines = [
            f"{o.format} of {o.entrants} entrants, {shape}, bots '{o.bot}', target "
            f"{o.target_points} points: league {self.league_id}, {self.matches} matches, "
            f"{self.seconds:.0f} s",
            "faults: " + ("; ".join(self.faults) or "none"),
            self.table(),
            f"league.finished {self.finish_seconds:.2f} s after the last result",
            f"feed: {self.feed_connects} connections, {self.redelivered} league events delivered again; "
            f"lobby restarts {self.lobby_restarts}, lobby error lines {len(self.lobby_errors)}",
            " | ".join(f"{k} {len(v)}" for k, v in self.checks.items()),
        ]
        return "\n".join(lines)


# ------------------------------------------------------------------------- processes
@dataclass
class Lobby:
    """One ``truco league lobby`` process for a share of the bot accounts."""

    bots_file: Path
    servers: str
    bot: str
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        cmd = [sys.executable, "-m", "truco_cli.main", "league", "lobby", str(self.bots_file),
               "--bot", self.bot, "--server", self.servers]  # fmt: skip
        self.starts += 1
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """SIGINT (the lobby plays what it holds to its end and closes), then SIGKILL."""
        if not self.running():
            return
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def errors(self) -> list[str]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [
            x for x in text.splitlines() if x and "bots in the lobby" not in x and "seats played" not in x
        ]


@contextlib.contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt while the campaign runs, so its cleanup runs."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class Stack:
    """The processes of one campaign (all ended by :meth:`close`, by pid)."""

    redis: RedisProcess
    workers: list[WorkerProcess] = field(default_factory=list)
    lobbies: list[Lobby] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    """Every process started, restarts included."""

    @property
    def addresses(self) -> list[str]:
        return [w.address for w in self.workers]

    def close(self) -> None:
        for lobby in self.lobbies:
            with contextlib.suppress(Exception):
                lobby.stop()
        for w in self.workers:
            with contextlib.suppress(Exception):
                w.stop()
        self.redis.stop()

    def kill_worker(self) -> str:
        victim = self.workers[-1]
        pid = victim.pid
        victim.kill()
        started = time.monotonic()
        victim.start()
        self.pids.append(victim.pid)
        victim.wait_ready()
        return f"worker pid {pid} SIGKILLed, started again ({time.monotonic() - started:.1f} s)"

    def restart_redis(self) -> str:
        started = time.monotonic()
        self.redis.stop()  # SIGTERM: Redis writes out its append-only file
        self.redis.restart()
        self.pids.append(self.redis.pid)
        return f"redis-server restarted, append-only file reloaded ({time.monotonic() - started:.1f} s)"


def _bots(ops: LeagueClient, count: int, lobbies: int, workdir: Path) -> tuple[list[str], list[Path]]:
    """``count`` bot accounts, written to ``lobbies`` bot files (one per lobby process)."""
    accounts = [ops.create_bot(f"campaign bot {i}") for i in range(1, count + 1)]
    files = []
    for k in range(lobbies):
        path = workdir / f"bots-{k}.json"
        share = [{"bot_id": b.bot_id, "token": b.token, "name": b.name} for b in accounts[k::lobbies]]
        path.write_text(json.dumps(share), encoding="utf-8")
        files.append(path)
    return [b.bot_id for b in accounts], files


# ------------------------------------------------------------------------- the run
class Campaign:
    """One league played through its faults (see the module docstring)."""

    def __init__(self, stack: Stack, opts: Options, fmt: Format, progress: Callable[[str], None]) -> None:
        self.stack = stack
        self.opts = opts
        self.fmt = fmt
        self.say = progress
        self.report = Report(opts)
        self.feed = Feed(stack.addresses)
        self.pending = fmt.faults(opts)

    def play(self, ops: LeagueClient, workdir: Path) -> None:
        bots, files = _bots(ops, self.opts.entrants, self.opts.lobbies, workdir)
        league = self.fmt.create(ops, bots, self.opts)
        lid = self.report.league_id = league.league_id
        self.say(f"league {lid}: {len(bots)} bot entrants, {len(files)} lobby processes")
        self.feed.start()
        addresses = self.stack.addresses
        for k, path in enumerate(files):
            # a lobby uses the first server it is given while it answers: each starts on another
            servers = ",".join(addresses[k % len(addresses) :] + addresses[: k % len(addresses)])
            lobby = Lobby(path, servers, self.opts.bot, workdir / f"lobby-{k}.log")
            lobby.start()
            self.stack.lobbies.append(lobby)
            self.stack.pids.append(lobby.pid)
        ops.start(lid)
        deadline = time.monotonic() + self.opts.timeout
        while not self._finished(ops, lid):
            if time.monotonic() > deadline:
                self.report.checks["league not finished in time"] = [f"after {self.opts.timeout:.0f} s"]
                return
            self._tick(lid)
            time.sleep(TICK)
        self._tick(lid)
        settle = time.monotonic() + SETTLE_SECONDS
        while unended(self.feed.of(lid)) and time.monotonic() < settle:
            time.sleep(TICK)
            self._tick(lid)

    def _finished(self, ops: LeagueClient, lid: str) -> bool:
        with contextlib.suppress(Exception):  # Redis restarting, a worker dying: ask again
            if ops.get_league(lid).state == FINISHED:
                return any(e.type == "league.finished" for e in self.feed.of(lid))
        return False

    def _tick(self, lid: str) -> None:
        """Progress lines, the faults when due, a lobby that died started again."""
        deliveries = self.feed.of(lid)
        events = league_sequence(deliveries, lid).events
        results: Counter[int] = Counter()
        for mid_round in {(e.match_id, e.round) for e in deliveries if e.type in RESULT_TYPES}:
            results[mid_round[1]] += 1
        for kind, at in self.pending.items():
            if at and self.fmt.fault_due(at, self.opts, events, results):
                place = self.fmt.fault_place(at, results)
                done = self.stack.kill_worker() if kind == "kill" else self.stack.restart_redis()
                self.report.faults.append(f"{place}: {done}")
                self.say(f"  fault, {place}: {done}")
                self.pending[kind] = 0
        for line in self.fmt.progress(deliveries, events, self.opts):
            self.say(line)
        for lobby in self.stack.lobbies:
            if not lobby.running():
                self.report.lobby_restarts += 1
                self.say(f"  a lobby process exited ({lobby.log.name}): started again")
                lobby.start()
                self.stack.pids.append(lobby.pid)

    def check(self, ops: LeagueClient) -> None:
        """Every check of the module docstring, into the report."""
        lid, r = self.report.league_id, self.report
        league = ops.get_league(lid)
        pairings = [p for n in range(1, league.current_round + 1) for p in ops.pairings(lid, n).pairings]
        deliveries = self.feed.of(lid)
        seq = league_sequence(deliveries, lid, forfeits_in_round=self.fmt.rounds_wait)
        r.rounds = round_times(deliveries, seq.events, lid)
        r.finish_seconds = finish_time(seq.events, deliveries, lid)
        r.redelivered, r.feed_connects = seq.redelivered, self.feed.connects
        checks = r.checks
        checks["league not finished"] = (
            [] if league.state == FINISHED else [LPB.LeagueState.Name(league.state)]
        )
        checks["pairings without a result"] = [
            f"{p.round}.{p.table}" for p in pairings if not p.HasField("result")
        ]
        checks.update(self._match_checks(pairings, deliveries))
        checks.update(self.fmt.check(pairings, league, self.opts, deliveries, seq.events))
        r.arena = getattr(self.fmt, "figures", None)
        checks["league events"] = seq.problems
        checks["forfeits and entrant.forfeited events that differ"] = forfeits_untold(pairings, seq.events)
        for p in pairings:
            if p.HasField("result") and p.result.forfeit:
                r.forfeits[p.round] += 1

    def _match_checks(
        self, pairings: list[LPB.LeaguePairing], deliveries: list[FeedEvent]
    ) -> dict[str, list[str]]:
        tables = {t.match_id: (p.round, p.table) for p in pairings for t in p.tables if t.match_id}
        self.report.matches = len(tables)
        created: dict[str, set[str]] = {}
        for e in deliveries:
            if e.type == "match.created":
                created.setdefault(f"{e.labels.get('round')}:{e.labels.get('table')}", set()).add(e.match_id)
        ended = {e.match_id for e in deliveries if e.type in RESULT_TYPES}
        made = set().union(*created.values()) if created else set()
        return {
            "tables without a match": [
                f"{p.round}.{p.table}" for p in pairings if p.second and not all(t.match_id for t in p.tables)
            ],
            "tables with two matches": [k for k, ids in created.items() if len(ids) > 1],
            "matches no table points to": sorted(made - set(tables)),
            "matches without a result event": sorted(set(tables) - ended),
        }


def run(opts: Options, workdir: Path, progress: Callable[[str], None] = print) -> Report:
    """One campaign in ``workdir`` (its Redis files, logs and bot files); returns its report."""
    started = time.monotonic()
    (workdir / "redis").mkdir(parents=True, exist_ok=True)
    redis = start_redis(workdir=workdir / "redis", appendonly=True, startup_timeout=300.0)
    stack = Stack(redis, pids=[redis.pid])
    campaign = Campaign(stack, opts, FORMATS[opts.format](), progress)
    try:
        with _terminated_as_interrupt():
            stack.workers = start_workers(2, redis.url, workdir, settings=SETTINGS)
            stack.pids += [w.pid for w in stack.workers]
            campaign.feed.addresses = stack.addresses[::-1]  # first on the worker to be killed
            with LeagueClient(stack.addresses[0], timeout=60.0) as ops:
                campaign.play(ops, workdir)
                if not campaign.report.checks:
                    campaign.check(ops)
    finally:
        campaign.feed.stop()
        stack.close()
    with (workdir / "feed.jsonl").open("w", encoding="utf-8") as out:  # what the tables came from
        for e in campaign.feed.deliveries:
            out.write(json.dumps(dataclasses.asdict(e)) + "\n")
    for lobby in stack.lobbies:
        campaign.report.lobby_errors += lobby.errors()
    campaign.report.pids = stack.pids
    campaign.report.seconds = time.monotonic() - started
    return campaign.report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--format", default="swiss", choices=sorted(FORMATS))
    ap.add_argument("--entrants", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--kill-round", type=int, default=3, help="a worker is SIGKILLed during it (0: none)")
    ap.add_argument("--restart-round", type=int, default=6, help="Redis is restarted during it (0: none)")
    ap.add_argument(
        "--fault-at", type=float, default=0.25, help="share of the round's results in (0: at its pairing)"
    )
    ap.add_argument("--duration", type=duration, default=600.0, help="an arena's duration: 600, 90s, 10m, 1h")
    ap.add_argument("--kill-at", type=float, default=0.3, help="an arena: share of the duration (0: no kill)")
    ap.add_argument("--restart-at", type=float, default=0.6, help="an arena: share of the duration (0: none)")
    ap.add_argument("--target-points", type=int, default=3, help="the matches' target (default 3)")
    ap.add_argument("--bot", default="random", help="built-in bot of the lobbies (default random)")
    ap.add_argument("--lobbies", type=int, default=2, help="lobby processes (default 2)")
    ap.add_argument("--timeout", type=float, default=3 * 3600.0, help="seconds the league has to finish")
    ap.add_argument("--keep", help="a directory for the logs and Redis files (default: a temporary one)")
    args = ap.parse_args(argv)
    for name in ("kill_round", "restart_round"):
        if not 0 <= getattr(args, name) <= args.rounds:
            ap.error(f"--{name.replace('_', '-')} must be 0 or a round of 1..{args.rounds}")
    opts = Options(
        entrants=args.entrants, rounds=args.rounds, format=args.format, kill_round=args.kill_round,
        restart_round=args.restart_round, fault_at=args.fault_at, target_points=args.target_points,
        bot=args.bot, lobbies=args.lobbies, timeout=args.timeout, duration=args.duration,
        kill_at=args.kill_at, restart_at=args.restart_at,
    )  # fmt: skip
    with contextlib.ExitStack() as stack:
        workdir = Path(args.keep) if args.keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        report = run(opts, workdir, progress=lambda line: print(line, flush=True))
    print(report.summary())
    bad = report.failures()
    if bad:
        print("FAILED:", {k: v[:10] for k, v in bad.items()}, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
