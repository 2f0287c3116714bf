"""``run.py --latency``: our WebSocket connection's latency at half its saturating load, with
the load generator in processes of its own.

One worker (``truco serve``, on a fresh ``redis-server`` or the in-memory store) is loaded by
``--processes`` load-generator processes (``multiprocessing``, each an event loop of
``truco_tools.bench_connection.WebSocketBots`` over its share of the ``--matches`` matches,
one WebSocket per 25 of them). Three phases on the same worker, each with fresh generators:

1. **saturation**: every seat acts as soon as its view says it is its turn (a closed loop):
   the moves per second the worker sustains, and its CPU (a worker near 100 % of a core is
   the bottleneck; a worker well below it was starved of a core by the rest of the machine);
2. **calibration**: each seat waits a random (exponential) think time before acting, its
   mean the time between two moves of a match at half the saturating rate; the measured
   rate gives the time a move took besides the think, which the next think time leaves out;
3. **half load**: the same with the corrected think time; the latency of every move from its
   submission to the last seat's observation of it (the actor's result or update, every
   other seat's update) over the window: p50, p99, max; and how the slowest 1 % came
   (:func:`tail_episodes`: alone, or in runs of slow moves -- a queue building up and
   draining); on Redis, Redis's own events of :data:`REDIS_LATENCY_MS` or more in that window
   (its latency monitor), and every stall of the generators' own event loops of
   :data:`GENERATOR_STALL_MS` or more (a tick of theirs that came late: the generator busy, or
   its process not run) with the tail's episodes it overlaps. With ``--gc-probe`` the
   worker's collections (and their share of its CPU in each window) and its event loop's
   callbacks of 1 ms or more in that window are printed too (``benchmarks/gc_probe``).

With ``--thinks`` the phases are instead one per given mean think time (ms; 0: the closed
loop), against the same worker.

Each phase's window opens after every generator's first move and ``--warmup`` seconds, at the
same moment in every generator, and lasts ``--seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple
from unittest import mock

READY_SECONDS = 120.0
"""How long the generators may take to make their first moves."""


class Phase(NamedTuple):
    """One phase's figures."""

    moves: int
    seconds: float
    worker_cpu: float
    load_cpu: float
    """CPU seconds of the load generators together over the window."""
    observed_ms: list[float]
    observed_at: list[float]
    """When each move of ``observed_ms`` was submitted (``time.perf_counter()``)."""
    window: tuple[float, float]
    """The window's opening and closing (seconds since the epoch)."""
    matches: int = 0
    """Matches finished in the window."""
    stalls: tuple[tuple[float, float], ...] = ()
    """The generators' event loops' stalls in the window (:func:`_loop_stalls`): when each
    began (``time.perf_counter()``) and how long it lasted (ms)."""

    @property
    def rate(self) -> float:
        return self.moves / max(self.seconds, 1e-9)


class Episode(NamedTuple):
    """A run of slow moves (:func:`tail_episodes`)."""

    start: float
    """The first one's submission (``time.perf_counter()``)."""
    seconds: float
    """From the first one's submission to the last one's."""
    moves: int
    worst_ms: float


def tail_episodes(
    at: list[float], observed_ms: list[float], threshold_ms: float, gap_ms: float = 50.0
) -> list[Episode]:
    """The moves whose latency is at least ``threshold_ms``, grouped in submission order into
    episodes: a slow move submitted less than ``gap_ms`` after the previous slow one belongs
    to its episode. Slow moves that each came alone (a tail of scattered accidents) make as
    many episodes as moves; a queue that builds up and drains makes few, each holding many."""
    slow = sorted((t, ms) for t, ms in zip(at, observed_ms, strict=True) if ms >= threshold_ms)
    episodes: list[Episode] = []
    for t, ms in slow:
        last = episodes[-1] if episodes else None
        if last is not None and (t - (last.start + last.seconds)) * 1000 < gap_ms:
            episodes[-1] = Episode(last.start, t - last.start, last.moves + 1, max(last.worst_ms, ms))
        else:
            episodes.append(Episode(t, 0.0, 1, ms))
    return episodes


def tail_line(p: Phase) -> str:
    """How a phase's slowest 1 % of moves came: alone, or in episodes (:func:`tail_episodes`)."""
    if len(p.observed_ms) < 100:
        return "too few moves to describe the slowest 1 %"
    threshold = _quantile(p.observed_ms, 0.99)
    episodes = tail_episodes(p.observed_at, p.observed_ms, threshold)
    slow = sum(e.moves for e in episodes)
    lengths = sorted(1000 * e.seconds for e in episodes)
    busiest = max(episodes, key=lambda e: e.moves)
    cover = 100 * sum(lengths) / 1000 / max(p.seconds, 1e-9)
    return (
        f"the slowest 1 % ({slow} moves of {threshold:.1f} ms or more) came in {len(episodes)} episodes"
        f" (slow moves less than 50 ms apart), median {lengths[len(lengths) // 2]:.0f} ms long, longest"
        f" {lengths[-1]:.0f} ms; the largest held {busiest.moves} slow moves"
        f" (worst {busiest.worst_ms:.1f} ms); episodes cover {cover:.1f} % of the window"
    )


GENERATOR_STALL_MS = 5.0
"""A tick of a generator's event loop this much late is a stall (the moves it should have
read or sent meanwhile waited, and their latency counts it)."""
_TICK_SECONDS = 0.002


async def _loop_stalls(found: list[tuple[float, float]], measuring: Callable[[], bool]) -> None:
    """Tick every :data:`_TICK_SECONDS`; append each tick of the window that came
    :data:`GENERATOR_STALL_MS` or more late to ``found``: (when it was due, how late, ms)."""
    while True:
        due = time.perf_counter() + _TICK_SECONDS
        await asyncio.sleep(_TICK_SECONDS)
        late = 1000 * (time.perf_counter() - due)
        if late >= GENERATOR_STALL_MS and measuring():
            found.append((due, late))


def generator_stalls_line(phase: Phase) -> str:
    """The generators' stalls in a phase and how many of its tail's episodes
    (:func:`tail_episodes`, the slowest 1 %) overlap one: a slow move whose span holds a stall
    of the generator that sent or read it was slow, at least in part, outside the worker."""
    stalls = phase.stalls
    if not stalls:
        return f"the generators' event loops: no stall of {GENERATOR_STALL_MS:g} ms or more"
    longest = max(ms for _at, ms in stalls)
    head = (
        f"the generators' event loops: {len(stalls)} stalls of {GENERATOR_STALL_MS:g} ms or more"
        f" (longest {longest:.1f} ms, {sum(ms for _at, ms in stalls):.0f} ms together)"
    )
    if len(phase.observed_ms) < 100:
        return head
    episodes = tail_episodes(phase.observed_at, phase.observed_ms, _quantile(phase.observed_ms, 0.99))
    overlapping = sum(
        1
        for e in episodes
        if any(at < e.start + e.seconds + e.worst_ms / 1000 and at + ms / 1000 > e.start for at, ms in stalls)
    )
    return f"{head}; {overlapping} of the tail's {len(episodes)} episodes overlap one"


def _generate(pipe: Connection, base: str, matches: int, offset: int, args: dict[str, Any]) -> None:
    """One load-generator process: its matches until the parent's window has closed."""
    asyncio.run(_generator(pipe, base, matches, offset, args))


async def _generator(pipe: Connection, base: str, matches: int, offset: int, args: dict[str, Any]) -> None:
    import aiohttp

    from truco_tools.bench_connection import WebSocketBots
    from truco_tools.bench_load import Figures

    fig, stop = Figures(), asyncio.Event()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        n_sockets = max(1, -(-matches // 25))
        bots = WebSocketBots(
            session,
            base,
            n_sockets,
            args["preset"],
            2,
            args["seed"] + offset,
            args["think_ms"],
            fig,
            stop,
            args["policy"],
        )
        await bots.start()
        slots = [asyncio.ensure_future(bots.run_slot(offset + i)) for i in range(matches)]
        stalls: list[tuple[float, float]] = []
        slots.append(asyncio.ensure_future(_loop_stalls(stalls, lambda: fig.measuring)))
        try:
            await fig.first_move(READY_SECONDS)
            pipe.send(fig.seen)
            t_open, t_close = await asyncio.to_thread(pipe.recv)
            await asyncio.sleep(max(0.0, t_open - time.time()))
            fig.reset()
            fig.measuring = True
            await asyncio.sleep(max(0.0, t_close - time.time()))
            fig.measuring = False
        finally:
            stop.set()
            for slot in slots:
                slot.cancel()
            await asyncio.gather(*slots, return_exceptions=True)
            await bots.close()
    pipe.send((fig.actions, fig.observed_ms, fig.observed_at, fig.errors, fig.matches_finished, stalls))


def _phase(base: str, worker_pid: int, think_ms: float, args: argparse.Namespace) -> Phase:
    """One window of ``args.processes`` generators against the worker at ``base``."""
    from truco_tools.bench_processes import cpu_seconds

    ctx = multiprocessing.get_context("spawn")
    shares = [
        args.matches // args.processes + (i < args.matches % args.processes) for i in range(args.processes)
    ]
    opts = {
        "preset": args.preset,
        "seed": args.seed,
        "think_ms": think_ms,
        "policy": args.policy,
    }
    pipes, procs = [], []
    offset = 0
    for share in shares:
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=_generate, args=(theirs, base, share, offset, opts), daemon=True)
        proc.start()
        pipes.append(mine)
        procs.append(proc)
        offset += share
    try:
        for pipe in pipes:  # every generator has made its first move
            if not pipe.poll(READY_SECONDS):
                raise RuntimeError("a load generator made no move")
            pipe.recv()
        t_open = time.time() + args.warmup
        t_close = t_open + args.seconds
        for pipe in pipes:
            pipe.send((t_open, t_close))
        time.sleep(max(0.0, t_open - time.time()))
        pids = [p.pid for p in procs if p.pid is not None]
        cpu0, load0 = cpu_seconds(worker_pid), sum(cpu_seconds(p) for p in pids)
        t0 = time.perf_counter()
        time.sleep(max(0.0, t_close - time.time()))
        seconds = time.perf_counter() - t0
        cpu, load = cpu_seconds(worker_pid) - cpu0, sum(cpu_seconds(p) for p in pids) - load0
        moves, matches, observed, observed_at, stalls = 0, 0, [], [], []
        for pipe in pipes:
            if not pipe.poll(60):
                raise RuntimeError("a load generator did not report")
            n, lat, sent, _errors, finished, late = pipe.recv()
            moves += n
            matches += finished
            observed += lat
            observed_at += sent
            stalls += late
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()  # our own child, by its handle
                proc.join()
    return Phase(moves, seconds, cpu, load, observed, observed_at, (t_open, t_close), matches, tuple(stalls))


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[round(q * 1000) - 1]


def _line(name: str, p: Phase, think_ms: float) -> str:
    per_move = 1000 * p.worker_cpu / max(p.moves, 1)
    line = (
        f"{name:12s} think {think_ms:7.1f} ms  {p.moves:6d} moves  {p.rate:6.0f} moves/s"
        f"  worker CPU {per_move:.3f} ms/move ({100 * p.worker_cpu / p.seconds:.0f} % of a core)"
        f"  generators {100 * p.load_cpu / p.seconds:.0f} % of a core"
    )
    if p.observed_ms:
        obs = p.observed_ms
        line += (
            f"  submit->every seat p50 {_quantile(obs, 0.5):.1f} p99 {_quantile(obs, 0.99):.1f}"
            f" max {max(obs):.1f} ms ({len(obs)} moves)"
        )
    return line


REDIS_LATENCY_MS = 5
"""The latency monitor's threshold of the worker's ``redis-server`` (``latency-monitor-threshold``):
Redis records each of its own events (a command, a fork, an expiry cycle) that took this long."""


@contextmanager
def _served(store: str, root: Path) -> Iterator[tuple[int, str, str | None]]:
    """A fresh worker of the build at ``root`` on ``store`` (a fresh ``redis-server`` for
    ``redis``, its latency monitor on): its pid, HTTP base URL and Redis URL (``None``)."""
    import service_compare

    from truco_tools.bench_processes import HOST
    from truco_tools.redis_proc import start_redis

    monitor = ("--latency-monitor-threshold", str(REDIS_LATENCY_MS))
    redis = start_redis(host=HOST, extra_args=monitor) if store == "redis" else None
    try:
        with service_compare._worker(root, redis.url if redis else None) as (pid, _port, http_port):
            yield pid, f"http://{HOST}:{http_port}", redis.url if redis else None
    finally:
        if redis is not None:
            redis.stop()


def redis_history(url: str) -> dict[str, list[tuple[int, int]]]:
    """Redis's latency monitor: each event it recorded, with its samples (seconds since the
    epoch, milliseconds)."""
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        events = [row[0] for row in client.execute_command("LATENCY", "LATEST")]
        return {
            ev: [(int(at), int(ms)) for at, ms in client.execute_command("LATENCY", "HISTORY", ev)]
            for ev in events
        }
    finally:
        client.close()


def redis_stalls_line(history: dict[str, list[tuple[int, int]]], opened: float, closed: float) -> str:
    """The events of ``history`` (:func:`redis_history`) in the window from ``opened`` to
    ``closed`` (seconds since the epoch; Redis stamps whole seconds)."""
    inside = sorted(
        (ms, at, event)
        for event, samples in history.items()
        for at, ms in samples
        if math.floor(opened) <= at <= closed
    )
    head = f"Redis's own events of {REDIS_LATENCY_MS} ms or more over the window:"
    if not inside:
        return f"{head} none"
    told = "; ".join(f"{event} {ms} ms at {at - opened:+.0f} s" for ms, at, event in reversed(inside[-3:]))
    return f"{head} {len(inside)}; longest: {told}"


def window(name: str, root: Path, args: argparse.Namespace) -> tuple[float, int, float, int]:
    """``ws-<store>`` of the peer table with the generators in their own processes: the
    closed loop's (worker CPU seconds, moves, seconds, matches finished) against a fresh
    worker."""
    with _served(name.split("-")[1], root) as (pid, base, _url):
        got = _phase(base, pid, 0.0, args)
    return got.worker_cpu, got.moves, got.seconds, got.matches


def latency(args: argparse.Namespace, root: Path) -> int:
    """The three phases (module docstring) against one worker of the build at ``root``."""
    with contextlib.ExitStack() as stack:
        probe = None
        if args.gc_probe:  # service_compare._worker puts the probe on the worker's path
            probe = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="truco-gc-")))
            stack.enter_context(mock.patch.dict(os.environ, {"GC_PROBE_OUT": str(probe / "probe")}))
        phases = _latency(args, root)
        half = dict(phases).get("half load")
        if probe is not None:
            import gc_pauses

            worker = gc_pauses.worker_record(probe, "probe")
            if worker is None:
                print("worker's collections: no record from the worker's probe")
            else:
                full = [f"{at:.0f} s ({1000 * p:.0f} ms)" for g, at, p in worker["collections"] if g == 2]
                print(
                    f"worker's collections (the probe's, over its whole run): "
                    f"{gc_pauses.collections_line(worker)}; full ones at {', '.join(full) or '-'} "
                    "after it started"
                )
                for name, phase in phases:
                    share = gc_pauses.collector_share_line(
                        worker, *phase.window, phase.worker_cpu, phase.moves
                    )
                    print(f"{name}: {share}")
                if half is not None:
                    print(f"half load: {gc_pauses.callbacks_line(worker, *half.window)}")
    return 0


def _by_rate(args: argparse.Namespace, root: Path) -> None:
    """``--thinks``: one phase at each mean think time against one worker: how its CPU per
    move and the latency move with the move rate (an idle worker's fixed cost, and a move's
    cost when the worker is cold between moves, show at the long think times)."""
    with _served(args.store, root) as (pid, base, _url):
        for think in args.thinks:
            print(_line("by rate", _phase(base, pid, think, args), think), flush=True)
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


def _latency(args: argparse.Namespace, root: Path) -> list[tuple[str, Phase]]:
    """Run the phases and print them; the saturating and the half-load ones (none with
    ``--thinks``)."""
    load0 = os.getloadavg()
    print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} on {os.cpu_count()} cores")
    if args.thinks:
        _by_rate(args, root)
        return []
    with _served(args.store, root) as (pid, base, url):
        sat = _phase(base, pid, 0.0, args)
        print(_line("saturation", sat, 0.0), flush=True)
        cycle = args.matches / max(sat.rate, 1e-9)  # seconds between two moves of a match, saturated
        # a first guess: half the saturating rate if a move took no time; it lands a little
        # below half, where the latency is close to the one at half (a guess aimed above half
        # measures a queue's latency there, and the corrected think time overshoots half)
        think = 2000 * cycle
        cal = _phase(base, pid, think, args)
        print(_line("calibration", cal, think), flush=True)
        # M / rate = think + latency: keep the measured latency, aim at half the saturating rate
        latency_s = max(0.0, args.matches / max(cal.rate, 1e-9) - think / 1000)
        think = 1000 * max(0.0, 2 * cycle - latency_s)
        half = _phase(base, pid, think, args)
        print(_line("half load", half, think), flush=True)
        stalls = None if url is None else redis_stalls_line(redis_history(url), *half.window)
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    obs = half.observed_ms
    print(
        f"ws-{args.store}: saturating {sat.rate:.0f} moves/s; at {half.rate:.0f} moves/s"
        f" ({half.rate / max(sat.rate, 1e-9):.2f} of it), submit -> every seat's observation:"
        f" p50 {_quantile(obs, 0.5):.1f} ms, p99 {_quantile(obs, 0.99):.1f} ms,"
        f" max {max(obs, default=math.nan):.1f} ms"
        f" ({args.processes} generator processes, {args.matches} matches, policy {args.policy},"
        f" {args.warmup:g}+{args.seconds:g} s a phase)",
        flush=True,
    )
    print(f"half load: {tail_line(half)}", flush=True)
    print(f"half load: {generator_stalls_line(half)}", flush=True)
    if stalls is not None:
        print(f"half load: {stalls}", flush=True)
    return [("saturation", sat), ("half load", half)]
