"""A refused call's log line says who was refused and why: the ``rpc finished`` (gRPC) and
``http request`` (REST) lines carry the typed ``reason`` and the ``operator`` the call acted
for (the key's name, or the owner of the match a seat credential belongs to)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import grpc
import pytest

from tests.e2e.client import MS, Stub, bearer, create, rich
from tests.helpers.serve import serve_apart
from truco_contract.pb import action_pb2, match_pb2

SECRET = "acme-secret-1"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """``truco serve`` (in-memory store, the key ``acme``) as a child process: its stdout is
    the log a collector would read (the process's own logging configuration, as deployed)."""
    with serve_apart(tmp_path, env={"TRUCO_API_KEYS": f"acme={SECRET}"}) as s:
        yield s.grpc_address, s.rest_url, s.stdout


def _lines(out: Path, event: str) -> list[dict[str, object]]:
    return [line for line in map(json.loads, out.read_text().splitlines()) if line["event"] == event]


async def test_refusals_are_logged_with_reason_and_operator_over_grpc_and_rest(
    served: tuple[str, str, Path],
) -> None:
    grpc_address, rest, out = served
    async with grpc.aio.insecure_channel(grpc_address) as channel:
        stub = Stub(channel)
        match = await create(stub, api_key=SECRET)
        # a seat credential: the operator is the match's owner
        stale = MS.SubmitActionRequest(
            match_id=match.match_id, action=action_pb2.Action(fold=action_pb2.Fold()), expected_version=1
        )
        with pytest.raises(grpc.aio.AioRpcError) as grpc_refusal:
            await stub.SubmitAction(stale, metadata=bearer(match.tokens[0]), timeout=10)
        # an operator key: the operator is the key's name
        bad_rules = MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="no-such-preset"))
        with pytest.raises(grpc.aio.AioRpcError) as rules_refusal:
            await stub.CreateMatch(bad_rules, metadata=bearer(SECRET), timeout=10)
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{rest}/v1/matches/{match.match_id}/actions",
            json={"action": {"fold": {}}, "expectedVersion": 1},
            headers={"Authorization": f"Bearer {match.tokens[0]}"},
        ) as resp,
    ):
        rest_reason = (await resp.json())["details"][0]["reason"]
        assert resp.status == 409

    def refused_lines_written() -> bool:
        methods = {line["grpc_method"] for line in _lines(out, "rpc finished") if line.get("reason")}
        return {"truco.v1.MatchService/SubmitAction", "truco.v1.MatchService/CreateMatch"} <= methods and any(
            line["status"] == 409 for line in _lines(out, "http request")
        )

    # the lines are written as the calls end, which may be after the client has its answer
    deadline = time.monotonic() + 10
    while not refused_lines_written() and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = _lines(out, "rpc finished")
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
    http = [line for line in _lines(out, "http request") if line["status"] == 409]
    assert [(line["reason"], line["operator"]) for line in http] == [(rest_reason, "acme")]
    assert rest_reason == "STALE_VERSION"
    # credentials never reach a line
    text = out.read_text()
    assert SECRET not in text and match.tokens[0] not in text
