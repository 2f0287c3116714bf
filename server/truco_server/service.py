"""The match API, transport-neutral: typed requests and a typed caller in, typed responses
out, typed errors (:mod:`truco_server.errors`) raised. The gRPC servicer and the REST face
are thin adapters over :class:`MatchService` (:mod:`truco_server.api.wire`).

* **Auth.** Operators present an API key; each seat and the spectators of a match present a
  credential derived from a per-match secret (:mod:`truco_server.api.auth`), verified here
  once the match is loaded.
* **One action, one atomic commit.** :mod:`truco_contract.table` computes the new state and
  the log entries (the engine's events, the deals that fall due, the reveal at the end);
  state, events and the idempotency record go to the store in one commit guarded by the
  version.
* **Exactly once.** A retried ``request_id`` returns the first result; a stale
  ``expected_version`` is refused; streams resume from any version.
* **No leak.** Log entries are redacted by the engine for the receiving viewer; views come
  from ``truco_engine.observe``; the seed leaves the server only in ``match_revealed`` once the
  match is over.

Workers keep small caches (the last state of recently used matches, decoded events, views);
the commit's version check makes them safe: a stale entry costs a reload and a retry.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import structlog

import truco_engine as te
from truco_contract import table
from truco_contract.events import (
    EventView,
    LogEntry,
    MatchStatus,
    SeatInfo,
    entry_from_dict,
    entry_to_dict,
    is_private,
    redact,
    seat_from_dict,
    seat_to_dict,
)
from truco_contract.fairness import new_seed
from truco_contract.matches import MatchInfo, MatchResult
from truco_contract.views import SeatView, view
from truco_server import errors as E
from truco_server import event_codec, metrics
from truco_server.api import types as T
from truco_server.api.auth import SPECTATOR, Caller, MatchCredential, Operator, issue, verify
from truco_server.lru import Lru
from truco_server.storage import (
    CommitResult,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchStore,
    VersionConflict,
)
from truco_server.storage import InvalidPageToken as StoreInvalidPageToken
from truco_server.storage import MatchNotFound as StoreMatchNotFound

log = structlog.get_logger("truco.service")

EVERYONE = -2
"""Cache key of what every viewer sees alike (a public event)."""
VIEW_CACHE_SIZE = 512
"""Views (and their events) kept per worker; see ``MatchService.__init__``."""
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


def canonical(obj: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the same bytes as ``json.dumps(obj,
    sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` for the str/int/bool/None
    trees the service writes (action fingerprints are compared across workers and
    versions, so the bytes must not depend on the encoder)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


# ------------------------------------------------------------------------------- state
@dataclass
class Meta:
    """Written once at creation; holds secrets (seed, credential key): server-only."""

    match_id: str
    owner: str
    created_at: float
    rules: dict[str, Any]
    seats: list[dict[str, Any]]
    seed: str
    cred_key: str
    deck_orders: list[list[str]]
    first_dealer: int | None
    labels: dict[str, str] = field(default_factory=dict)
    format: int = 2

    def to_bytes(self) -> bytes:
        """zlib-compressed canonical JSON (about half the size: it is kept in Redis for the
        match's whole life)."""
        return zlib.compress(canonical(self.__dict__), 9)

    @classmethod
    def from_bytes(cls, raw: bytes) -> Meta:
        return cls(**orjson.loads(zlib.decompress(raw)))

    @property
    def dealing(self) -> table.Dealing:
        return table.Dealing(bytes.fromhex(self.seed), tuple(tuple(d) for d in self.deck_orders))

    def seat_infos(self) -> tuple[SeatInfo, ...]:
        return tuple(seat_from_dict(s) for s in self.seats)

    def token(self, viewer: int) -> str:
        return issue(self.match_id, self.cred_key, viewer)


@dataclass
class Loaded:
    """A match as this worker last saw it."""

    meta: Meta
    rules: te.RuleSet
    state: te.MatchState
    version: int
    status: MatchStatus
    updated_at: float


def encode_state(state: te.MatchState) -> bytes:
    """JSON (keys in the engine's order: the blob is never compared, only decoded) and zlib
    level 1: written on every action, so it is on the hot path; level 6 and sorted keys
    cost twice the CPU for 3 % fewer bytes."""
    return zlib.compress(orjson.dumps(state.to_dict()), 1)


def decode_state(raw: bytes) -> te.MatchState:
    return te.MatchState.from_dict(orjson.loads(zlib.decompress(raw)))


def pack_entry(entry: LogEntry, ms: int) -> bytes:
    """The stored form of a log entry committed ``ms`` milliseconds after the match's
    creation (canonical JSON, compressed: :mod:`.event_codec`)."""
    d = entry_to_dict(entry)
    d["t"] = ms
    return event_codec.pack(canonical(d))


def unpack_entry(raw: bytes) -> tuple[LogEntry, int]:
    """A stored log entry and its commit time (ms after the match's creation)."""
    d = orjson.loads(event_codec.unpack(raw))
    ms = d.pop("t", 0)
    return entry_from_dict(d), int(ms)


def action_fingerprint(action: te.Action) -> str:
    """Short digest of an action: tells a retry from a reused ``request_id``."""
    return hashlib.sha256(canonical(action.to_dict())).hexdigest()[:12]


def compact_reply(seat: int, fingerprint: str, count: int) -> bytes:
    """The idempotency record of an accepted action: ``<seat>:<fingerprint>:<event count>``.

    It holds only what is needed to rebuild the first result: who acted, what (the
    fingerprint of the action) and how many events it committed (the store keeps the
    version after the commit, so they are ``version - count + 1 .. version``); the events
    are re-read from the log on a retry."""
    return b"%d:%s:%d" % (seat, fingerprint.encode(), count)


def rules_summary(rules: te.RuleSet) -> tuple[str, dict[str, Any]]:
    """A rule set as its preset and the fields that differ from it (a few bytes for a
    listing; :func:`rules_from_summary` rebuilds it)."""
    base = te.PRESETS.get(rules.name)
    full = rules.to_dict()
    if base is None:
        return "", full
    ref = base.to_dict()
    return rules.name, {k: v for k, v in full.items() if ref[k] != v}


def rules_from_summary(preset: str, diff: Mapping[str, Any]) -> te.RuleSet:
    base = te.PRESETS.get(preset)
    return te.RuleSet.from_dict(diff) if base is None else base.replace(**diff)


def _listing(meta: Meta, result: MatchResult | None = None) -> bytes:
    """The match's row in its owner's listing: everything ``ListMatches`` shows that does not
    change with every action (the result is added when the match finishes)."""
    preset, diff = rules_summary(te.RuleSet.from_dict(meta.rules))
    row: dict[str, Any] = {"p": preset, "r": diff, "s": meta.seats, "l": meta.labels}
    if result is not None:
        row["x"] = [result.winner_team, list(result.scores), list(result.games_won)]
    return zlib.compress(canonical(row), 6)


def _result(state: te.MatchState, status: MatchStatus) -> MatchResult | None:
    if status is not MatchStatus.FINISHED or state.winner is None:
        return None
    return MatchResult(winner_team=state.winner, scores=tuple(state.scores), games_won=tuple(state.games))


# ----------------------------------------------------------------------------- service
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
    ) -> None:
        self.store = store
        self.queue_size = queue_size
        self.heartbeat_seconds = heartbeat_seconds
        self.stopping = stopping or asyncio.Event()
        self._cache: Lru[str, Loaded] = Lru(cache_size)
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

    # ------------------------------------------------------------------------ events
    def _decoded(self, loaded: Loaded, version: int, raw: bytes) -> tuple[LogEntry, float]:
        key = (loaded.meta.match_id, version)
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
        match_id = loaded.meta.match_id
        out = []
        for v, raw in batch:
            entry, at = self._decoded(loaded, v, raw)
            out.append(self._event_view(match_id, v, entry, at, viewer))
        return tuple(out)

    # ------------------------------------------------------------------------- cache
    async def _load(self, match_id: str, *, fresh: bool = False) -> Loaded:
        if not fresh:
            hit = self._cache.get(match_id)
            if hit is not None:
                return hit
        snap = await self.store.load(match_id)
        if snap is None:
            self._cache.pop(match_id)
            raise E.MatchNotFound(f"no match {match_id!r}")
        meta = Meta.from_bytes(snap.meta)
        state = decode_state(snap.state)
        loaded = Loaded(meta, state.rules, state, snap.version, MatchStatus(snap.status), snap.updated_at)
        self._cache.put(match_id, loaded)
        return loaded

    # -------------------------------------------------------------------------- auth
    @staticmethod
    def _seat_of(loaded: Loaded, cred: MatchCredential) -> int:
        """Seat index, or SPECTATOR, for a match credential; raises Unauthenticated."""
        meta = loaded.meta
        return verify(cred, meta.match_id, meta.cred_key, len(meta.seats))

    def _viewer(self, loaded: Loaded, caller: Caller) -> int:
        """Who is looking: a seat, or SPECTATOR (spectator credential or the owner)."""
        if isinstance(caller, Operator):
            if caller.name != loaded.meta.owner:
                raise E.PermissionDenied("this match belongs to another operator")
            return SPECTATOR
        return self._seat_of(loaded, caller)

    # ----------------------------------------------------------------------- views
    def _view(self, loaded: Loaded, viewer: int) -> SeatView:
        """What ``viewer`` sees of the match at ``loaded.version``; shared and read-only (a
        match at a given version always looks the same to the same viewer)."""
        key = (loaded.meta.match_id, loaded.version, viewer)
        hit = self._views.get(key)
        if hit is None or hit[0] is not loaded.state:
            seat = None if viewer == SPECTATOR else viewer
            made = view(loaded.state, seat, loaded.version, loaded.status)
            hit = self._views.put(key, (loaded.state, made))
        return hit[1]

    @staticmethod
    def _info(loaded: Loaded) -> MatchInfo:
        m = loaded.meta
        return MatchInfo(
            match_id=m.match_id,
            state=loaded.status,
            rules=loaded.rules,
            seats=m.seat_infos(),
            version=loaded.version,
            created_at=m.created_at,
            updated_at=loaded.updated_at,
            labels=dict(m.labels),
            result=_result(loaded.state, loaded.status),
        )

    # ----------------------------------------------------------------------- create
    async def create_match(self, operator: Operator, req: T.CreateMatchRequest) -> T.CreateMatchResponse:
        try:
            overrides = dict(req.overrides)
            if req.players is not None:
                overrides["players"] = req.players
            rules = te.get_rules(req.preset, **overrides)
        except te.TrucoError as exc:
            field_name = getattr(exc, "field", "rules")
            raise E.InvalidArgument(
                str(exc),
                reason=E.Reason.INVALID_RULES,
                field_violations=[E.FieldViolation(field_name, str(exc))],
            ) from exc
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
        if len(req.labels) > 32 or any(len(k) > 64 or len(v) > 256 for k, v in req.labels.items()):
            raise E.InvalidArgument(
                "at most 32 labels, keys up to 64 and values up to 256 characters",
                field_violations=[E.FieldViolation("settings.labels", "too many or too long")],
            )
        if req.request_id:
            digest = hashlib.sha256(f"{operator.name}\n{req.request_id}".encode()).hexdigest()
            match_id = "m" + digest[:20]
        else:
            match_id = "m" + secrets.token_hex(10)
        seats = table.seats_of(rules, [(s.name, s.kind) for s in req.seats])
        meta = Meta(
            match_id=match_id,
            owner=operator.name,
            created_at=time.time(),
            rules=rules.to_dict(),
            seats=[seat_to_dict(s) for s in seats],
            seed=(req.seed or new_seed()).hex(),
            cred_key=secrets.token_hex(32),
            deck_orders=[list(d) for d in req.deck_orders],
            first_dealer=req.first_dealer,
            labels=dict(req.labels),
        )
        state, entries = table.start(rules, seats, meta.dealing, req.first_dealer)
        try:
            version = await self.store.create(
                match_id,
                meta.to_bytes(),
                encode_state(state),
                [pack_entry(e, 0) for e in entries],
                MatchIndexEntry(match_id, operator.name, MatchStatus.ACTIVE, meta.created_at, _listing(meta)),
            )
        except MatchExists:
            loaded = await self._load(match_id, fresh=True)
            if loaded.meta.owner != operator.name:  # pragma: no cover - ids are per owner
                raise E.RequestIdReused("request_id already used") from None
            log.info("create_match.replayed", match_id=match_id)
            return self._created(loaded)
        loaded = Loaded(meta, rules, state, version, MatchStatus.ACTIVE, meta.created_at)
        self._cache.put(match_id, loaded)
        metrics.MATCHES_CREATED.inc()
        log.info("create_match", match_id=match_id, preset=rules.name, players=rules.players)
        return self._created(loaded)

    def _created(self, loaded: Loaded) -> T.CreateMatchResponse:
        meta = loaded.meta
        return T.CreateMatchResponse(
            self._info(loaded), tuple(meta.token(i) for i in range(len(meta.seats))), meta.token(SPECTATOR)
        )

    # ------------------------------------------------------------------------- query
    async def get_match(self, caller: Caller, req: T.GetMatchRequest) -> T.GetMatchResponse:
        loaded = await self._load(req.match_id, fresh=True)
        viewer = self._viewer(loaded, caller)
        return T.GetMatchResponse(self._info(loaded), self._view(loaded, viewer))

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
        return T.ListMatchesResponse(tuple(self._listed(e) for e in entries), token)

    @staticmethod
    def _listed(entry: MatchIndexEntry) -> MatchInfo:
        """A listing row as a match's description, without loading the match."""
        row = orjson.loads(zlib.decompress(entry.summary))
        result = None
        if "x" in row:
            winner, scores, games = row["x"]
            result = MatchResult(winner_team=winner, scores=tuple(scores), games_won=tuple(games))
        return MatchInfo(
            match_id=entry.match_id,
            state=MatchStatus(entry.status),
            rules=rules_from_summary(row["p"], row["r"]),
            seats=tuple(seat_from_dict(s) for s in row["s"]),
            version=entry.version,
            created_at=entry.created_at,
            updated_at=entry.updated_at,
            labels=row["l"],
            result=result,
        )

    # ------------------------------------------------------------------------ commits
    async def _commit(
        self,
        loaded: Loaded,
        state: te.MatchState,
        entries: Sequence[LogEntry],
        *,
        status: MatchStatus | None = None,
        request_id: str | None = None,
        reply: bytes = b"",
    ) -> tuple[Loaded, CommitResult]:
        """Commit one change of the match (a new ``status`` when it ends it); returns the new
        ``Loaded`` (its ``updated_at`` is the time the entries carry) and the store's result.
        Raises the store's ``VersionConflict`` (nothing written)."""
        meta = loaded.meta
        ms = max(0, round((time.time() - meta.created_at) * 1000))
        now = meta.created_at + ms / 1000
        summary = None if status is None else _listing(meta, _result(state, status))
        raws = [pack_entry(e, ms) for e in entries]
        try:
            res = await self.store.commit(
                meta.match_id,
                expected_version=loaded.version,
                state=encode_state(state),
                events=raws,
                request_id=request_id,
                reply=reply,
                status=None if status is None else status.value,
                updated_at=now,
                summary=summary,
            )
        except StoreMatchNotFound as exc:
            raise E.MatchNotFound(f"no match {meta.match_id!r}") from exc
        if res.duplicate:
            return loaded, res
        for i, (entry, raw) in enumerate(zip(entries, raws, strict=True), loaded.version + 1):
            self._entries.put((meta.match_id, i), (raw, entry, now))
        done = Loaded(meta, loaded.rules, state, res.version, status or loaded.status, now)
        self._cache.put(meta.match_id, done)
        return done, res

    # ------------------------------------------------------------------------ cancel
    async def cancel_match(self, operator: Operator, req: T.CancelMatchRequest) -> T.CancelMatchResponse:
        for _ in range(5):
            loaded = await self._load(req.match_id, fresh=True)
            if loaded.meta.owner != operator.name:
                raise E.PermissionDenied("only the operator that created a match may cancel it")
            if loaded.status is MatchStatus.CANCELLED:
                return T.CancelMatchResponse(self._info(loaded))  # idempotent
            if loaded.status is not MatchStatus.ACTIVE:
                raise E.MatchNotActive(f"match is {loaded.status}", current_version=loaded.version)
            entries = table.cancel(loaded.state, req.reason[:200], loaded.meta.dealing)
            try:
                done, _ = await self._commit(loaded, loaded.state, entries, status=MatchStatus.CANCELLED)
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                continue
            log.info("cancel_match", match_id=req.match_id)
            return T.CancelMatchResponse(self._info(done))
        raise E.ServiceError(
            "could not cancel: the match kept changing", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
        )

    # ------------------------------------------------------------------------ action
    async def submit_action(
        self, cred: MatchCredential, req: T.SubmitActionRequest
    ) -> T.SubmitActionResponse:
        match_id, action = req.match_id, req.action
        fingerprint = action_fingerprint(action)
        fresh = False
        for _attempt in range(4):
            loaded = await self._load(match_id, fresh=fresh)
            seat = self._seat_of(loaded, cred)
            if seat == SPECTATOR:
                raise E.PermissionDenied("a spectator credential cannot act")
            if action.card is not None and action.card not in loaded.rules.deck_cards:
                where = "action.discard.card" if action.kind == "discard" else "action.play_card.card"
                metrics.ACTIONS.labels("invalid").inc()
                raise E.InvalidArgument(
                    f"{action.card!r} is not a card of this match's deck",
                    field_violations=[E.FieldViolation(where, "unknown card code")],
                )
            refusal: E.ServiceError | None = None
            if loaded.status is not MatchStatus.ACTIVE:
                refusal = E.MatchNotActive(f"match is {loaded.status}", current_version=loaded.version)
            elif req.expected_version is not None and req.expected_version != loaded.version:
                refusal = E.StaleVersion(
                    f"expected_version {req.expected_version} but the match is at version {loaded.version}",
                    current_version=loaded.version,
                )
            else:
                try:
                    state, entries = table.act(loaded.state, seat, action, loaded.meta.dealing)
                except te.TrucoError as exc:
                    refusal = self._illegal(exc, loaded)
            if refusal is not None:
                if not fresh:  # this worker's copy may be stale: decide again on fresh state
                    fresh = True
                    continue
                replay = await self._replayed(loaded, seat, req.request_id, fingerprint)
                if replay is not None:  # a retry of an action that was applied the first time
                    return replay
                metrics.ACTIONS.labels("stale" if isinstance(refusal, E.StaleVersion) else "illegal").inc()
                raise refusal
            try:
                done, res = await self._commit(
                    loaded,
                    state,
                    entries,
                    status=MatchStatus.FINISHED if te.is_over(state) else None,
                    request_id=req.request_id or None,
                    reply=compact_reply(seat, fingerprint, len(entries)),
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
                for v, e in enumerate(entries, loaded.version + 1)
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
        found = await self.store.lookup_request(loaded.meta.match_id, request_id)
        if found is None:
            return None
        return await self._from_reply(loaded, seat, found.version, found.reply, fingerprint)

    async def _from_reply(
        self, loaded: Loaded, seat: int, version: int, reply: bytes, fingerprint: str
    ) -> T.SubmitActionResponse:
        """The first result of a retried ``request_id``, rebuilt from its record.

        The events are re-read from the log (versions ``version - count + 1 .. version``);
        when the log no longer holds them (trimmed to ``max_events``) the result carries the
        version and the current view but no events."""
        first_seat, first_fp, n = reply.decode().split(":")
        if int(first_seat) != seat or first_fp != fingerprint:
            metrics.ACTIONS.labels("invalid").inc()
            raise E.RequestIdReused("request_id was already used for a different action or seat")
        count = int(n)
        events: tuple[EventView, ...] = ()
        if count > 0:
            got = await self.store.read_events(loaded.meta.match_id, version - count, count)
            if isinstance(got, list) and len(got) == count:
                events = self._views_of(loaded, got, seat)
        metrics.ACTIONS.labels("replayed").inc()
        return T.SubmitActionResponse(
            loaded.meta.match_id,
            seat,
            version,
            events,
            self._view(loaded, seat),
            loaded.rules,
            duplicate=True,
        )

    @staticmethod
    def _illegal(exc: te.TrucoError, loaded: Loaded) -> E.ServiceError:
        if isinstance(exc, te.NotYourTurnError):
            return E.NotYourTurn(str(exc), legal_actions=[], current_version=loaded.version)
        if isinstance(exc, te.IllegalActionError):
            return E.IllegalAction(str(exc), legal_actions=list(exc.legal), current_version=loaded.version)
        return E.InvalidArgument(str(exc), field_violations=[E.FieldViolation("action", str(exc))])

    # ------------------------------------------------------------------------ stream
    async def stream(self, caller: Caller, req: T.StreamRequest) -> AsyncIterator[T.StreamUpdate]:
        """Observation feed of one seat (or a spectator), resumable from any version.

        The first message comes at once: the events after ``from_version`` (or a snapshot
        when ``from_version`` is absent or no longer in the log) with the current view.
        Then one message per commit, a heartbeat after ``heartbeat_seconds`` of silence,
        and the stream ends after the message that shows the match finished or cancelled.
        Raises :class:`errors.ShuttingDown` when the worker stops.
        """
        match_id, from_version = req.match_id, req.from_version
        loaded = await self._load(match_id, fresh=True)
        viewer = self._viewer(loaded, caller)
        if from_version is not None and (from_version < 0 or from_version > loaded.version):
            raise E.InvalidArgument(
                f"from_version must be 0..{loaded.version}",
                field_violations=[E.FieldViolation("from_version", "beyond the current version")],
                current_version=loaded.version,
            )
        metrics.STREAM_SUBSCRIBERS.inc()
        try:
            if from_version is None:
                yield self._snapshot(loaded, viewer)
                last = loaded.version
            else:
                last = from_version
                first = await self.store.read_events(match_id, last, max(1, loaded.version - last + 64))
                if isinstance(first, LogTrimmed):
                    yield self._snapshot(loaded, viewer)
                    last = loaded.version
                else:
                    cur = await self._at_least(match_id, first[-1][0] if first else last)
                    if first and cur.version > first[-1][0]:
                        more = await self.store.read_events(
                            match_id, first[-1][0], cur.version - first[-1][0]
                        )
                        if isinstance(more, list):
                            first = first + more
                    last = first[-1][0] if first else last
                    yield T.StreamUpdate(
                        last, self._views_of(cur, first, viewer), self._view(cur, viewer), cur.rules
                    )
                    loaded = cur
            if loaded.status is not MatchStatus.ACTIVE:
                return
            async for upd in self._follow(match_id, viewer, last, loaded.rules):
                yield upd
                if upd.match_state is not MatchStatus.ACTIVE:
                    return
        finally:
            metrics.STREAM_SUBSCRIBERS.dec()

    def _snapshot(self, loaded: Loaded, viewer: int) -> T.StreamUpdate:
        return T.StreamUpdate(loaded.version, (), self._view(loaded, viewer), loaded.rules, snapshot=True)

    async def _at_least(self, match_id: str, version: int) -> Loaded:
        cur = await self._load(match_id)
        if cur.version < version:
            cur = await self._load(match_id, fresh=True)
        return cur

    async def _follow(
        self, match_id: str, viewer: int, last: int, rules: te.RuleSet
    ) -> AsyncIterator[T.StreamUpdate]:
        sub = self.store.subscribe(match_id, last, queue_size=self.queue_size)
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
                    yield T.StreamUpdate(sub.last_version, (), None, rules)
                    continue
                batch = nxt.result()
                nxt = None
                if isinstance(batch, LogTrimmed):
                    cur = await self._load(match_id, fresh=True)
                    sub.resume_from(cur.version)
                    yield self._snapshot(cur, viewer)
                    continue
                end = batch[-1][0]
                cur = await self._at_least(match_id, end)
                if cur.version > end:
                    more = await self.store.read_events(match_id, end, cur.version - end)
                    if isinstance(more, list):
                        batch = batch + more
                        sub.resume_from(batch[-1][0])
                    else:
                        sub.resume_from(cur.version)
                        yield self._snapshot(cur, viewer)
                        continue
                yield T.StreamUpdate(
                    batch[-1][0], self._views_of(cur, batch, viewer), self._view(cur, viewer), cur.rules
                )
        finally:
            stop.cancel()
            if nxt is not None:
                nxt.cancel()
                await asyncio.gather(nxt, return_exceptions=True)
            await sub.aclose()
