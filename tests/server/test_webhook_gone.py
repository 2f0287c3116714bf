"""Deliveries of a webhook that is gone -- deleted, or lost with a Redis that restarted
without persistence -- are dropped and leave no key behind: not when the webhook goes while
an attempt is under way (its answer records nothing), not when a relay queues one for a
webhook deleted since it listed them, and a delivery log left behind by a webhook that is
gone is removed when its next delivery comes up. Real ``redis-server``; the endpoint is a
local HTTP server that holds its answer until the test has made the webhook go."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import pytest
import pytest_asyncio
import redis
from aiohttp import web

from truco_server.app.wiring import Services, build_services, store_settings
from truco_server.core import metrics
from truco_server.core.caller import Operator
from truco_server.core.config import Settings
from truco_server.ports import Store
from truco_server.ports.queues import WEBHOOK
from truco_server.services.scheduler import webhook_reader
from truco_server.services.webhooks import Delivery
from truco_server.stores import open_store
from truco_tools.redis_proc import RedisProcess, free_port, start_redis

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

OPERATOR = Operator("acme")
SETTINGS = Settings(webhook_allow="127.0.0.1/32")


@dataclass
class Endpoint:
    """A webhook receiver whose answer waits for :attr:`release`."""

    url: str
    received: asyncio.Event
    release: asyncio.Event


@pytest_asyncio.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    received, release = asyncio.Event(), asyncio.Event()

    async def hook(request: web.Request) -> web.Response:
        await request.read()
        received.set()
        await release.wait()
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield Endpoint(f"http://127.0.0.1:{port}/hook", received, release)
    finally:
        release.set()
        await runner.cleanup()


@pytest.fixture
def own_redis() -> Iterator[RedisProcess]:
    """A redis-server without persistence of this test's own (some tests restart it)."""
    proc = start_redis()
    try:
        yield proc
    finally:
        proc.stop()


@pytest_asyncio.fixture
async def services(own_redis: RedisProcess) -> AsyncIterator[Services]:
    store: Store = open_store(own_redis.url, store_settings(SETTINGS))
    svc = build_services(SETTINGS, asyncio.Event(), store)
    try:
        yield svc
    finally:
        await svc.deliverer.close()
        await store.close()


def keys(proc: RedisProcess) -> list[str]:
    with proc.client() as client:
        return sorted(k.decode() for k in client.scan_iter(count=1000))


def dropped() -> float:
    return (
        metrics.REGISTRY.get_sample_value("truco_orphaned_work_dropped_total", {"parent": "webhook"}) or 0.0
    )


def delivery(webhook_id: str, event: str = "m1:1") -> Delivery:
    return Delivery(
        webhook_id=webhook_id, event_id=event, owner=OPERATOR.name, type="match.created",
        event_time=time.time(), body='{"type":"match.created"}',
    )  # fmt: skip


async def _attempt_while(svc: Services, endpoint: Endpoint, go: Callable[[], Awaitable[None]]) -> None:
    """Queue a delivery to ``endpoint``, let the webhook reader attempt it, run ``go`` while
    the endpoint holds its answer, then let it answer and the attempt end."""
    hook = await svc.operators.create_webhook(OPERATOR, endpoint.url, (), "")
    assert await svc.deliverer.enqueue(delivery(hook.webhook_id))
    reader = webhook_reader(svc.deliverer, svc.store.queues)
    attempt = asyncio.create_task(reader.run_once())
    await asyncio.wait_for(endpoint.received.wait(), 30)
    await go()
    endpoint.release.set()
    assert await asyncio.wait_for(attempt, 60) == 1


async def test_an_attempt_answered_after_redis_restarted_empty_records_nothing(
    services: Services, endpoint: Endpoint, own_redis: RedisProcess
) -> None:
    before = dropped()

    async def restart() -> None:
        own_redis.kill()  # no persistence: it starts again empty
        own_redis.restart()

    await _attempt_while(services, endpoint, restart)
    assert keys(own_redis) == []  # no delivery log, no queue item
    assert dropped() == before + 1


async def test_an_attempt_answered_after_its_webhook_was_deleted_records_nothing(
    services: Services, endpoint: Endpoint, own_redis: RedisProcess
) -> None:
    async def delete() -> None:
        (hook,) = await services.operators.list_webhooks(OPERATOR)
        await services.operators.delete_webhook(OPERATOR, hook.webhook_id)

    await _attempt_while(services, endpoint, delete)
    assert [k for k in keys(own_redis) if ":wh:" in k or ":q:webhook" in k] == []


async def test_a_delivery_queued_for_a_webhook_deleted_since_is_dropped(
    services: Services, endpoint: Endpoint, own_redis: RedisProcess
) -> None:
    hook = await services.operators.create_webhook(OPERATOR, endpoint.url, (), "")
    await services.operators.delete_webhook(OPERATOR, hook.webhook_id)
    before = dropped()
    # what a relay that listed the webhooks just before the delete does
    assert not await services.deliverer.enqueue(delivery(hook.webhook_id))
    assert await services.store.queues.due(WEBHOOK, 10**13) == []
    assert [k for k in keys(own_redis) if ":wh:" in k or ":q:webhook" in k] == []
    assert dropped() == before + 1


async def test_the_delivery_log_a_gone_webhook_left_is_removed_with_its_next_delivery(
    services: Services, own_redis: RedisProcess
) -> None:
    """A delivery log left behind (by a worker of an earlier version, whose attempt ended
    after the delete) goes when the next delivery of that webhook comes up."""
    d = delivery("wh_gone")
    base = f"truco:{{op:{OPERATOR.name}}}:wh:wh_gone"
    with own_redis.client() as client:
        client.hset(f"{base}:deliveries", d.event_id, d.log_entry())
        client.zadd(f"{base}:order", {d.event_id: 1})
    assert await services.store.queues.add(WEBHOOK, d.item, 0, d.to_bytes(), only_new=True)
    assert await webhook_reader(services.deliverer, services.store.queues).run_once() == 1
    assert keys(own_redis) == []


async def test_a_delivery_log_write_for_a_registered_webhook_still_works(
    services: Services, endpoint: Endpoint, own_redis: RedisProcess
) -> None:
    async def nothing() -> None:
        return None

    await _attempt_while(services, endpoint, nothing)
    (hook,) = await services.operators.list_webhooks(OPERATOR)
    (done,) = await services.operators.list_deliveries(OPERATOR, hook.webhook_id, None, 10)
    assert done.state.value == "delivered" and done.attempts == 1
    with redis.Redis(host=own_redis.host, port=own_redis.port) as client:
        assert client.exists(f"truco:{{op:{OPERATOR.name}}}:wh:{hook.webhook_id}:deliveries")
