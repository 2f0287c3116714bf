"""The match API, transport-neutral: typed requests and a typed caller in, typed responses
out, typed errors (:mod:`truco_server.core.errors`) raised. The gRPC servicer and the REST face
are thin adapters over :class:`MatchService` (:mod:`truco_server.api.matches`).

* **Auth.** Operators present an API key; each seat and the spectators of a match present a
  credential derived from a per-match secret (:mod:`truco_server.api.auth`), verified here
  once the match is loaded.
* **One step, one atomic commit.** :mod:`truco_match.table` computes every step of a match
  (an action, a join, a timeout, an operator's decision): the new engine and lifecycle state,
  the log entries (the engine's events, the deals that fall due, the reveal at the end). State,
  events, the record step and the idempotency record go to the store in one commit guarded by
  the version, after the match's next wakeup in the schedule (the same round trip).
* **Exactly once.** A retried ``request_id`` returns the first result; a stale
  ``expected_version`` is refused; streams resume from any version (the record gives back
  whatever the log no longer holds); a clock expiry is a step fenced by the decision it times.
* **No leak.** Log entries are redacted for the receiving viewer (the engine's events by the
  engine); views come from ``truco_engine.observe``; the seed leaves the server only in
  ``match_revealed`` once the match is over; a record shows a viewer only what it may see.

Workers keep small caches (the last state of recently used matches, decoded events, views,
histories); the commit's version check makes them safe: a stale entry costs a reload and a
retry.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

import truco_engine as te
from truco_match import operator_events, records, table
from truco_match.credentials import InvalidCredential, viewer_of
from truco_match.events import (
    CredentialReissued,
    DealSource,
    EventView,
    LogEntry,
    MatchAborted,
    MatchAdjudicated,
    MatchCancelled,
    MatchForfeited,
    MatchRevealed,
    MatchStatus,
    SeatJoined,
    TimeAdded,
    TimeoutCause,
    TurnTimedOut,
    is_private,
    redact,
)
from truco_match.fairness import MAX_CLIENT_SEED, new_seed
from truco_match.lifecycle import MAX_DURATION_MS, Lifecycle
from truco_match.views import SeatView, clock_view, view
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core import requests as T
from truco_server.core.caller import SPECTATOR, Caller, MatchCredential, Operator
from truco_server.core.logging import bind_operator
from truco_server.core.lru import Lru
from truco_server.ports.store import (
    RELAY,
    CommitResult,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchStore,
    RelayWake,
    VersionConflict,
)
from truco_server.ports.store import InvalidPageToken as StoreInvalidPageToken
from truco_server.ports.store import MatchNotFound as StoreMatchNotFound
from truco_server.services import history
from truco_server.services.operators import outbox_item
from truco_server.services.stored import (
    Loaded,
    Meta,
    action_fingerprint,
    compact_reply,
    create_fingerprint,
    decode_state,
    encode_state,
    info_of,
    listed,
    listing,
    pack_entry,
    seats_to_dicts,
    unpack_entry,
)

log = structlog.get_logger("truco.service")

RELAY_RETRIES: tuple[float | None, ...] = (0.02, 0.1, None)
"""Pauses (s) before the relay after a commit tries again when another relay holds the outbox;
``None``: give up and leave it to the relay queue."""

RELAY_GATHER_SECONDS = 0.01
"""How long the relay after a commit waits for other commits' outboxes to relay with it
(one take, one append per operator and one trim for all of them: under load, a few round
trips for many hands instead of four for each). An operator event reaches the operator's
stream and webhook queue this much later than its commit."""

RELAY_GRACE_MS = 2_000
"""How long after a commit with operator events the relay queue looks at its outbox, in case
the worker that made the commit died before relaying it. Shorter than the queue's lease
(``QueueReader``: 5 s), so a commit during a reader's claim keeps the item due."""

EVERYONE = -2
"""Cache key of what every viewer sees alike (a public event)."""
VIEW_CACHE_SIZE = 512
CACHE_IDLE_SECONDS = 60.0
"""A live match this worker has not touched for this long leaves its cache (it may have ended on
another worker: a worker learns of an end only by serving the match; without this bound the
matches ended elsewhere filled the cache for hours, growing the worker all that time)."""
ENDED_CACHE_SIZE = 256
"""Ended matches a worker keeps decoded (their last streams, records and GetMatch calls
come soon after the end); apart from the live ones, so that under a steady load a worker's
memory follows the matches in play, not the matches played."""
"""Views (and their events) kept per worker; see ``MatchService.__init__``."""
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
TERMINAL = (MatchStatus.FINISHED, MatchStatus.CANCELLED, MatchStatus.ABORTED)


def reissue_key(request_id: str) -> str:
    """Where a re-issue's ``request_id`` is kept in the match's request records, which the
    seats' actions share: 136 characters, longer than any request id a seat may send (128,
    :data:`truco_server.api.limits.FIELD_LIMITS`), so the two never meet."""
    return "reissue:" + hashlib.sha256(request_id.encode()).hexdigest() * 2


@dataclass(frozen=True, slots=True)
class ServiceDefaults:
    """Server-wide lifecycle defaults (a match's own settings win)."""

    idle_timeout_ms: int = 24 * 3600 * 1000
    """An active match without a clock in which nothing happens this long is aborted; 0:
    never."""


# ----------------------------------------------------------------------------- service
def rules_of(preset: str, overrides: dict[str, Any]) -> te.RuleSet:
    """The rule set of a preset with overrides; a bad one is INVALID_ARGUMENT (INVALID_RULES)
    naming the offending field (the matches' and the leagues' one check)."""
    try:
        return te.get_rules(preset, **overrides)
    except te.TrucoError as exc:
        field_name = getattr(exc, "field", "rules")
        raise E.InvalidArgument(
            str(exc),
            reason=E.Reason.INVALID_RULES,
            field_violations=[E.FieldViolation(field_name, str(exc))],
        ) from exc


class MatchService:
    """The product's operations over a :class:`MatchStore`."""

    def __init__(
        self,
        store: MatchStore,
        *,
        cache_size: int = 4096,
        heartbeat_seconds: float = 5.0,
        stopping: asyncio.Event | None = None,
        queue_size: int = 256,
        defaults: ServiceDefaults | None = None,
        clock: Callable[[], float] = time.time,
        state_with_rules: bool = False,
    ) -> None:
        self.store = store
        self.state_with_rules = state_with_rules
        """Stored states carry the rule set (for builds up to 0.2.0 in the same fleet)."""
        self.queue_size = queue_size
        self.heartbeat_seconds = heartbeat_seconds
        self.stopping = stopping or asyncio.Event()
        self.defaults = defaults or ServiceDefaults()
        self.now = clock
        """The service's time (seconds since the epoch); tests pass their own."""
        self._cache: Lru[str, Loaded] = Lru(cache_size, idle=CACHE_IDLE_SECONDS, clock=clock)
        self._ended: Lru[str, Loaded] = Lru(ENDED_CACHE_SIZE)
        # decoded stored events by (match, version): each blob is decoded once per worker,
        # not once per subscriber (and not at all for this worker's own commits)
        # (each cached value remembers what it was made from -- the stored bytes, the entry,
        # the state -- and a hit counts only for that same origin: after a failover lost some
        # versions, the next commits reuse those numbers for other events and states)
        self._entries: Lru[tuple[str, int], tuple[bytes, LogEntry, float]] = Lru(VIEW_CACHE_SIZE * 4)
        # what a viewer sees, by (match, version, viewer): the reply to an action and the
        # actor's own stream message share the same objects (and so the same protos, which
        # the transports cache by identity); a public event is one object for every viewer
        # (EVERYONE). Short-lived on purpose: an entry is used within the same action, and
        # thousands of cached objects lengthen the interpreter's full garbage collections
        # (4,096 views: paced p99 60-100 ms in `truco bench service --think-ms 1000`; 512:
        # 8-22 ms).
        self._event_views: Lru[tuple[str, int, int | None], tuple[LogEntry, EventView]] = Lru(
            VIEW_CACHE_SIZE * 2
        )
        self._views: Lru[tuple[str, int, int], tuple[te.MatchState, SeatView]] = Lru(VIEW_CACHE_SIZE)
        self._histories: Lru[tuple[str, str, int], history.History] = Lru(64)
        # (a touch older than half a heartbeat is done again anyway)
        self._touched: Lru[tuple[str, int], float] = Lru(
            cache_size, idle=max(heartbeat_seconds, 1.0), clock=clock
        )
        self.relay: Callable[[Sequence[str]], Awaitable[list[str]]] | None = None
        """Moves matches' outboxes to their operators' streams and webhooks, and returns those
        another relay holds (:meth:`truco_server.services.operators.Operators.relay`); without it the
        outboxes are kept."""
        self._relays: set[asyncio.Task[bool]] = set()
        self._to_relay: dict[str, RelayWake] = {}
        """Matches whose commits left operator events, for the next gathered relay."""
        self._gathering: asyncio.Task[bool] | None = None
        """The relay waiting for :attr:`_to_relay` to gather (none: the next commit starts one)."""

    @property
    def presence_timeout(self) -> float:
        """A seat whose stream has not been seen for this long (seconds) is away."""
        return 3 * self.heartbeat_seconds

    # ------------------------------------------------------------------------ events
    def _decoded(self, loaded: Loaded, version: int, raw: bytes) -> tuple[LogEntry, float]:
        key = (loaded.match_id, version)
        hit = self._entries.get(key)
        if hit is None or hit[0] != raw:
            entry, ms = unpack_entry(raw)
            hit = self._entries.put(key, (raw, entry, loaded.meta.created_at + ms / 1000))
        return hit[1], hit[2]

    def _event_view(self, match_id: str, version: int, entry: LogEntry, at: float, viewer: int) -> EventView:
        """Version ``version`` of the match as ``viewer`` sees it; shared and read-only."""
        seat = None if viewer == SPECTATOR else viewer
        key = (match_id, version, seat if is_private(entry) else EVERYONE)
        hit = self._event_views.get(key)
        if hit is None or hit[0] is not entry:
            hit = self._event_views.put(key, (entry, EventView(version, redact(entry, seat), at)))
        return hit[1]

    def _views_of(
        self, loaded: Loaded, batch: Sequence[tuple[int, bytes]], viewer: int
    ) -> tuple[EventView, ...]:
        out = []
        for v, raw in batch:
            entry, at = self._decoded(loaded, v, raw)
            out.append(self._event_view(loaded.match_id, v, entry, at, viewer))
        return tuple(out)

    async def _events(self, loaded: Loaded, after: int, upto: int, viewer: int) -> tuple[EventView, ...]:
        """Versions ``after + 1 .. upto`` as ``viewer`` sees them: from the log, or from the
        record when the log no longer holds them."""
        if upto <= after:
            return ()
        got = await self.store.read_events(loaded.match_id, after, upto - after)
        if isinstance(got, list) and len(got) == upto - after:
            return self._views_of(loaded, got, viewer)
        past = await self._history(loaded)
        out = []
        for v in range(after + 1, upto + 1):
            entry, at = past.entry(v)
            out.append(self._event_view(loaded.match_id, v, entry, at, viewer))
        return tuple(out)

    async def _history(self, loaded: Loaded) -> history.History:
        """The match's whole history up to ``loaded.version``, rebuilt from its record."""
        key = (loaded.match_id, loaded.meta.incarnation, loaded.version)
        hit = self._histories.get(key)
        if hit is None:
            raw = await self.store.read_record(loaded.match_id)
            if raw is None:
                raise E.MatchNotFound(f"no match {loaded.match_id!r}")
            try:
                hit = history.build(loaded, raw)
            except te.RecordError:  # a record that does not replay is a server bug
                log.exception("record does not replay", match_id=loaded.match_id)
                raise
            if hit.points[-1].version != loaded.version:  # the record moved on: a newer load
                fresh = await self._load(loaded.match_id, fresh=True)
                if fresh.version != hit.points[-1].version:
                    raise E.ServiceError("the match kept changing; retry", code=E.Code.ABORTED)
            self._histories.put(key, hit)
        return hit

    # ------------------------------------------------------------------------- cache
    async def _load(self, match_id: str, *, fresh: bool = False) -> Loaded:
        if not fresh:
            hit = self._cached(match_id)
            if hit is not None:
                return hit
        snap = await self.store.load(match_id)
        if snap is None:
            self._cache.pop(match_id)
            self._ended.pop(match_id)
            raise E.MatchNotFound(f"no match {match_id!r}")
        old = self._cached(match_id)
        if old is not None and old.meta_bytes == snap.meta:  # the same incarnation: reuse its setup
            meta, setup = old.meta, old.setup
        else:
            meta = Meta.from_bytes(snap.meta)
            setup = meta.setup()
        state, life = decode_state(snap.state, setup.rules)
        loaded = Loaded(meta, setup, state, life, snap.version, MatchStatus(snap.status), snap.updated_at)
        loaded.meta_bytes = snap.meta
        self._keep(loaded)
        return loaded

    def _cached(self, match_id: str) -> Loaded | None:
        hit = self._cache.get(match_id)
        return hit if hit is not None else self._ended.get(match_id)

    def _keep(self, loaded: Loaded) -> None:
        """Cache ``loaded``: a live match among the live ones, an ended one among the ended."""
        if loaded.status is MatchStatus.ACTIVE:
            self._cache.put(loaded.match_id, loaded)
        else:
            self._cache.pop(loaded.match_id)
            self._ended.put(loaded.match_id, loaded)

    # -------------------------------------------------------------------------- auth
    def _seat_of(self, loaded: Loaded, cred: MatchCredential) -> int:
        """Seat index, or SPECTATOR, for a match credential; raises Unauthenticated (for a
        credential that was re-issued since, or is past the match's ``credential_ttl``, too:
        the same answer as for an invalid one)."""
        meta, life = loaded.meta, loaded.life
        try:
            viewer = viewer_of(
                cred.token,
                cred.who,
                cred.match_id,
                meta.match_id,
                meta.cred_key,
                len(meta.seats),
                lambda v: life.credential(v)[0],
            )
        except InvalidCredential as exc:
            raise E.Unauthenticated(str(exc)) from None
        if self._expired(loaded, viewer):
            raise E.Unauthenticated("invalid credential")
        bind_operator(meta.owner)
        return viewer

    def _expires_at(self, loaded: Loaded, viewer: int) -> float | None:
        """When the current credential of ``viewer`` expires (seconds since the epoch), or
        ``None`` when it lasts as long as the match is kept."""
        ttl = loaded.setup.lifecycle.credential_ttl
        if not ttl:
            return None
        return loaded.meta.created_at + (loaded.life.credential(viewer)[1] + ttl) / 1000

    def _expired(self, loaded: Loaded, viewer: int) -> bool:
        end = self._expires_at(loaded, viewer)
        return end is not None and self.now() >= end

    def _still_valid(self, loaded: Loaded, caller: Caller, viewer: int, generation: int) -> None:
        """An open stream's credential is still the current one and not expired (checked at
        every message: a re-issue or an expiry ends the stream with UNAUTHENTICATED)."""
        if isinstance(caller, MatchCredential) and (
            loaded.life.credential(viewer)[0] != generation or self._expired(loaded, viewer)
        ):
            raise E.Unauthenticated("invalid credential")

    def _viewer(self, loaded: Loaded, caller: Caller) -> int:
        """Who is looking: a seat, or SPECTATOR (spectator credential or the owner)."""
        if isinstance(caller, Operator):
            self._own(loaded, caller)
            return SPECTATOR
        return self._seat_of(loaded, caller)

    @staticmethod
    def _own(loaded: Loaded, operator: Operator) -> None:
        if operator.name != loaded.meta.owner:
            raise E.PermissionDenied("this match belongs to another operator")

    def _acting_seat(self, loaded: Loaded, cred: MatchCredential) -> int:
        seat = self._seat_of(loaded, cred)
        if seat == SPECTATOR:
            raise E.PermissionDenied("a spectator credential cannot act")
        return seat

    # ------------------------------------------------------------------------- views
    def _view(self, loaded: Loaded, viewer: int) -> SeatView:
        """What ``viewer`` sees of the match at ``loaded.version``; shared and read-only (a
        match at a given version always looks the same to the same viewer)."""
        key = (loaded.match_id, loaded.version, viewer)
        hit = self._views.get(key)
        if hit is None or hit[0] is not loaded.state:
            seat = None if viewer == SPECTATOR else viewer
            made = view(
                loaded.state,
                seat,
                loaded.version,
                loaded.status,
                loaded.life,
                loaded.meta.created_at,
                self.now(),
            )
            hit = self._views.put(key, (loaded.state, made))
        return hit[1]

    def _delay(self, loaded: Loaded, viewer: int) -> int:
        """Actions a viewer sees the match late (spectators of an active match)."""
        if viewer != SPECTATOR or loaded.status is not MatchStatus.ACTIVE:
            return 0
        return loaded.setup.lifecycle.spectator_delay

    async def _target(self, loaded: Loaded, viewer: int) -> tuple[int, SeatView]:
        """The version ``viewer`` sees the match at, and its view there (spectators with a
        delay see it that many actions late)."""
        delay = self._delay(loaded, viewer)
        if not delay:
            return loaded.version, self._view(loaded, viewer)
        past = await self._history(loaded)
        point = past.delayed(delay)
        key = (loaded.match_id, point.version, SPECTATOR)
        hit = self._views.get(key)
        if hit is None or hit[0] is not point.state:
            made = view(
                point.state,
                None,
                point.version,
                MatchStatus.ACTIVE,
                point.life,
                loaded.meta.created_at,
                self.now(),
            )
            hit = self._views.put(key, (point.state, made))
        return point.version, hit[1]

    # ----------------------------------------------------------------------- commits
    async def _commit(
        self,
        loaded: Loaded,
        step: table.Step,
        record: records.RecordStep | None,
        *,
        status: MatchStatus | None = None,
        request_id: str | None = None,
        reply: bytes = b"",
        relist: bool = False,
    ) -> tuple[Loaded, CommitResult]:
        """Commit one step of the match (``status``: the state it ends in, if it ends it);
        returns the new ``Loaded`` and the store's result. The record step's version and time
        are filled in here. Raises the store's ``VersionConflict`` (nothing written)."""
        meta = loaded.meta
        if status is None and te.is_over(step.state):
            status = MatchStatus.FINISHED
        ms = meta.at(self.now())
        now = meta.created_at + ms / 1000
        new_version = loaded.version + len(step.entries)
        done = Loaded(meta, loaded.setup, step.state, step.life, new_version, status or loaded.status, now)
        done.meta_bytes = loaded.meta_bytes
        summary = listing(info_of(done)) if status is not None or relist else None
        raw_record = None
        if record is not None:
            stamped = dataclasses.replace(record, version=new_version, time=now, clock_ms=step.clock_ms)
            raw_record = records.pack_step(stamped, meta.created_at)
        outbox = self._outbox(done, step.entries, loaded.version + 1)
        net = self._relay_net(outbox)
        raws = [pack_entry(e, ms) for e in step.entries]
        due = None if status is not None else table.due(loaded.setup, step.state, step.life)
        if due is not None and loaded.status is MatchStatus.ACTIVE:
            # A wakeup no later than the match's current due time is already queued (every
            # commit keeps that true), so only an earlier due time needs registering.
            before = table.due(loaded.setup, loaded.state, loaded.life)
            if before is not None and before <= due:
                due = None
        try:
            res = await self.store.commit(
                meta.match_id,
                expected_version=loaded.version,
                state=encode_state(step.state, step.life, with_rules=self.state_with_rules),
                events=raws,
                request_id=request_id,
                reply=reply,
                status=None if status is None else status.value,
                updated_at=now,
                summary=summary,
                record=raw_record,
                wake=None if due is None else meta.epoch_ms(due),
                outbox=outbox,
                relay=net,
            )
        except StoreMatchNotFound as exc:
            raise E.MatchNotFound(f"no match {meta.match_id!r}") from exc
        if res.duplicate:
            return loaded, res
        if net is not None:
            self._relay_soon(meta.match_id, net)
        for i, (entry, raw) in enumerate(zip(step.entries, raws, strict=True), loaded.version + 1):
            self._entries.put((meta.match_id, i), (raw, entry, now))
        self._keep(done)
        return done, res

    def _outbox(self, done: Loaded, entries: Sequence[LogEntry], first_version: int) -> list[bytes]:
        """The operator events of a commit, as the match's outbox stores them."""
        info = info_of(done) if done.status is not MatchStatus.ACTIVE else None
        events = operator_events.of_entries(
            done.match_id,
            entries,
            first_version,
            done.updated_at,
            done.meta.labels,
            None if info is None else info.result,
        )
        return [outbox_item(done.meta.owner, ev) for ev in events]

    def _relay_net(self, outbox: Sequence[bytes]) -> RelayWake | None:
        """The relay queue's safety net for a commit's operator events (:data:`RELAY`)."""
        if not outbox:
            return None
        return RelayWake(round(self.now() * 1000) + RELAY_GRACE_MS, secrets.token_bytes(8))

    def _relay_soon(self, match_id: str, net: RelayWake) -> None:
        """Relay the outbox a commit just wrote, with the other commits' of the next
        :data:`RELAY_GATHER_SECONDS`, then release the commit's safety net."""
        if self.relay is None:
            return
        self._to_relay[match_id] = net  # a later commit's net replaces an earlier one's
        if self._gathering is None or self._gathering.done():
            self._gathering = self._spawn_relay(self._relay_gathered())

    def _spawn_relay(self, work: Coroutine[Any, Any, bool]) -> asyncio.Task[bool]:
        task = asyncio.ensure_future(work)
        self._relays.add(task)
        task.add_done_callback(self._relayed)
        return task

    async def _relay_gathered(self) -> bool:
        assert self.relay is not None
        await asyncio.sleep(RELAY_GATHER_SECONDS)
        gathered, self._to_relay = self._to_relay, {}
        self._gathering = None  # commits from now on gather for the next relay
        busy = set(await self.relay(list(gathered)))
        # Any commit that queued a match after the one kept here replaced the token (its own
        # relay releases it); every commit queued before it committed before it, so the
        # relay just done moved its events too.
        done = [(m, net.token) for m, net in gathered.items() if m not in busy]
        await self.store.queue_release_many(RELAY, done)
        for match_id in busy:
            # another relay holds the outbox (it took it before these events were there):
            # try again shortly, then leave the events to the relay queue
            self._spawn_relay(self._relay_again(match_id, gathered[match_id]))
        return True

    async def _relay_again(self, match_id: str, net: RelayWake) -> bool:
        assert self.relay is not None
        for pause in RELAY_RETRIES:
            if pause is None:
                return False
            await asyncio.sleep(pause)
            if not await self.relay([match_id]):
                await self.store.queue_release(RELAY, match_id, net.token)
                return True
        return False

    async def relays_done(self) -> None:
        """Wait until every relay this worker has started after its commits is over (and the
        ones they started: a retry), failed or not: the operator events of the commits made so
        far are in their streams, or left to the relay queue."""
        while self._relays:
            await asyncio.gather(*self._relays, return_exceptions=True)

    def _relayed(self, task: asyncio.Task[bool]) -> None:
        self._relays.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("relay failed; the relay queue retries it", exc_info=task.exception())

    async def _step(
        self,
        match_id: str,
        decide: Callable[[Loaded], tuple[table.Step, records.RecordStep | None, MatchStatus | None] | None],
        *,
        relist: bool = False,
    ) -> Loaded:
        """Run a step computed by ``decide`` from the freshly loaded match and commit it,
        again on a version conflict; ``decide`` returns ``None`` for nothing to do."""
        for _ in range(5):
            loaded = await self._load(match_id, fresh=True)
            decided = decide(loaded)
            if decided is None:
                return loaded
            step, record, status = decided
            try:
                done, _ = await self._commit(loaded, step, record, status=status, relist=relist)
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                continue
            return done
        raise E.ServiceError(
            "the match kept changing; retry", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
        )

    # ----------------------------------------------------------------------- create
    def _lifecycle(self, requested: Lifecycle) -> Lifecycle:
        """The match's lifecycle settings, checked, with the server's defaults applied."""
        problems: list[E.FieldViolation] = []
        tc = requested.time_control
        if tc is not None:
            problems += [E.FieldViolation(f"settings.time_control.{f}", d) for f, d in tc.problems()]
        for name in ("join_window", "idle_timeout", "disconnect_grace", "credential_ttl"):
            value = getattr(requested, name)
            if not 0 <= value <= MAX_DURATION_MS or 0 < value < 1000:
                problems.append(E.FieldViolation(f"settings.{name}", "between 1 second and 1 day, or unset"))
        if not 0 <= requested.spectator_delay <= 1000:
            problems.append(E.FieldViolation("settings.spectator_delay_actions", "between 0 and 1000"))
        if problems:
            raise E.InvalidArgument(
                f"invalid match settings: {problems[0].field}: {problems[0].description}",
                field_violations=problems,
            )
        if not requested.idle_timeout and tc is None:
            return dataclasses.replace(requested, idle_timeout=self.defaults.idle_timeout_ms)
        return requested

    async def create_match(self, operator: Operator, req: T.CreateMatchRequest) -> T.CreateMatchResponse:
        overrides = dict(req.overrides)
        if req.players is not None:
            overrides["players"] = req.players
        rules = rules_of(req.preset, overrides)
        if req.seats and len(req.seats) != rules.players:
            raise E.InvalidArgument(
                f"{len(req.seats)} seats given for {rules.players} players",
                field_violations=[E.FieldViolation("seats", f"give {rules.players} seats or none")],
            )
        if req.first_dealer is not None and not 0 <= req.first_dealer < rules.players:
            raise E.InvalidArgument(
                f"first_dealer must be a seat 0..{rules.players - 1}",
                field_violations=[E.FieldViolation("first_dealer", "out of range")],
            )
        probe = te.new_match(rules)
        for i, d in enumerate(req.deck_orders):
            try:
                te.deal(probe, d)
            except te.TrucoError as exc:
                raise E.InvalidArgument(
                    f"deck_orders[{i}]: {exc}",
                    field_violations=[E.FieldViolation(f"deck_orders[{i}]", str(exc))],
                ) from exc
        if req.seed is not None and not 16 <= len(req.seed) <= 64:
            raise E.InvalidArgument(
                "seed must be 16 to 64 bytes", field_violations=[E.FieldViolation("seed", "16 to 64 bytes")]
            )
        if len(req.client_seed) > MAX_CLIENT_SEED:
            raise E.InvalidArgument(
                f"client_seed is at most {MAX_CLIENT_SEED} bytes",
                field_violations=[E.FieldViolation("client_seed", f"at most {MAX_CLIENT_SEED} bytes")],
            )
        if len(req.labels) > 32 or any(len(k) > 64 or len(v) > 256 for k, v in req.labels.items()):
            raise E.InvalidArgument(
                "at most 32 labels, keys up to 64 and values up to 256 characters",
                field_violations=[E.FieldViolation("settings.labels", "too many or too long")],
            )
        lifecycle = self._lifecycle(req.lifecycle)
        if req.request_id:
            digest = hashlib.sha256(f"{operator.name}\n{req.request_id}".encode()).hexdigest()
            match_id = "m" + digest[:20]
        else:
            match_id = "m" + secrets.token_hex(10)
        if req.deck_orders:
            source = DealSource.OPERATOR_DECKS
        elif req.seed is not None:
            source = DealSource.OPERATOR_SEED
        else:
            source = DealSource.SERVER_SEED
        seats = table.seats_of(rules, [(s.name, s.kind) for s in req.seats])
        fingerprint = create_fingerprint(
            {
                "rules": rules.to_dict(),
                "seats": seats_to_dicts(seats),
                "seed": req.seed.hex() if req.seed is not None else None,
                "decks": [list(d) for d in req.deck_orders],
                "first_dealer": req.first_dealer,
                "labels": dict(req.labels),
                "lifecycle": lifecycle.to_dict(),
                "client_seed": req.client_seed.hex(),
            }
        )
        meta = Meta(
            match_id=match_id,
            owner=operator.name,
            created_at=self.now(),
            rules=rules.to_dict(),
            seats=seats_to_dicts(seats),
            seed=(req.seed or new_seed()).hex(),
            cred_key=secrets.token_hex(32),
            deck_orders=[list(d) for d in req.deck_orders],
            first_dealer=req.first_dealer,
            labels=dict(req.labels),
            lifecycle=lifecycle.to_dict(),
            source=source.value,
            request_fingerprint=fingerprint if req.request_id else "",
        )
        setup = meta.setup()
        step = table.start(setup, seats, req.client_seed, 0)
        due = table.due(setup, step.state, step.life)
        loaded = Loaded(
            meta, setup, step.state, step.life, len(step.entries), MatchStatus.ACTIVE, meta.created_at
        )
        meta_bytes = meta.to_bytes(plain=self.state_with_rules)
        outbox = self._outbox(loaded, step.entries, 1)
        net = self._relay_net(outbox)
        try:
            version = await self.store.create(
                match_id,
                meta_bytes,
                encode_state(step.state, step.life, with_rules=self.state_with_rules),
                [pack_entry(e, 0) for e in step.entries],
                MatchIndexEntry(
                    match_id, operator.name, MatchStatus.ACTIVE, meta.created_at, listing(info_of(loaded))
                ),
                wake=None if due is None else meta.epoch_ms(due),
                outbox=outbox,
                relay=net,
            )
        except MatchExists:
            loaded = await self._load(match_id, fresh=True)
            if loaded.meta.owner != operator.name:  # pragma: no cover - ids are per owner
                raise E.RequestIdReused("request_id already used") from None
            if loaded.meta.request_fingerprint not in ("", fingerprint):
                raise E.RequestIdReused("request_id was already used to create a different match") from None
            log.info("create_match.replayed", match_id=match_id)
            return self._created(loaded)
        loaded.version = version
        loaded.meta_bytes = meta_bytes
        self._keep(loaded)
        if net is not None:
            self._relay_soon(match_id, net)
        metrics.MATCHES_CREATED.inc()
        log.info("create_match", match_id=match_id, preset=rules.name, players=rules.players)
        return self._created(loaded)

    def _created(self, loaded: Loaded) -> T.CreateMatchResponse:
        """The match and its current credentials (a retried CreateMatch after a re-issue gets
        the re-issued ones)."""
        meta, life = loaded.meta, loaded.life
        seats = tuple(meta.token(i, life.credential(i)[0]) for i in range(len(meta.seats)))
        spectators = meta.token(SPECTATOR, life.credential(SPECTATOR)[0])
        return T.CreateMatchResponse(info_of(loaded), seats, spectators)

    # ------------------------------------------------------------------------- query
    async def get_match(self, caller: Caller, req: T.GetMatchRequest) -> T.GetMatchResponse:
        loaded = await self._load(req.match_id, fresh=True)
        viewer = self._viewer(loaded, caller)
        _, seen = await self._target(loaded, viewer)
        return T.GetMatchResponse(info_of(loaded), seen)

    async def list_matches(self, operator: Operator, req: T.ListMatchesRequest) -> T.ListMatchesResponse:
        if req.page_size < 0:
            raise E.InvalidArgument(
                "page_size must not be negative", field_violations=[E.FieldViolation("page_size", "negative")]
            )
        size = min(req.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        try:
            entries, token = await self.store.list_matches(
                operator.name, None if req.status is None else req.status.value, size, req.page_token or None
            )
        except StoreInvalidPageToken as exc:
            raise E.InvalidArgument(
                str(exc), field_violations=[E.FieldViolation("page_token", str(exc))]
            ) from exc
        return T.ListMatchesResponse(tuple(listed(e) for e in entries), token)

    async def get_match_record(
        self, caller: Caller, req: T.GetMatchRecordRequest
    ) -> T.GetMatchRecordResponse:
        """The match's record as the caller may see it (everything once it is over)."""
        loaded = await self._load(req.match_id, fresh=True)
        viewer = self._viewer(loaded, caller)
        past = await self._history(loaded)
        upto, _ = await self._target(loaded, viewer)
        over = loaded.status is not MatchStatus.ACTIVE
        seat = None if viewer == SPECTATOR else viewer
        steps = []
        for p in past.points[1:]:
            if p.version > upto:
                break
            steps.append(p.step if over else records.hidden_for(p.step, seat))
        hands = [h for h in records.hands_of([e for _, e, _ in past.entries], 1) if h.version <= upto]
        reveal = None
        if over:
            last, _, _ = past.entries[-1]
            entry, _ = past.entry(last)
            reveal = entry if isinstance(entry, MatchRevealed) else None
        record = records.MatchRecord(
            match=info_of(loaded), hands=tuple(hands), steps=tuple(steps), reveal=reveal
        )
        return T.GetMatchRecordResponse(record)

    # --------------------------------------------------------------- operator steps
    async def cancel_match(self, operator: Operator, req: T.CancelMatchRequest) -> T.CancelMatchResponse:
        def decide(loaded: Loaded) -> Any:
            self._own(loaded, operator)
            if loaded.status is MatchStatus.CANCELLED:
                return None  # idempotent
            if loaded.status is not MatchStatus.ACTIVE:
                raise E.MatchNotActive(f"match is {loaded.status}", current_version=loaded.version)
            reason = req.reason[:200]
            step = table.cancel(loaded.setup, loaded.state, loaded.life, reason)
            return (
                step,
                records.RecordStep(version=0, time=0.0, cancel=MatchCancelled(reason=reason)),
                MatchStatus.CANCELLED,
            )

        done = await self._step(req.match_id, decide)
        log.info("cancel_match", match_id=req.match_id)
        return T.CancelMatchResponse(info_of(done))

    async def add_time(self, operator: Operator, req: T.AddTimeRequest) -> T.MatchResponse:
        if not 1000 <= req.added_ms <= MAX_DURATION_MS:
            raise E.InvalidArgument(
                "added must be between 1 second and 1 day",
                field_violations=[E.FieldViolation("added", "1 s to 1 day")],
            )

        def decide(loaded: Loaded) -> Any:
            self._own(loaded, operator)
            self._active(loaded)
            if loaded.setup.lifecycle.time_control is None:
                raise E.ServiceError(
                    "this match has no clock", code=E.Code.FAILED_PRECONDITION, reason=E.Reason.NO_CLOCK
                )
            if req.seat is not None and not 0 <= req.seat < loaded.rules.players:
                raise E.InvalidArgument(
                    f"seat must be 0..{loaded.rules.players - 1}",
                    field_violations=[E.FieldViolation("seat", "no such seat")],
                )
            step = table.add_time(loaded.setup, loaded.state, loaded.life, req.seat, req.added_ms)
            added = TimeAdded(seat=req.seat, added=req.added_ms)
            return step, records.RecordStep(version=0, time=0.0, add_time=added), None

        return T.MatchResponse(info_of(await self._step(req.match_id, decide)))

    async def adjudicate_match(self, operator: Operator, req: T.AdjudicateMatchRequest) -> T.MatchResponse:
        def decide(loaded: Loaded) -> Any:
            self._own(loaded, operator)
            self._active(loaded)
            if not 0 <= req.winner_team < loaded.rules.sides:
                raise E.InvalidArgument(
                    f"winner_team must be 0..{loaded.rules.sides - 1}",
                    field_violations=[E.FieldViolation("winner_team", "no such team")],
                )
            reason = req.reason[:200]
            now = loaded.meta.at(self.now())
            step = table.adjudicate(loaded.setup, loaded.state, loaded.life, req.winner_team, reason, now)
            awarded = MatchAdjudicated(winner_team=req.winner_team, reason=reason)
            return step, records.RecordStep(version=0, time=0.0, adjudicate=awarded), MatchStatus.FINISHED

        done = await self._step(req.match_id, decide)
        log.info("adjudicate_match", match_id=req.match_id, winner_team=req.winner_team)
        return T.MatchResponse(info_of(done))

    async def reissue_credential(
        self, operator: Operator, req: T.ReissueCredentialRequest
    ) -> T.ReissueCredentialResponse:
        """A new credential for one seat (``None``: the spectators), committed as a step (a
        ``credential_reissued`` event), so the previous one is refused on every worker from its
        version on. Idempotent on ``request_id``: its record holds the viewer, the generation
        and the time it was issued, so a retry rebuilds the same token."""
        viewer = SPECTATOR if req.seat is None else req.seat
        key = None if req.request_id is None else reissue_key(req.request_id)
        if key is not None:
            first = await self._reissued(operator, req.match_id, key, viewer)
            if first is not None:
                return first
        for _ in range(5):
            loaded = await self._load(req.match_id, fresh=True)
            self._own(loaded, operator)
            self._active(loaded)
            if req.seat is not None and not 0 <= req.seat < loaded.rules.players:
                raise E.InvalidArgument(
                    f"seat must be 0..{loaded.rules.players - 1}",
                    field_violations=[E.FieldViolation("seat", "no such seat")],
                )
            now = loaded.meta.at(self.now())
            step = table.reissue(loaded.setup, loaded.state, loaded.life, req.seat, now)
            generation, at = step.life.credential(viewer)
            record = records.RecordStep(
                version=0, time=0.0, reissue_credential=CredentialReissued(seat=req.seat)
            )
            try:
                done, res = await self._commit(
                    loaded,
                    step,
                    record,
                    request_id=key,
                    reply=b"%d:reissue.%d.%d:1" % (viewer, generation, at),
                )
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                continue
            if res.duplicate:  # a concurrent retry committed it first
                fresh = await self._load(req.match_id, fresh=True)
                return self._reissue_reply(fresh, viewer, res.version, res.reply)
            log.info("reissue_credential", match_id=req.match_id, seat=req.seat)
            return self._reissue_reply(done, viewer, done.version, None)
        raise E.ServiceError(
            "the match kept changing; retry", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
        )

    async def _reissued(
        self, operator: Operator, match_id: str, key: str, viewer: int
    ) -> T.ReissueCredentialResponse | None:
        """The first result of a retried re-issue, or ``None`` when ``key`` is new."""
        loaded = await self._load(match_id, fresh=True)
        self._own(loaded, operator)
        found = await self.store.lookup_request(match_id, key)
        if found is None:
            return None
        return self._reissue_reply(loaded, viewer, found.version, found.reply)

    def _reissue_reply(
        self, loaded: Loaded, viewer: int, version: int, reply: bytes | None
    ) -> T.ReissueCredentialResponse:
        """The response of a re-issue: of the current credential (``reply`` None), or of the one
        a recorded ``reply`` (``<viewer>:reissue.<generation>.<issued at>:1``) describes."""
        if reply is None:
            generation, at = loaded.life.credential(viewer)
        else:
            first, kind, _ = reply.decode().split(":")
            parts = kind.split(".")
            if int(first) != viewer or len(parts) != 3 or parts[0] != "reissue":
                raise E.RequestIdReused("request_id was already used for another credential")
            generation, at = int(parts[1]), int(parts[2])
        ttl = loaded.setup.lifecycle.credential_ttl
        expires = loaded.meta.created_at + (at + ttl) / 1000 if ttl else None
        return T.ReissueCredentialResponse(
            loaded.meta.token(viewer, generation),
            None if viewer == SPECTATOR else viewer,
            version,
            expires,
        )

    @staticmethod
    def _active(loaded: Loaded) -> None:
        if loaded.status is not MatchStatus.ACTIVE:
            raise E.MatchNotActive(f"match is {loaded.status}", current_version=loaded.version)

    # -------------------------------------------------------------------------- join
    async def join_match(self, cred: MatchCredential, req: T.JoinMatchRequest) -> T.JoinMatchResponse:
        if len(req.client_seed) > MAX_CLIENT_SEED:
            raise E.InvalidArgument(
                f"client_seed is at most {MAX_CLIENT_SEED} bytes",
                field_violations=[E.FieldViolation("client_seed", f"at most {MAX_CLIENT_SEED} bytes")],
            )
        seat_box: list[int] = []

        def decide(loaded: Loaded) -> Any:
            seat = self._acting_seat(loaded, cred)
            seat_box[:] = [seat]
            self._active(loaded)
            if loaded.life.joined[seat]:
                if req.client_seed:
                    given = next((h for s, h in loaded.life.client_seeds if s == seat), None)
                    if given != req.client_seed.hex():
                        raise E.ServiceError(
                            "this seat has joined already: its client seed cannot change",
                            code=E.Code.FAILED_PRECONDITION,
                            reason=E.Reason.ALREADY_STARTED,
                        )
                return None
            now = loaded.meta.at(self.now())
            step = table.join(loaded.setup, loaded.state, loaded.life, seat, req.client_seed, now)
            joined = SeatJoined(seat=seat, client_seed=req.client_seed)
            return step, records.RecordStep(version=0, time=0.0, seat=seat, join=joined), None

        done = await self._step(req.match_id, decide, relist=True)
        seat = seat_box[0]
        await self._touch(done, seat)
        return T.JoinMatchResponse(done.version, self._view(done, seat), done.rules)

    # ------------------------------------------------------------------------ action
    async def submit_action(
        self, cred: MatchCredential, req: T.SubmitActionRequest
    ) -> T.SubmitActionResponse:
        match_id, action = req.match_id, req.action
        fingerprint = action_fingerprint(action)
        fresh = False
        for _attempt in range(4):
            loaded = await self._load(match_id, fresh=fresh)
            try:
                seat = self._acting_seat(loaded, cred)
            except E.Unauthenticated:
                if fresh:
                    raise
                fresh = True  # the cached copy may be an earlier incarnation of this id
                continue
            if action.card is not None and action.card not in loaded.rules.deck_cards:
                where = "action.discard.card" if action.kind == "discard" else "action.play_card.card"
                metrics.ACTIONS.labels("invalid").inc()
                raise E.InvalidArgument(
                    f"{action.card!r} is not a card of this match's deck",
                    field_violations=[E.FieldViolation(where, "unknown card code")],
                )
            refusal: E.ServiceError | None = None
            step: table.Step | None = None
            if loaded.status is not MatchStatus.ACTIVE:
                refusal = E.MatchNotActive(f"match is {loaded.status}", current_version=loaded.version)
            elif req.expected_version is not None and req.expected_version != loaded.version:
                refusal = E.StaleVersion(
                    f"expected_version {req.expected_version} but the match is at version {loaded.version}",
                    current_version=loaded.version,
                )
            elif not loaded.life.started:
                refusal = E.IllegalAction(
                    "the first hand is dealt once every seat has joined (JoinMatch)",
                    legal_actions=[],
                    current_version=loaded.version,
                )
            else:
                try:
                    now = loaded.meta.at(self.now())
                    step = table.act(loaded.setup, loaded.state, loaded.life, seat, action, now)
                except te.TrucoError as exc:
                    refusal = self._illegal(exc, loaded)
            if refusal is not None or step is None:
                if not fresh:  # this worker's copy may be stale: decide again on fresh state
                    fresh = True
                    continue
                replay = await self._replayed(loaded, seat, req.request_id, fingerprint)
                if replay is not None:  # a retry of an action that was applied the first time
                    return replay
                metrics.ACTIONS.labels("stale" if isinstance(refusal, E.StaleVersion) else "illegal").inc()
                assert refusal is not None
                raise refusal
            record = records.RecordStep(version=0, time=0.0, seat=seat, action=action)
            try:
                done, res = await self._commit(
                    loaded,
                    step,
                    record,
                    request_id=req.request_id or None,
                    reply=compact_reply(seat, fingerprint, len(step.entries)),
                )
            except VersionConflict:
                # Another writer got there first (or this worker's cache was stale): reload
                # and decide again; with expected_version the next round answers STALE_VERSION.
                metrics.COMMIT_CONFLICTS.inc()
                fresh = True
                continue
            if res.duplicate:
                loaded = await self._load(match_id, fresh=True)
                return await self._from_reply(loaded, seat, res.version, res.reply, fingerprint)
            mine = tuple(
                self._event_view(match_id, v, e, done.updated_at, seat)
                for v, e in enumerate(step.entries, loaded.version + 1)
            )
            metrics.ACTIONS.labels("accepted").inc()
            return T.SubmitActionResponse(
                match_id, seat, done.version, mine, self._view(done, seat), done.rules
            )
        raise E.ServiceError(
            "the match kept changing; retry", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
        )

    async def _replayed(
        self, loaded: Loaded, seat: int, request_id: str | None, fingerprint: str
    ) -> T.SubmitActionResponse | None:
        if not request_id:
            return None
        found = await self.store.lookup_request(loaded.match_id, request_id)
        if found is None:
            return None
        return await self._from_reply(loaded, seat, found.version, found.reply, fingerprint)

    async def _from_reply(
        self, loaded: Loaded, seat: int, version: int, reply: bytes, fingerprint: str
    ) -> T.SubmitActionResponse:
        """The first result of a retried ``request_id``, rebuilt from its record: the events
        of versions ``version - count + 1 .. version`` and the current view."""
        first_seat, first_fp, n = reply.decode().split(":")
        if int(first_seat) != seat or first_fp != fingerprint:
            metrics.ACTIONS.labels("invalid").inc()
            raise E.RequestIdReused("request_id was already used for a different action or seat")
        count = int(n)
        events = await self._events(loaded, version - count, version, seat)
        metrics.ACTIONS.labels("replayed").inc()
        return T.SubmitActionResponse(
            loaded.match_id, seat, version, events, self._view(loaded, seat), loaded.rules, duplicate=True
        )

    @staticmethod
    def _illegal(exc: te.TrucoError, loaded: Loaded) -> E.ServiceError:
        if isinstance(exc, te.NotYourTurnError):
            return E.NotYourTurn(str(exc), legal_actions=[], current_version=loaded.version)
        if isinstance(exc, te.IllegalActionError):
            return E.IllegalAction(str(exc), legal_actions=list(exc.legal), current_version=loaded.version)
        if isinstance(exc, te.MatchOverError):
            return E.MatchNotActive(str(exc), current_version=loaded.version)
        return E.InvalidArgument(str(exc), field_violations=[E.FieldViolation("action", str(exc))])

    # --------------------------------------------------------------------- the clock
    async def wake_match(self, match_id: str) -> int | None:
        """Do what is due in a match now (the scheduler's call for a claimed match): a clock
        expiry, a default move for an away seat, the end of the join window, the idle
        timeout. Returns the next wakeup (ms since the epoch), or ``None``. Raises
        :class:`MatchNotFound` for a match the store does not hold (yet: its wakeup is
        registered before its creation commits; or any more)."""
        loaded = await self._load(match_id, fresh=True)
        for _ in range(5):
            if loaded.status is not MatchStatus.ACTIVE:
                return None
            decided = await self._due_step(loaded)
            if decided is None:
                return await self._next_wake(loaded)
            step, record, status = decided
            try:
                loaded, _ = await self._commit(loaded, step, record, status=status)
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                loaded = await self._load(match_id, fresh=True)
                continue
            metrics.LIFECYCLE_STEPS.labels(record.cause.value if record else "none").inc()
        return await self._next_wake(loaded)

    async def _due_step(
        self, loaded: Loaded
    ) -> tuple[table.Step, records.RecordStep, MatchStatus | None] | None:
        setup, state, life = loaded.setup, loaded.state, loaded.life
        lc = setup.lifecycle
        now = loaded.meta.at(self.now())
        if not life.started and lc.join_window and now >= lc.join_window:
            step = table.abort(setup, state, life, "not_joined")
            missing = tuple(i for i, j in enumerate(life.joined) if not j)
            abort = MatchAborted(reason="not_joined", seats=missing)
            return (
                step,
                records.RecordStep(version=0, time=0.0, cause=records.StepCause.SERVER, abort=abort),
                MatchStatus.ABORTED,
            )
        end = life.deadline()
        if end is not None and now >= end:
            done = table.expire(setup, state, life, TimeoutCause.CLOCK, now)
            if done is not None:
                return done, self._timeout_record(done, records.StepCause.CLOCK), None
        if (
            lc.disconnect_grace
            and life.started
            and life.awaited is not None
            and now >= life.since + lc.disconnect_grace
        ):
            seen = (await self.store.presence(loaded.match_id)).get(life.awaited, 0)
            away_ms = self.now() * 1000 - seen
            if away_ms >= max(lc.disconnect_grace, self.presence_timeout * 1000):
                done = table.expire(setup, state, life, TimeoutCause.DISCONNECTED, now)
                if done is not None:
                    return done, self._timeout_record(done, records.StepCause.DISCONNECTED), None
        if lc.idle_timeout and lc.time_control is None and now >= life.last_activity + lc.idle_timeout:
            step = table.abort(setup, state, life, "idle")
            abort = MatchAborted(reason="idle")
            return (
                step,
                records.RecordStep(version=0, time=0.0, cause=records.StepCause.SERVER, abort=abort),
                MatchStatus.ABORTED,
            )
        return None

    @staticmethod
    def _timeout_record(step: table.Step, cause: records.StepCause) -> records.RecordStep:
        timed = step.entries[0]
        assert isinstance(timed, TurnTimedOut)
        if timed.action is None:
            forfeit = next(e for e in step.entries if isinstance(e, MatchForfeited))
            return records.RecordStep(version=0, time=0.0, seat=timed.seat, cause=cause, forfeit=forfeit)
        return records.RecordStep(version=0, time=0.0, seat=timed.seat, cause=cause, action=timed.action)

    async def _next_wake(self, loaded: Loaded) -> int | None:
        """The match's next wakeup (ms since the epoch): its due time, or, for an away check
        that found the seat present, one more grace from now."""
        setup, life = loaded.setup, loaded.life
        due = table.due(setup, loaded.state, life)
        if due is None:
            return None
        lc = setup.lifecycle
        now = loaded.meta.at(self.now())
        if due <= now and lc.disconnect_grace and life.awaited is not None:
            # only the away check can be due and not done: the seat is there; look again later
            others = [
                t for t in (life.deadline(), lc.join_window if not life.started else None) if t is not None
            ]
            due = min([now + lc.disconnect_grace, *[t for t in others if t > now]])
        return loaded.meta.epoch_ms(max(due, now))

    # ------------------------------------------------------------------------ stream
    async def _touch(self, loaded: Loaded, seat: int) -> None:
        """Record that ``seat`` is here (at most once per half heartbeat)."""
        if seat == SPECTATOR or not loaded.setup.lifecycle.disconnect_grace:
            return
        key = (loaded.match_id, seat)
        now = self.now()
        last = self._touched.get(key)
        if last is not None and now - last < self.heartbeat_seconds / 2:
            return
        self._touched.put(key, now)
        await self.store.touch(loaded.match_id, seat, round(now * 1000))

    async def stream(self, caller: Caller, req: T.StreamRequest) -> AsyncIterator[T.StreamUpdate]:
        """Observation feed of one seat (or a spectator), resumable from any version.

        The first message comes at once: every event after ``from_version`` (from the log,
        or rebuilt from the record when the log no longer holds them), or a snapshot when
        ``from_version`` is absent, with the current view. Then one message per commit, a
        heartbeat (with the clock) after ``heartbeat_seconds`` of silence, and the stream ends
        after the message that shows the match is over. A spectator of a match with a
        spectator delay sees it that many actions late. Raises :class:`errors.ShuttingDown`
        when the worker stops.
        """
        match_id, from_version = req.match_id, req.from_version
        loaded = await self._load(match_id, fresh=True)
        viewer = self._viewer(loaded, caller)
        generation = loaded.life.credential(viewer)[0]
        if from_version is not None and (from_version < 0 or from_version > loaded.version):
            raise E.InvalidArgument(
                f"from_version must be 0..{loaded.version}",
                field_violations=[E.FieldViolation("from_version", "beyond the current version")],
                current_version=loaded.version,
            )
        metrics.STREAM_SUBSCRIBERS.inc()
        try:
            await self._touch(loaded, viewer)
            target, seen = await self._target(loaded, viewer)
            if from_version is None:
                yield T.StreamUpdate(target, (), seen, loaded.rules, snapshot=True)
            else:
                events = await self._events(loaded, min(from_version, target), target, viewer)
                yield T.StreamUpdate(target, events, seen, loaded.rules)
            last = max(target, from_version or 0)
            if loaded.status is not MatchStatus.ACTIVE:
                return
            async for upd in self._follow(loaded, caller, viewer, generation, last):
                yield upd
                if upd.match_state is not MatchStatus.ACTIVE:
                    return
        finally:
            metrics.STREAM_SUBSCRIBERS.dec()

    async def _at_least(self, loaded: Loaded, version: int) -> Loaded:
        cur = await self._load(loaded.match_id)
        if cur.version < version or cur.meta.incarnation != loaded.meta.incarnation:
            cur = await self._load(loaded.match_id, fresh=True)
        return self._same(loaded, cur)

    @staticmethod
    def _same(loaded: Loaded, cur: Loaded) -> Loaded:
        """``cur`` when it is the incarnation a stream started on; else the match it followed
        is gone (expired, or lost by the store, and its id created again): NOT_FOUND."""
        if cur.meta.incarnation != loaded.meta.incarnation:
            raise E.MatchNotFound(f"match {loaded.match_id!r} no longer exists")
        return cur

    async def _follow(
        self, loaded: Loaded, caller: Caller, viewer: int, generation: int, last: int
    ) -> AsyncIterator[T.StreamUpdate]:
        match_id = loaded.match_id
        sub = self.store.subscribe(match_id, loaded.version, queue_size=self.queue_size)
        it = sub.__aiter__()
        stop = asyncio.ensure_future(self.stopping.wait())
        nxt: asyncio.Future[Any] | None = None
        try:
            while True:
                if nxt is None:
                    nxt = asyncio.ensure_future(it.__anext__())
                done, _ = await asyncio.wait(
                    {nxt, stop}, timeout=self.heartbeat_seconds, return_when=asyncio.FIRST_COMPLETED
                )
                if stop in done:
                    raise E.ShuttingDown()
                if not done:
                    cur = self._same(loaded, await self._load(match_id, fresh=True))
                    self._still_valid(cur, caller, viewer, generation)
                    await self._touch(cur, viewer)
                    clock = clock_view(cur.life, cur.meta.created_at, self.now())
                    yield T.StreamUpdate(last, (), None, cur.rules, clock=clock)
                    continue
                batch = nxt.result()
                nxt = None
                delayed = self._delay(loaded, viewer) > 0
                if isinstance(batch, LogTrimmed) or delayed:  # fell behind, or sees it late
                    cur = self._same(loaded, await self._load(match_id, fresh=True))
                    self._still_valid(cur, caller, viewer, generation)
                    sub.resume_from(cur.version)
                    await self._touch(cur, viewer)
                    target, seen = await self._target(cur, viewer)
                    if target < last and not delayed:
                        # the store lost versions this stream delivered (a failover): say so
                        # with a snapshot of what survives, and go on from there
                        last = target
                        yield T.StreamUpdate(target, (), seen, cur.rules, snapshot=True)
                        continue
                    if target <= last and cur.status is MatchStatus.ACTIVE:
                        continue
                    events = await self._events(cur, last, target, viewer)
                    last = target
                    yield T.StreamUpdate(target, events, seen, cur.rules)
                    continue
                end = batch[-1][0]
                cur = await self._at_least(loaded, end)
                self._still_valid(cur, caller, viewer, generation)
                events = self._views_of(cur, batch, viewer)
                if cur.version > end:  # more commits since the batch: their events too
                    events += await self._events(cur, end, cur.version, viewer)
                    sub.resume_from(cur.version)
                await self._touch(cur, viewer)
                last = cur.version
                yield T.StreamUpdate(last, events, self._view(cur, viewer), cur.rules)
        finally:
            stop.cancel()
            if nxt is not None:
                nxt.cancel()
                await asyncio.gather(nxt, return_exceptions=True)
            await sub.aclose()
