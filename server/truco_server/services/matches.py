"""The match service: the matches in play on this worker, and the action path.

SubmitAction reads top to bottom in :meth:`MatchService.submit_action`:

1. **load** the match: this worker's copy (:meth:`MatchService.load`), or the store's;
2. **authenticate** the seat: the credential against the match's own key
   (:meth:`truco_match.match.Match.viewer_of`);
3. **check** the version and the match's state; a retry of an applied action is answered with
   its first result (the ``request_id``'s record);
4. **step** the match: :func:`truco_match.table.act` (the engine's rules, the deals that fall
   due, the reveal at the end, the clock);
5. **commit** atomically (:meth:`MatchService.commit`): state, events, record, idempotency
   record, the next wakeup, in one store call guarded by the version;
6. **publish**: the store hands the commit's :class:`~truco_match.match.Moment` to this
   worker's streams of the match (each viewer's redaction made once), and the reply is the
   actor's part of it.

A worker's copy of a match may be stale (another worker committed since): a refusal is decided
again on a fresh load, and a commit from a stale copy fails the version check and reloads.
This module uses the worker's one cache of matches (:class:`~.live.LiveMatches`); everything derived
from a match at a version (views, redacted events, their encodings) is kept on the immutable
objects of that version, not in caches of their own.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

import truco_engine as te
from truco_match import history as match_history
from truco_match import records, table
from truco_match.credentials import SPECTATOR, ExpiredCredential, InvalidCredential
from truco_match.events import EventView, MatchStatus, SeatJoined
from truco_match.fairness import MAX_CLIENT_SEED
from truco_match.match import Match, Moment, NotStartedError
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core import requests as T
from truco_server.core.caller import Caller, MatchCredential, Operator
from truco_server.core.logging import bind_operator
from truco_server.core.lru import Lru
from truco_server.ports.errors import MatchNotFound as StoreMatchNotFound
from truco_server.ports.errors import RateExceeded, VersionConflict
from truco_server.ports.matches import Commit, CommitResult, Event, LogTrimmed, MatchLog
from truco_server.ports.quotas import RateCharge
from truco_server.services import stored
from truco_server.services.live import LiveMatches, ServiceSettings
from truco_server.services.quotas import ActionCharge
from truco_server.services.relay import Relay

log = structlog.get_logger("truco.service")

ATTEMPTS = 4
"""Loads and decisions an action gets when other writers keep committing first."""

_ACCEPTED = metrics.ACTIONS.labels("accepted")
_REPLAYED = metrics.ACTIONS.labels("replayed")
_INVALID = metrics.ACTIONS.labels("invalid")


class MatchService:
    """The match service over a :class:`~truco_server.ports.matches.MatchLog`."""

    def __init__(
        self,
        log: MatchLog,
        relay: Relay,
        *,
        settings: ServiceSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.log = log
        self.settings = settings or ServiceSettings()
        self.relay = relay
        self.now = clock
        """The service's time (seconds since the epoch); tests pass their own."""
        self.cache = LiveMatches(self.settings, clock)
        self.on_end: list[Callable[[str, str], Awaitable[None]]] = []
        """Told ``(owner, match_id)`` after a commit of this worker ends a match."""
        self._reading: dict[str, asyncio.Future[Match]] = {}
        """Reads of the store under way for :meth:`load`'s ``fresh_within``, by match."""
        self._touched: Lru[tuple[str, int], float] = Lru(
            self.settings.live_matches, idle=max(self.settings.heartbeat_seconds, 1.0), clock=clock
        )

    # -------------------------------------------------------------------- loading
    async def load(self, match_id: str, *, fresh: bool = False, fresh_within: float | None = None) -> Match:
        """The match: this worker's copy unless ``fresh``, else the store's; with
        ``fresh_within`` (seconds), this worker's copy when the store showed it current (a
        load or a commit of this worker) that recently, else the store's."""
        hit = self.cache.get(match_id)
        if hit is not None:
            if not fresh and fresh_within is None:
                return hit
            if fresh_within is not None and self.now() - hit.memo.get("fresh at", -math.inf) <= fresh_within:
                return hit
        if fresh_within is None:
            return await self._load(match_id)
        # one read of the store for the callers of these moments (a match's seats' heartbeats
        # fall due together): a read under way started within the window
        reading = self._reading.get(match_id)
        if reading is None:
            reading = self._reading[match_id] = asyncio.ensure_future(self._load(match_id))
            reading.add_done_callback(functools.partial(self._read_done, match_id))
        return await asyncio.shield(reading)

    def _read_done(self, match_id: str, reading: asyncio.Future[Match]) -> None:
        if self._reading.get(match_id) is reading:
            del self._reading[match_id]
        if not reading.cancelled():
            reading.exception()  # its callers have seen it (or were cancelled meanwhile)

    async def _load(self, match_id: str) -> Match:
        """The store's copy of the match, kept as this worker's."""
        snap = await self.log.load(match_id)
        if snap is None:
            self.cache.drop(match_id)
            raise E.MatchNotFound(f"no match {match_id!r}")
        match = stored.match_of(snap, self.cache.get(match_id))
        match.memo["fresh at"] = self.now()
        self.cache.keep(match)
        return match

    async def at_least(self, match: Match, version: int) -> Match:
        """The same incarnation of ``match`` at ``version`` or later; NOT_FOUND when the match
        it was is gone (expired, or lost by the store and its id created again)."""
        cur = self.cache.get(match.match_id)
        if cur is None or cur.version < version or cur.meta.incarnation != match.meta.incarnation:
            cur = await self.load(match.match_id, fresh=True)
        return self.same(match, cur)

    @staticmethod
    def same(match: Match, cur: Match) -> Match:
        if cur.meta.incarnation != match.meta.incarnation:
            raise E.MatchNotFound(f"match {match.match_id!r} no longer exists")
        return cur

    async def history(self, match: Match) -> match_history.History:
        """The match's whole history up to ``match.version``, rebuilt from its record (which
        the commit that makes a version writes with it, so it holds at least that version,
        unless the store lost commits in a failover: then on the store's own version)."""
        key = (match.match_id, match.meta.incarnation, match.version)
        hit = self.cache.histories.get(key)
        if hit is not None:
            return hit
        for _ in range(2):
            raw = await self.log.read_record(match.match_id)
            if raw is None:
                raise E.MatchNotFound(f"no match {match.match_id!r}")
            try:
                hit = match_history.build(match, raw)
            except te.RecordError:  # a record that does not replay is a server bug
                log.exception("record does not replay", match_id=match.match_id)
                raise
            if hit.points[-1].version == match.version:
                self.cache.histories.put(key, hit)
                return hit
            match = self.same(match, await self.load(match.match_id, fresh=True))
        raise E.Unavailable("the match's record is behind its state; retry")

    async def events(
        self, match: Match, after: int, upto: int, viewer: int, read: Sequence[Event] = ()
    ) -> tuple[EventView, ...]:
        """Versions ``after + 1 .. upto`` as ``viewer`` sees them: ``read`` when it holds them
        (a subscription's batch), else from the log, or from the record when the log no longer
        holds them; decoded once per worker and version range."""
        if upto <= after:
            return ()
        key = ("log", after, upto)
        moment = match.memo.get(key)
        if moment is None:
            moment = match.memo[key] = await self._logged(match, after, upto, read)
        return moment.events_for(viewer)

    async def _logged(self, match: Match, after: int, upto: int, read: Sequence[Event]) -> Moment:
        got: Sequence[Event] | LogTrimmed = read
        if not (len(read) == upto - after and read[0][0] == after + 1):
            got = await self.log.read_events(match.match_id, after, upto - after)
        created = match.meta.created_at
        if isinstance(got, list | tuple) and len(got) == upto - after:
            decoded = [stored.entry_of(raw) for _, raw in got]
            return Moment(
                None, [e for e, _ in decoded], after + 1, [created + ms / 1000 for _, ms in decoded]
            )
        past = await self.history(match)
        kept = [past.entry(v) for v in range(after + 1, upto + 1)]
        return Moment(None, [e for e, _ in kept], after + 1, [at for _, at in kept])

    # ------------------------------------------------------------------ who calls
    def viewer(self, match: Match, caller: Caller) -> int:
        """Who is looking: a seat, or SPECTATOR (a spectator credential, or the owner)."""
        if isinstance(caller, Operator):
            self.own(match, caller)
            return SPECTATOR
        return self.seat_of(match, caller)

    def seat_of(self, match: Match, cred: MatchCredential) -> int:
        """The seat (or SPECTATOR) of a match credential; UNAUTHENTICATED for one that does not
        stand for a viewer of this match now (re-issued since; or, told apart, past its
        lifetime)."""
        try:
            viewer = match.viewer_of(cred.token, cred.who, cred.match_id, self.now())
        except ExpiredCredential:
            raise E.ExpiredCredential() from None  # genuine: only its holder gets here
        except InvalidCredential:
            raise E.CredentialNotValid() from None  # one answer, whatever was wrong with it
        bind_operator(match.meta.owner)
        return viewer

    def acting_seat(self, match: Match, cred: MatchCredential) -> int:
        seat = self.seat_of(match, cred)
        if seat == SPECTATOR:
            raise E.PermissionDenied("a spectator credential cannot act")
        return seat

    @staticmethod
    def own(match: Match, operator: Operator) -> None:
        """Another operator's match is answered as one that does not exist, word for word
        (docs/api.md, "Existence": every resource the same way)."""
        if operator.name != match.meta.owner:
            raise E.MatchNotFound(f"no match {match.match_id!r}")

    @staticmethod
    def active(match: Match) -> None:
        if not match.active:
            raise E.MatchNotActive(f"match is {match.status}", current_version=match.version)

    def still_valid(self, match: Match, caller: Caller, viewer: int, generation: int) -> None:
        """An open stream's credential is still the current one and not expired (checked at
        every message: a re-issue or an expiry ends the stream with UNAUTHENTICATED)."""
        if not isinstance(caller, MatchCredential):
            return
        if match.life.credential(viewer)[0] != generation:
            raise E.CredentialNotValid()
        if match.expired(viewer, self.now()):
            raise E.ExpiredCredential()

    async def touch(self, match: Match, viewer: int) -> None:
        """Record that ``viewer`` is here (at most once per half heartbeat; only for matches
        that watch presence)."""
        if viewer == SPECTATOR or not match.setup.lifecycle.disconnect_grace:
            return
        key = (match.match_id, viewer)
        now = self.now()
        last = self._touched.get(key)
        if last is not None and now - last < self.settings.heartbeat_seconds / 2:
            return
        self._touched.put(key, now)
        await self.log.touch(match.match_id, viewer, round(now * 1000))

    # --------------------------------------------------------------------- commits
    async def commit(
        self,
        match: Match,
        step: table.Step,
        record: records.RecordStep | None,
        *,
        status: MatchStatus | None = None,
        request_id: str | None = None,
        reply: bytes = b"",
        relist: bool = False,
        charge: RateCharge | None = None,
    ) -> tuple[Match, Moment, CommitResult]:
        """Commit one step of ``match`` (``status``: the one it ends in, if it ends it): the
        match after it, what it made visible, and the store's answer (for a duplicate the match
        and moment are the ones it would have made). Raises the store's ``VersionConflict``."""
        meta = match.meta
        if status is None and te.is_over(step.state):
            status = MatchStatus.FINISHED
        ms = step.at if step.at is not None else meta.at(self.now())  # the time it was decided at
        now = meta.created_at + ms / 1000
        done = match.after(step, match.version + len(step.entries), status, now)
        moment = Moment(done, step.entries, match.version + 1, [now] * len(step.entries))
        out = await self.relay.outgoing(done, step.entries, match.version + 1, match.life)
        commit = Commit(
            match_id=meta.match_id,
            expected_version=match.version,
            state=stored.state_bytes(step.state, step.life),
            events=[stored.entry_bytes(e, ms) for e in step.entries],
            request_id=request_id,
            reply=reply,
            status=None if status is None else status.value,
            updated_at=now,
            summary=stored.listing(done.info()) if status is not None or relist else None,
            record=self._record(record, done.version, now, step.clock_ms, meta.created_at),
            wake=self._wake(match, step, status),
            outbox=out.outbox,
            relay=out.net,
            feed=out.feed,
            charge=charge,
            note=moment,
        )
        try:
            res = await self.log.commit(commit)
        except StoreMatchNotFound as exc:
            raise E.MatchNotFound(f"no match {meta.match_id!r}") from exc
        if res.duplicate:
            return match, moment, res
        self.relay.committed(meta.match_id, out)
        stored.committed(done, commit.state, match)
        done.memo["fresh at"] = self.now()
        self.cache.keep(done)
        if status is not None:
            for told in self.on_end:
                await told(meta.owner, meta.match_id)
        return done, moment, res

    async def is_live(self, match_id: str) -> bool:
        """Whether the store holds ``match_id`` and it has not ended."""
        snap = await self.log.load(match_id)
        return snap is not None and snap.status == MatchStatus.ACTIVE.value

    @staticmethod
    def _record(
        record: records.RecordStep | None, version: int, now: float, clock_ms: int, created_at: float
    ) -> bytes | None:
        if record is None:
            return None
        return records.pack_stamped(record, version, now, clock_ms, created_at)

    @staticmethod
    def _wake(match: Match, step: table.Step, status: MatchStatus | None) -> int | None:
        """The wakeup a commit registers (ms since the epoch): only one earlier than the
        match's current due time, whose wakeup every commit has already queued."""
        if status is not None:
            return None
        due = table.due(match.setup, step.state, step.life)
        if due is None:
            return None
        if match.active:
            before = table.due(match.setup, match.state, match.life)
            if before is not None and before <= due:
                return None
        return match.meta.epoch_ms(due)

    async def step(
        self,
        match_id: str,
        decide: Callable[[Match], tuple[table.Step, records.RecordStep | None, MatchStatus | None] | None],
        *,
        relist: bool = False,
    ) -> Match:
        """Commit the step ``decide`` makes of the freshly loaded match, again on a version
        conflict; ``decide`` returns ``None`` when there is nothing to do."""
        for _ in range(ATTEMPTS + 1):
            match = await self.load(match_id, fresh=True)
            decided = decide(match)
            if decided is None:
                return match
            step, record, status = decided
            try:
                done, _, _ = await self.commit(match, step, record, status=status, relist=relist)
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                continue
            return done
        raise _kept_changing()

    # ----------------------------------------------------------------- the action
    async def submit_action(
        self, cred: MatchCredential, req: T.SubmitActionRequest, charge: ActionCharge | None = None
    ) -> T.SubmitActionResponse:
        """One seat's action: load, authenticate, check, step, commit, publish. ``charge``: what
        the action spends of its seat's rate of actions, once, whatever its outcome (spent
        first, or by its commit where the store can; a refused rate is QuotaExceeded)."""
        gate = None
        if charge is not None:
            if self.log.charges:
                gate = charge
            else:
                await charge.pay()
        # no await in an ``except`` or ``finally`` block here (docs/engine.md, "Compiled build")
        failure: BaseException | None = None
        try:
            result = await self._submit(cred, req, gate)
        except BaseException as exc:
            failure = exc
        # a retry answered from its first commit, or an action that never reached a commit
        # that wrote
        if gate is not None and not gate.paid:
            await gate.pay()
        if failure is not None:
            try:  # its traceback holds this frame: no local may hold it
                raise failure
            finally:
                del failure
        return result

    async def _submit(
        self, cred: MatchCredential, req: T.SubmitActionRequest, charge: ActionCharge | None
    ) -> T.SubmitActionResponse:
        action, fresh = req.action, False
        for _ in range(ATTEMPTS):
            match = await self.load(req.match_id, fresh=fresh)
            try:
                seat = self.acting_seat(match, cred)
            except E.Unauthenticated:
                if fresh:
                    raise
                fresh = True  # this worker's copy may be an earlier incarnation of the id
                continue
            _check_card(match, action)
            refusal, step = self._decide(match, seat, req)
            if step is None:
                if not fresh:  # this worker's copy may be stale: decide again on the store's
                    fresh = True
                    continue
                return await self._refused(match, seat, req, refusal)
            try:
                done, moment, res = await self.commit(
                    match,
                    step,
                    records.RecordStep(version=0, time=0.0, seat=seat, action=action),
                    request_id=req.request_id or None,
                    reply=stored.action_reply(seat, stored.action_fingerprint(action), len(step.entries)),
                    charge=None if charge is None else charge.rate,
                )
            except VersionConflict:  # another writer got there first: decide again
                metrics.COMMIT_CONFLICTS.inc()
                fresh = True
                continue
            except RateExceeded as exc:
                assert charge is not None
                raise charge.refused(exc.wait) from None
            if res.duplicate:
                fresh_match = await self.load(req.match_id, fresh=True)
                return await self._first_result(fresh_match, seat, req, res)
            if charge is not None:
                charge.paid = True  # by the commit
            _ACCEPTED.inc()
            return T.SubmitActionResponse(
                req.match_id, seat, done.version, moment.events_for(seat), done.view(seat, self.now()),
                done.rules, match=done, moment=moment,
            )  # fmt: skip
        raise _kept_changing()

    def _decide(
        self, match: Match, seat: int, req: T.SubmitActionRequest
    ) -> tuple[E.ServiceError | None, table.Step | None]:
        """The step the action makes, or why it is refused."""
        if not match.active:
            return E.MatchNotActive(f"match is {match.status}", current_version=match.version), None
        if req.expected_version is not None and req.expected_version != match.version:
            return E.StaleVersion(
                f"expected_version {req.expected_version} but the match is at version {match.version}",
                current_version=match.version,
            ), None
        try:
            return None, match.act(seat, req.action, self.now())
        except te.TrucoError as exc:
            return _illegal(exc, match), None

    async def _refused(
        self, match: Match, seat: int, req: T.SubmitActionRequest, refusal: E.ServiceError | None
    ) -> T.SubmitActionResponse:
        """A retry of an action applied the first time gets its first result; anything else
        its refusal."""
        if req.request_id:
            found = await self.log.lookup_request(match.match_id, req.request_id)
            if found is not None:
                return await self._first_result(match, seat, req, found)
        kind = "stale" if isinstance(refusal, E.StaleVersion) else "illegal"
        metrics.ACTIONS.labels(kind).inc()
        assert refusal is not None
        raise refusal

    async def _first_result(
        self, match: Match, seat: int, req: T.SubmitActionRequest, found: CommitResult
    ) -> T.SubmitActionResponse:
        """The first result of a retried ``request_id``, from its record: the events of its
        commit (read again from the log) and the current view."""
        first_seat, fingerprint, count = stored.action_reply_of(found.reply)
        if first_seat != seat or fingerprint != stored.action_fingerprint(req.action):
            _INVALID.inc()
            raise E.RequestIdReused("request_id was already used for a different action or seat")
        events = await self.events(match, found.version - count, found.version, seat)
        _REPLAYED.inc()
        return T.SubmitActionResponse(
            match.match_id, seat, found.version, events, match.view(seat, self.now()), match.rules,
            duplicate=True, match=match,
        )  # fmt: skip

    # ----------------------------------------------------------------------- join
    async def join_match(self, cred: MatchCredential, req: T.JoinMatchRequest) -> T.JoinMatchResponse:
        """A seat joins (with its client seed): the first hand is dealt once every seat has.
        Joining again takes the seat back from a bot that took it over."""
        if len(req.client_seed) > MAX_CLIENT_SEED:
            raise E.InvalidArgument(
                f"client_seed is at most {MAX_CLIENT_SEED} bytes",
                field_violations=[E.FieldViolation("client_seed", f"at most {MAX_CLIENT_SEED} bytes")],
            )
        seat_box: list[int] = []

        def decide(match: Match) -> Any:
            seat = self.acting_seat(match, cred)
            seat_box[:] = [seat]
            self.active(match)
            seed = req.client_seed
            if match.life.joined[seat]:
                if seed:
                    given = next((h for s, h in match.life.client_seeds if s == seat), None)
                    if given != seed.hex():
                        raise E.ServiceError(
                            "this seat has joined already: its client seed cannot change",
                            code=E.Code.FAILED_PRECONDITION,
                            reason=E.Reason.ALREADY_STARTED,
                        )
                if not match.life.taken_over(seat):
                    return None
                seed = b""  # joining again takes the seat back from the bot
            now = match.meta.at(self.now())
            step = table.join(match.setup, match.state, match.life, seat, seed, now)
            joined = records.RecordStep(
                version=0, time=0.0, seat=seat, join=SeatJoined(seat=seat, client_seed=seed)
            )
            return step, joined, None

        done = await self.step(req.match_id, decide, relist=True)
        seat = seat_box[0]
        await self.touch(done, seat)
        return T.JoinMatchResponse(done.version, done.view(seat, self.now()), done.rules, seat, match=done)


def _check_card(match: Match, action: te.Action) -> None:
    """A card that is not in the match's deck is a malformed request, not an illegal action."""
    if action.card is not None and action.card not in match.rules.deck_cards:
        where = "action.discard.card" if action.kind == "discard" else "action.play_card.card"
        _INVALID.inc()
        raise E.InvalidArgument(
            f"{action.card!r} is not a card of this match's deck",
            field_violations=[E.FieldViolation(where, "unknown card code")],
        )


def _illegal(exc: te.TrucoError, match: Match) -> E.ServiceError:
    if isinstance(exc, NotStartedError):
        return E.IllegalAction(str(exc), legal_actions=[], current_version=match.version)
    if isinstance(exc, table.ServerSeatError):
        return E.PermissionDenied(str(exc))
    if isinstance(exc, te.NotYourTurnError):
        return E.NotYourTurn(str(exc), legal_actions=[], current_version=match.version)
    if isinstance(exc, te.IllegalActionError):
        return E.IllegalAction(str(exc), legal_actions=list(exc.legal), current_version=match.version)
    if isinstance(exc, te.MatchOverError):
        return E.MatchNotActive(str(exc), current_version=match.version)
    return E.InvalidArgument(str(exc), field_violations=[E.FieldViolation("action", str(exc))])


def _kept_changing() -> E.ServiceError:
    return E.ServiceError(
        "the match kept changing; retry", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
    )
