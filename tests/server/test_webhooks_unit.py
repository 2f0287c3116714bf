"""Webhook destinations and the retry policy, without a network."""

from __future__ import annotations

import ipaddress

import pytest

from truco_server.services.webhooks import (
    Deliverer,
    Delivery,
    DeliveryState,
    Destinations,
    Outcome,
    parse_schedule,
)
from truco_server.stores import open_store


@pytest.mark.parametrize(
    ("url", "allow", "ok"),
    [
        ("https://hooks.example.org/truco", "", True),
        ("https://93.184.216.34/x", "", True),
        ("http://hooks.example.org/truco", "", False),  # plain http only where allowed
        ("http://127.0.0.1:8080/x", "", False),
        ("http://127.0.0.1:8080/x", "127.0.0.0/8", True),
        ("https://10.0.0.5/x", "10.0.0.0/8", True),
        ("https://10.0.0.5/x", "127.0.0.0/8", False),
        ("https://[fd00::1]/x", "", False),  # unique local
        ("https://[::1]/x", "::1/128", True),
        ("https://localhost/x", "", False),
        ("http://hooks.internal/x", "hooks.internal", True),
        ("https://u:p@hooks.example.org/x", "", False),
        ("https://hooks.example.org/x#frag", "", False),
        ("wss://hooks.example.org/x", "", False),
        ("https:///nohost", "", False),
        ("https://hooks.example.org:99999/x", "", False),
        ("https://" + "a" * 2100 + ".org/", "", False),
    ],
)
def test_destination_rules(url: str, allow: str, ok: bool) -> None:
    assert (Destinations(allow).problem(url) is None) is ok


def test_resolved_addresses_are_checked_too() -> None:
    d = Destinations("")
    assert d.address_ok("example.org", ipaddress.ip_address("93.184.216.34"))
    for private in ("127.0.0.1", "10.1.1.1", "192.168.0.7", "169.254.169.254", "::1", "fe80::1", "224.0.0.1"):
        assert not d.address_ok("example.org", ipaddress.ip_address(private)), private
    assert Destinations("hooks.internal").address_ok("hooks.internal", ipaddress.ip_address("10.1.1.1"))


def _delivery(attempts: int = 0) -> Delivery:
    return Delivery(
        webhook_id="wh_1", event_id="m:1", owner="op", type="match.created", event_time=1.0, body="{}",
        attempts=attempts,
    )  # fmt: skip


def test_retry_policy_follows_the_schedule_then_gives_up() -> None:
    now = 1000.0
    store = open_store(None)
    d = Deliverer(store.operators, store.queues, Destinations(), schedule=(5, 60), clock=lambda: now)
    first = d.after(_delivery(), Outcome(500, "HTTP 500"))
    assert first.state is DeliveryState.PENDING and first.attempts == 1
    assert now + 4.5 <= first.next_attempt <= now + 5.5  # 5 s ±10 %
    second = d.after(first, Outcome(0, "timeout"))
    assert second.state is DeliveryState.PENDING and now + 54 <= second.next_attempt <= now + 66
    third = d.after(second, Outcome(503, "HTTP 503"))
    assert third.state is DeliveryState.FAILED and third.attempts == 3 == d.attempts_max
    assert d.after(_delivery(), Outcome(204)).state is DeliveryState.DELIVERED
    assert d.after(_delivery(), Outcome(410, "HTTP 410")).state is DeliveryState.FAILED  # gone: stop
    slow = d.after(_delivery(), Outcome(429, "HTTP 429", retry_after=120.0))
    assert slow.next_attempt == pytest.approx(now + 120)  # the endpoint asked for longer


def test_retry_schedule_parsing() -> None:
    assert parse_schedule("5, 300,1800") == (5.0, 300.0, 1800.0)
    for bad in ("", "0", "5,-1", "x"):
        with pytest.raises(ValueError):
            parse_schedule(bad)
