"""Operator events and webhooks end to end: real workers on a real Redis, a loopback receiver.

The receiver fails the first two attempts of every delivery; each webhook still arrives, signed
so that the ``standardwebhooks`` verifier accepts it, with the same ``webhook-id`` on every
attempt -- also when the worker delivering it is SIGKILLed mid-delivery.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from aiohttp import web
from standardwebhooks import Webhook as Verifier
from standardwebhooks import WebhookVerificationError

from tests.e2e.client import Player, act, bearer, create, get, rich
from tests.e2e.conftest import WorkerFactory, serve_process
from truco_contract.pb import action_pb2, match_pb2, operator_service_pb2, operator_service_pb2_grpc
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import match_service_pb2_grpc as MSG
from truco_tools.redis_proc import free_port

OPS = operator_service_pb2
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

LOOPBACK = "127.0.0.0/8"
FAST = {
    "webhook_allow": LOOPBACK,
    "webhook_retry_schedule": "0.2,0.2,0.2",
    "webhook_timeout_seconds": 2.0,
    "scheduler_tick_seconds": 0.05,
}


@dataclass
class Attempt:
    headers: dict[str, str]
    body: str


@dataclass
class Receiver:
    """A webhook endpoint on loopback: fails the first ``fail`` attempts of every webhook-id
    (HTTP 500), or holds the first ``hang`` of them for ``hang_seconds``."""

    fail: int = 2
    hang: int = 0
    hang_seconds: float = 30.0
    attempts: list[Attempt] = field(default_factory=list)
    in_flight: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""

    def by_id(self) -> dict[str, list[Attempt]]:
        out: dict[str, list[Attempt]] = {}
        for a in self.attempts:
            out.setdefault(a.headers["webhook-id"], []).append(a)
        return out

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        attempt = Attempt({k.lower(): v for k, v in request.headers.items()}, body)
        self.attempts.append(attempt)
        n = len(self.by_id()[attempt.headers["webhook-id"]])
        if n <= self.hang:
            self.in_flight.set()
            await asyncio.sleep(self.hang_seconds)
            return web.Response(status=500)
        if n <= self.fail:
            return web.Response(status=500, text="not yet")
        return web.Response(status=204)


@pytest_asyncio.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()
    app = web.Application()
    app.router.add_post("/hook", rec.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    port = free_port("127.0.0.1")
    await web.TCPSite(runner, "127.0.0.1", port).start()
    rec.url = f"http://127.0.0.1:{port}/hook"
    yield rec
    await runner.cleanup()


async def _until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def _resign(stub: MSG.MatchServiceStub, m: Any, seat: int = 0) -> None:
    await act(stub, m.match_id, m.tokens[seat], action_pb2.Action(resign=action_pb2.Resign()))


def _verified(secret: str, a: Attempt) -> dict[str, Any]:
    payload: dict[str, Any] = Verifier(secret).verify(a.body, a.headers)
    return payload


async def test_each_webhook_arrives_signed_with_one_id_despite_two_failures(
    make_worker: WorkerFactory, receiver: Receiver
) -> None:
    async with (
        make_worker(**FAST) as w1,
        make_worker(**FAST) as w2,
        grpc.aio.insecure_channel(w1.grpc_address) as c1,
        grpc.aio.insecure_channel(w2.grpc_address) as c2,
    ):
        ops = operator_service_pb2_grpc.OperatorServiceStub(c1)
        made = await ops.CreateWebhook(OPS.CreateWebhookRequest(url=receiver.url, description="tests"))
        hook = made.webhook
        assert hook.secret.startswith("whsec_") and hook.webhook_id.startswith("wh_")
        listed = await ops.ListWebhooks(OPS.ListWebhooksRequest())
        assert [h.webhook_id for h in listed.webhooks] == [hook.webhook_id]
        assert listed.webhooks[0].secret == ""  # shown once, at creation
        m = await create(MSG.MatchServiceStub(c2), "paulista", 2)  # through the other worker
        await _resign(MSG.MatchServiceStub(c1), m)
        ids = {f"{m.match_id}:{v}" for v in (1, 2)}  # created, started (its first deal)
        await _until(lambda: len(receiver.by_id()) >= 4, 30, "four events")
        await _until(lambda: all(len(a) >= 3 for a in receiver.by_id().values()), 30, "third attempts")
        got = receiver.by_id()
        assert ids <= set(got)
        types = {}
        for event_id, attempts in got.items():
            assert len(attempts) == 3, (event_id, len(attempts))  # two failures, then delivered
            bodies = {a.body for a in attempts}
            assert len(bodies) == 1  # the same payload every time
            payloads = [_verified(hook.secret, a) for a in attempts]  # every attempt's signature
            payload = payloads[0]
            assert payload["data"]["id"] == event_id and payload["data"]["matchId"] == m.match_id
            types[payload["type"]] = payload
        assert set(types) == {"match.created", "match.started", "match.turn", "match.ended"}
        ended = types["match.ended"]["data"]
        assert ended["result"]["winnerTeam"] == 1  # seat 0 resigned
        deliveries = await ops.ListWebhookDeliveries(
            OPS.ListWebhookDeliveriesRequest(webhook_id=hook.webhook_id)
        )
        assert {d.id for d in deliveries.deliveries} == set(got)
        assert all(
            d.state == OPS.DELIVERY_STATE_DELIVERED and d.attempts == 3 and d.last_status == 204
            for d in deliveries.deliveries
        )
        await asyncio.sleep(1.0)
        assert all(len(a) == 3 for a in receiver.by_id().values())  # nothing sent twice after success


async def test_a_delivery_is_given_up_after_the_schedule_and_shown_as_failed(
    make_worker: WorkerFactory, receiver: Receiver
) -> None:
    receiver.fail = 100
    async with make_worker(**FAST) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        ops = operator_service_pb2_grpc.OperatorServiceStub(ch)
        hook = (
            await ops.CreateWebhook(OPS.CreateWebhookRequest(url=receiver.url, event_types=["match.created"]))
        ).webhook
        m = await create(MSG.MatchServiceStub(ch), "argentine", 2)
        eid = f"{m.match_id}:1"
        await _until(lambda: len(receiver.by_id().get(eid, [])) >= 4, 30, "four attempts")
        await asyncio.sleep(1.0)
        assert len(receiver.by_id()[eid]) == 4  # the first and one per schedule step
        assert set(receiver.by_id()) == {eid}  # only the subscribed type
        failed = await ops.ListWebhookDeliveries(
            OPS.ListWebhookDeliveriesRequest(webhook_id=hook.webhook_id, state=OPS.DELIVERY_STATE_FAILED)
        )
        (d,) = failed.deliveries
        assert d.id == eid and d.attempts == 4 and d.last_status == 500 and "HTTP 500" in d.last_error


@pytest.fixture
def serve_webhooks(clean_redis_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``truco serve`` delivering webhooks to loopback, as a child process we can SIGKILL."""
    args = ("--webhook-allow", LOOPBACK, "--webhook-timeout", "2", "--webhook-retry-schedule", "0.2,0.2")
    with serve_process(clean_redis_url, tmp_path, *args, "--scheduler-tick", "0.05") as served:
        yield served


async def test_a_worker_killed_mid_delivery_leaves_it_to_another_with_the_same_id(
    make_worker: WorkerFactory,
    receiver: Receiver,
    serve_webhooks: tuple[subprocess.Popen[bytes], str],
) -> None:
    receiver.fail, receiver.hang = 0, 1  # the first attempt is held open until the worker dies
    proc, address = serve_webhooks
    async with grpc.aio.insecure_channel(address) as ch:
        ops = operator_service_pb2_grpc.OperatorServiceStub(ch)
        hook = (
            await ops.CreateWebhook(OPS.CreateWebhookRequest(url=receiver.url, event_types=["match.created"]))
        ).webhook
        m = await create(MSG.MatchServiceStub(ch), "paulista", 2)
    await asyncio.wait_for(receiver.in_flight.wait(), 20)
    os.kill(proc.pid, signal.SIGKILL)  # mid-delivery: the endpoint has the request, no answer yet
    proc.wait(10)
    eid = f"{m.match_id}:1"
    async with make_worker(**FAST):  # claims the delivery once the dead worker's lease ran out
        await _until(lambda: len(receiver.by_id().get(eid, [])) >= 2, 30, "the second attempt")
        first, second = receiver.by_id()[eid][:2]
        assert first.headers["webhook-id"] == second.headers["webhook-id"] == eid
        assert first.body == second.body
        assert _verified(hook.secret, second)["type"] == "match.created"


async def test_webhook_destinations_and_inputs_are_checked(make_worker: WorkerFactory) -> None:
    async with (
        make_worker(webhooks_per_operator=2) as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
    ):
        ops = operator_service_pb2_grpc.OperatorServiceStub(ch)
        for url in (
            "http://127.0.0.1:9/hook",  # loopback, not allowed here
            "https://localhost/hook",
            "https://10.1.2.3/hook",  # private
            "https://169.254.169.254/latest/meta-data",  # link-local (cloud metadata)
            "https://[::1]/hook",
            "http://93.184.216.34/hook",  # public, but plain http
            "ftp://example.org/x",
            "https://user:pw@93.184.216.34/hook",
        ):
            with pytest.raises(grpc.aio.AioRpcError) as exc:
                await ops.CreateWebhook(OPS.CreateWebhookRequest(url=url))
            e = rich(exc.value)
            assert e.code == grpc.StatusCode.INVALID_ARGUMENT, url
            assert e.reason == "DESTINATION_NOT_ALLOWED" and e.fields == ["url"], url
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await ops.CreateWebhook(
                OPS.CreateWebhookRequest(url="https://93.184.216.34/h", event_types=["x"])
            )
        assert rich(exc.value).fields == ["event_types"]
        for _ in range(2):
            await ops.CreateWebhook(OPS.CreateWebhookRequest(url="https://93.184.216.34/h"))
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await ops.CreateWebhook(OPS.CreateWebhookRequest(url="https://93.184.216.34/h"))
        assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await ops.DeleteWebhook(OPS.DeleteWebhookRequest(webhook_id="wh_nope"))
        assert rich(exc.value).reason == "WEBHOOK_NOT_FOUND"
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await ops.StreamOperatorEvents(OPS.StreamOperatorEventsRequest(from_cursor="junk")).read()
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_the_operator_stream_follows_a_whole_match_and_resumes(make_worker: WorkerFactory) -> None:
    async with make_worker(scheduler_tick_seconds=0.05) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        ops = operator_service_pb2_grpc.OperatorServiceStub(ch)
        stub = MSG.MatchServiceStub(ch)
        call = ops.StreamOperatorEvents(OPS.StreamOperatorEventsRequest())
        first = await call.read()  # a heartbeat or nothing yet: the stream is open
        del first
        m = await create(stub, "paulista", 2, settings=match_pb2.MatchSettings(labels={"table": "7"}))
        player = Player(stub, m, random.Random(3))
        while await player.step() is not None:
            pass
        events: list[operator_service_pb2.OperatorEvent] = []
        while not events or events[-1].type != "match.ended":
            msg = await asyncio.wait_for(call.read(), 20)
            if msg.HasField("event") and msg.event.match_id == m.match_id:
                events.append(msg.event)
        call.cancel()
        kinds = [e.type for e in events]
        assert kinds[:2] == ["match.created", "match.started"] and kinds[-1] == "match.ended"
        assert set(kinds[2:-1]) == {"match.hand_ended", "match.turn"} and len(kinds) >= 4
        assert len({e.id for e in events}) == len(events)
        assert all(e.labels["table"] == "7" for e in events)
        final = await stub.GetMatch(MS.GetMatchRequest(match_id=m.match_id), metadata=bearer(m.spectator))
        assert events[-1].result == final.match.result
        # resume from the middle: exactly the events after that cursor
        middle = len(events) // 2
        again = ops.StreamOperatorEvents(OPS.StreamOperatorEventsRequest(from_cursor=events[middle].cursor))
        rest: list[str] = []
        while len(rest) < len(events) - middle - 1:
            msg = await asyncio.wait_for(again.read(), 20)
            if msg.HasField("event"):
                rest.append(msg.event.id)
        again.cancel()
        assert rest == [e.id for e in events[middle + 1 :]]


async def test_webhooks_over_rest(make_worker: WorkerFactory) -> None:
    import aiohttp

    async with make_worker(webhook_allow=LOOPBACK) as w, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{w.http_port}"
        async with http.post(f"{base}/v1/operator/webhooks", json={"url": "http://127.0.0.1:9/h"}) as r:
            assert r.status == 200
            hook = (await r.json())["webhook"]
        async with http.get(f"{base}/v1/operator/webhooks") as r:
            assert [h["webhookId"] for h in (await r.json())["webhooks"]] == [hook["webhookId"]]
        async with http.delete(f"{base}/v1/operator/webhooks/{hook['webhookId']}") as r:
            assert r.status == 200
        async with http.post(f"{base}/v1/operator/webhooks", json={"url": "https://10.0.0.1/h"}) as r:
            assert r.status == 400
            body = await r.json()
            assert json.dumps(body).count("DESTINATION_NOT_ALLOWED") >= 1


TURN_EVENT_KEYS = {"id", "matchId", "type", "time", "labels", "turn"}
TURN_KEYS = {"seat", "playerId", "decision", "awaiting", "call", "handNumber", "deadline"}
CARD = re.compile(r"^(1[0-2]|[1-9AJQK])[ebcoCHSD]$")  # a card code of either deck


def _values(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [v for item in x.values() for v in _values(item)]
    if isinstance(x, list):
        return [v for item in x for v in _values(item)]
    return [x]


async def test_match_turn_webhooks_one_per_awaited_decision_signed_and_without_cards(
    make_worker: WorkerFactory, receiver: Receiver
) -> None:
    """A webhook subscribed to ``match.turn`` gets exactly one delivery per decision the
    match awaited, each verified by the ``standardwebhooks`` library with the webhook's secret;
    the decisions come from what the seats were shown before acting, not from the events."""
    receiver.fail = 0
    async with make_worker(**FAST) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        ops = operator_service_pb2_grpc.OperatorServiceStub(ch)
        stub = MSG.MatchServiceStub(ch)
        hook = (
            await ops.CreateWebhook(OPS.CreateWebhookRequest(url=receiver.url, event_types=["match.turn"]))
        ).webhook
        seats = [match_pb2.SeatSpec(display_name=f"p{i}", player_id=f"player-{i}") for i in range(2)]
        m = await create(stub, "paulista", 2, seats=seats)
        rng = random.Random(11)
        awaited: list[tuple[int, int]] = []  # (decision, seat) each seat was shown before acting
        n = 0
        while True:
            view = await get(stub, m.match_id, m.tokens[0])
            if view.match.state != match_pb2.MATCH_STATE_ACTIVE:
                break
            seat = view.observation.awaited[0]
            mine = await get(stub, m.match_id, m.tokens[seat])
            awaited.append((mine.observation.decision, seat))
            action = rng.choice(list(mine.observation.legal_actions))
            await act(stub, m.match_id, m.tokens[seat], action, rid=f"{m.match_id}-{n}")
            n += 1
        assert len(awaited) > 5
        await _until(lambda: len(receiver.by_id()) >= len(awaited), 60, "a webhook per decision")
        await asyncio.sleep(0.5)  # a late extra delivery would show here
        got = receiver.by_id()
        assert len(got) == len(awaited)
        payloads = [_verified(hook.secret, attempts[0]) for attempts in got.values()]
        assert all(len(attempts) == 1 for attempts in got.values())
        assert {p["type"] for p in payloads} == {"match.turn"}
        turns = sorted((p["data"]["turn"] for p in payloads), key=lambda t: int(t.get("decision", 0)))
        assert [(int(t.get("decision", 0)), int(t.get("seat", 0))) for t in turns] == awaited
        assert all(t["playerId"] == f"player-{t.get('seat', 0)}" for t in turns)
        for p in payloads:  # the turn and nothing else: no hand, no card anywhere
            assert set(p["data"]) <= TURN_EVENT_KEYS and set(p["data"]["turn"]) <= TURN_KEYS, p
            assert not [v for v in _values(p) if isinstance(v, str) and CARD.match(v)], p
        first = next(iter(got.values()))[0]
        tampered = Attempt(dict(first.headers), first.body.replace("match.turn", "match.tvrn"))
        with pytest.raises(WebhookVerificationError):
            _verified(hook.secret, tampered)
