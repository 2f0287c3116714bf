"""The seats the server plays: the decisions of its built-in bots.

A seat is the server's to play when it was created with a bot level (``SeatSpec.bot_level``)
or when a bot took it over after its player's disconnect grace (``ABANDONMENT_POLICY_BOT_TAKEOVER``,
until the seat's credential acts again). Its decisions are scheduled steps of the match, on
the clock queue like a turn clock's expiry: the match's wakeup falls when the bot has thought
long enough (:func:`truco_match.table.think_time`), the worker that claims it
(:meth:`~truco_server.services.steps.MatchSteps.wake_match`) asks :meth:`BotSeats.decide` and
commits the step (:func:`truco_match.clock.bot_step`) through the same version-checked commit
as a player's action. Exactly once across workers: a second worker deciding the same turn (a
lease that expired) fails the version check; a worker that dies leaves the wakeup to expire
and be claimed again.

:meth:`BotSeats.decide` builds the seat's observation -- the view of that seat and the current
hand's events as that seat saw them, what a bot over the network receives -- and hands it, and
nothing else, to :func:`truco_bots.levels.decide` in a process pool beside the event loop
(``TRUCO_BOT_PROCESSES``), with a CPU budget (``TRUCO_BOT_CPU_MS``): a search never stalls the
worker's other matches, and its cost per decision is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import structlog

import truco_engine as te
from truco_bots.levels import decide
from truco_kit.observation import Observation
from truco_match.events import EventView
from truco_match.match import Match
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core.processes import die_with_parent
from truco_server.services.matches import MatchService

log = structlog.get_logger("truco.bots")

HAND_WINDOW = 48
"""Versions read back for the current hand's events (within the log the store keeps); a bot
that does not find the hand's start in them decides without its history."""


class BotSeats:
    """The decisions of the seats the server plays (see the module docstring)."""

    def __init__(self, matches: MatchService, *, processes: int = 1, cpu_ms: int = 250) -> None:
        self.matches = matches
        self.processes = processes
        self.cpu_ms = cpu_ms
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawned, not forked: the worker's threads (gRPC's among them) stay behind
            context = multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(
                self.processes, mp_context=context, initializer=_ignore_interrupts, initargs=(os.getpid(),)
            )
            # The processes start here, at this worker's first decision, in the background
            # (their imports take a second or more: that decision waits for them, the worker's
            # other matches do not), with Ctrl-C blocked: a terminal's Ctrl-C reaches the whole process group,
            # and a process still importing would die with a traceback on the player's screen.
            with _interrupts_blocked():
                for _ in range(self.processes):
                    pool.submit(_warm)
            self._pool = pool
        return self._pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, True, cancel_futures=True)

    async def decide(self, match: Match, seat: int) -> te.Action:
        """The decision of the bot playing ``seat`` (the awaited seat) in ``match``, from that
        seat's observation."""
        level = match.setup.bot_level(match.life, seat)
        obs = await self.observation(match, seat)
        asked = time.perf_counter()
        loop = asyncio.get_running_loop()
        try:
            action, cpu = await loop.run_in_executor(
                self._executor(), decide, level, obs, self.seed(match, seat), self.cpu_ms
            )
        except BrokenProcessPool:  # a process died (killed, out of memory): new ones next time
            self._pool = None
            log.warning("bot processes stopped; starting new ones", match_id=match.match_id)
            raise E.Unavailable("the bot processes stopped; the decision is retried") from None
        metrics.BOT_DECISION_WAIT_SECONDS.observe(time.perf_counter() - asked)
        metrics.BOT_DECISION_CPU_SECONDS.labels(str(level)).observe(cpu)
        return action

    async def observation(self, match: Match, seat: int) -> Observation:
        """What ``seat`` sees at ``match``'s version: its view and the current hand's events as
        it received them (``None`` when the hand started before the events read back)."""
        view = match.view(seat, self.matches.now())
        after = max(0, match.version - HAND_WINDOW)
        events = await self.matches.events(match, after, match.version, seat)
        return Observation.from_view(view, match.rules, hand_of(events))

    @staticmethod
    def seed(match: Match, seat: int) -> int:
        """The seed of one decision: the same on every worker (a decision made twice is the
        same decision), unknown to the players (keyed by the match's secret)."""
        key = match.meta.cred_key.encode()
        digest = hmac.new(key, b"bot:%d:%d" % (match.version, seat), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big")


def hand_of(events: tuple[EventView, ...]) -> tuple[EventView, ...] | None:
    """The events from the last ``hand_started`` on, or ``None`` when there is none."""
    for i in range(len(events) - 1, -1, -1):
        if isinstance(events[i].payload, te.HandStarted):
            return events[i:]
    return None


def _warm() -> None:
    """Nothing: a process of the pool has started (and imported the bots)."""


def _ignore_interrupts(worker: int) -> None:
    """In a decision process: Ctrl-C is the worker's to act on (it stops the pool), and the
    process ends with its worker (a worker killed with SIGKILL left it running; one that ended
    while this process was still importing left it waiting for work forever)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(worker)


@contextlib.contextmanager
def _interrupts_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread meanwhile: a process started now inherits the mask through
    its exec, so it cannot be interrupted before :func:`_ignore_interrupts` runs; a SIGINT
    meant for this process is delivered when the block ends."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
