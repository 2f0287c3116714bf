"""Many matches played across several workers, through failures: the load of the cluster
end-to-end tests (``tests/e2e/test_cluster.py``) and of ``benchmarks/cluster_scale.py``.

* :class:`WorkerProcess` -- one ``truco serve`` subprocess on fixed loopback ports (so it can
  be SIGKILLed and started again on the same address), stopped by its own pid.
* :class:`ClusterBots` -- random bots over the public gRPC API. Each seat of each match
  follows its own observation stream on a random worker and acts, when the stream shows its
  turn, through another random worker (so the commits of one match come from several
  workers, as behind a load balancer), with ``expected_version`` and a ``request_id`` made of
  the match, the seat and the version. Whatever fails -- a killed worker, a store fault
  during a failover, a deadline -- the seat sends the *same* action with the *same* request
  id again (exactly-once is the server's job), and a broken stream is reopened on another
  worker with ``from_version`` = the last version it saw.

Every stream is checked as it is read (:class:`LoadStats`): each batch of events must
continue the last version seen (else an *unreported gap*, or a *duplicate*); a snapshot in
the middle of a stream is a gap the server *reported* (the log no longer continued what the
client had: events lost by a failover, or trimmed). Nothing here sends traffic off loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from truco_client.aio import read_to_end
from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc
from truco_tools.redis_proc import STARTUP_TIMEOUT

MS = match_service_pb2
ACTIVE = match_pb2.MATCH_STATE_ACTIVE
FINISHED = match_pb2.MATCH_STATE_FINISHED
#: Codes after which a seat sends the same action again (the server dedupes by request id).
RETRY_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.CANCELLED,
    }
)
#: A match credential's match is gone: NOT_FOUND once its stream was open, UNAUTHENTICATED
#: on a new call (the server does not tell an unknown match from a bad credential).
LOST_CODES = frozenset({grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAUTHENTICATED})
#: The action was refused because the seat's view is behind: the stream brings the new one.
STALE_CODES = frozenset({grpc.StatusCode.ABORTED, grpc.StatusCode.FAILED_PRECONDITION})


# ------------------------------------------------------------------------------ workers
@dataclass
class WorkerProcess:
    """``truco serve`` on ``grpc_port`` (HTTP and metrics off), its output in ``log_path``."""

    index: int
    grpc_port: int
    env: Mapping[str, str]
    log_path: Path
    host: str = "127.0.0.1"
    extra_args: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.grpc_port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        cmd = [
            sys.executable, "-m", "truco_cli.main", "serve",
            "--host", self.host, "--grpc-port", str(self.grpc_port),
            "--http-port", "0", "--metrics-port", "0", "--log-level", "warning",
            "--max-concurrent-rpcs", "0", "--shutdown-grace", "1", "--workers", "1",
            *self.extra_args,
        ]  # fmt: skip
        self.starts += 1
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=dict(self.env)
            )

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Until this start of the worker printed its ``store:`` line (it listens)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
            if text.count("\nstore: ") + text.startswith("store: ") >= self.starts:
                return
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.index} did not start:\n{text[-3000:]}")
            time.sleep(0.05)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss(self) -> int:
        """Resident memory in bytes (``VmRSS``); 0 when the process is not running."""
        if not self.running():
            return 0
        with contextlib.suppress(OSError), open(f"/proc/{self.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def kill(self) -> None:
        """SIGKILL (no drain, no goodbye), by pid."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (the worker drains), then SIGKILL after ``timeout``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


def start_workers(
    count: int,
    redis_url: str,
    log_dir: Path,
    *,
    settings: Mapping[str, str] | None = None,
    extra_args: tuple[str, ...] = (),
    ready_timeout: float = STARTUP_TIMEOUT,
) -> list[WorkerProcess]:
    """``count`` workers on ``redis_url`` (free ports), started and ready; ``settings`` are
    ``TRUCO_*`` variables for them (the caller's own ``TRUCO_*`` are not passed on)."""
    from truco_tools.redis_proc import free_port

    log_dir.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    base.update({"REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1", **(settings or {})})
    workers = [
        WorkerProcess(i, free_port(), base, log_dir / f"worker-{i}.log", extra_args=extra_args)
        for i in range(1, count + 1)
    ]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.wait_ready(ready_timeout)
    except BaseException:
        for w in workers:
            w.kill()
        raise
    return workers


# ------------------------------------------------------------------------------ bots
@dataclass
class LoadStats:
    """What the bots saw (all counts; :meth:`summary` prints them)."""

    matches_created: int = 0
    matches_finished: int = 0
    actions: int = 0
    """Actions answered OK."""
    ok_after_retry: int = 0
    """Actions answered OK only after one or more retries with the same request id (the
    answer is the first application's, whichever attempt applied it)."""
    retries: Counter[str] = field(default_factory=Counter)
    """Action retries by the status code that caused them."""
    stale: int = 0
    stream_opens: int = 0
    stream_breaks: Counter[str] = field(default_factory=Counter)
    gaps_reported: int = 0
    """Snapshots in the middle of a stream: the server said the log no longer continued."""
    unreported_gaps: list[tuple[str, int, int, int]] = field(default_factory=list)
    """(match, seat, last version seen, first version received): must stay empty."""
    duplicates: list[tuple[str, int, int]] = field(default_factory=list)
    """(match, seat, version received again): must stay empty."""
    final_versions: dict[str, int] = field(default_factory=dict)
    matches_recreated: int = 0
    """Matches a failover lost whole, created again with the same request id."""
    acks: list[tuple[str, str, int]] = field(default_factory=list)
    """(match, request id, version answered) of every action answered OK."""
    ack_sent: list[float] = field(default_factory=list)
    """``time.monotonic()`` when each action of ``acks`` was first sent: one sent before a
    Redis data loss began may have been committed before it, whenever its answer came."""
    recreated_at: dict[str, int] = field(default_factory=dict)
    """Match -> ``len(acks)`` when it was last created again: the acknowledgements before
    that index belong to the incarnation that was lost."""
    created_at: dict[str, float] = field(default_factory=dict)
    """Match -> ``time.monotonic()`` when its latest incarnation's creation was answered."""
    same_deal_again: list[str] = field(default_factory=list)
    """Matches created again (after being lost whole) with the lost incarnation's deal
    commitment: a worker served a match that no longer existed. Must stay empty."""

    def summary(self) -> str:
        return (
            f"matches created {self.matches_created}, finished {self.matches_finished}, "
            f"lost whole and created again {self.matches_recreated}; "
            f"actions {self.actions} ({self.ok_after_retry} answered after a retry); "
            f"action retries {dict(self.retries)}; stale views {self.stale}; "
            f"streams opened {self.stream_opens}, broken {dict(self.stream_breaks)}; "
            f"gaps reported {self.gaps_reported}; unreported gaps {len(self.unreported_gaps)}; "
            f"duplicates {len(self.duplicates)}"
        )


class MatchLost(Exception):
    """The match is gone (NOT_FOUND): a failover lost it, creation included."""


def _md(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


class ClusterBots:
    """Random bots playing matches across ``addresses`` (see the module docstring)."""

    def __init__(
        self,
        addresses: list[str],
        *,
        seed: int = 0,
        preset: str = "paulista",
        players: int = 2,
        stats: LoadStats | None = None,
        action_timeout: float = 30.0,
        cancel_at_end: bool = False,
    ) -> None:
        self.addresses = addresses
        self.rng = random.Random(seed)
        self.preset = preset
        self.players = players
        self.stats = stats or LoadStats()
        self.action_timeout = action_timeout
        self.cancel_at_end = cancel_at_end
        """Cancel a stream as soon as it shows the match is over, as a careless client would,
        instead of waiting for the server to end it (what that costs a worker:
        ``benchmarks/stream_cancel_memory.py``)."""
        self._channels: list[grpc.aio.Channel] = []
        self.stubs: list[Any] = []
        self.live: set[str] = set()
        self.spectator_tokens: dict[str, str] = {}
        """The spectator token of each match in play (for other clients that watch them)."""
        """Matches being played now."""

    async def __aenter__(self) -> ClusterBots:
        options = [("grpc.enable_http_proxy", 0), ("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 500)]  # fmt: skip
        self._channels = [grpc.aio.insecure_channel(a, options=options) for a in self.addresses]
        self.stubs = [match_service_pb2_grpc.MatchServiceStub(c) for c in self._channels]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ch in self._channels:
            await ch.close()

    def _stub(self, avoid: Any = None) -> Any:
        choices = [s for s in self.stubs if s is not avoid] or self.stubs
        return self.rng.choice(choices)

    async def play_match(self, index: int) -> str:
        """Create one match (retrying with the same request id) and play it to the end. A
        match that a failover lost whole (its creation acknowledged, then gone: NOT_FOUND)
        is created again with the same request id, as a client would."""
        request = MS.CreateMatchRequest(
            rules=match_pb2.RuleSet(preset=self.preset), players=self.players, request_id=f"create-{index}"
        )
        lost_commitment: str | None = None
        while True:
            created = await self._create(request)
            mid = str(created.match.match_id)
            self.stats.created_at[mid] = time.monotonic()
            commitment = str(created.match.fairness.seed_hash)
            if lost_commitment is not None:
                self.stats.recreated_at[mid] = len(self.stats.acks)
                if commitment and commitment == lost_commitment:
                    self.stats.same_deal_again.append(mid)
            tokens = [c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)]
            rng = random.Random(f"{index}")
            self.live.add(mid)
            self.spectator_tokens[mid] = created.spectator_token
            seats = [
                asyncio.ensure_future(self._seat(mid, tokens[s], s, created.match.version, rng))
                for s in range(len(tokens))
            ]
            try:
                await asyncio.wait(seats, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                self.live.discard(mid)
                self.spectator_tokens.pop(mid, None)
                for t in seats:
                    t.cancel()
                outcomes = await asyncio.gather(*seats, return_exceptions=True)
            # the seat that failed first decides: the others were cancelled here because of it
            errors = [o for o in outcomes if isinstance(o, BaseException)]
            failure = next((e for e in errors if not isinstance(e, asyncio.CancelledError)), None)
            if failure is None and errors:
                failure = errors[0]
            if isinstance(failure, MatchLost):
                self.stats.matches_recreated += 1
                lost_commitment = commitment
                continue
            if failure is not None:
                raise failure
            self.stats.matches_finished += 1
            self.stats.final_versions[mid] = max(o for o in outcomes if isinstance(o, int))
            return mid

    async def _create(self, request: Any) -> Any:
        while True:
            try:
                created = await self._stub().CreateMatch(request, timeout=self.action_timeout)
                self.stats.matches_created += 1
                return created
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in RETRY_CODES:
                    raise
                self.stats.retries[f"create:{exc.code().name}"] += 1
                await asyncio.sleep(0.05)

    async def run(self, matches: int, concurrency: int) -> list[str]:
        """Play ``matches`` matches, ``concurrency`` at a time; their ids in order."""
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> str:
            async with gate:
                return await self.play_match(i)

        return list(await asyncio.gather(*(one(i) for i in range(matches))))

    async def run_until(self, concurrency: int, stop: asyncio.Event, *, first_index: int = 0) -> None:
        """Keep ``concurrency`` matches going (a finished one is replaced at once) until
        ``stop`` is set; then cancel the ones in progress."""
        counter = itertools.count(first_index)

        async def slot() -> None:
            while not stop.is_set():
                await self.play_match(next(counter))

        tasks = [asyncio.ensure_future(slot()) for _ in range(concurrency)]
        try:
            await stop.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _seat(self, mid: str, token: str, seat: int, version: int, rng: random.Random) -> int:
        """Follow the seat's stream (reopened wherever it breaks) and act on its turns;
        return the last version seen, once the match is over."""
        last = version
        resume = True
        stub = None
        chosen: dict[int, Any] = {}  # version -> the action sent then (a retry resends it)
        while True:
            stub = self._stub(avoid=stub)
            self.stats.stream_opens += 1
            req = MS.StreamObservationsRequest(match_id=mid)
            if resume:
                req.from_version = last
            resume = True
            call = stub.StreamObservations(req, metadata=_md(token))
            try:
                async for msg in call:
                    if not msg.HasField("update"):
                        continue
                    upd = msg.update
                    if upd.snapshot:
                        self.stats.gaps_reported += 1
                    elif upd.events:
                        first = upd.events[0].version
                        if first <= last:
                            self.stats.duplicates.append((mid, seat, first))
                        elif first != last + 1:
                            self.stats.unreported_gaps.append((mid, seat, last, first))
                    last = int(upd.version)
                    obs = upd.observation
                    if obs.match_state != ACTIVE:
                        if not self.cancel_at_end:
                            await read_to_end(call)
                        return last
                    if obs.awaited and obs.awaited[0] == seat and obs.legal_actions:
                        action = chosen.setdefault(obs.version, rng.choice(list(obs.legal_actions)))
                        await self._act(mid, token, seat, obs.version, action)
            except grpc.aio.AioRpcError as exc:
                self.stats.stream_breaks[exc.code().name] += 1
                if exc.code() in LOST_CODES:
                    raise MatchLost(mid) from exc
                if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    # from_version beyond the match's version: what this seat saw last was
                    # lost (a failover); start again from a snapshot, counted as a gap
                    resume = False
                await asyncio.sleep(0.05)
            finally:
                call.cancel()

    async def _act(self, mid: str, token: str, seat: int, version: int, action: Any) -> None:
        request = MS.SubmitActionRequest(
            match_id=mid, request_id=f"{mid}-s{seat}-v{version}", expected_version=version, action=action
        )
        tries = 0
        sent = time.monotonic()
        while True:
            tries += 1
            try:
                resp = await self._stub().SubmitAction(
                    request, metadata=_md(token), timeout=self.action_timeout
                )
                self.stats.actions += 1
                self.stats.acks.append((mid, request.request_id, int(resp.version)))
                self.stats.ack_sent.append(sent)
                if tries > 1:
                    self.stats.ok_after_retry += 1
                return
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
                if code in LOST_CODES:
                    raise MatchLost(mid) from exc
                if code in STALE_CODES:
                    self.stats.stale += 1
                    return  # the stream shows what changed
                if code not in RETRY_CODES or tries > 50:
                    raise
                self.stats.retries[code.name] += 1
                await asyncio.sleep(0.05)
