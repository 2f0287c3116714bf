"""How many human-versus-computer matches one worker sustains at a bot level.

    python benchmarks/bot_capacity.py                          # level 6, 10 / 20 / 40 / 80 matches
    python benchmarks/bot_capacity.py --level 6 --steps 10,30,60 --seconds 40 --human-think 3

Starts one ``redis-server`` and one ``truco serve`` (one worker, its default bot settings:
``TRUCO_BOT_PROCESSES`` 1, ``TRUCO_BOT_CPU_MS`` 250, ``--bot-think``) on free loopback ports.
For each step it creates that many two-player matches (``--preset``) whose seat 1 is the
server's bot at ``--level``; a simulated person plays seat 0 of each over its observation
stream: ``--human-think`` seconds after its turn comes (±40 %), a random legal action. Over
``--seconds`` it measures the bot's answer time -- from when the bot's turn is shown (the
person's action answered, or the stream's message; a bot that acts twice in a row, as when it
leads the next hand, is timed twice) to its move arriving on the person's stream, which the
server makes ``--bot-think`` on average (0.6 to 1.4 times it, half for a forced move) when it
keeps up -- and the CPU of the worker and its bot processes. A step is sustained when the
answers' p99 stays within 1.4 times the think time plus one second. The matches of a step are
cancelled at its end; every process is stopped by its pid.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from truco_contract.pb import match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import match_service_pb2_grpc as MSG
from truco_tools.bench_processes import cpu_seconds
from truco_tools.cluster_load import WorkerProcess
from truco_tools.redis_proc import free_port, start_redis


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and of its live children (the worker's bot processes)."""
    total = cpu_seconds(pid)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            total += cpu_seconds(int(entry.name))
    return total


@dataclass
class Step:
    matches: int
    answers: list[float] = field(default_factory=list)
    decisions: int = 0
    finished: int = 0
    cpu: float = 0.0
    seconds: float = 0.0

    def figures(self) -> tuple[float, float]:
        if not self.answers:
            return 0.0, 0.0
        ordered = sorted(self.answers)
        return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def person(
    stub: MSG.MatchServiceStub, match_id: str, token: str, think: float, step: Step, stop: asyncio.Event
) -> None:
    """Seat 0 of one match: acts ``think`` (±40 %) after its turn comes; times each of the
    bot's decisions, from when its turn was shown (this seat's action answered, or a stream
    message) to the stream message that shows the bot acted (a later version)."""
    rng = random.Random(match_id)
    md = [("authorization", f"Bearer {token}")]
    turn: tuple[int, float] | None = None  # the bot's turn: at which version, since when

    def shown(version: int, awaited: list[int]) -> None:
        nonlocal turn
        now = time.monotonic()
        if turn is not None and version > turn[0]:  # the bot acted
            step.answers.append(now - turn[1])
            step.decisions += 1
            turn = None
        if awaited == [1] and turn is None:
            turn = (version, now)

    call = stub.StreamObservations(MS.StreamObservationsRequest(match_id=match_id), metadata=md)
    try:
        async for msg in call:
            if stop.is_set():
                break
            if not msg.HasField("update"):
                continue
            obs = msg.update.observation
            shown(obs.version, list(obs.awaited))
            if obs.match_state != match_pb2.MATCH_STATE_ACTIVE:
                step.finished += 1
                break
            if list(obs.awaited) == [0] and obs.legal_actions:
                await asyncio.sleep(think * rng.uniform(0.6, 1.4))
                action = rng.choice(list(obs.legal_actions))
                req = MS.SubmitActionRequest(
                    match_id=match_id,
                    action=action,
                    request_id=uuid.uuid4().hex,
                    expected_version=obs.version,
                )
                try:
                    resp = await stub.SubmitAction(req, metadata=md, timeout=30)
                except grpc.aio.AioRpcError:
                    continue  # the match moved on (it ended): the stream says so
                shown(resp.observation.version, list(resp.observation.awaited))
    except grpc.aio.AioRpcError:
        pass  # the step is over
    finally:
        call.cancel()


async def run_step(
    address: str, n: int, args: argparse.Namespace, pid: int, *, warm_up: bool = False
) -> Step:
    """One step of ``n`` matches for ``args.seconds`` (``warm_up``: until the first bot
    decision, which waits for the worker's bot processes to have started)."""
    step = Step(n)
    stop = asyncio.Event()
    async with grpc.aio.insecure_channel(address) as ch:
        stub = MSG.MatchServiceStub(ch)
        created = []
        for _ in range(n):
            req = MS.CreateMatchRequest(
                rules=match_pb2.RuleSet(preset=args.preset),
                players=2,
                request_id=uuid.uuid4().hex,
                seats=[
                    match_pb2.SeatSpec(display_name="person"),
                    match_pb2.SeatSpec(display_name="computer", bot_level=args.level),
                ],
            )
            created.append(await stub.CreateMatch(req, timeout=30))
        tasks = []
        cpu0, t0 = tree_cpu(pid), time.monotonic()
        for resp in created:
            token = next(c.token for c in resp.seat_credentials if c.seat == 0)
            play = person(stub, resp.match.match_id, token, args.human_think, step, stop)
            tasks.append(asyncio.ensure_future(play))
        end = time.monotonic() + (300 if warm_up else args.seconds)
        while time.monotonic() < end and not (warm_up and step.decisions):
            await asyncio.sleep(0.1)
        stop.set()
        step.cpu, step.seconds = tree_cpu(pid) - cpu0, time.monotonic() - t0
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for resp in created:  # the open server's operator cancels what is still on
            req = MS.CancelMatchRequest(match_id=resp.match.match_id, reason="benchmark step over")
            with contextlib.suppress(grpc.aio.AioRpcError):  # finished already
                await stub.CancelMatch(req, timeout=30)
    return step


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/bot_capacity.py", description=__doc__.split("\n")[0])
    p.add_argument("--level", type=int, default=6, help="the bot's level (default 6, the top)")
    p.add_argument("--preset", default="argentine", help="a two-player preset (default argentine)")
    p.add_argument("--steps", default="10,20,40,80", help="concurrent matches per step (default 10,20,40,80)")
    p.add_argument("--seconds", type=float, default=40.0, help="measured seconds per step (default 40)")
    p.add_argument(
        "--human-think", type=float, default=3.0, help="the person's seconds per decision (default 3)"
    )
    p.add_argument(
        "--bot-think", type=float, default=1.5, help="the bots' average think time, seconds (default 1.5)"
    )
    p.add_argument("--bot-processes", type=int, default=1, help="the worker's bot processes (default 1)")
    args = p.parse_args(argv)
    steps = [int(x) for x in args.steps.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="bot-capacity-"))
    rp = start_redis(host="127.0.0.1")
    worker = WorkerProcess(
        0,
        free_port(),
        dict(os.environ, TRUCO_EPHEMERAL_STORE_OK="1"),
        folder / "worker.log",
        extra_args=(
            "--redis", rp.url, "--bot-think", str(round(args.bot_think * 1000)),
            "--bot-processes", str(args.bot_processes),
        ),
    )  # fmt: skip
    limit = 1.4 * args.bot_think + 1.0
    print(
        f"level {args.level}, {args.preset}, person {args.human_think:g} s a decision, "
        f"bot {args.bot_think:g} s, "
        f"{args.bot_processes} bot process(es); sustained: answers' p99 <= {limit:.1f} s",
        flush=True,
    )
    print("| matches | bot decisions/s | answer p50 | answer p99 | worker + bot CPU | sustained |")
    print("|---|---|---|---|---|---|", flush=True)
    try:
        worker.start()
        worker.wait_ready(120)
        asyncio.run(run_step(worker.address, 1, args, worker.pid, warm_up=True))
        for n in steps:
            step = asyncio.run(run_step(worker.address, n, args, worker.pid))
            p50, p99 = step.figures()
            ok = bool(step.answers) and p99 <= limit
            print(
                f"| {n} | {step.decisions / step.seconds:.1f} | {p50:.2f} s | {p99:.2f} s | "
                f"{100 * step.cpu / step.seconds:.0f} % of a core | {'yes' if ok else 'no'} |",
                flush=True,
            )
    finally:
        worker.stop()  # SIGTERM: the worker drains and stops its bot processes
        rp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
