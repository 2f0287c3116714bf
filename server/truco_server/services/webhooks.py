"""Webhook deliveries: where they may go, how they are signed, how they are retried.

An operator registers an endpoint (``CreateWebhook``); every lifecycle event of its matches
that the endpoint subscribes to becomes one delivery in the store's ``webhook`` queue
(:mod:`truco_server.services.operators` puts it there). Any worker's :class:`Deliverer` claims due
deliveries, POSTs them and ends the claim:

* **Format**: Standard Webhooks (https://www.standardwebhooks.com): the body is
  ``{"type", "timestamp", "data"}`` (``data``: the ``truco.v1.OperatorEvent`` as JSON), the
  headers ``webhook-id`` (the event id, the same on every attempt, so receivers dedupe),
  ``webhook-timestamp`` (this attempt's time) and ``webhook-signature`` (``v1,<base64
  HMAC-SHA256>`` made by the ``standardwebhooks`` package with the endpoint's secret).
* **At least once**: a delivery leaves the queue only after a 2xx answer (or after the last
  attempt). A worker killed mid-delivery leaves its claim to expire; another worker sends the
  same delivery again, same ``webhook-id``.
* **A webhook that is gone** (deleted, or lost with a Redis that restarted without
  persistence): its deliveries are dropped, whenever they come to it -- queued, claimed, or
  answered while it went (the state of a delivery is recorded only while its webhook is
  registered, in one atomic step) -- and whatever delivery log it left is removed; each drop
  is a log line and ``truco_orphaned_work_dropped_total{parent="webhook"}``.
* **Retries**: after a failed attempt (no answer within the timeout, a non-2xx status) the
  next waits the next step of ``TRUCO_WEBHOOK_RETRY_SCHEDULE`` (with ±10 % jitter, or the
  ``Retry-After`` the endpoint asked for when longer); after the last step the delivery is
  given up (``FAILED``) and stays visible in ``ListWebhookDeliveries``. ``410 Gone`` gives up
  at once.
* **Destinations** (:class:`Destinations`): ``https`` URLs to public addresses. Loopback,
  private, link-local and other non-public addresses, and plain ``http``, only where
  ``TRUCO_WEBHOOK_ALLOW`` lists them. The check is made at registration and again on the
  addresses each attempt actually connects to (a resolver that refuses them), so a name that
  later resolves somewhere private is refused too.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import random
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from standardwebhooks import Webhook as Signer

from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.ports.operators import OperatorFeed
from truco_server.ports.queues import WEBHOOK, Claim, Queues

log = structlog.get_logger("truco.webhooks")

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL = 2000
USER_AGENT = "truco-webhooks/1"


class DeliveryState(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


# ----------------------------------------------------------------------------- where to
class Destinations:
    """Which webhook URLs are allowed (see the module docstring).

    ``allow``: comma-separated networks (``127.0.0.0/8``, ``::1/128``, ``10.1.2.3``) and host
    names (``hooks.internal``) that may be reached although not public, and over ``http``.
    """

    def __init__(self, allow: str = "") -> None:
        self.networks: list[IpNetwork] = []
        self.hosts: set[str] = set()
        for raw in (x.strip() for x in allow.split(",")):
            if not raw:
                continue
            try:
                self.networks.append(ipaddress.ip_network(raw, strict=False))
            except ValueError:
                self.hosts.add(raw.lower().rstrip("."))

    def _allowed_ip(self, ip: IpAddress) -> bool:
        return any(ip in n for n in self.networks if n.version == ip.version)

    def address_ok(self, host: str, ip: IpAddress) -> bool:
        """May a delivery connect to ``ip`` (resolved from ``host``)?"""
        if host.lower().rstrip(".") in self.hosts or self._allowed_ip(ip):
            return True
        return ip.is_global and not ip.is_multicast

    def problem(self, url: str) -> str | None:
        """What is wrong with ``url`` before any name is resolved, or ``None``."""
        if len(url) > MAX_URL:
            return f"at most {MAX_URL} characters"
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return f"not a URL: {exc}"
        del port
        host = (parts.hostname or "").lower().rstrip(".")
        if parts.scheme not in ("https", "http") or not host:
            return "an https:// URL with a host"
        if parts.username or parts.password:
            return "credentials in the URL are not allowed; the signature authenticates us"
        if parts.fragment:
            return "no #fragment"
        literal: IpAddress | None
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        listed = host in self.hosts or (literal is not None and self._allowed_ip(literal))
        if parts.scheme == "http" and not listed:
            return "http:// only for destinations in TRUCO_WEBHOOK_ALLOW; use https://"
        if literal is not None and not self.address_ok(host, literal):
            return f"{literal} is not a public address (allow it with TRUCO_WEBHOOK_ALLOW)"
        if (host == "localhost" or host.endswith(".localhost")) and not listed:
            return "localhost is not a public address (allow it with TRUCO_WEBHOOK_ALLOW)"
        return None

    async def check(self, url: str) -> None:
        """Raise INVALID_ARGUMENT (field ``url``) unless deliveries to ``url`` are allowed,
        resolving its host name."""
        problem = self.problem(url)
        if problem is None:
            host = (urlsplit(url).hostname or "").rstrip(".")
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except OSError as exc:
                problem = f"the host does not resolve: {exc.strerror or exc}"
            else:
                bad = [i[4][0] for i in infos if not self.address_ok(host, ipaddress.ip_address(i[4][0]))]
                if bad:
                    problem = f"{host} resolves to {bad[0]}, not a public address"
        if problem is not None:
            raise E.InvalidArgument(
                f"webhook url refused: {problem}",
                reason=E.Reason.DESTINATION_NOT_ALLOWED,
                field_violations=[E.FieldViolation("url", problem)],
            )


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, refusing addresses :class:`Destinations` does not allow (checked
    on the addresses a delivery really connects to)."""

    def __init__(self, destinations: Destinations) -> None:
        self._inner = DefaultResolver()
        self._destinations = destinations

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        ok = [r for r in found if self._destinations.address_ok(host, ipaddress.ip_address(r["host"]))]
        if not ok:
            raise OSError(f"{host} resolves only to addresses webhooks may not reach")
        return ok

    async def close(self) -> None:
        await self._inner.close()


# ----------------------------------------------------------------------------- deliveries
@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One event's delivery to one endpoint (the queue item's data, and its log entry)."""

    webhook_id: str
    event_id: str
    owner: str
    type: str
    event_time: float
    body: str
    """The exact bytes POSTed (JSON text), the same on every attempt."""
    state: DeliveryState = DeliveryState.PENDING
    attempts: int = 0
    last_status: int = 0
    last_error: str = ""
    next_attempt: float = 0.0

    @property
    def item(self) -> str:
        return f"{self.webhook_id} {self.event_id}"

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> Delivery:
        d = json.loads(raw)
        return cls(**{**d, "state": DeliveryState(d["state"])})

    def log_entry(self) -> bytes:
        """What the delivery log keeps (without the body)."""
        return replace(self, body="").to_bytes()


def parse_schedule(text: str) -> tuple[float, ...]:
    """``TRUCO_WEBHOOK_RETRY_SCHEDULE``: seconds before each retry, comma-separated."""
    steps = tuple(float(x) for x in text.split(",") if x.strip())
    if not steps or any(s <= 0 for s in steps):
        raise ValueError("a retry schedule is one or more positive numbers of seconds")
    return steps


def _retry_after(value: str | None, now: float) -> float | None:
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    with contextlib.suppress(TypeError, ValueError):
        from email.utils import parsedate_to_datetime

        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    return None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an attempt ended: the status (0: no answer), an error text, Retry-After."""

    status: int
    error: str = ""
    retry_after: float | None = None


class Deliverer:
    """Sends the deliveries of the ``webhook`` queue; one per worker (see the module)."""

    def __init__(
        self,
        feed: OperatorFeed,
        queues: Queues,
        destinations: Destinations,
        *,
        schedule: Sequence[float] = (5, 300, 1800, 7200, 18000, 36000),
        timeout: float = 10.0,
        keep: int = 1000,
        clock: Any = time.time,
    ) -> None:
        self.feed = feed
        self.queues = queues
        self.destinations = destinations
        self.schedule = tuple(schedule)
        self.timeout = timeout
        self.keep = keep
        self.clock = clock
        self._session: aiohttp.ClientSession | None = None

    @property
    def attempts_max(self) -> int:
        """Attempts before a delivery is given up: the first and one per schedule step."""
        return len(self.schedule) + 1

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(resolver=GuardedResolver(self.destinations), limit=64)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                headers={"User-Agent": USER_AGENT},
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, url: str, secret: str, d: Delivery) -> Outcome:
        """One attempt: sign with this attempt's time and POST (no redirects followed)."""
        problem = self.destinations.problem(url)
        if problem is not None:
            return Outcome(0, f"destination refused: {problem}")
        now = datetime.fromtimestamp(self.clock(), tz=UTC)
        signature = Signer(secret).sign(d.event_id, now, d.body)
        headers = {
            "content-type": "application/json",
            "webhook-id": d.event_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signature,
        }
        try:
            async with self._client().post(
                url, data=d.body.encode(), headers=headers, allow_redirects=False
            ) as resp:
                await resp.read()
                error = "" if 200 <= resp.status < 300 else f"HTTP {resp.status}"
                return Outcome(
                    resp.status, error, _retry_after(resp.headers.get("Retry-After"), now.timestamp())
                )
        except TimeoutError:
            return Outcome(0, f"no answer within {self.timeout:g}s")
        except (aiohttp.ClientError, OSError) as exc:
            return Outcome(0, f"{type(exc).__name__}: {exc}"[:300])

    def after(self, d: Delivery, outcome: Outcome) -> Delivery:
        """The delivery after an attempt: delivered, given up, or the next attempt's time."""
        now = self.clock()
        attempts = d.attempts + 1
        base = replace(d, attempts=attempts, last_status=outcome.status, last_error=outcome.error)
        if 200 <= outcome.status < 300:
            return replace(base, state=DeliveryState.DELIVERED, next_attempt=0.0)
        if outcome.status == 410 or attempts >= self.attempts_max:
            return replace(base, state=DeliveryState.FAILED, next_attempt=0.0)
        wait = self.schedule[attempts - 1] * random.uniform(0.9, 1.1)
        if outcome.retry_after is not None:
            wait = max(wait, min(outcome.retry_after, 24 * 3600.0))
        return replace(base, next_attempt=now + wait)

    async def handle(self, claim: Claim) -> tuple[int | None, bytes]:
        """Attempt one claimed delivery; the queue's next due time (``None``: done) and data."""
        d = Delivery.from_bytes(claim.data)
        raw = await self.feed.webhook_get(d.owner, d.webhook_id)
        if raw is None:  # the webhook was deleted (or lost): its deliveries go with it
            await self.feed.webhook_delete(d.owner, d.webhook_id)  # and whatever log it left
            self._dropped(d, "before the attempt")
            return None, b""
        hook = json.loads(raw)
        start = time.perf_counter()
        outcome = await self.post(hook["url"], hook["secret"], d)
        metrics.WEBHOOK_SECONDS.observe(time.perf_counter() - start)
        nxt = self.after(d, outcome)
        result = "retry" if nxt.state is DeliveryState.PENDING else nxt.state.value
        metrics.WEBHOOK_DELIVERIES.labels(result).inc()
        log.info(
            "webhook attempt",
            webhook_id=d.webhook_id,
            event_id=d.event_id,
            attempt=nxt.attempts,
            status=outcome.status,
            result=result,
        )
        if not await self.feed.delivery_log_put(
            d.owner, d.webhook_id, d.event_id, nxt.log_entry(), round(d.event_time * 1000), self.keep
        ):  # deleted (or lost) during the attempt: nothing recorded, no retry
            self._dropped(d, "during the attempt")
            return None, b""
        if nxt.state is not DeliveryState.PENDING:
            return None, b""
        return round(nxt.next_attempt * 1000), nxt.to_bytes()

    async def enqueue(self, d: Delivery) -> bool:
        """Queue a new delivery (once per webhook and event: a repeated relay adds nothing);
        ``False`` when it was queued before, or its webhook is gone (then nothing stays)."""
        added = await self.queues.add(
            WEBHOOK, d.item, round(self.clock() * 1000), d.to_bytes(), only_new=True
        )
        if added and not await self.feed.delivery_log_put(
            d.owner, d.webhook_id, d.event_id, d.log_entry(), round(d.event_time * 1000), self.keep
        ):  # deleted (or lost) since the relay listed it
            await self.queues.release(WEBHOOK, [(d.item, d.to_bytes())])
            self._dropped(d, "when queued")
            return False
        return added

    @staticmethod
    def _dropped(d: Delivery, when: str) -> None:
        """Count and log a delivery dropped for its webhook's absence (info: deleting a
        webhook drops its pending deliveries, one line each)."""
        metrics.ORPHANED_WORK.labels("webhook").inc()
        log.info(
            "webhook delivery dropped: the webhook no longer exists",
            webhook_id=d.webhook_id,
            event_id=d.event_id,
            when=when,
        )
