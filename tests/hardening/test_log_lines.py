"""A refused call's log line says who was refused and why: the ``rpc finished`` (gRPC) and
``http request`` (REST) lines carry the typed ``reason`` and the ``operator`` the call acted
for (the key's name, or the owner of the match a seat credential belongs to)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import aiohttp
import grpc
import pytest
import structlog

from tests.e2e.client import MS, Stub, bearer, create, rich
from tests.hardening.helpers import worker_on
from truco_contract.pb import action_pb2, match_pb2
from truco_server.config import ApiKey
from truco_server.logging import configure_logging

KEY = ApiKey(name="acme", secret="acme-secret-1")


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    out = io.StringIO()
    configure_logging("info", stream=out)
    try:
        yield out
    finally:
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)


def _lines(out: io.StringIO, event: str) -> list[dict[str, object]]:
    return [line for line in map(json.loads, out.getvalue().splitlines()) if line["event"] == event]


async def test_refusals_are_logged_with_reason_and_operator_over_grpc_and_rest(
    clean_redis_url: str, log_lines: io.StringIO
) -> None:
    async with worker_on(clean_redis_url, api_keys=(KEY,)) as worker:
        async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
            stub = Stub(channel)
            match = await create(stub, api_key=KEY.secret)
            # a seat credential: the operator is the match's owner
            stale = MS.SubmitActionRequest(
                match_id=match.match_id, action=action_pb2.Action(fold=action_pb2.Fold()), expected_version=1
            )
            with pytest.raises(grpc.aio.AioRpcError) as grpc_refusal:
                await stub.SubmitAction(stale, metadata=bearer(match.tokens[0]), timeout=10)
            # an operator key: the operator is the key's name
            bad_rules = MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="no-such-preset"))
            with pytest.raises(grpc.aio.AioRpcError) as rules_refusal:
                await stub.CreateMatch(bad_rules, metadata=bearer(KEY.secret), timeout=10)
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                f"http://127.0.0.1:{worker.http_port}/v1/matches/{match.match_id}/actions",
                json={"action": {"fold": {}}, "expectedVersion": 1},
                headers={"Authorization": f"Bearer {match.tokens[0]}"},
            ) as resp,
        ):
            rest_reason = (await resp.json())["details"][0]["reason"]
            assert resp.status == 409

    finished = _lines(log_lines, "rpc finished")
    submit = [line for line in finished if line["grpc_method"] == "truco.v1.MatchService/SubmitAction"]
    assert len(submit) == 1
    assert submit[0]["reason"] == rich(grpc_refusal.value).reason == "STALE_VERSION"
    assert submit[0]["operator"] == "acme"
    assert submit[0]["grpc_code"] == "ABORTED"
    created = [line for line in finished if line["grpc_method"] == "truco.v1.MatchService/CreateMatch"]
    refused = [line for line in created if line.get("reason")]
    assert [(line["reason"], line["operator"]) for line in refused] == [
        (rich(rules_refusal.value).reason, "acme")
    ]
    http = [line for line in _lines(log_lines, "http request") if line["status"] == 409]
    assert [(line["reason"], line["operator"]) for line in http] == [(rest_reason, "acme")]
    assert rest_reason == "STALE_VERSION"
    # credentials never reach a line
    text = log_lines.getvalue()
    assert KEY.secret not in text and match.tokens[0] not in text
