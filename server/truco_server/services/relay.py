"""The relay after a commit: a commit that makes operator events (``match.created``,
``match.hand_ended``, ``match.turn``, ``match.ended``...) writes them to the match's outbox and queues the
match in the relay queue as a safety net (:class:`~truco_server.ports.queues.RelayWake`, due
:attr:`Relay.grace_ms` later). This worker then relays the outbox itself, gathered with the
other commits of the next :attr:`Relay.gather_seconds` (one take, one append per operator and
one trim for all of them), and releases the safety net. Only when the worker dies first does
the relay queue's reader find the match due and relay it (:mod:`.scheduler`).

On a store that appends a commit's operator events to the owner's stream in the commit itself
(:attr:`~truco_server.ports.matches.MatchLog.appends_feed`: one process, one Redis server or a
Sentinel group's primary) every event goes to the stream that way, exactly once and in commit
order, and the outbox keeps only the events something else waits for: those of a type one of
the owner's webhooks asks for, or an events listener of this worker asks for of that match
(the league job: a league's matches; the ratings: rated ones;
:meth:`~truco_server.services.operators.Operators.wanted`). A ``match.turn`` nobody asks for,
or the end of an unrated match outside any league, then costs no relay at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from truco_contract import codec
from truco_engine._fast import fast_init
from truco_match import operator_events
from truco_match.events import LogEntry
from truco_match.lifecycle import Life
from truco_match.match import Match, result_of
from truco_server.core import metrics
from truco_server.ports.matches import FeedAppend
from truco_server.ports.queues import RELAY, Queues, RelayWake
from truco_server.services.operators import outbox_item

log = structlog.get_logger("truco.relay")

RelayFn = Callable[[Sequence[str]], Awaitable[list[str]]]
"""Moves matches' outboxes to their operators' streams and webhooks and returns those another
relay holds (:meth:`truco_server.services.operators.Operators.relay`)."""


WantedFn = Callable[[Match], Awaitable[frozenset[str] | None]]
"""The event types of a match that need the relay beyond its owner's stream (``None``: every
type; :meth:`truco_server.services.operators.Operators.wanted`)."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A commit's operator events, as its commit writes them."""

    outbox: list[bytes]
    """For the relay (:class:`~truco_server.ports.matches.Commit`'s ``outbox``)."""
    feed: FeedAppend | None
    """For the owner's stream in the commit itself (its ``feed``)."""
    net: RelayWake | None
    """The relay queue's safety net for the outbox (its ``relay``)."""
    kinds: tuple[str, ...] = ()
    """The types of the events of ``feed`` (counted once the commit is done)."""


fast_init(Outgoing)  # a call: mypyc compiles a class it decorates as a Python class


NOTHING = Outgoing([], None, None)

_COUNTED: dict[str, Any] = {}
"""``OPERATOR_EVENTS``'s child per event type (a ``labels()`` call per event costs more than
the count)."""


class Relay:
    """Relays what this worker's commits left in their matches' outboxes."""

    gather_seconds = 0.01
    """How long the relay after a commit waits for other commits' outboxes (an operator event
    reaches its stream and webhook queue this much later than its commit)."""
    grace_ms = 2_000
    """How long after a commit with operator events the relay queue looks at its outbox, in
    case this worker died before relaying it: shorter than the queue's lease (5 s), so a
    commit during a reader's claim keeps the item due."""
    retries: tuple[float | None, ...] = (0.02, 0.1, None)
    """Pauses (s) before trying again when another relay holds an outbox; ``None``: leave it
    to the relay queue."""

    def __init__(
        self,
        move: RelayFn | None,
        queues: Queues,
        *,
        clock: Callable[[], float] = time.time,
        wanted: WantedFn | None = None,
    ) -> None:
        self.move = move
        """What moves outboxes (``None``: this worker leaves every outbox to the relay queue)."""
        self.wanted = wanted
        """Which events of an owner need the relay when the commit appends them to the stream
        itself (``None``: the commits do not; every event goes through the outbox)."""
        self._queues = queues
        self._now = clock
        self._tasks: set[asyncio.Task[bool]] = set()
        self._waiting: dict[str, RelayWake] = {}
        """Matches whose commits left operator events, for the next gathered relay."""
        self._gathering: asyncio.Task[bool] | None = None

    async def outgoing(
        self, match: Match, entries: Sequence[LogEntry], first_version: int, before: Life | None
    ) -> Outgoing:
        """The operator events of a commit that made ``match`` (from a match whose lifecycle
        state was ``before``; ``None``: the commit created it), as its commit writes them:
        every one in the outbox, or, when the commit appends them to the stream itself
        (:attr:`wanted` set), there and only the wanted ones in the outbox."""
        committed = operator_events.Committed(
            match_id=match.match_id,
            entries=entries,
            first_version=first_version,
            time=match.updated_at,
            labels=match.meta.labels,
            result=result_of(match.state, match.status),
            state=match.state,
            before=before,
            after=match.life,
            seats=match.seats,
            epoch_ms=match.meta.epoch_ms(0),
        )
        events = operator_events.of_commit(committed)
        if not events:
            return NOTHING
        owner = match.meta.owner
        bodies = [codec.operator_event_bytes(ev) for ev in events]
        if self.wanted is None:
            outbox = [outbox_item(owner, body) for body in bodies]
            return Outgoing(outbox, None, self._net(outbox))
        wanted = await self.wanted(match)
        outbox = [
            outbox_item(owner, body, streamed=True)
            for ev, body in zip(events, bodies, strict=True)
            if wanted is None or ev.type.value in wanted
        ]
        kinds = tuple(ev.type.value for ev in events)
        return Outgoing(outbox, FeedAppend(owner, bodies), self._net(outbox), kinds)

    def _net(self, outbox: Sequence[bytes]) -> RelayWake | None:
        """The relay queue's safety net for a commit's operator events."""
        if not outbox:
            return None
        return RelayWake(round(self._now() * 1000) + self.grace_ms, secrets.token_bytes(8))

    def committed(self, match_id: str, out: Outgoing) -> None:
        """The commit that wrote ``out`` is done: count the events it appended to the stream
        and relay its outbox soon."""
        for kind in out.kinds:
            counted = _COUNTED.get(kind)
            if counted is None:
                counted = _COUNTED[kind] = metrics.OPERATOR_EVENTS.labels(kind)
            counted.inc()
        if out.net is not None:
            self.soon(match_id, out.net)

    def soon(self, match_id: str, net: RelayWake) -> None:
        """Relay the outbox a commit just wrote, with the others of the next
        :attr:`gather_seconds`, then release the commit's safety net."""
        if self.move is None:
            return
        self._waiting[match_id] = net  # a later commit's net replaces an earlier one's
        if self._gathering is None or self._gathering.done():
            self._gathering = self._spawn(self._gathered())

    async def done(self) -> None:
        """Wait until every relay started so far (and its retries) is over, failed or not."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self, timeout: float = 5.0) -> None:
        """At the worker's shutdown, before the store closes: the relays under way finish
        (tens of milliseconds), within ``timeout``; what is left is cancelled -- the relay
        queue's safety net moves those events later, from any worker."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.done()
        left = list(self._tasks)
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)

    def _spawn(self, work: Coroutine[Any, Any, bool]) -> asyncio.Task[bool]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[bool]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("relay failed; the relay queue retries it", exc_info=task.exception())

    async def _gathered(self) -> bool:
        await asyncio.sleep(self.gather_seconds)
        gathered, self._waiting = self._waiting, {}
        self._gathering = None  # commits from now on gather for the next relay
        assert self.move is not None
        busy = set(await self.move(list(gathered)))
        # A commit that queued a match after the one kept here replaced the token (its own
        # relay releases it); every commit queued before it committed before it, so the relay
        # just done moved its events too.
        await self._queues.release(RELAY, [(m, net.token) for m, net in gathered.items() if m not in busy])
        for match_id in busy:  # another relay holds the outbox: again shortly, then the queue's
            self._spawn(self._again(match_id, gathered[match_id]))
        return True

    async def _again(self, match_id: str, net: RelayWake) -> bool:
        for pause in self.retries:
            if pause is None:
                return False
            await asyncio.sleep(pause)
            if self.move is None or not await self.move([match_id]):
                await self._queues.release(RELAY, [(match_id, net.token)])
                return True
        return False
