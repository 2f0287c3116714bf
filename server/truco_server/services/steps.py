"""The steps of a match other than a seat's action: its creation, the creator's decisions
(cancel, add time, adjudicate, re-issue a credential) and what the clock makes due (a turn
clock's expiry, the default move of an away seat, the end of the join window, the idle
timeout). Each is one commit of :class:`~truco_server.services.matches.MatchService`; what
it does to the match is :mod:`truco_match.table`'s, and what is due when is
:mod:`truco_match.clock`'s.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from typing import Any

import structlog

from truco_match import clock as match_clock
from truco_match import create, records, table
from truco_match.credentials import SPECTATOR
from truco_match.events import (
    CredentialReissued,
    MatchAdjudicated,
    MatchCancelled,
    MatchStatus,
    TimeAdded,
    seat_to_dict,
)
from truco_match.fairness import new_seed
from truco_match.lifecycle import MAX_DURATION_MS
from truco_match.match import Match, Meta
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.ports.documents import DocRef
from truco_server.ports.errors import MatchExists, VersionConflict
from truco_server.ports.matches import MatchIndexEntry, NewMatch
from truco_server.services import stored
from truco_server.services.bots import BotSeats
from truco_server.services.matches import ATTEMPTS, MatchService
from truco_server.services.quotas import Quotas

log = structlog.get_logger("truco.service")


def spec_error(exc: create.SpecError) -> E.InvalidArgument:
    """The INVALID_ARGUMENT of a match that cannot be made as asked."""
    return E.InvalidArgument(
        str(exc),
        reason=E.Reason.INVALID_RULES if exc.rules else E.Reason.INVALID_REQUEST,
        field_violations=[E.FieldViolation(f, d) for f, d in exc.violations],
    )


def reissue_key(request_id: str) -> str:
    """Where a re-issue's ``request_id`` is kept among the match's request records, which the
    seats' actions share: longer than any request id a seat may send (128), so the two never
    meet."""
    return "reissue:" + hashlib.sha256(request_id.encode()).hexdigest() * 2


class MatchSteps:
    """Creation, the creator's decisions and the clock (see the module docstring)."""

    def __init__(
        self, matches: MatchService, quotas: Quotas | None = None, bots: BotSeats | None = None
    ) -> None:
        self.matches = matches
        self.quotas = quotas
        """Asked before a new match is written (an operator's live matches and bytes)."""
        self.bots = bots
        """Decides for the seats the server plays (``None``: they wait; tests of the rest)."""

    # ---------------------------------------------------------------------- create
    async def create_match(
        self, operator: Operator, req: T.CreateMatchRequest, *, requires: Sequence[DocRef] = ()
    ) -> T.CreateMatchResponse:
        """Create a match (or return the one ``req.request_id`` created). ``requires``: the
        documents it belongs to (a league's match: its league), without which nothing is
        written (:class:`~truco_server.ports.errors.ParentMissing`)."""
        svc = self.matches
        try:
            rules, lifecycle = create.check(req, svc.settings.idle_timeout_ms, svc.settings.bot_think_ms)
        except create.SpecError as exc:
            raise spec_error(exc) from None
        if req.request_id:
            match_id = "m" + hashlib.sha256(f"{operator.name}\n{req.request_id}".encode()).hexdigest()[:20]
        else:
            match_id = "m" + secrets.token_hex(10)
        seats = create.seats_of(req, rules)
        fingerprint = stored.create_fingerprint(create.fingerprint_of(req, rules, lifecycle))
        meta = Meta(
            match_id=match_id,
            owner=operator.name,
            created_at=svc.now(),
            rules=rules.to_dict(),
            seats=[seat_to_dict(s) for s in seats],
            seed=(req.seed or new_seed()).hex(),
            cred_key=secrets.token_hex(32),
            deck_orders=[list(d) for d in req.deck_orders],
            first_dealer=req.first_dealer,
            labels=dict(req.labels),
            lifecycle=lifecycle.to_dict(),
            source=create.deal_source(req).value,
            request_fingerprint=fingerprint if req.request_id else "",
            rated=req.rated,
        )
        try:
            match = await self._create(meta, req.client_seed, requires)
        except MatchExists:
            match = await svc.load(match_id, fresh=True)
            if match.meta.owner != operator.name:  # pragma: no cover - ids are per owner
                raise E.RequestIdReused("request_id already used") from None
            if match.meta.request_fingerprint not in ("", fingerprint):
                raise E.RequestIdReused("request_id was already used to create a different match") from None
            log.info("create_match.replayed", match_id=match_id)
            return _created(match)
        metrics.MATCHES_CREATED.inc()
        log.info("create_match", match_id=match_id, preset=rules.name, players=rules.players)
        return _created(match)

    async def _create(self, meta: Meta, client_seed: bytes, requires: Sequence[DocRef]) -> Match:
        svc = self.matches
        seats = meta.seat_infos()
        setup = meta.setup(seats)
        step = table.start(setup, seats, client_seed, 0)
        match = Match(
            meta, setup, step.state, step.life, len(step.entries), MatchStatus.ACTIVE, meta.created_at, seats
        )
        out = await svc.relay.outgoing(match, step.entries, 1, None)
        due = table.due(setup, step.state, step.life)
        raw_meta = stored.meta_bytes(meta)
        new = NewMatch(
            index=MatchIndexEntry(
                meta.match_id,
                meta.owner,
                MatchStatus.ACTIVE,
                meta.created_at,
                stored.listing(match.info()),
            ),
            meta=raw_meta,
            state=stored.state_bytes(step.state, step.life),
            events=[stored.entry_bytes(e, 0) for e in step.entries],
            wake=None if due is None else meta.epoch_ms(due),
            outbox=out.outbox,
            relay=out.net,
            feed=out.feed,
            requires=tuple(requires),
        )
        if self.quotas is not None:
            size = len(new.meta) + len(new.state) + len(new.index.summary) + sum(map(len, new.events))
            await self.quotas.admit(meta.owner, meta.match_id, size)
        try:
            version = await svc.log.create(new)
        except MatchExists:
            raise  # the match is there: its place is held
        except BaseException:
            if self.quotas is not None:  # nothing created (or not known to be): free its place
                await self.quotas.ended(meta.owner, meta.match_id)
            raise
        match.version = version
        match.memo["meta bytes"] = raw_meta
        svc.cache.keep(match)
        svc.relay.committed(meta.match_id, out)
        return match

    # --------------------------------------------------------- the creator's steps
    async def cancel_match(self, operator: Operator, req: T.CancelMatchRequest) -> T.CancelMatchResponse:
        def decide(match: Match) -> Any:
            self.matches.own(match, operator)
            if match.status is MatchStatus.CANCELLED:
                return None  # idempotent
            self.matches.active(match)
            reason = req.reason[:200]
            step = table.cancel(match.setup, match.state, match.life, reason)
            cancelled = records.RecordStep(version=0, time=0.0, cancel=MatchCancelled(reason=reason))
            return step, cancelled, MatchStatus.CANCELLED

        done = await self.matches.step(req.match_id, decide)
        log.info("cancel_match", match_id=req.match_id)
        return T.CancelMatchResponse(done.info())

    async def add_time(self, operator: Operator, req: T.AddTimeRequest) -> T.MatchResponse:
        if not 1000 <= req.added_ms <= MAX_DURATION_MS:
            raise E.InvalidArgument(
                "added must be between 1 second and 1 day",
                field_violations=[E.FieldViolation("added", "1 s to 1 day")],
            )

        def decide(match: Match) -> Any:
            self._creators(match, operator, req.seat)
            if match.setup.lifecycle.time_control is None:
                raise E.ServiceError(
                    "this match has no clock", code=E.Code.FAILED_PRECONDITION, reason=E.Reason.NO_CLOCK
                )
            step = table.add_time(match.setup, match.state, match.life, req.seat, req.added_ms)
            added = TimeAdded(seat=req.seat, added=req.added_ms)
            return step, records.RecordStep(version=0, time=0.0, add_time=added), None

        return T.MatchResponse((await self.matches.step(req.match_id, decide)).info())

    async def adjudicate_match(self, operator: Operator, req: T.AdjudicateMatchRequest) -> T.MatchResponse:
        def decide(match: Match) -> Any:
            self.matches.own(match, operator)
            self.matches.active(match)
            if not 0 <= req.winner_team < match.rules.sides:
                raise E.InvalidArgument(
                    f"winner_team must be 0..{match.rules.sides - 1}",
                    field_violations=[E.FieldViolation("winner_team", "no such team")],
                )
            reason = req.reason[:200]
            now = match.meta.at(self.matches.now())
            step = table.adjudicate(match.setup, match.state, match.life, req.winner_team, reason, now)
            awarded = MatchAdjudicated(winner_team=req.winner_team, reason=reason)
            return step, records.RecordStep(version=0, time=0.0, adjudicate=awarded), MatchStatus.FINISHED

        done = await self.matches.step(req.match_id, decide)
        log.info("adjudicate_match", match_id=req.match_id, winner_team=req.winner_team)
        return T.MatchResponse(done.info())

    def _creators(self, match: Match, operator: Operator, seat: int | None) -> None:
        """The creator may decide for an active match, about one of its seats."""
        self.matches.own(match, operator)
        self.matches.active(match)
        if seat is not None and not 0 <= seat < match.rules.players:
            raise E.InvalidArgument(
                f"seat must be 0..{match.rules.players - 1}",
                field_violations=[E.FieldViolation("seat", "no such seat")],
            )

    async def reissue_credential(
        self, operator: Operator, req: T.ReissueCredentialRequest
    ) -> T.ReissueCredentialResponse:
        """A new credential for one seat (``None``: the spectators), committed as a step, so the
        previous one is refused on every worker from its version on. Idempotent on
        ``request_id``: its record holds the viewer, the generation and when it was issued."""
        svc = self.matches
        viewer = SPECTATOR if req.seat is None else req.seat
        key = None if req.request_id is None else reissue_key(req.request_id)
        if key is not None:
            match = await svc.load(req.match_id, fresh=True)
            svc.own(match, operator)
            found = await svc.log.lookup_request(req.match_id, key)
            if found is not None:
                return _reissued(match, viewer, found.version, found.reply)
        for _ in range(ATTEMPTS + 1):
            match = await svc.load(req.match_id, fresh=True)
            self._creators(match, operator, req.seat)
            step = table.reissue(match.setup, match.state, match.life, req.seat, match.meta.at(svc.now()))
            generation, at = step.life.credential(viewer)
            reissued = records.RecordStep(
                version=0, time=0.0, reissue_credential=CredentialReissued(seat=req.seat)
            )
            reply = b"%d:reissue.%d.%d:1" % (viewer, generation, at)
            try:
                done, _, res = await svc.commit(match, step, reissued, request_id=key, reply=reply)
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                continue
            if res.duplicate:  # a concurrent retry committed it first
                fresh = await svc.load(req.match_id, fresh=True)
                return _reissued(fresh, viewer, res.version, res.reply)
            log.info("reissue_credential", match_id=req.match_id, seat=req.seat)
            return _reissued(done, viewer, done.version, None)
        raise E.ServiceError(
            "the match kept changing; retry", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
        )

    # ------------------------------------------------------------------ the clock
    async def wake_match(self, match_id: str) -> int | None:
        """Do what is due in a match now (the clock queue's call for a claimed match); the next
        wakeup (ms since the epoch), or ``None``. Raises ``MatchNotFound`` for a match the
        store does not hold (yet: its wakeup is queued before its creation commits; or any
        more)."""
        svc = self.matches
        match = await svc.load(match_id, fresh=True)
        for _ in range(ATTEMPTS + 1):
            if not match.active:
                return None
            decided = await self._due(match)
            if decided is None:
                break
            step, record, status = decided
            bot = record.cause is records.StepCause.BOT and record.seat is not None
            level = (
                str(match.setup.bot_level(match.life, record.seat)) if bot and record.seat is not None else ""
            )
            try:
                match, _, _ = await svc.commit(match, step, record, status=status)
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                if bot:  # another worker, or the seat's player, got there first
                    metrics.BOT_DECISIONS.labels(level, "superseded").inc()
                match = await svc.load(match_id, fresh=True)
                continue
            metrics.LIFECYCLE_STEPS.labels(record.cause.value).inc()
            if bot:
                metrics.BOT_DECISIONS.labels(level, "committed").inc()
        now = match.meta.at(svc.now())
        due = match_clock.next_wake(match.setup, match.state, match.life, now)
        return None if due is None else match.meta.epoch_ms(due)

    async def _due(self, match: Match) -> match_clock.Due | None:
        """The step that is due now, if any (asking the store when the awaited seat was last
        seen only when its absence is what could be due): what the clock makes due, else the
        decision of the server's bot that plays the awaited seat, once it has thought long
        enough."""
        svc = self.matches
        setup, state, life = match.setup, match.state, match.life
        now = match.meta.at(svc.now())
        away_ms = None
        if match_clock.presence_matters(setup, life, now):
            seen = (await svc.log.presence(match.match_id)).get(life.awaited or 0, 0)
            away_ms = max(0, round(svc.now() * 1000) - seen)
        due = match_clock.due_step(setup, state, life, now, away_ms, svc.settings.heartbeat_seconds * 3000)
        seat = match_clock.bot_turn(setup, state, life, now)
        if due is not None or seat is None or self.bots is None:
            return due
        action = await self.bots.decide(match, seat)
        return match_clock.bot_step(setup, state, life, seat, action, match.meta.at(svc.now()))


def _created(match: Match) -> T.CreateMatchResponse:
    """The match and its current credentials (a retried CreateMatch after a re-issue gets the
    re-issued ones)."""
    seats, spectators = match.tokens()
    return T.CreateMatchResponse(match.info(), seats, spectators)


def _reissued(match: Match, viewer: int, version: int, reply: bytes | None) -> T.ReissueCredentialResponse:
    """The response of a re-issue: of the current credential (``reply`` None), or of the one a
    recorded ``reply`` (``<viewer>:reissue.<generation>.<issued at>:1``) describes."""
    if reply is None:
        generation, at = match.life.credential(viewer)
    else:
        first, kind, _ = reply.decode().split(":")
        parts = kind.split(".")
        if int(first) != viewer or len(parts) != 3 or parts[0] != "reissue":
            raise E.RequestIdReused("request_id was already used for another credential")
        generation, at = int(parts[1]), int(parts[2])
    ttl = match.setup.lifecycle.credential_ttl
    expires = match.meta.created_at + (at + ttl) / 1000 if ttl else None
    return T.ReissueCredentialResponse(
        match.meta.token(viewer, generation), None if viewer == SPECTATOR else viewer, version, expires
    )
