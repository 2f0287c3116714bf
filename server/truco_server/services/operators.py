"""What an operator follows of its matches: its event stream and its webhooks.

**Relay.** The commit that writes a lifecycle event (``truco_match.operator_events``) also
writes it to the match's *outbox*, atomically, and queues the match in the relay queue (its
safety net, due two seconds later). The relay (:meth:`Operators.relay`) moves the outbox to
the operator's stream and turns each event into one delivery per subscribed webhook; it runs
on the worker that made the commit, a few milliseconds after it (together with the other
commits of those milliseconds), and again from the relay queue if that worker died first.
It holds a short lock per match (two relays never interleave) and trims the outbox only
after the stream and the webhook queue have the events, so an event is relayed at least
once: a relay cut short is done again, and its events appear again in the stream with the
same ``id`` (webhook deliveries are queued once per webhook and event id). On a store that
appends a commit's events to the stream in the commit itself, the stream gets each event
exactly once that way, and the outbox holds only the events the owner's webhooks ask for (by
type) and those a listener asks for (by type, of the matches it concerns: the league job's
matches of a league, the ratings' rated ones): :meth:`Operators.wanted`,
:mod:`truco_server.services.relay`.

**Stream** (``StreamOperatorEvents``): the operator's Redis stream, read from a cursor, with
heartbeats. Resumable from any cursor still kept (``operator_events_max_len``).

**Webhooks**: registered per operator (at most ``webhooks_per_operator``), each with its own
signing secret; :mod:`truco_server.services.webhooks` delivers.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import structlog

from truco_contract import codec
from truco_contract.pb import operator_service_pb2
from truco_match.match import Match
from truco_match.operator_events import OperatorEvent, OperatorEventType
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core.caller import Operator
from truco_server.core.lru import Lru
from truco_server.ports.operators import OperatorFeed
from truco_server.services.webhooks import Deliverer, Delivery, DeliveryState, Destinations

log = structlog.get_logger("truco.operators")

_CURSOR = re.compile(r"^\d{1,20}-\d{1,20}$")
RELAY_LEASE_MS = 10_000
RELAY_BATCH = 100
MAX_DESCRIPTION = 200
EVENT_TYPES = frozenset(t.value for t in OperatorEventType)


def check_event_types(event_types: Sequence[str]) -> frozenset[str]:
    """The event types asked for (empty: every type); INVALID_ARGUMENT names an unknown one."""
    unknown = [t for t in event_types if t not in EVENT_TYPES]
    if unknown:
        raise E.InvalidArgument(
            f"unknown event type {unknown[0][:40]!r}; known: {', '.join(sorted(EVENT_TYPES))}",
            field_violations=[E.FieldViolation("event_types", f"unknown: {unknown[0][:40]}")],
        )
    return frozenset(event_types)


Listener = Callable[[str, Sequence[OperatorEvent]], Awaitable[None]]
"""Told an owner's events once they are in its stream (:attr:`Operators.listeners`)."""

Concerns = Callable[[Match], bool]
"""Whether a listener acts on the events of a match (as its commit made it)."""


@dataclass(frozen=True, slots=True)
class Interest:
    """The events a listener acts on: of the types ``kinds``, of the matches it ``concerns``
    (``None``: every match)."""

    kinds: frozenset[str]
    concerns: Concerns | None = None

    def wants(self, match: Match) -> bool:
        return self.concerns is None or self.concerns(match)


_STREAMED = b"\x01"
"""First byte of an outbox item whose event its commit already appended to the stream."""


def outbox_item(owner: str, body: bytes, *, streamed: bool = False) -> bytes:
    """The stored form of an event waiting in a match's outbox: its owner and its proto
    (``body``), marked when its commit appended it to the owner's stream already."""
    return (_STREAMED if streamed else b"") + owner.encode() + b"\0" + body


def _from_outbox(raw: bytes) -> tuple[str, bytes | None, OperatorEvent]:
    """An outbox item's owner, its event's proto (what the operator's stream stores; ``None``
    when its commit appended it there already), and the event."""
    streamed = raw.startswith(_STREAMED)
    owner, _, body = raw[1 if streamed else 0 :].partition(b"\0")
    msg = operator_service_pb2.OperatorEvent.FromString(body)
    return owner.decode(), None if streamed else body, codec.operator_event_from_proto(msg)


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookInfo:
    """A registered endpoint (``truco.v1.Webhook``)."""

    webhook_id: str
    url: str
    event_types: tuple[str, ...] = ()
    secret: str = ""
    created_at: float = 0.0
    description: str = ""

    def wants(self, kind: str) -> bool:
        return not self.event_types or kind in self.event_types

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "webhook_id": self.webhook_id,
                "url": self.url,
                "event_types": list(self.event_types),
                "secret": self.secret,
                "created_at": self.created_at,
                "description": self.description,
            }
        ).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> WebhookInfo:
        d = json.loads(raw)
        return cls(**{**d, "event_types": tuple(d["event_types"])})


@dataclass(slots=True)
class Operators:
    """The operator-facing side of a worker (see the module docstring)."""

    feed: OperatorFeed
    deliverer: Deliverer
    destinations: Destinations
    webhooks_per_operator: int = 10
    heartbeat_seconds: float = 5.0
    stopping: asyncio.Event | None = None
    _hooks: Lru[str, tuple[float, list[WebhookInfo]]] = field(default_factory=lambda: Lru(1024))
    _reading: dict[str, asyncio.Task[list[WebhookInfo]]] = field(default_factory=dict)
    """The read of an owner's webhooks in flight: the commits that find the cache expired
    together wait for one read, not one each."""
    listeners: list[Listener] = field(default_factory=list)
    """Called with each batch of an owner's events once they are in its stream (the league
    service wakes the leagues whose matches ended); at least once, like the stream. Only the
    events of :attr:`interests` are sure to be among them (:meth:`listen`)."""
    interests: list[Interest] = field(default_factory=list)
    """What the listeners ask for."""

    def listen(
        self, kinds: Sequence[OperatorEventType], listener: Listener, concerns: Concerns | None = None
    ) -> None:
        """Call ``listener`` with the events of the types ``kinds`` of the matches it
        ``concerns`` (``None``: every match), and maybe others."""
        self.listeners.append(listener)
        self.interests.append(Interest(frozenset(k.value for k in kinds), concerns))

    async def wanted(self, match: Match) -> frozenset[str] | None:
        """The event types of ``match`` (as a commit made it) that need the relay when the
        commit appends them to its owner's stream itself: those a listener concerned with the
        match or one of the owner's webhooks asks for (``None``: every type, a webhook asks
        for all). An unrated match outside any league, with no webhook, needs none."""
        hooks = await self._webhooks_of(match.meta.owner)
        kinds: set[str] = set()
        for interest in self.interests:
            if interest.wants(match):
                kinds |= interest.kinds
        for h in hooks:
            if not h.event_types:
                return None
            kinds.update(h.event_types)
        return frozenset(kinds)

    # ------------------------------------------------------------------------ relay
    async def relay(self, match_ids: Sequence[str]) -> list[str]:
        """Move the outboxes of ``match_ids`` to their operators' streams and webhook queues,
        together: one take of every outbox, one append per operator, one trim of every outbox
        (each a round trip on one server, whatever the number of matches). Returns the matches
        another relay holds the lock of (it will finish their job; try them again later)."""
        busy: list[str] = []
        todo = list(dict.fromkeys(match_ids))
        while todo:
            token = secrets.token_hex(8)
            taken = await self.feed.outbox_take(todo, token, RELAY_LEASE_MS, RELAY_BATCH)
            busy += [m for m, items in zip(todo, taken, strict=True) if items is None]
            moved = [(m, items) for m, items in zip(todo, taken, strict=True) if items]
            if not moved:
                break
            by_owner: dict[str, list[tuple[bytes | None, OperatorEvent]]] = {}
            for _, items in moved:  # each match's events in their order
                for raw in items:
                    owner, body, ev = _from_outbox(raw)
                    by_owner.setdefault(owner, []).append((body, ev))
            for owner, pairs in by_owner.items():
                await self._publish(owner, pairs)
            await self.feed.outbox_done([(m, len(items)) for m, items in moved], token)
            todo = [m for m, items in moved if len(items) >= RELAY_BATCH]  # more left in these
        return busy

    async def publish(self, owner: str, events: Sequence[OperatorEvent]) -> None:
        """Events that no match commit made (a league's, ``ticket.matched``): to the owner's
        stream, its listeners and its webhooks, in order, as a relay does. At least once: the
        caller publishes again (the same ids) if it dies before recording that it did."""
        pairs = [(codec.operator_event_bytes(ev), ev) for ev in events]
        await self._publish(owner, pairs)

    async def _publish(self, owner: str, pairs: Sequence[tuple[bytes | None, OperatorEvent]]) -> None:
        """Append the events of ``pairs`` to the owner's stream (each stored as its body, its
        proto as the outbox holds it; ``None``: its commit appended it already), then tell the
        listeners and queue the webhook deliveries."""
        events = [ev for _, ev in pairs]
        fresh = [(body, ev) for body, ev in pairs if body is not None]
        await self.feed.append(owner, [body for body, _ in fresh])
        for _, ev in fresh:
            metrics.OPERATOR_EVENTS.labels(ev.type.value).inc()
        for listener in self.listeners:
            await listener(owner, events)
        hooks = await self._webhooks_of(owner)
        for ev in events:
            wanted = [h for h in hooks if h.wants(ev.type.value)]
            if not wanted:
                continue
            body = json.dumps(codec.webhook_payload(ev), separators=(",", ":"))
            for h in wanted:
                await self.deliverer.enqueue(
                    Delivery(
                        webhook_id=h.webhook_id,
                        event_id=ev.id,
                        owner=owner,
                        type=ev.type.value,
                        event_time=ev.time,
                        body=body,
                    )
                )

    async def _webhooks_of(self, owner: str) -> list[WebhookInfo]:
        """The owner's webhooks (cached for a second: a new webhook gets the events relayed
        from then on)."""
        cached = self._hooks.get(owner)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        reading = self._reading.get(owner)
        if reading is None:
            reading = self._reading[owner] = asyncio.ensure_future(self._read_webhooks(owner))
        return await asyncio.shield(reading)

    async def _read_webhooks(self, owner: str) -> list[WebhookInfo]:
        me = asyncio.current_task()
        try:
            raw = await self.feed.webhook_list(owner)
            hooks = sorted((WebhookInfo.from_bytes(v) for v in raw.values()), key=lambda h: h.created_at)
            if self._reading.get(owner) is me:  # no change while it read
                self._hooks.put(owner, (time.monotonic() + 1.0, hooks))
            return hooks
        finally:
            if self._reading.get(owner) is me:
                del self._reading[owner]

    def _forget_webhooks(self, owner: str) -> None:
        """The owner's webhooks changed: the next commit reads them again (a read in flight
        began before the change and fills no cache)."""
        self._hooks.pop(owner)
        self._reading.pop(owner, None)

    # ------------------------------------------------------------------------ stream
    async def stream(
        self, operator: Operator, from_cursor: str, event_types: Sequence[str] = ()
    ) -> AsyncIterator[OperatorEvent | None]:
        """The operator's events after ``from_cursor`` (empty: only new ones), only those of
        ``event_types`` when given, forever; ``None`` is a heartbeat. Raises
        :class:`errors.ShuttingDown` when the worker stops."""
        if from_cursor and not _CURSOR.match(from_cursor):
            raise E.InvalidArgument(
                "from_cursor is a cursor from an OperatorEvent",
                field_violations=[E.FieldViolation("from_cursor", "not a cursor")],
            )
        wanted = check_event_types(event_types)
        owner = operator.name
        cursor = from_cursor or await self.feed.last(owner)
        metrics.STREAM_SUBSCRIBERS.inc()
        try:
            while True:
                if self.stopping is not None and self.stopping.is_set():
                    raise E.ShuttingDown()
                got = await self.feed.read(owner, cursor, 100, block=self.heartbeat_seconds)
                if not got:
                    yield None
                    continue
                for c, raw in got:
                    cursor = c
                    msg = operator_service_pb2.OperatorEvent.FromString(raw)
                    if wanted and msg.type not in wanted:
                        continue
                    msg.cursor = c
                    yield codec.operator_event_from_proto(msg)
        finally:
            metrics.STREAM_SUBSCRIBERS.dec()

    # ------------------------------------------------------------------------ webhooks
    async def create_webhook(
        self, operator: Operator, url: str, event_types: Sequence[str], description: str
    ) -> WebhookInfo:
        check_event_types(event_types)
        if len(description) > MAX_DESCRIPTION:
            raise E.InvalidArgument(
                f"description: at most {MAX_DESCRIPTION} characters",
                field_violations=[E.FieldViolation("description", "too long")],
            )
        await self.destinations.check(url)
        hook = WebhookInfo(
            webhook_id="wh_" + secrets.token_hex(8),
            url=url,
            event_types=tuple(dict.fromkeys(event_types)),
            secret="whsec_" + base64.b64encode(secrets.token_bytes(32)).decode(),
            created_at=time.time(),
            description=description,
        )
        if not await self.feed.webhook_put(
            operator.name, hook.webhook_id, hook.to_bytes(), self.webhooks_per_operator
        ):
            raise E.ResourceExhausted(
                f"an operator has at most {self.webhooks_per_operator} webhooks; delete one first"
            )
        self._forget_webhooks(operator.name)
        log.info("webhook created", webhook_id=hook.webhook_id)
        return hook

    async def list_webhooks(self, operator: Operator) -> list[WebhookInfo]:
        raw = await self.feed.webhook_list(operator.name)
        return sorted((WebhookInfo.from_bytes(v) for v in raw.values()), key=lambda h: h.created_at)

    async def delete_webhook(self, operator: Operator, webhook_id: str) -> None:
        if not await self.feed.webhook_delete(operator.name, webhook_id):
            raise E.WebhookNotFound(f"no webhook {webhook_id[:40]!r}")
        self._forget_webhooks(operator.name)
        log.info("webhook deleted", webhook_id=webhook_id)

    async def list_deliveries(
        self, operator: Operator, webhook_id: str, state: DeliveryState | None, page_size: int
    ) -> list[Delivery]:
        if await self.feed.webhook_get(operator.name, webhook_id) is None:
            raise E.WebhookNotFound(f"no webhook {webhook_id[:40]!r}")
        size = 50 if page_size <= 0 else min(page_size, 200)
        raw = await self.feed.delivery_log(operator.name, webhook_id, 1000 if state else size)
        found = [Delivery.from_bytes(r) for r in raw]
        if state is not None:
            found = [d for d in found if d.state is state]
        return found[:size]
