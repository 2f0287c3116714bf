"""``truco bench service``: the match service under load, over real gRPC, on loopback.

What runs (all started here, all stopped here by pid, nothing leaves 127.0.0.1):

* a ``redis-server`` on a free loopback port (no persistence);
* one worker: ``truco serve`` as a **subprocess** (its own interpreter and event loop,
  as in production), bound to a free port, on that Redis;
* a bare gRPC unary echo server, also a subprocess, for the baseline;
* the load generator in this process: ``--matches`` concurrent matches of random bots.
  Each seat of each match has its own observation stream and acts when its stream says it
  is its turn (a random legal action with ``expected_version`` and a ``request_id``); a
  finished match is replaced by a new one, so the number of live matches stays constant.

Then, against the same worker and Redis, the same bots over the player connection
(``Connect``; :mod:`truco_tools.bench_connection`), the no-work server's bidirectional form
of that pattern, and the connection load against ``truco serve --workers 2``.

Figures (one ``name: value`` line each): actions/s; SubmitAction latency p50/p99;
action-to-observation delivery p50/p99 (SubmitAction sent -> the new version arrives on
another seat's stream); Redis commands per action (``INFO commandstats`` delta over the
measured window, all commands, streams included) and EVALSHA per action (the write path:
one script call per action is one round trip); Redis memory per live match (``MEMORY
USAGE`` of every key of a sample of live matches); the echo rate at the same concurrency
and the ratio actions/s / echo rpc/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from truco_contract.pb import match_service_pb2_grpc
from truco_tools.bench_connection import (
    ConnectionBots,
    pattern_connect_load,
    stubs_of,
)
from truco_tools.bench_load import Bots, Figures, bench_channel, echo_load, pattern_load, pct
from truco_tools.bench_processes import (
    HOST,
    PATTERN_SERVICE,
    bucket_delta,
    bucket_quantile,
    child,
    children,
    commandstats,
    commit_count,
    cpu_seconds,
    echo_cmd,
    match_memory,
    metrics_text,
    worker_cmd,
)
from truco_tools.redis_proc import RedisProcess, free_port, start_redis

MAX_SECONDS = 600.0


# ------------------------------------------------------------------------------- options
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``truco bench service`` (skips flags the parser already has)."""
    have = set(parser._option_string_actions)  # shared with ``truco bench engine``
    options: list[tuple[str, dict[str, Any]]] = [
        ("--matches", {"type": int, "default": 200, "help": "service: concurrent matches (default 200)"}),
        (
            "--seconds",
            {
                "type": float,
                "default": None,
                "help": "measured time (engine: per case, default 2; service: 10)",
            },
        ),
        (
            "--warmup",
            {"type": float, "default": 2.0, "help": "service: seconds before measuring (default 2)"},
        ),
        ("--preset", {"default": "paulista", "help": "service: preset of the matches (default paulista)"}),
        ("--players", {"type": int, "default": 2, "help": "service: players per match (default 2)"}),
        ("--seed", {"type": int, "default": 0, "help": "seed of the random players"}),
        (
            "--event-log-max-len",
            {"type": int, "default": None, "help": "service: worker's TRUCO_EVENT_LOG_MAX_LEN"},
        ),
        (
            "--channels",
            {"type": int, "default": 0, "help": "service: client connections (default: one per 25 matches)"},
        ),
        (
            "--think-ms",
            {
                "type": float,
                "default": 0.0,
                "help": "service: mean pause of a bot before it acts (exponential; default 0 = "
                "as fast as possible, which saturates the worker and so measures queueing)",
            },
        ),
        ("--quiet", {"action": "store_true", "help": "service: no progress lines"}),
        (
            "--no-connection",
            {"action": "store_true", "help": "service: skip the player-connection (Connect) measurement"},
        ),
        (
            "--no-workers",
            {"action": "store_true", "help": "service: skip the --workers 2 measurement"},
        ),
        ("--no-rest", {"action": "store_true", "help": "service: skip the REST/JSON measurement"}),
        (
            "--no-paced",
            {
                "action": "store_true",
                "help": "service: skip the paced run (latency at 30%% of the measured throughput)",
            },
        ),
    ]
    for flag, kwargs in options:
        if flag not in have:
            parser.add_argument(flag, **kwargs)


async def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> dict[str, float]:
    """Run the whole benchmark; print progress and the figures; return the figures."""
    seconds = min(float(args.seconds or 10.0), MAX_SECONDS)
    warmup = min(float(args.warmup), 60.0)

    def progress(line: str) -> None:
        if not args.quiet:
            out(f"# {line}")

    rp: RedisProcess = start_redis(host=HOST)
    results: dict[str, float] = {}
    try:
        r = rp.client()
        worker_port, echo_port, http_port = free_port(HOST), free_port(HOST), free_port(HOST)
        metrics_port = free_port(HOST)
        with (
            child(worker_cmd(rp.url, worker_port, http_port, args, metrics_port), "gRPC listening") as worker,
            child(echo_cmd(echo_port), "echo listening") as echo_server,
        ):
            progress(
                f"redis {rp.url} (pid {rp.pid}), worker `truco serve` pid {worker.pid} "
                f"on {HOST}:{worker_port}, "
                f"{args.matches} matches of {args.preset} {args.players}p, {warmup:g}s warmup + {seconds:g}s"
            )
            fig = Figures()
            stop = asyncio.Event()
            pids = {"worker": worker.pid, "redis": rp.pid, "client": os.getpid()}
            n_channels = args.channels or max(1, -(-args.matches // 25))
            channels = [bench_channel(f"{HOST}:{worker_port}", i) for i in range(n_channels)]
            try:
                stubs = [match_service_pb2_grpc.MatchServiceStub(ch) for ch in channels]
                bots = Bots(stubs, args, fig, stop)
                slots = [asyncio.ensure_future(bots.run_slot(i)) for i in range(args.matches)]
                await fig.first_move()
                await asyncio.sleep(warmup)
                fig.reset()
                fig.measuring = True
                before = commandstats(r)
                commits0 = await asyncio.to_thread(commit_count, metrics_port)
                cpu0 = {who: cpu_seconds(pid) for who, pid in pids.items()}
                t0 = time.perf_counter()
                tick = t0
                sizes: list[int] = []
                sampler = random.Random(args.seed)
                while (now := time.perf_counter()) - t0 < seconds:
                    await asyncio.sleep(min(1.0, seconds - (now - t0)))
                    if time.perf_counter() - tick >= 1.0:
                        tick = time.perf_counter()
                        # memory of a few live matches every second: matches of every age
                        live = sorted(bots.live)
                        sample = sampler.sample(live, min(10, len(live)))
                        sizes += await asyncio.to_thread(match_memory, r, sample)  # off the bots' loop
                        el = tick - t0
                        progress(
                            f"{el:5.1f}s  {fig.actions} actions ({fig.actions / el:.0f}/s), "
                            f"p99 {pct(fig.submit_ms, 99):.1f} ms, {fig.matches_finished} finished, "
                            f"{len(bots.live)} live, {fig.errors} retries"
                        )
                elapsed = time.perf_counter() - t0
                fig.measuring = False
                cpu = {who: cpu_seconds(pid) - cpu0[who] for who, pid in pids.items()}
                after = commandstats(r)
                commits = await asyncio.to_thread(commit_count, metrics_port) - commits0
                if not sizes:  # a window shorter than a second
                    sizes = match_memory(r, sorted(bots.live)[:10])
                stop.set()
                for s in slots:
                    s.cancel()
                await asyncio.gather(*slots, return_exceptions=True)
            finally:
                for ch in channels:
                    await ch.close()
            paced: dict[str, float] = {}
            saturated = fig.actions / elapsed
            if not args.no_paced and args.think_ms == 0 and saturated > 0:
                # each match then offers one action per think time: PACED_LOAD of saturation
                think_ms = min(60_000.0, 1000.0 * args.matches / (PACED_LOAD * saturated))
                progress(f"the same bots paced (mean think {think_ms:.0f} ms): latency below saturation")
                paced = await _paced_phase(
                    f"{HOST}:{worker_port}", args, think_ms, warmup, seconds, metrics_port
                )
            conn: dict[str, float] = {}
            if not args.no_connection:
                progress("the same bots over the player connection (one Connect stream per 25 matches)")
                conn = await _connection_phase(
                    f"{HOST}:{worker_port}", args, warmup, seconds, [worker.pid], metrics_port, rp.pid
                )
            rest: dict[str, float] = {}
            if not args.no_rest:
                progress(f"the same load over REST/JSON (NDJSON streams) on port {http_port}")
                rest = await _rest_phase(f"http://{HOST}:{http_port}", args, warmup, seconds, worker.pid)
            progress("measuring the bare gRPC echo at the same concurrency")
            echo_rate = await echo_load(f"{HOST}:{echo_port}", args.matches, min(seconds, 5.0))
            progress("measuring the service's RPC pattern on a server that does no work")
            pattern_rate, _, pattern_cpu = await pattern_load(
                f"{HOST}:{echo_port}",
                args.matches,
                args.players,
                min(seconds, 5.0),
                server_pid=echo_server.pid,
            )
            paced_pattern: list[float] = []
            pattern_think = paced.get("think_ms", float(args.think_ms))
            if pattern_think > 0:
                progress(
                    f"the no-work server's pattern paced the same way (mean think {pattern_think:.0f} ms)"
                )
                _, paced_pattern, _ = await pattern_load(
                    f"{HOST}:{echo_port}",
                    args.matches,
                    args.players,
                    min(seconds, 10.0),
                    pattern_think,
                    args.seed,
                )
            conn_pattern_rate = conn_pattern_cpu = 0.0
            if conn:
                progress("measuring the player connection's pattern on the server that does no work")
                conn_pattern_rate, conn_pattern_cpu = await _connect_pattern(
                    f"{HOST}:{echo_port}", args, min(seconds, 5.0), echo_server.pid
                )
        two: dict[str, float] = {}
        if conn and not args.no_workers:
            two = await _two_workers_phase(rp, args, warmup, seconds, progress)
        # the benchmark's own probes (memory samples) are not the service's commands
        calls = {k: after.get(k, 0) - before.get(k, 0) for k in after if not k.startswith(("memory", "scan"))}
        total_cmds = sum(calls.values())
        actions = max(fig.actions, 1)
        results = {
            **fig.summary(elapsed),
            "redis_commands_per_action": total_cmds / actions,
            "redis_evalsha_per_action": (calls.get("evalsha", 0) + calls.get("eval", 0)) / actions,
            "redis_commit_round_trips_per_action": commits / actions,
            "redis_bytes_per_live_match": statistics.mean(sizes) if sizes else float("nan"),
            "echo_rpc_per_s": echo_rate,
            "actions_to_echo_ratio": (fig.actions / elapsed) / echo_rate if echo_rate else float("nan"),
            "pattern_actions_per_s": pattern_rate,
            "pattern_server_cpu_ms_per_action": pattern_cpu,
            "pattern_to_echo_ratio": pattern_rate / echo_rate if echo_rate else float("nan"),
            "actions_to_pattern_ratio": (fig.actions / elapsed) / pattern_rate
            if pattern_rate
            else float("nan"),
            **{f"{who}_cpu_ms_per_action": 1000 * t / actions for who, t in cpu.items()},
            **{f"{who}_cpu_share": t / elapsed for who, t in cpu.items()},
            "matches_finished": fig.matches_finished,
            "errors": fig.errors,
        }
        top = sorted(((v, k) for k, v in calls.items() if v), reverse=True)[:10]
        progress("redis commands in the window: " + ", ".join(f"{k}={v}" for v, k in top))
        out(f"matches (concurrent): {args.matches}")
        out(f"actions/s: {results['actions_per_s']:.0f}")
        out(f"SubmitAction p50 (ms): {results['submit_p50_ms']:.2f}")
        out(f"SubmitAction p99 (ms): {results['submit_p99_ms']:.2f}")
        out(f"delivery p50 (ms): {results['delivery_p50_ms']:.2f}")
        out(f"delivery p99 (ms): {results['delivery_p99_ms']:.2f}")
        out(f"redis commands per action: {results['redis_commands_per_action']:.2f}")
        commits = results["redis_commit_round_trips_per_action"]
        out(f"redis write round trips (commits) per action: {commits:.2f}")
        out(
            f"redis scripts (EVALSHA) per action: {results['redis_evalsha_per_action']:.2f} "
            "(commits, and the clock queue and operator-event relays in the background)"
        )
        out(f"redis bytes per live match: {results['redis_bytes_per_live_match']:.0f}")
        out(f"echo rpc/s (same concurrency): {results['echo_rpc_per_s']:.0f}")
        out(f"actions/s / echo rpc/s: {results['actions_to_echo_ratio']:.2f}")
        out(f"no-work server, same RPC pattern, actions/s: {results['pattern_actions_per_s']:.0f}")
        out(f"no-work pattern / echo rpc/s: {results['pattern_to_echo_ratio']:.2f}")
        out(
            "no-work server CPU per action (ms): "
            f"{results['pattern_server_cpu_ms_per_action']:.3f} (the same calls and messages with "
            f"nothing behind them; the worker's: {results['worker_cpu_ms_per_action']:.3f})"
        )
        out(f"actions/s / no-work pattern actions/s: {results['actions_to_pattern_ratio']:.2f}")
        if paced_pattern:
            results["paced_pattern_act_p50_ms"] = pct(paced_pattern, 50)
            results["paced_pattern_act_p99_ms"] = pct(paced_pattern, 99)
            where = "paced " if paced else ""
            out(
                f"no-work server, same RPC pattern paced the same way, Act p50/p99 (ms): "
                f"{results['paced_pattern_act_p50_ms']:.2f} / {results['paced_pattern_act_p99_ms']:.2f} "
                f"(the {where}SubmitAction's floor on this machine)"
            )
        for who in ("worker", "redis", "client"):
            out(
                f"{who} CPU per action (ms): {results[f'{who}_cpu_ms_per_action']:.3f} "
                f"({100 * results[f'{who}_cpu_share']:.0f}% of a core)"
            )
        if paced:
            results.update({f"paced_{k}": v for k, v in paced.items()})
            share = paced["actions_per_s"] / results["actions_per_s"]
            out(f"paced think time (ms): {paced['think_ms']:.0f}")
            out(f"paced actions/s: {paced['actions_per_s']:.0f} ({share:.2f} of the closed loop)")
            out(f"paced SubmitAction p50 (ms): {paced['submit_p50_ms']:.2f}")
            out(f"paced SubmitAction p99 (ms): {paced['submit_p99_ms']:.2f}")
            out(f"paced delivery p50 (ms): {paced['delivery_p50_ms']:.2f}")
            out(f"paced delivery p99 (ms): {paced['delivery_p99_ms']:.2f}")
            out(
                "paced SubmitAction p50/p99 in the worker's handler (ms, its histogram, interpolated): "
                f"{paced['handler_p50_ms']:.2f} / {paced['handler_p99_ms']:.2f}"
            )
        if conn:
            results.update({f"connection_{k}": v for k, v in conn.items()})
            rate = conn["actions_per_s"]
            out(f"connection actions/s: {rate:.0f}")
            out(f"connection / unary actions/s: {rate / results['actions_per_s']:.2f}")
            out(f"connection action p50 (ms): {conn['submit_p50_ms']:.2f}")
            out(f"connection action p99 (ms): {conn['submit_p99_ms']:.2f}")
            out(f"connection delivery p50 (ms): {conn['delivery_p50_ms']:.2f}")
            out(f"connection delivery p99 (ms): {conn['delivery_p99_ms']:.2f}")
            out(
                f"connection worker CPU per action (ms): {conn['worker_cpu_ms_per_action']:.3f} "
                f"(unary: {results['worker_cpu_ms_per_action']:.3f})"
            )
            out(f"connection client CPU per action (ms): {conn['client_cpu_ms_per_action']:.3f}")
            out(f"connection redis write round trips (commits) per action: {conn['commits_per_action']:.2f}")
            out(f"connection rejected actions (stale view or version conflict): {conn['errors']:.0f}")
            results["connection_pattern_actions_per_s"] = conn_pattern_rate
            results["connection_pattern_server_cpu_ms_per_action"] = conn_pattern_cpu
            out(f"no-work server, connection pattern, actions/s: {conn_pattern_rate:.0f}")
            if conn_pattern_rate:
                out(f"connection actions/s / its no-work pattern: {rate / conn_pattern_rate:.2f}")
                out(
                    f"no-work server CPU per action, connection pattern (ms): {conn_pattern_cpu:.3f} "
                    f"(unary pattern: {results['pattern_server_cpu_ms_per_action']:.3f})"
                )
                # What the service adds to the calls and messages, the same on both paths
                # (the worker's CPU less its pattern's): with S that work, T_u and T_c the two
                # patterns' CPU, a saturated worker's connection / unary rate is about
                # (T_u + S) / (T_c + S), which is 2 only when S <= T_u - 2 T_c.
                work = results["worker_cpu_ms_per_action"] - results["pattern_server_cpu_ms_per_action"]
                bound = results["pattern_server_cpu_ms_per_action"] - 2 * conn_pattern_cpu
                out(
                    f"the service's own work per action (ms, unary worker less its pattern): {work:.3f}; "
                    f"connection / unary could reach 2 only below {bound:.3f}"
                )
        if two:
            results.update({f"workers2_{k}": v for k, v in two.items()})
            out(f"--workers 2 connection actions/s: {two['actions_per_s']:.0f}")
            out(f"--workers 2 / --workers 1 actions/s: {two['actions_per_s'] / conn['actions_per_s']:.2f}")
            out(
                "--workers 2 worker CPU per action (ms, both workers): "
                f"{two['worker_cpu_ms_per_action']:.3f} "
                f"(--workers 1: {conn['worker_cpu_ms_per_action']:.3f})"
            )
            out(
                f"--workers 2 CPU shares: workers {100 * two['worker_cpu_share']:.0f}%, "
                f"client {100 * two['client_cpu_share']:.0f}%, redis {100 * two['redis_cpu_share']:.0f}% "
                f"of a core, on {os.cpu_count()} cores"
            )
        if rest:
            results.update({f"rest_{k}": v for k, v in rest.items()})
            out(f"REST actions/s: {rest['actions_per_s']:.0f}")
            out(f"REST SubmitAction p50 (ms): {rest['submit_p50_ms']:.2f}")
            out(f"REST SubmitAction p99 (ms): {rest['submit_p99_ms']:.2f}")
            out(f"REST delivery p50 (ms): {rest['delivery_p50_ms']:.2f}")
            out(f"REST delivery p99 (ms): {rest['delivery_p99_ms']:.2f}")
            out(f"REST worker CPU per action (ms): {rest['worker_cpu_ms_per_action']:.3f}")
            out(f"REST actions/s / gRPC actions/s: {rest['actions_per_s'] / results['actions_per_s']:.2f}")
        out(f"machine load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        out(f"matches finished: {fig.matches_finished}")
        out(f"rejected actions (stale view, retried): {fig.errors}")
    finally:
        rp.stop()
    return results


PACED_LOAD = 0.3
"""The paced run offers this fraction of the closed loop's throughput."""


async def measure_window(
    run_slot: Callable[[int], Awaitable[None]],
    matches: int,
    fig: Figures,
    stop: asyncio.Event,
    warmup: float,
    seconds: float,
    cpu_pid: int | None = None,
    at_edges: Callable[[], Awaitable[None]] | None = None,
) -> tuple[float, float]:
    """Run ``matches`` bot slots: wait for their first action, warm up ``warmup`` seconds,
    measure ``seconds``, stop them all. Returns the window's length and the CPU seconds
    ``cpu_pid`` used in it (0 without a pid). ``at_edges`` runs as the window opens and again
    as it closes."""
    slots = [asyncio.ensure_future(run_slot(i)) for i in range(matches)]
    try:
        await fig.first_move()
        await asyncio.sleep(warmup)
        fig.reset()
        fig.measuring = True
        cpu0 = cpu_seconds(cpu_pid) if cpu_pid else 0.0
        if at_edges is not None:
            await at_edges()
        t0 = time.perf_counter()
        await asyncio.sleep(seconds)
        elapsed = time.perf_counter() - t0
        fig.measuring = False
        cpu = cpu_seconds(cpu_pid) - cpu0 if cpu_pid else 0.0
        if at_edges is not None:
            await at_edges()
    finally:
        stop.set()
        for slot in slots:
            slot.cancel()
        await asyncio.gather(*slots, return_exceptions=True)
    return elapsed, cpu


async def _paced_phase(
    address: str, args: argparse.Namespace, think_ms: float, warmup: float, seconds: float, metrics_port: int
) -> dict[str, float]:
    """The same gRPC bots with a mean pause of ``think_ms`` before each action: latency
    below saturation, with every match still live and streaming; and the worker's own
    time in the SubmitAction handler over the same window (its histogram)."""
    paced = argparse.Namespace(**{**vars(args), "think_ms": think_ms})
    fig = Figures()
    stop = asyncio.Event()
    n_channels = args.channels or max(1, -(-args.matches // 25))
    channels = [bench_channel(address, i) for i in range(n_channels)]
    scrapes: list[str] = []

    async def scrape() -> None:
        scrapes.append(await asyncio.to_thread(metrics_text, metrics_port))

    try:
        bots = Bots([match_service_pb2_grpc.MatchServiceStub(ch) for ch in channels], paced, fig, stop)
        elapsed, _ = await measure_window(
            bots.run_slot, args.matches, fig, stop, warmup, seconds, at_edges=scrape
        )
    finally:
        for ch in channels:
            await ch.close()
    handled = bucket_delta(scrapes[0], scrapes[1], "grpc_server_handling_seconds", grpc_method="SubmitAction")
    return {
        "think_ms": think_ms,
        **fig.summary(elapsed),
        "handler_p50_ms": 1000 * bucket_quantile(handled, 0.50),
        "handler_p99_ms": 1000 * bucket_quantile(handled, 0.99),
    }


async def _connection_phase(
    address: str,
    args: argparse.Namespace,
    warmup: float,
    seconds: float,
    worker_pids: list[int],
    metrics_port: int,
    redis_pid: int | None = None,
) -> dict[str, float]:
    """The same bots over the player connection: both seats of 25 matches on each Connect
    stream. Worker CPU is the sum over ``worker_pids``; commits from the worker's metrics."""
    fig = Figures()
    stop = asyncio.Event()
    n_channels = args.channels or max(1, -(-args.matches // 25))
    channels = [bench_channel(address, i) for i in range(n_channels)]
    bots = ConnectionBots(stubs_of(channels), args.preset, args.players, args.seed, args.think_ms, fig, stop)
    pids = {"client": os.getpid(), **({"redis": redis_pid} if redis_pid else {})}
    try:
        await bots.start()
        slots = [asyncio.ensure_future(bots.run_slot(i)) for i in range(args.matches)]
        try:
            await fig.first_move()
            await asyncio.sleep(warmup)
            fig.reset()
            fig.measuring = True
            commits0 = await asyncio.to_thread(commit_count, metrics_port)
            cpu0 = sum(cpu_seconds(p) for p in worker_pids)
            other0 = {k: cpu_seconds(p) for k, p in pids.items()}
            t0 = time.perf_counter()
            await asyncio.sleep(seconds)
            elapsed = time.perf_counter() - t0
            fig.measuring = False
            cpu = sum(cpu_seconds(p) for p in worker_pids) - cpu0
            other = {k: cpu_seconds(p) - other0[k] for k, p in pids.items()}
            commits = await asyncio.to_thread(commit_count, metrics_port) - commits0
        finally:
            stop.set()
            for slot in slots:
                slot.cancel()
            await asyncio.gather(*slots, return_exceptions=True)
    finally:
        await bots.close()
        for ch in channels:
            await ch.close()
    actions = max(fig.actions, 1)
    return {
        **fig.summary(elapsed),
        "worker_cpu_ms_per_action": 1000 * cpu / actions,
        "worker_cpu_share": cpu / elapsed,
        **{f"{k}_cpu_ms_per_action": 1000 * v / actions for k, v in other.items()},
        **{f"{k}_cpu_share": v / elapsed for k, v in other.items()},
        "commits_per_action": commits / actions,
        "errors": fig.errors,
    }


async def _connect_pattern(
    address: str, args: argparse.Namespace, seconds: float, server_pid: int
) -> tuple[float, float]:
    """The connection's pattern on the no-work server: actions/s, and that server's CPU per
    action (ms)."""
    n_channels = args.channels or max(1, -(-args.matches // 25))
    channels = [bench_channel(address, i) for i in range(n_channels)]
    try:
        return await pattern_connect_load(
            channels, PATTERN_SERVICE, args.matches, args.players, seconds, lambda: cpu_seconds(server_pid)
        )
    finally:
        for ch in channels:
            await ch.close()


async def _two_workers_phase(
    rp: RedisProcess,
    args: argparse.Namespace,
    warmup: float,
    seconds: float,
    progress: Callable[[str], None],
) -> dict[str, float]:
    """The connection load against ``truco serve --workers 2`` (same Redis, new ports)."""
    port, http_port, metrics_port = free_port(HOST), free_port(HOST), free_port(HOST)
    cmd = worker_cmd(rp.url, port, http_port, args, metrics_port, workers=2)
    with child(cmd, "workers: 2") as group:
        pids = children(group.pid)
        progress(f"the connection load against `truco serve --workers 2` (worker pids {pids})")
        return await _connection_phase(f"{HOST}:{port}", args, warmup, seconds, pids, metrics_port, rp.pid)


async def _rest_phase(
    base: str, args: argparse.Namespace, warmup: float, seconds: float, worker_pid: int
) -> dict[str, float]:
    """The same bots over REST/JSON against the same worker; figures of the measured window."""
    import aiohttp

    from truco_tools.bench_rest import RestBots

    fig = Figures()
    stop = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(base_url=None, connector=connector) as session:
        bots = RestBots(session, base, args.preset, args.players, args.seed, args.think_ms, fig, stop)
        elapsed, cpu = await measure_window(
            bots.run_slot, args.matches, fig, stop, warmup, seconds, worker_pid
        )
    return {
        **fig.summary(elapsed),
        "worker_cpu_ms_per_action": 1000 * cpu / max(fig.actions, 1),
        "errors": fig.errors,
    }


def bench_command(args: argparse.Namespace) -> int:
    asyncio.run(run(args))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m truco_tools.bench_service")
    add_arguments(parser)
    return bench_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
