"""The load generators of ``truco bench service``: random bots playing matches over gRPC
(each seat's stream says when to act), and the echo and pattern loads of the bare server."""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from truco_client.aio import read_to_end
from truco_contract.pb import match_pb2, match_service_pb2
from truco_tools.bench_policy import choose
from truco_tools.bench_processes import ECHO_METHOD, PATTERN_SERVICE, cpu_seconds
from truco_tools.bench_rest import play_seats

# ---------------------------------------------------------------------------------- load
READY_SECONDS = 120.0
"""How long a load may take to make its first action before its warm-up starts anyway."""


@dataclass
class Figures:
    actions: int = 0
    errors: int = 0
    matches_finished: int = 0
    submit_ms: list[float] = field(default_factory=list)
    delivery_ms: list[float] = field(default_factory=list)
    observed_ms: list[float] = field(default_factory=list)
    """Player connection: an action's send to the last seat's observation of it."""
    observed_at: list[float] = field(default_factory=list)
    """When each of ``observed_ms`` was sent (``time.perf_counter()``: a monotonic clock the
    processes of one machine share)."""
    measuring: bool = False
    seen: int = 0
    """Accepted actions since the load started, measured or not (the window waits for one)."""

    async def first_move(self, timeout: float = READY_SECONDS) -> None:
        """Wait until the load has made its first action (at most ``timeout`` seconds: the
        worker starting its first matches on a busy machine), so that a warm-up counted from
        here warms the action path rather than the bots' start."""
        deadline = time.perf_counter() + timeout
        while self.seen == 0 and time.perf_counter() < deadline:
            await asyncio.sleep(0.02)

    def reset(self) -> None:
        self.actions = self.errors = self.matches_finished = 0
        self.submit_ms.clear()
        self.delivery_ms.clear()
        self.observed_ms.clear()
        self.observed_at.clear()

    def summary(self, elapsed: float) -> dict[str, float]:
        """Rate and latency percentiles of a measured window of ``elapsed`` seconds."""
        return {
            "actions_per_s": self.actions / elapsed,
            "submit_p50_ms": pct(self.submit_ms, 50),
            "submit_p99_ms": pct(self.submit_ms, 99),
            "delivery_p50_ms": pct(self.delivery_ms, 50),
            "delivery_p99_ms": pct(self.delivery_ms, 99),
        }


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def bench_channel(address: str, index: int) -> grpc.aio.Channel:
    """A channel with its own TCP connection (a local subchannel pool), so the streams and
    calls of many matches spread over several HTTP/2 connections as many clients would."""
    return grpc.aio.insecure_channel(
        address, options=[("grpc.use_local_subchannel_pool", 1), ("truco.bench.channel", index)]
    )


class Bots:
    """Bots playing ``matches`` concurrent matches until ``stop`` is set, choosing their
    actions by ``args.policy`` (:mod:`.bench_policy`; ``random`` when it has none)."""

    def __init__(
        self, stubs: list[Any], args: argparse.Namespace, figures: Figures, stop: asyncio.Event
    ) -> None:
        self.stubs = stubs
        self.args = args
        self.fig = figures
        self.stop = stop
        self.live: set[str] = set()

    async def run_slot(self, slot: int) -> None:
        rng = random.Random(f"{self.args.seed}:{slot}")
        stub = self.stubs[slot % len(self.stubs)]
        while not self.stop.is_set():
            try:
                await self._one_match(stub, rng)
            except grpc.aio.AioRpcError:
                if self.stop.is_set():
                    return
                self.fig.errors += 1
                await asyncio.sleep(0.05)

    async def _one_match(self, stub: Any, rng: random.Random) -> None:
        created = await stub.CreateMatch(
            match_service_pb2.CreateMatchRequest(
                rules=match_pb2.RuleSet(preset=self.args.preset), players=self.args.players
            ),
            timeout=30,
        )
        mid = created.match.match_id
        tokens = [c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)]
        sent: dict[int, tuple[float, int]] = {}  # version before the action -> (send time, seat)
        self.live.add(mid)
        over = asyncio.Event()
        try:
            await play_seats([self._seat(stub, mid, tokens, s, rng, sent, over) for s in range(len(tokens))])
            if over.is_set():
                self.fig.matches_finished += int(self.fig.measuring)  # in the window, as the actions
        finally:
            self.live.discard(mid)

    async def _seat(
        self,
        stub: Any,
        mid: str,
        tokens: list[str],
        seat: int,
        rng: random.Random,
        sent: dict[int, tuple[float, int]],
        over: asyncio.Event,
    ) -> None:
        md = (("authorization", f"Bearer {tokens[seat]}"),)
        think = self.args.think_ms / 1000
        policy = getattr(self.args, "policy", "random")
        call = stub.StreamObservations(match_service_pb2.StreamObservationsRequest(match_id=mid), metadata=md)
        n = 0
        try:
            async for msg in call:
                if self.stop.is_set():
                    return
                if not msg.HasField("update"):
                    continue
                upd = msg.update
                now = time.perf_counter()
                if upd.events:
                    base = upd.events[0].version - 1
                    got = sent.get(base)
                    if got is not None and got[1] != seat and self.fig.measuring:
                        self.fig.delivery_ms.append((now - got[0]) * 1000)
                obs = upd.observation
                if obs.match_state != match_pb2.MATCH_STATE_ACTIVE:
                    over.set()
                    await read_to_end(call)  # not cancelled under the server (truco_client.aio)
                    return
                if not obs.awaited or obs.awaited[0] != seat or not obs.legal_actions:
                    continue
                action = choose(rng, obs.legal_actions, policy)
                if think > 0:
                    await asyncio.sleep(rng.expovariate(1.0 / think))
                t0 = time.perf_counter()
                sent[obs.version] = (t0, seat)
                try:
                    await stub.SubmitAction(
                        match_service_pb2.SubmitActionRequest(
                            match_id=mid,
                            request_id=f"{seat}-{n}",
                            expected_version=obs.version,
                            action=action,
                        ),
                        metadata=md,
                        timeout=30,
                    )
                except grpc.aio.AioRpcError as exc:
                    if exc.code() in (grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION):
                        self.fig.errors += 1  # a stale view; the stream brings the new one
                        continue
                    raise
                n += 1
                self.fig.seen += 1
                if self.fig.measuring:
                    self.fig.actions += 1
                    self.fig.submit_ms.append((time.perf_counter() - t0) * 1000)
        finally:
            call.cancel()


async def echo_load(address: str, concurrency: int, seconds: float) -> float:
    async with grpc.aio.insecure_channel(address) as ch:
        echo: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = ch.unary_unary(ECHO_METHOD)
        payload = b"x" * 64
        count = 0
        end = time.perf_counter() + seconds

        async def loop() -> None:
            nonlocal count
            while time.perf_counter() < end:
                await echo(payload, timeout=30)
                count += 1

        for _ in range(50):  # warm the channel
            await echo(payload)
        t0 = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        return count / (time.perf_counter() - t0)


async def pattern_load(
    address: str,
    matches: int,
    players: int,
    seconds: float,
    think_ms: float = 0.0,
    seed: int = 0,
    server_pid: int | None = None,
) -> tuple[float, list[float], float]:
    """Actions/s of the match service's RPC pattern against the no-work server, the
    latency of each measured ``Act`` (ms), and the server's CPU per action (ms, over the
    same window; NaN without ``server_pid``): ``matches`` concurrent "matches", each seat
    a stream, the flagged seat answering with ``Act``, after a random pause of mean
    ``think_ms`` (exponential, as the bots') when it is not 0."""
    n_channels = max(1, -(-matches // 25))
    channels = [bench_channel(address, i) for i in range(n_channels)]
    count = 0
    measuring = False
    latencies: list[float] = []
    rng = random.Random(seed)
    think = think_ms / 1000
    try:

        async def match(index: int) -> None:
            nonlocal count
            ch = channels[index % n_channels]
            act: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = ch.unary_unary(f"/{PATTERN_SERVICE}/Act")
            stream: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = ch.unary_stream(
                f"/{PATTERN_SERVICE}/Stream"
            )
            name = b"m%d" % index

            async def seat(s: int) -> None:
                nonlocal count
                async for message in stream(name + bytes([s, players])):
                    if message[:1] == b"\x01":
                        if think > 0:
                            await asyncio.sleep(rng.expovariate(1.0 / think))
                        sent = time.perf_counter()
                        await act(name + bytes([s]), timeout=30)
                        if measuring:
                            count += 1
                            latencies.append(1000 * (time.perf_counter() - sent))

            await asyncio.gather(*(seat(s) for s in range(players)))

        tasks = [asyncio.ensure_future(match(i)) for i in range(matches)]
        try:
            await asyncio.sleep(1.0 + 2 * think)  # warm up (paced: every seat has acted)
            cpu0 = cpu_seconds(server_pid) if server_pid else math.nan
            measuring = True
            t0 = time.perf_counter()
            await asyncio.sleep(seconds)
            measuring = False
            elapsed = time.perf_counter() - t0
            cpu = cpu_seconds(server_pid) - cpu0 if server_pid else math.nan
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return count / elapsed, latencies, 1000 * cpu / max(count, 1)
    finally:
        for ch in channels:
            await ch.close()
