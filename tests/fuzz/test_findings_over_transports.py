"""Regressions for what the coverage-guided fuzzer found in the REST path, and for the loose
validations of finding 9, over REST and gRPC on one worker with the Redis store. Each
refusal is a typed INVALID_ARGUMENT or UNAUTHENTICATED naming the field, and leaves Redis as it
was: no new key, the live match's version unchanged (before the fixes: a 500 or INTERNAL, or
an input taken as something else)."""

from __future__ import annotations

import asyncio
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
from truco_contract.pb import match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_server.core.config import ApiKey

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]
G = grpc.StatusCode
KEY = "ops-key"
OPS = {"X-Api-Key": KEY}


@dataclass
class Env:
    stub: Stub
    base: str
    port: int
    http: aiohttp.ClientSession
    redis: aioredis.Redis
    made: Created

    async def stored(self) -> tuple[set[bytes], int]:
        """Redis's keys but the quota counters, and the live match's version (keys may expire
        meanwhile, none may appear)."""
        got = await self.stub.GetMatch(
            MS.GetMatchRequest(match_id=self.made.match_id), metadata=bearer(self.made.tokens[0])
        )
        # a quota counter is not match data: a refused call still counts against its quota
        keys = {k for k in await self.redis.keys("*") if not k.startswith(b"truco:{quota:")}
        return keys, got.match.version

    async def unchanged(self, before: tuple[set[bytes], int]) -> None:
        keys, version = await self.stored()
        assert keys <= before[0] and version == before[1], (keys - before[0], version, before[1])

    async def rest(self, method: str, path: str, status: int, **kw: Any) -> dict[str, Any]:
        """One REST call that must be refused with ``status`` and a JSON Status, storing nothing."""
        before = await self.stored()
        async with self.http.request(method, self.base + path, **kw) as resp:
            text = await resp.text()
            assert resp.status == status, text[:300]
            assert resp.content_type == "application/json", text[:300]
        await self.unchanged(before)
        body: dict[str, Any] = json.loads(text)
        return body

    async def grpc_refused(self, call: Any) -> grpc.aio.AioRpcError:
        before = await self.stored()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call
        assert caught.value.code() not in (G.INTERNAL, G.UNKNOWN), caught.value
        await self.unchanged(before)
        return caught.value


def fields_of(body: dict[str, Any]) -> list[str]:
    return [v["field"] for d in body["details"] for v in d.get("fieldViolations", ())]


@pytest_asyncio.fixture
async def env(make_worker: WorkerFactory, clean_redis_url: str) -> AsyncIterator[Env]:
    async with (
        make_worker(api_keys=(ApiKey(name="ops", secret=KEY),)) as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
        aiohttp.ClientSession() as http,
    ):
        r = aioredis.Redis.from_url(clean_redis_url)
        stub = Stub(ch)
        made = await create(stub, "argentine", 2, api_key=KEY)
        await relays_settled(r)  # what the create left to relay is in Redis before any test
        try:
            yield Env(stub, f"http://127.0.0.1:{w.http_port}", w.http_port, http, r, made)
        finally:
            await r.aclose()


# ------------------------------------------------------------------ finding 9 leftovers
async def test_an_invalid_base64_bytes_field_is_refused_naming_it(env: Env) -> None:
    # "!!!!" decoded leniently is no bytes at all: the match would have had a server seed
    for body, field in (
        ({"seed": "!!!!"}, "seed"),
        ({"seed": "===="}, "seed"),
        ({"seed": "c2VlZC1zZWVk c2VlZC1zZWVk"}, "seed"),
        ({"clientSeed": "not base64?"}, "client_seed"),
    ):
        got = await env.rest("POST", "/v1/matches", 400, headers=OPS, json=body)
        assert fields_of(got) == [field], got
        assert "base64" in got["message"]
    mid, seat1 = env.made.match_id, env.made.tokens[1]
    got = await env.rest(
        "POST",
        f"/v1/matches/{mid}:join",
        400,
        headers={"Authorization": f"Bearer {seat1}"},
        json={"clientSeed": "%%%%"},
    )
    assert fields_of(got) == ["client_seed"]
    # valid forms are still read: standard or URL-safe alphabet, padding optional
    for seed in ("c2VlZC1zZWVkLXNlZWQtc2VlZA==", "c2VlZC1zZWVkLXNlZWQtc2VlZA", "-_-_c2VlZC1zZWVkLXNlZWQt"):
        async with env.http.post(env.base + "/v1/matches", headers=OPS, json={"seed": seed}) as resp:
            assert resp.status == 200, await resp.text()


async def test_the_name_override_is_refused_not_renaming_the_preset(env: Env) -> None:
    got = await env.rest(
        "POST",
        "/v1/matches",
        400,
        headers=OPS,
        json={"rules": {"preset": "paulista", "overrides": {"name": "argentine"}}},
    )
    assert fields_of(got) == ["name"] and got["details"][0]["reason"] == "INVALID_RULES", got
    rules = match_pb2.RuleSet(preset="paulista")
    rules.overrides.update({"name": "argentine"})
    err = await env.grpc_refused(
        env.stub.CreateMatch(MS.CreateMatchRequest(rules=rules), metadata=bearer(KEY))
    )
    d = details(err)
    assert d.code == G.INVALID_ARGUMENT and d.reason == "INVALID_RULES" and d.fields == ["name"]


async def test_an_unknown_seat_kind_is_refused_over_rest_too(env: Env) -> None:
    # (gRPC: tests/hardening/test_inputs.py::test_malformed_input_is_a_typed_error)
    got = await env.rest("POST", "/v1/matches", 400, headers=OPS, json={"seats": [{"kind": 99}, {}]})
    assert fields_of(got) == ["seats[0].kind"], got


# ------------------------------------------------------------------- fuzzer findings
async def test_a_rule_override_of_the_wrong_type_is_invalid_rules(env: Env) -> None:
    # a list-valued rule given a number reached len() in the validation: INTERNAL / 500; an
    # object for a number of a rule not played (argentine has no hand of eleven) was kept, and
    # hashing the rule set raised: INTERNAL / 500 (found by the records target)
    for preset, overrides, field in (
        ("paulista", {"truco_call_names": 3}, "truco_call_names"),
        ("paulista", {"extra_manilhas": [[1]]}, "extra_manilhas"),
        ("argentine", {"hand_of_eleven_refusal": {}}, "hand_of_eleven_refusal"),
    ):
        got = await env.rest(
            "POST",
            "/v1/matches",
            400,
            headers=OPS,
            json={"rules": {"preset": preset, "overrides": overrides}},
        )
        assert fields_of(got) == [field] and got["details"][0]["reason"] == "INVALID_RULES", got
        rules = match_pb2.RuleSet(preset=preset)
        rules.overrides.update(overrides)
        err = await env.grpc_refused(
            env.stub.CreateMatch(MS.CreateMatchRequest(rules=rules), metadata=bearer(KEY))
        )
        assert details(err).reason == "INVALID_RULES" and details(err).fields == [field]


async def test_json_protobuf_cannot_hold_is_a_400_not_a_500(env: Env) -> None:
    json_headers = {**OPS, "Content-Type": "application/json"}
    huge = '{"rules": {"overrides": {"target_points": 1' + "0" * 400 + "}}}"  # no double holds it
    got = await env.rest("POST", "/v1/matches", 400, headers=json_headers, data=huge)
    assert got["code"] == 3
    for body in ('{"\\udcff": 1}', '{"rules": {"preset": "\\ud800"}}', '{"labels": {"\\udcff": "x"}}'):
        got = await env.rest("POST", "/v1/matches", 400, headers=json_headers, data=body)
        assert got["code"] == 3 and "Unicode" in got["message"], got
    # the gRPC form of a Struct number is a double already: nothing to overflow
    rules = match_pb2.RuleSet(preset="paulista", overrides=struct_pb2.Struct())
    rules.overrides.fields["target_points"].number_value = 1e300
    err = await env.grpc_refused(
        env.stub.CreateMatch(MS.CreateMatchRequest(rules=rules), metadata=bearer(KEY))
    )
    assert details(err).reason == "INVALID_RULES"


async def test_an_api_key_header_that_is_not_utf8_is_unauthenticated(env: Env) -> None:
    # aiohttp hands undecodable header bytes over as lone surrogates; the key comparison
    # encoded them and raised: a 500 for any caller (raw bytes: an HTTP client library
    # would not send them)
    before = await env.stored()
    for header in (b"X-Api-Key: \xff\xfe", b"Authorization: Bearer k\xe9y\xff"):
        reader, writer = await asyncio.open_connection("127.0.0.1", env.port)
        writer.write(
            b"GET /v1/matches HTTP/1.1\r\nHost: 127.0.0.1\r\n" + header + b"\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        await writer.wait_closed()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401"), answer[:300]
        assert json.loads(body)["details"][0]["reason"] == "INVALID_CREDENTIAL"
    await env.unchanged(before)
