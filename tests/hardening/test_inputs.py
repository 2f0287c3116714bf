"""Findings 2, 4, 5, 7 and 9: bounded input, typed errors for malformed input, uniform answers for
unknown match versus bad credential, the CreateMatch request-id conflict -- over gRPC and REST
on one worker with the Redis store. Every refusal must leave the match's version and Redis's
memory as they were."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from google.protobuf import struct_pb2

from tests.e2e.client import Created, Stub, bearer, create
from tests.e2e.conftest import WorkerFactory
from tests.hardening.helpers import details, relays_settled
from truco_contract.pb import action_pb2, match_pb2
from truco_contract.pb import match_service_pb2 as MS

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]
G = grpc.StatusCode


async def stored_keys(redis: Any) -> int:
    """Redis's keys but the quota counters (a refused call still counts against its quota;
    a counter is not match data)."""
    return len([k for k in await redis.keys("*") if not k.startswith(b"truco:{quota:")])


@dataclass
class Env:
    stub: Stub
    channel: grpc.aio.Channel
    base: str
    http: aiohttp.ClientSession
    redis: aioredis.Redis
    made: Created

    async def version(self) -> int:
        got = await self.stub.GetMatch(
            MS.GetMatchRequest(match_id=self.made.match_id), metadata=bearer(self.made.tokens[0])
        )
        return got.match.version

    async def refused(self, call: Any) -> grpc.aio.AioRpcError:
        before = (await self.version(), await stored_keys(self.redis))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        assert caught.value.code() not in (G.INTERNAL, G.UNKNOWN), caught.value
        assert (await self.version(), await stored_keys(self.redis)) == before
        assert len(caught.value.details() or "") <= 500
        return caught.value


@pytest_asyncio.fixture
async def env(make_worker: WorkerFactory, clean_redis_url: str) -> AsyncIterator[Env]:
    async with (
        make_worker() as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
        aiohttp.ClientSession() as http,
    ):
        r = aioredis.Redis.from_url(clean_redis_url)
        stub = Stub(ch)
        made = await create(stub, "paulista", 2)
        await relays_settled(r)  # what the create left to relay is in Redis before any test
        try:
            yield Env(stub, ch, f"http://127.0.0.1:{w.http_port}", http, r, made)
        finally:
            await r.aclose()


def _fold(env: Env, **fields: Any) -> MS.SubmitActionRequest:
    return MS.SubmitActionRequest(
        match_id=env.made.match_id, action=action_pb2.Action(fold=action_pb2.Fold()), **fields
    )


async def test_oversized_fields_are_refused_before_anything_is_stored(env: Env) -> None:
    seat = bearer(env.made.tokens[0])
    huge_id = "r" * 200_000
    err = await env.refused(env.stub.SubmitAction(_fold(env, request_id=huge_id), metadata=seat))
    d = details(err)
    assert d.code == G.INVALID_ARGUMENT and d.fields == ["request_id"] and "r" * 50 not in d.message
    card = action_pb2.Action(play_card=action_pb2.PlayCard(card="X" * 200_000))
    err = await env.refused(
        env.stub.SubmitAction(MS.SubmitActionRequest(match_id=env.made.match_id, action=card), metadata=seat)
    )
    assert details(err).fields == ["action.play_card.card"]
    for request, field in (
        (
            MS.CreateMatchRequest(seats=[match_pb2.SeatSpec(display_name="n" * 65)] * 2),
            "seats[0].display_name",
        ),
        (MS.CreateMatchRequest(request_id="q" * 129), "request_id"),
        (
            MS.CreateMatchRequest(settings=match_pb2.MatchSettings(labels={"k" * 65: "v"})),
            "settings.labels.key",
        ),
        (
            MS.CreateMatchRequest(settings=match_pb2.MatchSettings(labels={"k": "v" * 257})),
            "settings.labels['k']",
        ),
        (MS.CreateMatchRequest(client_seed=b"s" * 300), "client_seed"),
    ):
        err = await env.refused(env.stub.CreateMatch(request))
        assert details(err).code == G.INVALID_ARGUMENT and details(err).fields == [field], details(err)
    err = await env.refused(env.stub.GetMatch(MS.GetMatchRequest(match_id="m" * 5000), metadata=seat))
    assert details(err).fields == ["match_id"]
    # a request over the worker's message limit is refused by gRPC before it is read
    err = await env.refused(env.stub.CreateMatch(MS.CreateMatchRequest(client_seed=b"s" * 400_000)))
    assert err.code() == G.RESOURCE_EXHAUSTED


async def test_malformed_input_is_a_typed_error(env: Env) -> None:
    raw = env.channel.unary_unary(
        "/truco.v1.MatchService/CreateMatch", request_serializer=bytes, response_deserializer=bytes
    )
    for junk in (b"\xff\xff\xff\xff", b"\x0a\xff\xff\xff\x0f" + b"x" * 10, b"\x12" * 50):
        err = await env.refused(raw(junk))
        assert details(err).code == G.INVALID_ARGUMENT and "Error" not in details(err).message
    for bad in (float("nan"), float("inf")):
        rules = match_pb2.RuleSet(preset="paulista")
        rules.overrides.update({"target_score": 0})
        rules.overrides.fields["target_score"].number_value = bad
        err = await env.refused(env.stub.CreateMatch(MS.CreateMatchRequest(rules=rules)))
        assert details(err).code == G.INVALID_ARGUMENT, details(err)
    deep = struct_pb2.Struct()
    node = deep
    for _ in range(30):
        node = node.fields["a"].struct_value
    err = await env.refused(
        env.stub.CreateMatch(
            MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista", overrides=deep))
        )
    )
    assert details(err).code == G.INVALID_ARGUMENT
    mid = env.made.match_id
    # (gRPC metadata is ASCII: the unicode forms go over REST below)
    for token in (f"tc1.{mid}.{'9' * 5000}.{'0' * 40}", f"tc1.{mid}.-1.{'0' * 40}", f"tc1.{mid}.0.x"):
        err = await env.refused(env.stub.SubmitAction(_fold(env), metadata=bearer(token)))
        assert details(err).code == G.UNAUTHENTICATED
    err = await env.refused(
        env.stub.CreateMatch(MS.CreateMatchRequest(seats=[match_pb2.SeatSpec(kind=99)] * 2))  # type: ignore[arg-type]
    )
    assert details(err).fields == ["seats[0].kind"]


async def test_malformed_rest_input_is_a_json_error(env: Env) -> None:
    mid, token = env.made.match_id, env.made.tokens[0]
    auth = {"Authorization": f"Bearer {token}"}

    async def expect(method: str, path: str, status: int, **kw: Any) -> dict[str, Any]:
        before = (await env.version(), await stored_keys(env.redis))
        async with env.http.request(method, env.base + path, **kw) as resp:
            assert resp.status == status, await resp.text()
            assert resp.content_type == "application/json"
            body: dict[str, Any] = await resp.json()
        assert (await env.version(), await stored_keys(env.redis)) == before
        assert len(body["message"]) <= 500
        return body

    deep = "[" * 1000 + "]" * 1000
    await expect("POST", "/v1/matches", 400, data=deep, headers={"Content-Type": "application/json"})
    nested = '{"rules": {"overrides": ' + '{"a": ' * 200 + "1" + "}" * 200 + "}}"
    await expect("POST", "/v1/matches", 400, data=nested, headers={"Content-Type": "application/json"})
    await expect(
        "POST", "/v1/matches", 400, data='{"players": NaN}', headers={"Content-Type": "application/json"}
    )
    await expect("POST", "/v1/matches", 400, data="<xml/>", headers={"Content-Type": "application/xml"})
    await expect("POST", "/v1/matches", 400, json={"requestId": "x" * 200_000})
    body = await expect(
        "POST",
        f"/v1/matches/{mid}/actions",
        400,
        headers=auth,
        json={"action": {"playCard": {"card": "Z" * 100_000}}},
    )
    assert "Z" * 50 not in json.dumps(body)
    await expect(
        "GET",
        f"/v1/matches/{mid}:streamObservations",
        400,
        headers={**auth, "Accept": "text/event-stream", "Last-Event-ID": str(2**64)},
    )
    for token in (f"tc1.{mid}.0.\u00e9\u00e9", f"tc1.{mid}.\u0663.{'0' * 40}", f"tc1.{mid}.{'9' * 5000}.0"):
        await expect("GET", f"/v1/matches/{mid}", 401, headers={"Authorization": f"Bearer {token}"})
    await expect("GET", f"/v1/matches?{'q' * 5000}=1", 400, headers={"X-Api-Key": "k"})
    # only match credentials in URLs: an operator key there would expose every match
    await expect("GET", f"/v1/matches/{mid}:streamObservations?access_token=an-api-key", 401)


async def test_an_unknown_match_and_a_bad_credential_answer_alike(env: Env) -> None:
    forged = f"tc1.m0123456789abcdef0123.0.{'0' * 40}"
    real = env.made.tokens[0].rsplit(".", 1)[0] + "." + "0" * 40
    answers = []
    for token, match_id in ((forged, "m0123456789abcdef0123"), (real, env.made.match_id)):
        err = await env.refused(
            env.stub.GetMatch(MS.GetMatchRequest(match_id=match_id), metadata=bearer(token))
        )
        answers.append((err.code(), details(err).reason, err.details()))
    assert answers[0] == answers[1] and answers[0][0] == G.UNAUTHENTICATED


async def test_create_match_request_id_reused_with_another_body(env: Env) -> None:
    first = await env.stub.CreateMatch(
        MS.CreateMatchRequest(request_id="table-7", rules=match_pb2.RuleSet(preset="argentine"))
    )
    again = await env.stub.CreateMatch(
        MS.CreateMatchRequest(request_id="table-7", rules=match_pb2.RuleSet(preset="argentine"))
    )
    assert again.match.match_id == first.match.match_id  # a retry: the same match
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await env.stub.CreateMatch(
            MS.CreateMatchRequest(request_id="table-7", rules=match_pb2.RuleSet(preset="paulista"), players=4)
        )
    d = details(caught.value)
    assert d.code == G.ALREADY_EXISTS and d.reason == "REQUEST_ID_REUSED"
    async with env.http.post(
        env.base + "/v1/matches", json={"requestId": "table-7", "rules": {"preset": "paulista"}}
    ) as resp:
        assert resp.status == 409 and (await resp.json())["details"][0]["reason"] == "REQUEST_ID_REUSED"
