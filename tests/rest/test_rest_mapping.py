"""HTTP status mapping and error bodies for every error class, including the ones a real
match cannot easily produce (RESOURCE_EXHAUSTED, UNAVAILABLE, INTERNAL), through a RestFace
over a stand-in API layer that raises them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from google.rpc import code_pb2

import truco_engine as te
from truco_contract.pb import match_service_pb2
from truco_server.api.status import to_status
from truco_server.core import errors as E
from truco_server.transports.rest import HTTP_STATUS, RestFace, http_status
from truco_server.transports.rest.routes import message_to_json

SERVICE = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"]

pytestmark = pytest.mark.timeout(30)

ERRORS: dict[str, E.ServiceError] = {
    "invalid": E.InvalidArgument("bad", field_violations=[E.FieldViolation("x", "bad x")]),
    "illegal": E.IllegalAction("no", legal_actions=[te.Action("fold")], current_version=3),
    "turn": E.NotYourTurn("wait", legal_actions=[], current_version=3),
    "inactive": E.MatchNotActive("over", current_version=9),
    "stale": E.StaleVersion("stale", current_version=4),
    "missing": E.MatchNotFound("none"),
    "unauth": E.Unauthenticated("who"),
    "denied": E.PermissionDenied("no"),
    "reused": E.RequestIdReused("again"),
    "exhausted": E.ResourceExhausted("too many"),
    "shutdown": E.ShuttingDown(),
}
EXPECTED_HTTP = {
    "invalid": 400, "illegal": 400, "turn": 400, "inactive": 400, "stale": 409, "missing": 404,
    "unauth": 401, "denied": 403, "reused": 409, "exhausted": 429, "shutdown": 503,
}  # fmt: skip


class Raising:
    """GetMatch raises the error named by match_id; StreamObservations after one message."""

    async def GetMatch(self, creds: Any, request: Any) -> Any:
        if request.match_id == "boom":
            raise RuntimeError("secret internals 7H")
        if request.match_id in ERRORS:
            raise ERRORS[request.match_id]
        return match_service_pb2.GetMatchResponse()

    async def StreamObservations(self, creds: Any, request: Any) -> AsyncIterator[Any]:
        yield match_service_pb2.StreamObservationsResponse(
            update=match_service_pb2.ObservationUpdate(version=1)
        )
        raise ERRORS[request.match_id]


@pytest.fixture
async def face() -> AsyncIterator[str]:
    rest = RestFace([(SERVICE, Raising())])
    port = await rest.start("127.0.0.1", 0, shutdown_timeout=1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await rest.stop()


def test_http_mapping_is_google_apis() -> None:
    assert http_status(code_pb2.FAILED_PRECONDITION) == 400
    assert http_status(code_pb2.ABORTED) == 409
    assert http_status(code_pb2.UNAVAILABLE) == 503
    assert http_status(code_pb2.RESOURCE_EXHAUSTED) == 429
    assert http_status(999) == 500
    assert set(HTTP_STATUS) == set(range(17))


async def test_every_service_error_maps_to_status_and_body(face: str) -> None:
    async with aiohttp.ClientSession() as http:
        for name, err in ERRORS.items():
            async with http.get(f"{face}/v1/matches/{name}") as resp:
                body = await resp.json()
            assert resp.status == EXPECTED_HTTP[name], name
            assert body == message_to_json(to_status(err)), name
            assert body["details"][0]["reason"] == err.reason
        async with http.get(f"{face}/v1/matches/boom") as resp:
            body = await resp.json()
        assert resp.status == 500
        assert body["code"] == 13 and body["message"] == "internal error"
        assert "7H" not in str(body)  # no internals, no cards


async def test_errors_after_the_stream_started(face: str) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{face}/v1/matches/exhausted:streamObservations") as resp:
            assert resp.status == 200
            lines = [line async for line in resp.content if line.strip()]
        assert len(lines) == 2 and b'"error"' in lines[1] and b'"code":8' in lines[1]
        sse = {"Accept": "text/event-stream"}
        async with http.get(f"{face}/v1/matches/shutdown:streamObservations", headers=sse) as resp:
            text = await resp.text()
        assert "id: 1\nevent: update\n" in text
        assert "event: rpc_error\n" in text and '"code":14' in text and "event: end" not in text


async def test_body_size_limit_is_a_json_413(face: str) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{face}/v1/matches", data=b"{" + b" " * 300_000 + b"}") as resp:
            body = await resp.json()
        assert resp.status == 413 and body["code"] == code_pb2.RESOURCE_EXHAUSTED


async def test_worker_start_fails_cleanly_when_the_http_port_is_taken(clean_redis_url: str) -> None:
    import socket

    from tests.rest.conftest import worker_settings
    from truco_server.app.wiring import service_factory
    from truco_server.transports.grpc.server import Worker

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        worker = Worker(worker_settings(clean_redis_url, http_port=port), service_factory)
        with pytest.raises(OSError):
            await worker.start()
    assert worker.context._cleanups == []  # the store was closed again
