"""Load, soak and chaos: bots on worker processes and one ``redis-server`` (append-only file),
faults injected by pid, invariants checked at the end (see the package docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import redis

from truco_contract.pb import operator_service_pb2
from truco_tools.campaign import Profile
from truco_tools.cluster_load import ClusterBots, LoadStats, WorkerProcess, start_workers
from truco_tools.redis_proc import RedisProcess, start_redis

#: Settings of the campaign's workers: quick store-fault answers; quotas off (the bots are
#: one operator playing as fast as they can, which is the load, not abuse).
WORKER_SETTINGS = {
    "TRUCO_REDIS_RETRY_SECONDS": "2",
    "TRUCO_QUOTA_ACTIONS_PER_SECOND": "0",
    "TRUCO_QUOTA_MATCHES_PER_MINUTE": "0",
    "TRUCO_QUOTA_STREAMS": "0",
    "TRUCO_QUOTA_LIVE_MATCHES": "0",
    "TRUCO_QUOTA_STORED_BYTES_PER_DAY": "0",
    "TRUCO_EVENT_LOG_MAX_LEN": "100000",
    # finished matches leave Redis after a minute, so a soak's Redis memory can level off
    "TRUCO_FINISHED_MATCH_TTL_SECONDS": "60",
}


@dataclass
class Sample:
    t: float
    worker_rss: list[int]
    redis_used: int
    actions: int = 0
    """Actions the bots had had answered by then (the load of each stretch of the series)."""


@dataclass
class LoadResult:
    phase: str
    seconds: float
    stats: LoadStats
    faults: Counter[str] = field(default_factory=Counter)
    samples: list[Sample] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    same_deal_again: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    internal: int = 0
    checked_actions: int = 0
    loss_times: list[float] = field(default_factory=list)
    """When each data loss began (``time.monotonic()`` once the server was killed)."""
    checked_after_loss: int = 0
    idle_faults: int = 0
    """Faults injected while no match was in play (they check nothing; the slots keep
    playing until the last fault, so this stays 0 unless every match is stuck)."""
    set_aside: int = 0
    """Acknowledged actions of incarnations a Redis data loss took (not checked)."""
    events_missing: list[str] = field(default_factory=list)
    """Finished matches whose ``match.created`` or ``match.ended`` never reached the
    operator's event stream (a relay lost with a killed worker, and no other relayed it)."""
    events_checked: int = 0

    @property
    def ok(self) -> bool:
        s = self.stats
        return not (self.lost or self.doubled or self.unfinished or s.unreported_gaps or s.duplicates
                    or self.internal or self.same_deal_again or self.idle_faults
                    or self.events_missing)  # fmt: skip


async def _sampler(
    workers: list[WorkerProcess], r: redis.Redis, into: list[Sample], stop: asyncio.Event, stats: LoadStats
) -> None:
    start = time.monotonic()
    while not stop.is_set():
        used = 0
        with contextlib.suppress(redis.RedisError):
            used = int(await asyncio.to_thread(lambda: r.info("memory")["used_memory"]))
        rss = [w.rss() for w in workers]
        into.append(Sample(time.monotonic() - start, rss, used, stats.actions))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


async def _chaos(
    profile: Profile,
    workers: list[WorkerProcess],
    rp: RedisProcess,
    result: LoadResult,
    live: Callable[[], int],
) -> None:
    """The faults of the profile, spread evenly over its chaos time, in a fixed rotation
    (each at its planned time, or at once when the ones before took longer)."""
    plan = (["kill"] * profile.worker_kills + ["restart"] * profile.redis_restarts
            + ["pause"] * profile.redis_pauses + ["loss"] * profile.redis_losses)  # fmt: skip
    # interleave: kills between the Redis faults
    order = sorted(range(len(plan)), key=lambda i: (i % max(1, profile.worker_kills), i))
    gap = profile.chaos_seconds / (len(plan) + 1)
    start = time.monotonic()
    for n, i in enumerate(order):
        await asyncio.sleep(max(0.0, start + (n + 1) * gap - time.monotonic()))
        kind = plan[i]
        if not live():
            result.idle_faults += 1  # nothing in play to hit: the fault proves nothing
        if kind == "kill":
            w = workers[n % len(workers)]
            w.kill()
            await asyncio.to_thread(w.start)
            await asyncio.to_thread(w.wait_ready)
        elif kind == "restart":
            await asyncio.to_thread(rp.stop)  # SIGTERM: Redis flushes its append-only file
            await asyncio.to_thread(rp.restart)
        elif kind == "loss":
            # the time the server is dead, not the time this decided to kill it: the kill runs
            # in a thread that may start late on a busy machine, and what was sent meanwhile
            # was committed to the data the loss takes
            await asyncio.to_thread(rp.kill)
            result.loss_times.append(time.monotonic())
            await asyncio.to_thread(rp.lose_data)
        else:
            os.kill(rp.pid, signal.SIGSTOP)
            try:
                await asyncio.sleep(profile.pause_seconds)
            finally:
                os.kill(rp.pid, signal.SIGCONT)
        result.faults[kind] += 1


OPERATOR_STREAM = "truco:{op:public}:events"
"""The operator event stream of the bots' matches (no API keys: the ``public`` operator)."""


class EventFollower:
    """Follows the operator event stream from the start, in a thread, through the faults,
    and remembers which lifecycle events each match got. The stream keeps the last 10,000
    events; a follower reads them long before they are trimmed."""

    def __init__(self, url: str) -> None:
        self.r = redis.Redis.from_url(url, socket_timeout=5)
        self.seen: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="campaign-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.r.close()

    def _run(self) -> None:
        cursor = "0-0"
        while not self._stop.is_set():
            try:
                got = cast(list[Any], self.r.xread({OPERATOR_STREAM: cursor}, count=1000, block=200))
            except (redis.ConnectionError, redis.TimeoutError):
                time.sleep(0.2)  # Redis restarted, paused or lost: its ids keep growing
                continue
            for _, entries in got or []:
                for eid, fields in entries:
                    ev = operator_service_pb2.OperatorEvent.FromString(fields[b"e"])
                    self.seen.add((ev.match_id, ev.type))
                    cursor = eid.decode()

    def missing(self, matches: list[str], timeout: float) -> list[str]:
        """The matches without both ``match.created`` and ``match.ended``, once the relays
        have had ``timeout`` seconds (the relay queue's safety net is due 2 s after a commit)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = set(self.seen)
            kinds = ("match.created", "match.ended")
            gone = [
                f"{m}: no {' and no '.join(k for k in kinds if (m, k) not in seen)}"
                for m in matches
                if any((m, k) not in seen for k in kinds)
            ]
            if not gone or time.monotonic() > deadline:
                return gone
            time.sleep(0.25)


class Checker:
    """No lost action: every acknowledged request id of a finished match is in its
    idempotency record with the answered version. No doubled action: no two acknowledged
    actions share a version of a match. Checked as each match ends (finished matches leave
    Redis after a minute). The acknowledgements of an incarnation a data loss took are set
    aside: the loss is the fault, and the new incarnation reuses the match id."""

    def __init__(self, result: LoadResult, r: redis.Redis) -> None:
        self.result, self.r = result, r
        self._lock = threading.Lock()
        self._seen = 0
        self._pending: dict[str, list[tuple[int, str, int]]] = {}
        self.checked_actions = 0
        self.set_aside = 0
        self.checked_after_loss = 0
        """Matches whose check came after a data loss that followed their end."""
        self.finished: list[str] = []
        """Matches checked and stored ``finished``."""

    def match_done(self, mid: str, ended: float) -> None:
        """Check ``mid``, which ended at ``ended`` (``time.monotonic()``). Called from one
        thread per slot: the acknowledgements are sorted under a lock (two threads must not
        take the same ones), the store is read outside it, waiting out a Redis restart or
        pause (up to a minute). A data loss takes the records of everything committed before
        it: an action first sent before a data loss began is set aside (like those of a lost
        incarnation: it may have been committed before the loss even when its answer came
        after), one sent after every data loss began must be in the store."""
        with self._lock:
            stats = self.result.stats
            # the bots append acknowledgements on the event loop's thread meanwhile: take the
            # length once (reading it again after the loop skipped those appended during it,
            # which were then never checked: 3 of 143,077 in one 10-minute soak)
            upto = len(stats.acks)
            for index in range(self._seen, upto):
                m, rid, version = stats.acks[index]
                self._pending.setdefault(m, []).append((index, rid, version))
            self._seen = upto
            every = self._pending.pop(mid, [])
            times = {index: stats.ack_sent[index] for index, _, _ in every}
        current = self.result.stats.recreated_at.get(mid, 0)
        losses = self.result.loss_times

        def before_a_loss(t: float) -> bool:
            return any(lost >= t for lost in losses)

        asked = [(index, rid, version) for index, rid, version in every
                 if index >= current and not before_a_loss(times[index])]  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                got = self.r.hmget(f"truco:{{{mid}}}:req", [rid for _, rid, _ in asked]) if asked else []
                status = self.r.hget(f"truco:{{{mid}}}:match", "status")  # both before any verdict
                break
            except (redis.ConnectionError, redis.TimeoutError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        # a data loss that began before the read may have taken what it read: an action sent
        # before it is set aside too, decided with the losses known after the read (one that
        # began between the choice above and the read once took a finished match's records)
        checked = [(a, raw) for a, raw in zip(asked, got, strict=True) if not before_a_loss(times[a[0]])]
        mine = [(rid, version) for (_, rid, version), _ in checked]
        stored = [raw for _, raw in checked]
        by_version: dict[int, str] = {}
        for (rid, version), raw in zip(mine, stored, strict=True):
            if raw is None or int(str(raw, "ascii").split(":", 1)[0]) != version:  # type: ignore[arg-type]
                self.result.lost.append(f"{mid} {rid} answered v{version}, stored {raw!r}")
            other = by_version.setdefault(version, rid)
            if other != rid:
                self.result.doubled.append(f"{mid} v{version}: {other} and {rid}")
        last = max(times.values(), default=ended)
        with self._lock:
            self.checked_actions += len(mine)
            self.set_aside += len(every) - len(mine)
            if before_a_loss(min(last, ended)):
                self.checked_after_loss += 1  # its end may have been committed before the loss
                return
        if status != b"finished":
            self.result.unfinished.append(f"{mid}: {status!r}")
            return
        with self._lock:
            self.finished.append(mid)

    def whole(self) -> list[str]:
        """The finished matches that no data loss can have touched (created after the last one
        began): all their operator events must be in the stream. Decided once the phase is
        over: a loss after a match's end can still take the events of its last commit, left
        in its outbox while a fault held up the relay (a relay cut short keeps the outbox
        locked for its lease, 10 s)."""
        created = self.result.stats.created_at
        last_loss = max(self.result.loss_times, default=float("-inf"))
        return [m for m in self.finished if created.get(m, 0.0) > last_loss]


async def run_load(profile: Profile, workdir: Path, *, chaos: bool) -> LoadResult:
    """One phase: ``soak_seconds`` without faults, or ``chaos_seconds`` with them; then the
    matches in progress are played to their end (no fault) and the invariants checked."""
    seconds = profile.chaos_seconds if chaos else profile.soak_seconds
    phase = "chaos" if chaos else "soak"
    rdir = workdir / f"redis-{phase}"
    rdir.mkdir(parents=True, exist_ok=True)
    rp = start_redis(workdir=rdir, appendonly=True)
    workers: list[WorkerProcess] = []
    result = LoadResult(phase, seconds, LoadStats())
    follower = EventFollower(rp.url)
    try:
        workers = start_workers(profile.workers, rp.url, workdir / f"logs-{phase}", settings=WORKER_SETTINGS)
        r = redis.Redis.from_url(rp.url, socket_timeout=10)
        sampled = asyncio.Event()
        follower.start()
        async with ClusterBots([w.address for w in workers], seed=7, stats=result.stats) as bots:
            sampler = asyncio.ensure_future(_sampler(workers, r, result.samples, sampled, result.stats))
            counter = itertools.count()
            deadline = time.monotonic() + seconds
            played: list[str] = []
            checker = Checker(result, r)

            faults_done = asyncio.Event()
            if not chaos:
                faults_done.set()

            async def slot() -> None:
                # a slot starts matches until the deadline (and, with chaos, until the last
                # fault: a fault must hit matches in play, however long the kills took) and
                # plays each to its end: every match must be finishable, through the faults
                while time.monotonic() < deadline or not faults_done.is_set():
                    mid = await bots.play_match(next(counter))
                    played.append(mid)
                    await asyncio.to_thread(checker.match_done, mid, time.monotonic())

            slots = asyncio.gather(*(slot() for _ in range(profile.concurrency)))
            started = time.monotonic()
            if chaos:
                try:
                    await _chaos(profile, workers, rp, result, lambda: len(bots.live))
                finally:
                    faults_done.set()
            result.seconds = max(seconds, time.monotonic() - started)
            await slots
            sampled.set()
            await sampler
        # every relay done (or its safety net due and taken) before the verdict
        whole = checker.whole()
        result.events_missing = await asyncio.to_thread(follower.missing, whole, 15.0)
        result.events_checked = len(whole)
        result.checked_actions = checker.checked_actions
        result.set_aside = checker.set_aside
        result.checked_after_loss = checker.checked_after_loss
        result.same_deal_again = list(result.stats.same_deal_again)
        retries, breaks = result.stats.retries, result.stats.stream_breaks
        result.internal = retries["INTERNAL"] + retries["UNKNOWN"] + breaks["INTERNAL"] + breaks["UNKNOWN"]
        r.close()
    finally:
        follower.stop()
        for w in workers:
            w.stop()
        if rp.running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(rp.pid, signal.SIGCONT)
        rp.stop()
    return result


def memory_growth(samples: list[Sample], warmup: float = 0.2) -> dict[str, Any]:
    """The series after ``warmup`` cut in fifths: the mean of each fifth of the largest
    worker RSS and of Redis memory (MB), and the ratio of the last fifth to the first: flat
    memory is a ratio near 1 (the fifths show whether it still climbs at the end)."""
    if len(samples) < 10:
        return {}
    body = samples[int(len(samples) * warmup) :]
    k = max(1, len(body) // 5)
    fifths = [body[i * k : (i + 1) * k] for i in range(5)] if len(body) >= 5 else [body]

    def mb(xs: list[int]) -> float:
        return sum(xs) / len(xs) / 2**20

    workers = [mb([max(s.worker_rss) for s in f]) for f in fifths]
    redis_ = [mb([s.redis_used for s in f]) for f in fifths]
    rates = [
        (f[-1].actions - f[0].actions) / (f[-1].t - f[0].t) if len(f) > 1 and f[-1].t > f[0].t else 0.0
        for f in fifths
    ]
    return {
        "worker_rss_mb": (round(workers[0], 1), round(workers[-1], 1)),
        "redis_used_mb": (round(redis_[0], 1), round(redis_[-1], 1)),
        "worker_ratio": round(workers[-1] / workers[0], 3) if workers[0] else None,
        "redis_ratio": round(redis_[-1] / redis_[0], 3) if redis_[0] else None,
        "worker_fifths_mb": [round(x, 1) for x in workers],
        "redis_fifths_mb": [round(x, 1) for x in redis_],
        "actions_per_s_fifths": [round(x) for x in rates],
    }
