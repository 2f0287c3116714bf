"""The generated OpenAPI document, and a bounded schemathesis run over it.

The document is fetched from a running ``truco serve`` (subprocess: schemathesis calls are
synchronous) and every operation is fuzzed with a few dozen generated requests, with an
operator key; no answer may be a 5xx, and answers must match the documented statuses,
content types and schemas.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import checks

from tests.rest.conftest import ACME_KEY, Served
from truco_contract.pb import match_service_pb2
from truco_server.transports.rest.openapi import build_openapi
from truco_server.transports.rest.routes import routes_of

# A safety net only: the fuzzing stops itself after TIME_BUDGET_S; starting the served workers
# (up to a minute on a loaded 2-core machine) and generating the cases of every operation come on top.
pytestmark = pytest.mark.timeout(300)

SERVICE = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"]
TIME_BUDGET_S = 40.0
EXAMPLES_PER_OPERATION = 30


def test_routes_come_from_the_http_annotations() -> None:
    routes = {r.method_name: r for r in routes_of(SERVICE)}
    # every method but the player connection (a bidirectional stream has no HTTP mapping)
    assert set(routes) == {m.name for m in SERVICE.methods if not m.client_streaming}
    assert "Connect" not in routes
    assert (
        routes["CreateMatch"].http_method,
        routes["CreateMatch"].template,
        routes["CreateMatch"].body,
    ) == (
        "POST",
        "/v1/matches",
        "*",
    )
    stream = routes["StreamObservations"]
    assert stream.server_streaming and stream.path_fields == ("match_id",)
    assert [p for p, _ in stream.query_fields()] == ["from_version"]
    assert [p for p, _ in routes["ListMatches"].query_fields()] == ["page_size", "page_token", "state"]
    assert routes["SubmitAction"].query_fields() == []  # body "*": no query parameters


def test_openapi_document_shape() -> None:
    doc = build_openapi(routes_of(SERVICE), title="t", version="v1")
    ops = {
        op["operationId"]: (path, verb) for path, item in doc["paths"].items() for verb, op in item.items()
    }
    assert ops == {
        "CreateMatch": ("/v1/matches", "post"),
        "SubmitAction": ("/v1/matches/{match_id}/actions", "post"),
        "StreamObservations": ("/v1/matches/{match_id}:streamObservations", "get"),
        "GetMatch": ("/v1/matches/{match_id}", "get"),
        "ListMatches": ("/v1/matches", "get"),
        "CancelMatch": ("/v1/matches/{match_id}:cancel", "post"),
        "JoinMatch": ("/v1/matches/{match_id}:join", "post"),
        "GetMatchRecord": ("/v1/matches/{match_id}/record", "get"),
        "AddTime": ("/v1/matches/{match_id}:addTime", "post"),
        "AdjudicateMatch": ("/v1/matches/{match_id}:adjudicate", "post"),
        "ReissueCredential": ("/v1/matches/{match_id}:reissueCredential", "post"),
    }
    schemas = doc["components"]["schemas"]
    obs = schemas["truco.v1.Observation"]["properties"]
    assert obs["legalActions"] == {"type": "array", "items": {"$ref": "#/components/schemas/truco.v1.Action"}}
    assert obs["version"]["type"] == "string" and obs["version"]["format"] == "int64"
    assert schemas["truco.v1.Event"]["properties"]["time"] == {"type": "string", "format": "date-time"}
    assert schemas["truco.v1.MatchState"]["enum"][0] == "MATCH_STATE_UNSPECIFIED"
    body = doc["paths"]["/v1/matches/{match_id}/actions"]["post"]["requestBody"]["content"]
    assert "matchId" not in body["application/json"]["schema"]["properties"]  # bound by the path
    stream = doc["paths"]["/v1/matches/{match_id}:streamObservations"]["get"]
    assert set(stream["responses"]["200"]["content"]) == {"application/x-ndjson", "text/event-stream"}
    assert {"google.rpc.Status", "google.rpc.ErrorInfo", "truco.v1.IllegalActionDetail"} <= set(schemas)


def test_openapi_is_served(served: Served) -> None:
    with urllib.request.urlopen(served.base + "/openapi.json", timeout=10) as resp:
        doc = json.load(resp)
    assert doc["openapi"].startswith("3.")
    from truco_server.app.wiring import LEAGUE_SERVICE, MATCHMAKING_SERVICE, OPERATOR_SERVICE

    # one document for every service
    every = [
        *routes_of(SERVICE),
        *routes_of(OPERATOR_SERVICE),
        *routes_of(LEAGUE_SERVICE),
        *routes_of(MATCHMAKING_SERVICE),
    ]
    assert doc == build_openapi(every, title=doc["info"]["title"], version=doc["info"]["version"])
    assert "/v1/operator/webhooks" in doc["paths"]
    assert "/v1/leagues/{league_id}/standings" in doc["paths"]
    assert "/v1/pools/{pool_id}/tickets/{ticket_id}:stream" in doc["paths"]


def _create(base: str) -> dict[str, Any]:
    req = urllib.request.Request(
        base + "/v1/matches",
        data=json.dumps({"requestId": "fuzz-seed", "rules": {"preset": "argentine"}}).encode(),
        headers={"Authorization": f"Bearer {ACME_KEY}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.load(resp))


def _bind(probe: Any, streaming: bool) -> Any:
    def run(case: Any) -> None:
        probe(case, streaming)

    return run


def test_schemathesis_finds_no_server_error(served: Served) -> None:
    created = _create(served.base)  # so some generated requests meet a real match
    match_id = created["match"]["matchId"]
    schema = schemathesis.openapi.from_url(served.base + "/openapi.json")
    deadline = time.monotonic() + TIME_BUDGET_S
    run_checks = [
        checks.not_a_server_error,
        checks.status_code_conformance,
        checks.content_type_conformance,
        checks.response_schema_conformance,
    ]
    failures: list[str] = []
    statuses: Counter[str] = Counter()
    headers = {"Authorization": f"Bearer {ACME_KEY}"}

    def probe(case: Any, streaming: bool) -> None:
        if time.monotonic() > deadline:
            return
        # A stream of a live match never ends by itself (schemathesis reads whole bodies),
        # so only unary operations are pointed at the real match, every third call.
        if not streaming and "match_id" in (case.path_parameters or {}) and statuses.total() % 3 == 0:
            case.path_parameters["match_id"] = match_id
        response = case.call(base_url=served.base, headers=headers, timeout=10)
        statuses[f"{case.operation.label} {response.status_code}"] += 1
        try:
            case.validate_response(response, checks=run_checks)
        except Exception as exc:  # collect, report all at the end
            failures.append(f"{case.method} {case.formatted_path}: {exc}"[:2000])

    for result in schema.get_all_operations():
        operation = result.ok()
        op_id = operation.definition.raw.get("operationId")
        # Not fuzzed here: the operator event stream never ends (schemathesis reads whole
        # bodies), and a registered webhook would make the worker resolve and call the
        # generated host names -- traffic beyond loopback. tests/e2e/test_operator_events.py
        # covers both against a loopback receiver.
        if op_id in ("StreamOperatorEvents", "CreateWebhook"):
            continue
        streaming = op_id == "StreamObservations"
        fuzz = settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )(given(case=operation.as_strategy())(_bind(probe, streaming)))
        fuzz()
    calls = statuses.total()
    print(sorted(statuses.items()))
    assert calls >= 50, f"only {calls} requests made within the time budget"
    # Generated requests got through to the service, not only validation errors.
    assert any(k.endswith(" 200") for k in statuses), statuses
    assert not failures, "\n\n".join(failures[:10])
