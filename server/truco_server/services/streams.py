"""Observation streams: one seat's (or a spectator's) feed of a match, resumable from any
version.

The first message comes at once: every event after ``from_version`` (from the log, or rebuilt
from the record when the log no longer holds them), or a snapshot when ``from_version`` is
absent, with the current view. Then one message per commit: this worker's own commits come
with their :class:`~truco_match.match.Moment` (nothing to decode, each viewer's redaction made
once for all the match's streams), other workers' are read from the log. A heartbeat (with the
clock) follows ``heartbeat_seconds`` of silence (or, when the store is ahead of what the
stream delivered, the update that catches up); the stream ends after the message that shows
the match is over, and with :class:`~truco_server.core.errors.ShuttingDown` when the worker
stops. A spectator of a match with a spectator delay sees it that many actions late. A
worker holds at most ``max_open`` streams at once (``TRUCO_MAX_STREAMS_PER_WORKER``): one more
is refused :class:`~truco_server.core.errors.QuotaExceeded` (``worker_streams``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable

import structlog

from truco_match.events import MatchStatus
from truco_match.match import Match, Moment
from truco_match.views import SeatView, clock_view, view
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core import requests as T
from truco_server.core.caller import Caller
from truco_server.ports.matches import Batch, LogTrimmed, Subscription, SubscriptionClosed
from truco_server.services.matches import MatchService
from truco_server.services.quotas import QUOTA_EXCEEDED, WORKER_STREAMS

log = structlog.get_logger("truco.streams")


class MatchStreams:
    """The observation streams of a worker (see the module docstring)."""

    def __init__(
        self, matches: MatchService, stopping: asyncio.Event | None = None, *, max_open: int = 0
    ) -> None:
        self.matches = matches
        self.stopping = stopping or asyncio.Event()
        self.max_open = max_open
        """Streams this worker holds open at once, at most (0: no bound)."""
        self.open = 0
        self._open: set[Subscription] = set()
        self._watcher: asyncio.Task[None] | None = None

    async def stream(
        self, caller: Caller, req: T.StreamRequest, delivered: Callable[[], int] | None = None
    ) -> AsyncIterator[T.StreamUpdate]:
        """The feed of ``caller``'s view of a match (see the module docstring).

        One generator from the first message to the last: every update passes through each
        frame of the chain between the subscription and the socket, so the chain is kept
        short. An update is handed on from a one-item list, never from a local: a reader that
        does not take it holds it in one place, the transport, not in this frame.

        ``delivered``: the last version the reader holds by other means (the player
        connection's action results, each standing for its seat's update): a commit whose
        events end there or before is not made into an update."""
        if self.max_open and self.open >= self.max_open:
            QUOTA_EXCEEDED.labels(WORKER_STREAMS).inc()
            raise E.QuotaExceeded(WORKER_STREAMS, f"{self.max_open} open on this worker", 1.0)
        self.open += 1  # from here: the checks below await the store
        try:
            svc = self.matches
            match = await svc.load(req.match_id, fresh=True)
            viewer = svc.viewer(match, caller)
            generation = match.life.credential(viewer)[0]
            start = req.from_version
            if start is not None and not 0 <= start <= match.version:
                raise E.InvalidArgument(
                    f"from_version must be 0..{match.version}",
                    field_violations=[E.FieldViolation("from_version", "beyond the current version")],
                    current_version=match.version,
                )
            if self.stopping.is_set():
                raise E.ShuttingDown()
            metrics.STREAM_SUBSCRIBERS.inc()
            try:
                await svc.touch(match, viewer)
                out = [await self._first(match, viewer, start)]
                last = max(out[0].version, start or 0)
                # what the first message was made of goes with it: a stream whose reader does
                # not take it holds only the message, not the decoded log kept on this match
                match = dataclasses.replace(match, memo={})
                yield out.pop()
                if not match.active:
                    return
                sub = self._subscribe(match)
                try:
                    heartbeat = svc.settings.heartbeat_seconds
                    while True:
                        if self.stopping.is_set():
                            raise E.ShuttingDown()
                        try:
                            item = await sub.next(heartbeat)
                        except SubscriptionClosed:
                            raise E.ShuttingDown() from None
                        if item is None:
                            beat = await self._heartbeat(sub, match, caller, viewer, generation, last)
                            out.append(beat)
                            del beat
                        elif isinstance(item, LogTrimmed) or match.spectator_delay(viewer):
                            update = await self._resync(sub, match, caller, viewer, generation, last)
                            if update is not None:
                                out.append(update)
                            del update
                        elif delivered is not None and _held(item, delivered()):
                            last = item.events[-1][0]  # the reader has it: nothing to build
                        else:
                            out.append(await self._update(sub, item, match, caller, viewer, generation))
                        del item
                        if not out:
                            continue
                        if out[0].view is not None:  # a heartbeat leaves the version delivered
                            last = out[0].version
                        ended = out[0].match_state is not MatchStatus.ACTIVE
                        yield out.pop()
                        if ended:
                            return
                finally:
                    self._open.discard(sub)
                    sub.close()
            finally:
                metrics.STREAM_SUBSCRIBERS.dec()
        finally:
            self.open -= 1

    async def _first(self, match: Match, viewer: int, start: int | None) -> T.StreamUpdate:
        target, seen, current = await self.target(match, viewer)
        if start is None:
            return T.StreamUpdate(target, (), seen, match.rules, snapshot=True, viewer=viewer, match=current)
        events = await self.matches.events(match, min(start, target), target, viewer)
        return T.StreamUpdate(target, events, seen, match.rules, viewer=viewer, match=current)

    async def target(self, match: Match, viewer: int) -> tuple[int, SeatView, Match | None]:
        """The version ``viewer`` sees the match at, its view there, and the match version when
        that is the current one (spectators with a delay see it that many actions late)."""
        delay = match.spectator_delay(viewer)
        now = self.matches.now()
        if not delay:
            return match.version, match.view(viewer, now), match
        point = (await self.matches.history(match)).delayed(delay)
        key = ("delayed view", point.version)
        seen = match.memo.get(key)
        if seen is None:
            seen = match.memo[key] = view(
                point.state, None, point.version, match.status, point.life, match.meta.created_at, now
            )
        return point.version, seen, None

    def _subscribe(self, match: Match) -> Subscription:
        sub = self.matches.log.subscribe(
            match.match_id, match.version, queue_size=self.matches.settings.queue_size
        )
        self._open.add(sub)
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(self._close_all_when_stopping())
        return sub

    async def _close_all_when_stopping(self) -> None:
        await self.stopping.wait()
        for sub in list(self._open):
            sub.close()

    def close(self) -> None:
        """Stop watching for the worker's shutdown (the worker's last cleanup)."""
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def _heartbeat(
        self, sub: Subscription, match: Match, caller: Caller, viewer: int, generation: int, last: int
    ) -> T.StreamUpdate:
        """A heartbeat after ``heartbeat_seconds`` of silence; or, when the store holds
        versions this stream has not delivered (its feed is later than that -- a Redis
        restart, a wake-up of the hub's read that raced, a busy worker -- or missed them;
        counted in ``truco_stream_catch_ups_total``), the update that catches up: a lost
        notification costs one or two heartbeat intervals, not the turn clock. The store is
        read once for the heartbeats of a match's streams that fall within half an interval
        (its seats' streams heartbeat together): a copy the store showed current that recently
        stands for the read."""
        svc = self.matches
        cur = svc.same(match, await svc.load(match.match_id, fresh_within=svc.settings.heartbeat_seconds / 2))
        if cur.version > last and not match.spectator_delay(viewer):
            update = await self._resync(sub, match, caller, viewer, generation, last)
            if update is not None:
                metrics.STREAM_CATCH_UPS.inc()
                log.info(
                    "stream caught up on a heartbeat",
                    match_id=match.match_id,
                    delivered=last,
                    current=cur.version,
                )
                return update
        svc.still_valid(cur, caller, viewer, generation)
        await svc.touch(cur, viewer)
        clock = clock_view(cur.life, cur.meta.created_at, svc.now())
        return T.StreamUpdate(last, (), None, cur.rules, clock=clock, viewer=viewer)

    async def _update(
        self, sub: Subscription, batch: Batch, match: Match, caller: Caller, viewer: int, generation: int
    ) -> T.StreamUpdate:
        """The message for a batch of new events: from its moment when this worker committed
        them, else decoded from the log (more events too when the match has moved on)."""
        svc = self.matches
        first, end = batch.events[0][0], batch.events[-1][0]
        note = batch.note
        if (
            isinstance(note, Moment)
            and note.match is not None
            and note.first_version == first
            and note.last_version == end
        ):
            cur, moment = svc.same(match, note.match), note
            events = moment.events_for(viewer)
        else:
            cur, moment = await svc.at_least(match, end), None
            events = await svc.events(cur, first - 1, end, viewer, batch.events)
            if cur.version > end:  # more commits since the batch: their events too
                events += await svc.events(cur, end, cur.version, viewer)
                sub.resume_from(cur.version)
        svc.still_valid(cur, caller, viewer, generation)
        await svc.touch(cur, viewer)
        return T.StreamUpdate(
            cur.version,
            events,
            cur.view(viewer, svc.now()),
            cur.rules,
            viewer=viewer,
            match=cur,
            moment=moment,
        )

    async def _resync(
        self, sub: Subscription, match: Match, caller: Caller, viewer: int, generation: int, last: int
    ) -> T.StreamUpdate | None:
        """After a gap in the log (a trim, or a failover that lost versions), or for a delayed
        spectator: what the viewer sees now, from the version it last saw; ``None`` when there
        is nothing new to show."""
        svc = self.matches
        cur = svc.same(match, await svc.load(match.match_id, fresh=True))
        svc.still_valid(cur, caller, viewer, generation)
        sub.resume_from(cur.version)
        await svc.touch(cur, viewer)
        target, seen, current = await self.target(cur, viewer)
        delayed = match.spectator_delay(viewer) > 0
        if target < last and not delayed:
            # the store lost versions this stream delivered (a failover): say so with a
            # snapshot of what survives, and go on from there
            return T.StreamUpdate(target, (), seen, cur.rules, snapshot=True, viewer=viewer, match=current)
        if target <= last and cur.active:
            return None
        events = await svc.events(cur, last, target, viewer)
        return T.StreamUpdate(target, events, seen, cur.rules, viewer=viewer, match=current)


def _held(batch: Batch, through: int) -> bool:
    """Whether a reader that holds every version up to ``through`` has all of ``batch``, a
    commit of this worker that leaves the match going (the update that ends a match is always
    made: it ends the stream)."""
    note = batch.note
    return (
        batch.events[-1][0] <= through
        and isinstance(note, Moment)
        and note.match is not None
        and note.match.active
    )
