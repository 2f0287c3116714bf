"""The transport-neutral match service: create, act, observe, list, cancel.

Transports (gRPC, REST) only convert their wire messages to these calls and the results
back; every rule of the product lives here or in the engine:

* **Auth.** Operators present an API key (``Operator``); each seat and the spectators of a
  match get a credential derived from a per-match secret (HMAC), so a retry of
  ``CreateMatch`` can hand the same credentials back. Credentials are never logged.
* **One action, one atomic commit.** The engine computes the new state and events; deals
  that follow (the chance steps) are computed here from the match seed; state, events and
  the idempotency record go to the store in one commit guarded by the version.
* **Exactly once.** A retried ``request_id`` returns the first result; a stale
  ``expected_version`` is refused; streams resume from any version.
* **No leak.** Events are redacted by the engine for the receiving seat; observations come
  from ``truco_engine.observe``; the match seed (the deck orders) leaves the server only in
  the ``match_revealed`` event once the match is over.

Workers keep a small cache of recently used matches; the commit's version check makes the
cache safe (a stale entry just costs a reload and a retry).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import structlog

import truco_engine as te
from truco_server import errors as E
from truco_server import event_codec, metrics
from truco_server.dealing import deck_for_hand, new_seed, salt_for_hand
from truco_server.lru import Lru
from truco_server.storage import InvalidPageToken as StoreInvalidPageToken
from truco_server.storage import (
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchStore,
    VersionConflict,
)
from truco_server.storage import MatchNotFound as StoreMatchNotFound

log = structlog.get_logger("truco.service")

STATUS_ACTIVE = "active"
STATUS_FINISHED = "finished"
STATUS_CANCELLED = "cancelled"
STATUSES = (STATUS_ACTIVE, STATUS_FINISHED, STATUS_CANCELLED)
SPECTATOR = -1
EVERYONE = -2
"""Cache key of what every viewer sees alike (a public event)."""
VIEW_CACHE_SIZE = 512
"""Views (observations, and their protos) kept per worker; see ``MatchService.__init__``."""
MAX_PAGE_SIZE = 100


def canonical(obj: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the same bytes as ``json.dumps(obj,
    sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` for the str/int/bool/None
    trees the service writes (action fingerprints are compared across workers and
    versions, so the bytes must not depend on the encoder)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


# ----------------------------------------------------------------------------- requests
@dataclass(frozen=True)
class Operator:
    """Who calls with an operator API key (``name`` owns the matches it creates)."""

    name: str


@dataclass(frozen=True)
class SeatSpec:
    name: str = ""
    kind: str = "human"


@dataclass(frozen=True)
class CreateMatchRequest:
    preset: str = "paulista"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    players: int | None = None
    seats: Sequence[SeatSpec] = ()
    seed: bytes | None = None
    deck_orders: Sequence[Sequence[str]] = ()
    first_dealer: int | None = None
    request_id: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    """Free-form labels of the creator (a tournament or table id); returned, not interpreted."""


@dataclass(frozen=True)
class MatchInfo:
    """Public description of a match (what ``GetMatch`` and ``ListMatches`` show)."""

    match_id: str
    owner: str
    status: str
    preset: str
    rules: dict[str, Any]
    players: int
    seats: list[dict[str, str]]
    created_at: float
    version: int
    scores: list[int]
    games: list[int]
    winner: int | None
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreatedMatch:
    match: MatchInfo
    seat_tokens: list[str]
    spectator_token: str


@dataclass(frozen=True)
class ActionResult:
    """Outcome of :meth:`MatchService.submit_action`.

    For a retried ``request_id`` (``duplicate=True``) ``version`` and ``events`` are those
    of the first commit -- the events are re-read from the event log, so when the log no
    longer holds them (trimmed to ``StoreSettings.max_events``) ``events`` is empty;
    ``observation`` is always the current view."""

    match_id: str
    seat: int
    version: int
    events: list[dict[str, Any]]
    observation: dict[str, Any]
    duplicate: bool = False


@dataclass(frozen=True)
class Update:
    """One message of an observation stream."""

    version: int
    events: list[dict[str, Any]]
    observation: dict[str, Any] | None
    snapshot: bool = False
    heartbeat: bool = False
    status: str = STATUS_ACTIVE


# ------------------------------------------------------------------------------- state
@dataclass
class Meta:
    """Written once at creation; holds secrets (seed, credential key): server-only."""

    match_id: str
    owner: str
    created_at: float
    preset: str
    rules: dict[str, Any]
    seats: list[dict[str, str]]
    seed: str
    cred_key: str
    deck_orders: list[list[str]]
    first_dealer: int | None
    labels: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """zlib-compressed canonical JSON (about half the size: it is kept in Redis for the
        match's whole life)."""
        return zlib.compress(canonical(self.__dict__), 9)

    @classmethod
    def from_bytes(cls, raw: bytes) -> Meta:
        text = raw if raw[:1] == b"{" else zlib.decompress(raw)  # plain JSON: older matches
        return cls(**orjson.loads(text))

    def token(self, seat: int) -> str:
        label = "spectator" if seat == SPECTATOR else f"seat:{seat}"
        mac = hmac.new(bytes.fromhex(self.cred_key), label.encode(), hashlib.sha256).hexdigest()[:40]
        who = "s" if seat == SPECTATOR else str(seat)
        return f"tc1.{self.match_id}.{who}.{mac}"


@dataclass
class Loaded:
    meta: Meta
    rules: te.RuleSet
    state: te.MatchState
    version: int
    status: str


def encode_state(state: te.MatchState) -> bytes:
    """JSON (keys in the engine's order: the blob is never compared, only decoded) and zlib
    level 1: written on every action, so it is on the hot path; level 6 and sorted keys
    cost twice the CPU for 3 % fewer bytes."""
    return zlib.compress(orjson.dumps(state.to_dict()), 1)


def decode_state(raw: bytes) -> te.MatchState:
    return te.MatchState.from_dict(orjson.loads(zlib.decompress(raw)))


def token_match_id(token: str) -> str | None:
    """The match a credential belongs to (credentials are ``tc1.<match>.<seat>.<mac>``)."""
    parts = token.split(".")
    return parts[1] if len(parts) == 4 and parts[0] == "tc1" else None


_ENGINE_KINDS = frozenset(k.value for k in te.EventKind)


StoredEvent = te.Event | dict[str, Any]
"""A decoded stored event: an engine event, or a (public) service event as a dict."""


def pack_event(event: Mapping[str, Any]) -> bytes:
    """The stored form of an event dict (canonical JSON, compressed: :mod:`.event_codec`)."""
    return event_codec.pack(canonical(event))


def unpack_event(raw: bytes) -> dict[str, Any]:
    """The event dict of a stored blob, exactly as stored (visibility markers included)."""
    d: dict[str, Any] = orjson.loads(event_codec.unpack(raw))
    return d


def decode_event(raw: bytes) -> StoredEvent:
    """Decode one stored event blob (engine events keep their visibility markers)."""
    d = unpack_event(raw)
    if d.get("kind") in _ENGINE_KINDS:
        return te.Event.from_dict(d)
    return d  # service events (match_created, match_cancelled, match_revealed) are public


def redact_event(ev: StoredEvent, seat: int | None) -> dict[str, Any]:
    """A decoded event as ``seat`` (``None``: spectator) may see it, as a fresh dict."""
    if isinstance(ev, dict):
        return dict(ev)
    out = ev.redact(seat).to_dict()
    out.pop("private_to", None)  # visibility markers are the server's business
    out.pop("hidden", None)
    return out


def redact(raw: bytes, seat: int | None) -> dict[str, Any]:
    """Decode one stored event and redact it for ``seat`` (``None``: spectator)."""
    return redact_event(decode_event(raw), seat)


def action_fingerprint(action: te.Action) -> str:
    """Short digest of an action: tells a retry from a reused ``request_id``."""
    return hashlib.sha256(canonical(action.to_dict())).hexdigest()[:12]


def compact_reply(seat: int, fingerprint: str, count: int) -> bytes:
    """The idempotency record of an accepted action: ``<seat>:<fingerprint>:<event count>``.

    It holds only what is needed to rebuild the first result: who acted, what (the
    fingerprint of the action) and how many events it committed (the store keeps the
    version after the commit, so they are ``version - count + 1 .. version``); the events
    are re-read from the log on a retry. Records written before this format are JSON
    objects with the events inline (``{...}``) and are still understood."""
    return b"%d:%s:%d" % (seat, fingerprint.encode(), count)


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
        # not once per subscriber (and not at all for this worker's own commits); used
        # right after a commit, so short-lived too (see the views below)
        self._events: Lru[tuple[str, int], StoredEvent] = Lru(VIEW_CACHE_SIZE * 4)
        # what a viewer sees, by (match, version, viewer): the reply to an action and the
        # actor's own stream message show the same events and the same observation; a
        # public event is one dict for every viewer (EVERYONE). Short-lived on purpose: an
        # entry is used within the same action, and thousands of cached dicts lengthen
        # the interpreter's full garbage collections (4,096 views: paced p99 60-100 ms in
        # `truco bench service --think-ms 1000`; 512: 8-22 ms).
        self._redacted: Lru[tuple[str, int, int | None], dict[str, Any]] = Lru(VIEW_CACHE_SIZE * 2)
        self._views: Lru[tuple[str, int, int], dict[str, Any]] = Lru(VIEW_CACHE_SIZE)

    # ------------------------------------------------------------------------ events
    def _decoded(self, match_id: str, version: int, raw: bytes) -> StoredEvent:
        key = (match_id, version)
        ev = self._events.get(key)
        if ev is None:
            ev = self._events.put(key, decode_event(raw))
        return ev

    def _redacted_event(
        self, match_id: str, version: int, ev: StoredEvent, seat: int | None
    ) -> dict[str, Any]:
        """``ev`` (version ``version`` of the match) as ``seat`` sees it; shared, read-only
        (the same dict for every viewer when the event has no private part)."""
        private = isinstance(ev, te.Event) and ev.private_to is not None
        key = (match_id, version, seat if private else EVERYONE)
        out = self._redacted.get(key)
        if out is None:
            out = self._redacted.put(key, redact_event(ev, seat))
        return out

    def _redact_all(
        self, match_id: str, batch: Sequence[tuple[int, bytes]], seat: int | None
    ) -> list[dict[str, Any]]:
        return [self._redacted_event(match_id, v, self._decoded(match_id, v, raw), seat) for v, raw in batch]

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
        loaded = Loaded(meta, state.rules, state, snap.version, snap.status)
        self._remember(match_id, loaded)
        return loaded

    def _remember(self, match_id: str, loaded: Loaded) -> None:
        self._cache.put(match_id, loaded)

    # -------------------------------------------------------------------------- auth
    def _seat_of(self, meta: Meta, token: str | None) -> int:
        """Seat index, or SPECTATOR, for a match credential; raises Unauthenticated."""
        if not token:
            raise E.Unauthenticated("missing credential: send 'authorization: Bearer <seat token>'")
        if token_match_id(token) != meta.match_id:
            raise E.Unauthenticated("this credential does not belong to this match")
        who = token.split(".")[2]
        seat = SPECTATOR if who == "s" else int(who) if who.isdigit() else None
        if seat is None or not (seat == SPECTATOR or 0 <= seat < len(meta.seats)):
            raise E.Unauthenticated("malformed credential")
        if not hmac.compare_digest(meta.token(seat), token):
            raise E.Unauthenticated("invalid credential")
        return seat

    def viewer(self, loaded: Loaded, token: str | None, operator: Operator | None) -> int:
        """Who is looking: a seat, or SPECTATOR (spectator credential or the owner)."""
        if operator is not None and token is None:
            if operator.name != loaded.meta.owner:
                raise E.PermissionDenied("this match belongs to another operator")
            return SPECTATOR
        return self._seat_of(loaded.meta, token)

    # ----------------------------------------------------------------------- create
    async def create_match(self, operator: Operator, req: CreateMatchRequest) -> CreatedMatch:
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
        decks = [list(d) for d in req.deck_orders]
        probe = te.new_match(rules)
        for i, d in enumerate(decks):
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
        seats = [
            {
                "name": (req.seats[i].name if req.seats else "") or f"seat {i}",
                "kind": req.seats[i].kind if req.seats else "human",
            }
            for i in range(rules.players)
        ]
        meta = Meta(
            match_id=match_id,
            owner=operator.name,
            created_at=time.time(),
            preset=rules.name,
            rules=rules.to_dict(),
            seats=seats,
            seed=(req.seed or new_seed()).hex(),
            cred_key=secrets.token_hex(32),
            deck_orders=decks,
            first_dealer=req.first_dealer,
            labels=dict(req.labels),
        )
        state = te.new_match(rules, req.first_dealer)
        events: list[dict[str, Any]] = [
            {"kind": "match_created", "preset": rules.name, "players": rules.players, "seats": seats}
        ]
        state, dealt = self._deal_pending(meta, state)
        events.extend(e.to_dict() for e in dealt)
        summary = canonical({"preset": rules.name, "players": rules.players})
        try:
            version = await self.store.create(
                match_id,
                meta.to_bytes(),
                encode_state(state),
                [pack_event(e) for e in events],
                MatchIndexEntry(match_id, operator.name, STATUS_ACTIVE, meta.created_at, summary),
            )
        except MatchExists:
            loaded = await self._load(match_id, fresh=True)
            if loaded.meta.owner != operator.name:  # pragma: no cover - ids are per owner
                raise E.RequestIdReused("request_id already used") from None
            log.info("create_match.replayed", match_id=match_id)
            return self._created(loaded)
        loaded = Loaded(meta, rules, state, version, STATUS_ACTIVE)
        self._remember(match_id, loaded)
        metrics.MATCHES_CREATED.inc()
        log.info("create_match", match_id=match_id, preset=rules.name, players=rules.players)
        return self._created(loaded)

    def _created(self, loaded: Loaded) -> CreatedMatch:
        meta = loaded.meta
        return CreatedMatch(
            self._info(loaded),
            [meta.token(i) for i in range(len(meta.seats))],
            meta.token(SPECTATOR),
        )

    def _info(self, loaded: Loaded) -> MatchInfo:
        m = loaded.meta
        return MatchInfo(
            match_id=m.match_id,
            owner=m.owner,
            status=loaded.status,
            preset=m.preset,
            rules=m.rules,
            players=len(m.seats),
            seats=m.seats,
            created_at=m.created_at,
            version=loaded.version,
            scores=list(loaded.state.scores),
            games=list(loaded.state.games),
            winner=loaded.state.winner,
            labels=dict(m.labels),
        )

    def _deal_pending(self, meta: Meta, state: te.MatchState) -> tuple[te.MatchState, list[te.Event]]:
        """Run every chance step now due (the next hand's deal)."""
        events: list[te.Event] = []
        seed = bytes.fromhex(meta.seed)
        while te.needs_deal(state):
            k = state.hands + 1
            if k <= len(meta.deck_orders):
                deck = meta.deck_orders[k - 1]
            else:
                deck = deck_for_hand(seed, k, state.rules.deck_cards)
            state, ev = te.deal(state, deck, salt_for_hand(seed, k))
            events.extend(ev)
        return state, events

    # ------------------------------------------------------------------------- query
    async def get_match(
        self, match_id: str, token: str | None, operator: Operator | None
    ) -> tuple[MatchInfo, dict[str, Any]]:
        loaded = await self._load(match_id, fresh=True)
        seat = self.viewer(loaded, token, operator)
        return self._info(loaded), self._observe(loaded, seat)

    async def info(self, match_id: str) -> MatchInfo:
        """Public description of a match (no credential check: callers list their own)."""
        return self._info(await self._load(match_id, fresh=True))

    async def rules_of(self, match_id: str) -> dict[str, Any]:
        """The effective rule set of a match (public)."""
        return (await self._load(match_id)).meta.rules

    def _observe(self, loaded: Loaded, seat: int) -> dict[str, Any]:
        """What ``seat`` (or SPECTATOR) sees of the match at ``loaded.version``; shared and
        read-only (a match at a given version always looks the same to the same viewer)."""
        key = (loaded.meta.match_id, loaded.version, seat)
        obs = self._views.get(key)
        if obs is not None:
            return obs
        obs = te.observe(loaded.state, None if seat == SPECTATOR else seat).to_dict()
        obs["version"] = loaded.version
        obs["status"] = loaded.status
        if loaded.status != STATUS_ACTIVE:
            obs["legal_actions"] = []
            obs["to_act"] = []
        return self._views.put(key, obs)

    async def list_matches(
        self, operator: Operator, status: str | None, page_size: int, page_token: str | None
    ) -> tuple[list[MatchIndexEntry], str | None]:
        if status is not None and status not in STATUSES:
            raise E.InvalidArgument(
                f"unknown status {status!r}; allowed: {', '.join(STATUSES)}",
                field_violations=[E.FieldViolation("status", "unknown")],
            )
        if page_size < 0:
            raise E.InvalidArgument(
                "page_size must not be negative", field_violations=[E.FieldViolation("page_size", "negative")]
            )
        size = min(page_size or 20, MAX_PAGE_SIZE)
        try:
            return await self.store.list_matches(operator.name, status, size, page_token or None)
        except StoreInvalidPageToken as exc:
            raise E.InvalidArgument(
                str(exc), field_violations=[E.FieldViolation("page_token", str(exc))]
            ) from exc

    # ------------------------------------------------------------------------ cancel
    async def cancel_match(self, operator: Operator, match_id: str, reason: str = "") -> MatchInfo:
        for _ in range(5):
            loaded = await self._load(match_id, fresh=True)
            if loaded.meta.owner != operator.name:
                raise E.PermissionDenied("only the operator that created a match may cancel it")
            if loaded.status == STATUS_CANCELLED:
                return self._info(loaded)  # idempotent
            if loaded.status != STATUS_ACTIVE:
                raise E.MatchNotActive(f"match is {loaded.status}", current_version=loaded.version)
            events = [
                pack_event({"kind": "match_cancelled", "reason": reason[:200]}),
                pack_event(self._reveal(loaded.meta, loaded.state)),
            ]
            try:
                res = await self.store.commit(
                    match_id,
                    expected_version=loaded.version,
                    state=encode_state(loaded.state),
                    events=events,
                    request_id=None,
                    reply=b"",
                    status=STATUS_CANCELLED,
                )
            except VersionConflict:
                metrics.COMMIT_CONFLICTS.inc()
                continue
            done = Loaded(loaded.meta, loaded.rules, loaded.state, res.version, STATUS_CANCELLED)
            self._remember(match_id, done)
            log.info("cancel_match", match_id=match_id)
            return self._info(done)
        raise E.ServiceError(
            "could not cancel: the match kept changing", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
        )

    @staticmethod
    def _reveal(meta: Meta, state: te.MatchState) -> dict[str, Any]:
        """The ``match_revealed`` event: the seed and every deal of the match, so anyone can
        check the commitments published when each hand started (docs/fairness.md)."""
        seed = bytes.fromhex(meta.seed)
        deals = []
        for k in range(1, state.hands + 1):
            deck = (
                meta.deck_orders[k - 1]
                if k <= len(meta.deck_orders)
                else deck_for_hand(seed, k, state.rules.deck_cards)
            )
            salt = salt_for_hand(seed, k)
            deals.append({"cards": deck, "salt": salt, "commitment": te.deck_commitment(deck, salt)})
        return {"kind": "match_revealed", "seed": meta.seed, "deals": deals}

    # ------------------------------------------------------------------------ action
    async def submit_action(
        self,
        match_id: str,
        token: str | None,
        action: te.Action,
        *,
        request_id: str | None = None,
        expected_version: int | None = None,
    ) -> ActionResult:
        fingerprint = action_fingerprint(action)
        fresh = False
        for _attempt in range(4):
            loaded = await self._load(match_id, fresh=fresh)
            seat = self._seat_of(loaded.meta, token)
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
            if loaded.status != STATUS_ACTIVE:
                refusal = E.MatchNotActive(f"match is {loaded.status}", current_version=loaded.version)
            elif expected_version is not None and expected_version != loaded.version:
                refusal = E.StaleVersion(
                    f"expected_version {expected_version} but the match is at version {loaded.version}",
                    current_version=loaded.version,
                )
            else:
                try:
                    state, events = te.apply(loaded.state, seat, action)
                except te.TrucoError as exc:
                    refusal = self._illegal(exc, loaded)
            if refusal is not None:
                if not fresh:  # this worker's copy may be stale: decide again on fresh state
                    fresh = True
                    continue
                replay = await self._replayed(loaded, seat, request_id, fingerprint)
                if replay is not None:  # a retry of an action that was applied the first time
                    return replay
                metrics.ACTIONS.labels("stale" if isinstance(refusal, E.StaleVersion) else "illegal").inc()
                raise refusal
            state, dealt = self._deal_pending(loaded.meta, state)
            events.extend(dealt)
            decoded: list[StoredEvent] = list(events)
            blobs = [pack_event(e.to_dict()) for e in events]
            status = None
            if te.is_over(state):
                status = STATUS_FINISHED
                reveal = self._reveal(loaded.meta, state)
                blobs.append(pack_event(reveal))
                decoded.append(reveal)
            new_version = loaded.version + len(blobs)
            reply = compact_reply(seat, fingerprint, len(blobs))
            try:
                res = await self.store.commit(
                    match_id,
                    expected_version=loaded.version,
                    state=encode_state(state),
                    events=blobs,
                    request_id=request_id or None,
                    reply=reply,
                    status=status,
                )
            except VersionConflict:
                # Another writer got there first (or this worker's cache was stale): reload
                # and decide again; with expected_version the next round answers STALE_VERSION.
                metrics.COMMIT_CONFLICTS.inc()
                fresh = True
                continue
            except StoreMatchNotFound as exc:
                raise E.MatchNotFound(f"no match {match_id!r}") from exc
            if res.duplicate:
                loaded = await self._load(match_id, fresh=True)
                return await self._from_reply(loaded, seat, res.version, res.reply, fingerprint)
            for i, ev in enumerate(decoded, loaded.version + 1):
                self._events.put((match_id, i), ev)
            mine = [
                self._redacted_event(match_id, i, ev, seat)
                for i, ev in enumerate(decoded, loaded.version + 1)
            ]
            done = Loaded(loaded.meta, loaded.rules, state, new_version, status or STATUS_ACTIVE)
            self._remember(match_id, done)
            metrics.ACTIONS.labels("accepted").inc()
            return ActionResult(match_id, seat, new_version, mine, self._observe(done, seat))
        raise E.ServiceError(
            "the match kept changing; retry", code=E.Code.ABORTED, reason=E.Reason.STALE_VERSION
        )

    async def _replayed(
        self, loaded: Loaded, seat: int, request_id: str | None, fingerprint: str
    ) -> ActionResult | None:
        if not request_id:
            return None
        found = await self.store.lookup_request(loaded.meta.match_id, request_id)
        if found is None:
            return None
        return await self._from_reply(loaded, seat, found.version, found.reply, fingerprint)

    async def _from_reply(
        self, loaded: Loaded, seat: int, version: int, reply: bytes, fingerprint: str
    ) -> ActionResult:
        """The first result of a retried ``request_id``, rebuilt from its record.

        The events are re-read from the log (versions ``version - count + 1 .. version``);
        when the log no longer holds them (trimmed to ``max_events``) the result carries the
        version and the current observation but no events."""
        events: list[dict[str, Any]] = []
        count = 0
        if reply[:1] == b"{":  # a record written before the compact format: events inline
            data = json.loads(reply)
            same = data.get("seat") == seat and str(data.get("fp", ""))[:12] == fingerprint
            events = data.get("events", [])
        else:
            first_seat, first_fp, n = reply.decode().split(":")
            same = int(first_seat) == seat and first_fp == fingerprint
            count = int(n)
        if not same:
            metrics.ACTIONS.labels("invalid").inc()
            raise E.RequestIdReused("request_id was already used for a different action or seat")
        if count > 0:
            match_id = loaded.meta.match_id
            got = await self.store.read_events(match_id, version - count, count)
            if isinstance(got, list) and len(got) == count:
                events = self._redact_all(match_id, got, seat)
        metrics.ACTIONS.labels("replayed").inc()
        return ActionResult(
            loaded.meta.match_id, seat, version, events, self._observe(loaded, seat), duplicate=True
        )

    def _illegal(self, exc: te.TrucoError, loaded: Loaded) -> E.ServiceError:
        if isinstance(exc, te.NotYourTurnError):
            return E.NotYourTurn(str(exc), legal_actions=[], current_version=loaded.version)
        if isinstance(exc, te.IllegalActionError):
            return E.IllegalAction(str(exc), legal_actions=list(exc.legal), current_version=loaded.version)
        return E.InvalidArgument(str(exc), field_violations=[E.FieldViolation("action", str(exc))])

    # ------------------------------------------------------------------------ stream
    async def stream(
        self,
        match_id: str,
        token: str | None,
        operator: Operator | None = None,
        from_version: int | None = None,
    ) -> AsyncIterator[Update]:
        """Observation feed of one seat (or a spectator), resumable from any version.

        The first message comes at once: the events after ``from_version`` (or a snapshot
        when ``from_version`` is absent or no longer in the log) with the current view.
        Then one message per commit, a heartbeat after ``heartbeat_seconds`` of silence,
        and the stream ends after the message that shows the match finished or cancelled.
        Raises :class:`errors.ShuttingDown` when the worker stops.
        """
        loaded = await self._load(match_id, fresh=True)
        who = self.viewer(loaded, token, operator)
        seat = None if who == SPECTATOR else who
        if from_version is not None and (from_version < 0 or from_version > loaded.version):
            raise E.InvalidArgument(
                f"from_version must be 0..{loaded.version}",
                field_violations=[E.FieldViolation("from_version", "beyond the current version")],
                current_version=loaded.version,
            )
        metrics.STREAM_SUBSCRIBERS.inc()
        try:
            if from_version is None:
                yield Update(
                    loaded.version, [], self._observe(loaded, who), snapshot=True, status=loaded.status
                )
                last = loaded.version
            else:
                last = from_version
                first = await self.store.read_events(match_id, last, max(1, loaded.version - last + 64))
                if isinstance(first, LogTrimmed):
                    yield Update(
                        loaded.version, [], self._observe(loaded, who), snapshot=True, status=loaded.status
                    )
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
                    yield Update(
                        last,
                        self._redact_all(match_id, first, seat),
                        self._observe(cur, who),
                        status=cur.status,
                    )
                    loaded = cur
            if loaded.status != STATUS_ACTIVE:
                return
            async for upd in self._follow(match_id, who, seat, last, self.queue_size):
                yield upd
                if upd.status != STATUS_ACTIVE:
                    return
        finally:
            metrics.STREAM_SUBSCRIBERS.dec()

    async def _at_least(self, match_id: str, version: int) -> Loaded:
        cur = await self._load(match_id)
        if cur.version < version:
            cur = await self._load(match_id, fresh=True)
        return cur

    async def _follow(
        self, match_id: str, who: int, seat: int | None, last: int, queue_size: int
    ) -> AsyncIterator[Update]:
        sub = self.store.subscribe(match_id, last, queue_size=queue_size)
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
                    yield Update(sub.last_version, [], None, heartbeat=True)
                    continue
                batch = nxt.result()
                nxt = None
                if isinstance(batch, LogTrimmed):
                    cur = await self._load(match_id, fresh=True)
                    sub.resume_from(cur.version)
                    yield Update(cur.version, [], self._observe(cur, who), snapshot=True, status=cur.status)
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
                        yield Update(
                            cur.version, [], self._observe(cur, who), snapshot=True, status=cur.status
                        )
                        continue
                yield Update(
                    batch[-1][0],
                    self._redact_all(match_id, batch, seat),
                    self._observe(cur, who),
                    status=cur.status,
                )
        finally:
            stop.cancel()
            if nxt is not None:
                nxt.cancel()
                await asyncio.gather(nxt, return_exceptions=True)
            await sub.aclose()
