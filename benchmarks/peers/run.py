"""Server CPU per move of this build beside boardgame.io and Colyseus, side by side in one run.

Each contestant is a fresh server process under the same kind of load: ``--matches``
concurrent two-player matches whose seats play as soon as their view says it is their turn,
a finished match replaced at once; after ``--warmup`` seconds the server's CPU time (user +
system, from ``/proc``) and the moves made are counted over ``--seconds``.

- ``boardgame.io`` and ``colyseus``: the peer game (``game.mjs``) on ``bgio_server.mjs`` /
  ``colyseus_server.mjs`` (their in-memory storage), driven by their own client libraries in a
  node process of their own (``bgio_load.mjs`` / ``colyseus_load.mjs``).
- ours, ``<transport>-<store>`` for each of ``unary`` (gRPC unary), ``connect`` (the gRPC
  player connection), ``ws`` (the player connection over WebSocket), ``rest`` (REST/JSON with
  its event stream) on ``redis`` or ``memory``: ``truco serve`` with one worker (and a fresh
  ``redis-server``), driven by the bots of ``benchmarks/service_compare.py`` playing
  ``--preset``: from this process, except the WebSocket's, which run in ``--processes``
  processes of their own (``latency.py``; ``--processes 0``: from this process too). They
  choose their actions by ``--policy``: ``cards`` (the default) plays a card whenever one is
  legal, the peer game's kind of move, in matches longer than the peer game's; ``random``
  any legal action, calls and folds included, in matches shorter than the peer game's
  (``truco_tools.bench_policy``).

The contestants run one after the other, in the given order in odd rounds and reversed in
even ones (A B ... B A ...), for ``--rounds`` rounds; the load average is printed before each
run and at the end. The table shows the medians: server CPU ms per move, moves per second
per core of server CPU, moves per second, matches finished in the window (each replaced by a
new one, whose creation the server pays in the window too), and the ratio of each row's CPU per
move to each peer's (below 1: cheaper than that peer); a run in which no move was made (the load generator
starved on a busy machine) is shown and left out of the medians.

    (cd benchmarks/peers && npm ci)                     # once: the pinned peer packages
    python benchmarks/peers/run.py                      # 2 rounds, every contestant
    python benchmarks/peers/run.py --rounds 3 --ours ws-redis,connect-redis,unary-redis
    python benchmarks/peers/run.py --latency --processes 2     # p99 at half load (latency.py)
    python benchmarks/peers/run.py --latency --thinks 0,320,640,1280,100000   # by move rate

``--latency`` measures instead our WebSocket connection's saturating move rate and its latency
at half of it, from a move's submission to every seat's observation, with the load generator
in ``--processes`` processes of its own (``latency.py``).

Not part of the test suite (``tests/tools/test_peer_benchmark.py`` runs it for a few seconds
where node is installed); everything it starts it stops, by pid, and nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import latency  # noqa: E402  (--latency: benchmarks/peers/latency.py)
import service_compare  # noqa: E402  (the driver of our side: benchmarks/service_compare.py)
from service_compare import ALL_PHASES, ROOT, Window  # noqa: E402

from truco_tools.bench_policy import POLICIES  # noqa: E402
from truco_tools.bench_processes import HOST, child  # noqa: E402
from truco_tools.redis_proc import free_port  # noqa: E402

PEERS = {
    "boardgame.io": ("bgio_server.mjs", "bgio_load.mjs", "http"),
    "colyseus": ("colyseus_server.mjs", "colyseus_load.mjs", "ws"),
}
OURS = (
    *("ws-redis", "connect-redis", "unary-redis", "rest-redis"),
    *("ws-memory", "connect-memory", "unary-memory"),
)
"""Our default contestants (``rest-memory`` too with ``--ours``)."""


def measure_peer(name: str, args: argparse.Namespace) -> Window:
    """One window of the peer ``name``: its server in a node process, its own load generator in
    another, which reads the server's CPU and prints the figures as one JSON line."""
    server, load, scheme = PEERS[name]
    node = args.node
    port = free_port(HOST)
    cmd = [node, str(args.peers_dir / server), "--port", str(port)]
    with child(cmd, "listening", timeout=60) as proc:
        load_cmd = [
            node, str(args.peers_dir / load), "--url", f"{scheme}://{HOST}:{port}",
            "--matches", str(args.matches), "--warmup", str(args.warmup),
            "--seconds", str(args.seconds), "--pid", str(proc.pid),
            "--clk", str(os.sysconf("SC_CLK_TCK")),
        ]  # fmt: skip
        done = subprocess.run(
            load_cmd, capture_output=True, text=True, timeout=args.warmup + args.seconds + 240
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        out = f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        raise RuntimeError(f"{load} failed ({done.returncode}):\n{out}")
    got = json.loads(lines[-1])
    if got["errors"]:
        print(f"# {name}: {got['errors']} load generator errors\n{done.stderr[-1000:]}", file=sys.stderr)
    return Window(
        float(got["server_cpu_s"]), int(got["moves"]), float(got["seconds"]), int(got["matches_finished"])
    )


async def measure(name: str, args: argparse.Namespace) -> Window:
    if name in PEERS:
        return await asyncio.to_thread(measure_peer, name, args)
    if name.startswith("ws-") and args.processes > 0:  # our generators in processes of their own
        return Window(*await asyncio.to_thread(latency.window, name, ROOT, args))
    return await service_compare.measure(name, ROOT, args)


async def run(args: argparse.Namespace) -> dict[str, list[Window]]:
    got: dict[str, list[Window]] = {name: [] for name in args.order}
    for r in range(args.rounds):
        order = args.order if r % 2 == 0 else args.order[::-1]
        for name in order:
            load = os.getloadavg()[0]
            w = await measure(name, args)
            got[name].append(w)
            ms = f"{w.ms:7.3f}" if w.actions else "    n/a"
            print(
                f"# round {r + 1}/{args.rounds} {name:14s} {ms} ms/move {w.actions:7d} moves"
                f" in {w.seconds:.1f} s, server CPU {w.cpu:.2f} s (load before {load:.2f})",
                flush=True,
            )
    return got


def table(got: dict[str, list[Window]]) -> list[str]:
    """The medians per contestant and the ratios of its CPU per move to each peer's; a run
    without a move (its load generator starved) counts for nothing, a contestant without a
    counted run is left out."""
    got = {name: [w for w in ws if w.actions > 0] for name, ws in got.items()}  # a starved run has none
    got = {name: ws for name, ws in got.items() if ws}
    ms = {name: statistics.median(w.ms for w in ws) for name, ws in got.items()}
    rate = {name: statistics.median(w.actions / max(w.seconds, 1e-9) for w in ws) for name, ws in got.items()}
    finished = {name: statistics.median(w.matches for w in ws) for name, ws in got.items()}
    peers = [p for p in PEERS if p in got]
    head = f"{'contestant':14s} {'CPU ms/move':>11s} {'moves/s/core':>12s} {'moves/s':>8s} {'finished':>8s}"
    head += "".join(f" {'÷ ' + p:>15s}" for p in peers)
    lines = [head]
    for name in got:
        per_core = 1000 / ms[name] if ms[name] > 0 else float("inf")
        line = f"{name:14s} {ms[name]:11.3f} {per_core:12.0f} {rate[name]:8.0f} {finished[name]:8.0f}"
        line += "".join(f" {ms[name] / ms[p]:15.2f}" for p in peers)
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2, help="alternations (default 2)")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured window per run (default 8)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring (default 2)")
    parser.add_argument("--matches", type=int, default=200, help="concurrent matches (default 200)")
    parser.add_argument("--preset", default="paulista", help="our two-player preset (default paulista)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        default="cards",
        help="how our bots choose their actions (default cards: a card whenever one is legal)",
    )
    names = lambda s: tuple(s.split(",")) if s else ()  # noqa: E731
    parser.add_argument("--ours", type=names, default=OURS, help="our contestants, comma-separated")
    parser.add_argument("--peers", type=names, default=tuple(PEERS), help="of boardgame.io,colyseus")
    parser.add_argument("--peers-dir", type=Path, default=HERE, help="the .mjs files and their node_modules")
    parser.add_argument("--node", default=shutil.which("node") or "node", help="the node executable")
    parser.add_argument(
        "--latency", action="store_true", help="our WebSocket connection's p99 at half its saturating load"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=2,
        help="processes of our WebSocket load generator (default 2; 0: in this process)",
    )
    parser.add_argument("--store", choices=("redis", "memory"), default="redis", help="--latency: the store")
    parser.add_argument(
        "--thinks",
        type=lambda s: tuple(float(t) for t in s.split(",")),
        default=(),
        metavar="MS,MS,...",
        help="--latency: instead of the three phases, one phase at each of these mean think times (ms):"
        " the worker's CPU per move and the latency as the move rate falls",
    )
    parser.add_argument(
        "--gc-probe",
        action="store_true",
        help="--latency: time the worker's garbage collections and its event loop's long callbacks"
        " (benchmarks/gc_probe) and print them",
    )
    args = parser.parse_args(argv)
    if args.latency:
        return latency.latency(args, ROOT)
    if unknown := set(args.ours) - set(ALL_PHASES):
        parser.error(f"unknown --ours: {', '.join(sorted(unknown))} (of {','.join(ALL_PHASES)})")
    if unknown := set(args.peers) - set(PEERS):
        parser.error(f"unknown --peers: {', '.join(sorted(unknown))}")
    if args.peers and not (args.peers_dir / "node_modules").is_dir():
        parser.error(f"no {args.peers_dir / 'node_modules'}: run `npm ci` there first")
    args.order = (*args.peers, *args.ours)
    if not args.order:
        parser.error("nothing to run")
    load0 = os.getloadavg()
    started = time.time()
    print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} on {os.cpu_count()} cores")
    got = asyncio.run(run(args))
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    print("\n".join(table(got)))
    took = time.time() - started
    print(
        f"(medians of {args.rounds} rounds of {args.warmup:g}+{args.seconds:g} s, {args.matches} matches,"
        f" ours playing {args.preset}, policy {args.policy}; {took:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
