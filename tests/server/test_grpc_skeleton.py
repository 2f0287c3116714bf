"""The gRPC worker skeleton: health, reflection, shutdown, metrics, errors, config, CLI.

Every server test starts a real worker in-process on a free loopback port (in-memory
mode) and talks to it over a real channel.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

import truco_engine as te
from truco_contract.pb import (
    action_pb2,
    match_service_pb2,
    match_service_pb2_grpc,
)
from truco_contract.pb import error_details_pb2 as truco_error_details_pb2
from truco_server.api.status import to_status as to_rpc_status
from truco_server.core import config
from truco_server.core.config import ApiKey, ConfigError, Settings, load_settings, parse_settings
from truco_server.core.errors import (
    Code,
    FieldViolation,
    IllegalAction,
    InvalidArgument,
    MatchNotFound,
    ServiceError,
    ShuttingDown,
    StaleVersion,
)
from truco_server.transports.grpc.server import (
    MATCH_SERVICE_NAME,
    StreamRegistry,
    Worker,
    WorkerContext,
)
from truco_tools.redis_proc import free_port

pytestmark = pytest.mark.timeout(60)


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {"grpc_port": 0, "metrics_port": 0, "shutdown_grace_seconds": 1.0}
    values.update(overrides)
    return Settings(**values)


# --- a test servicer exercising the extension points ------------------------------------


def _play(card: str) -> action_pb2.Action:
    return action_pb2.Action(play_card=action_pb2.PlayCard(card=card))


class FakeMatchApi:
    """Raises service errors and streams heartbeats like the real API does; its other RPCs are
    not served (UNIMPLEMENTED)."""

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx

    async def GetMatch(self, creds: Any, request: Any) -> Any:
        if request.match_id == "boom":
            raise RuntimeError("secret internals 7H")
        raise MatchNotFound(f"no match {request.match_id!r}")

    async def SubmitAction(self, creds: Any, request: Any) -> Any:
        raise IllegalAction(
            "4C is not in your hand",
            legal_actions=[te.Action("play", "7H"), te.Action("play", "1e")],
            current_version=7,
        )

    async def StreamObservations(
        self, creds: Any, request: Any
    ) -> AsyncIterator[match_service_pb2.StreamObservationsResponse]:
        async with self.ctx.streams.track():
            while True:
                try:
                    await asyncio.wait_for(self.ctx.streams.wait_shutdown(), 0.05)
                except TimeoutError:
                    yield match_service_pb2.StreamObservationsResponse(
                        heartbeat=match_service_pb2.Heartbeat(version=3)
                    )
                    continue
                raise ShuttingDown()


MATCH_SERVICE = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"]


def FakeMatchService(ctx: WorkerContext) -> list[tuple[Any, Any]]:
    return [(MATCH_SERVICE, FakeMatchApi(ctx))]


@pytest_asyncio.fixture
async def worker() -> AsyncIterator[Worker]:
    w = Worker(settings(metrics_port=free_port()), FakeMatchService)
    await w.start()
    try:
        yield w
    finally:
        await w.stop()


# --- health, reflection ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_health_serving_over_a_real_channel(worker: Worker) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", MATCH_SERVICE_NAME):
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=service))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.asyncio
async def test_reflection_lists_match_service(worker: Worker) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        call = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        reply = await call.read()
        names = {s.name for s in reply.list_services_response.service}
        call.cancel()
    assert "truco.v1.MatchService" in names
    assert "grpc.health.v1.Health" in names


@pytest.mark.asyncio
async def test_unwired_worker_answers_unimplemented() -> None:
    w = Worker(settings())
    await w.start()
    try:
        async with grpc.aio.insecure_channel(w.grpc_address) as channel:
            stub = match_service_pb2_grpc.MatchServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetMatch(match_service_pb2.GetMatchRequest(match_id="m1"))
            assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        await w.stop()


# --- shutdown -----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_graceful_shutdown_flips_health_to_not_serving() -> None:
    w = Worker(settings(shutdown_drain_seconds=0.5))
    await w.start()
    stopping: asyncio.Task[None] | None = None
    try:
        async with grpc.aio.insecure_channel(w.grpc_address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            watch = stub.Watch(health_pb2.HealthCheckRequest(service=MATCH_SERVICE_NAME))
            first = await watch.read()
            assert first.status == health_pb2.HealthCheckResponse.SERVING
            stopping = asyncio.create_task(w.stop())
            second = await asyncio.wait_for(watch.read(), 5)
            assert second.status == health_pb2.HealthCheckResponse.NOT_SERVING
            # During the drain period the server still answers, and says NOT_SERVING.
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=""))
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()
    finally:
        if stopping is not None:
            await stopping
        await w.stop()


@pytest.mark.asyncio
async def test_shutdown_ends_open_streams_with_unavailable() -> None:
    w = Worker(settings(shutdown_grace_seconds=5.0), FakeMatchService)
    await w.start()
    try:
        async with grpc.aio.insecure_channel(w.grpc_address) as channel:
            stub = match_service_pb2_grpc.MatchServiceStub(channel)
            call = stub.StreamObservations(match_service_pb2.StreamObservationsRequest(match_id="m1"))
            message = await call.read()
            assert message.WhichOneof("message") == "heartbeat"
            assert w.streams.active == 1
            loop = asyncio.get_running_loop()
            started = loop.time()
            stopping = asyncio.create_task(w.stop())
            with pytest.raises(grpc.aio.AioRpcError) as info:
                while True:
                    await call.read()
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert _error_info(info.value).reason == "SHUTTING_DOWN"
            await stopping
            # Ended by the shutdown signal, not by the 5 s grace running out.
            assert loop.time() - started < 4
            assert w.streams.active == 0
    finally:
        await w.stop()


@pytest.mark.asyncio
async def test_stop_is_idempotent_and_runs_cleanups() -> None:
    calls: list[str] = []

    async def async_cleanup() -> None:
        calls.append("async")

    def factory(ctx: WorkerContext) -> list[tuple[Any, Any]]:
        ctx.add_cleanup(lambda: calls.append("sync"))
        ctx.add_cleanup(async_cleanup)
        return FakeMatchService(ctx)

    w = Worker(settings(), factory)
    await w.start()
    await asyncio.gather(w.stop(), w.stop())
    await w.stop()
    assert calls == ["async", "sync"]


# --- metrics --------------------------------------------------------------------------


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


@pytest.mark.asyncio
async def test_metrics_endpoint_counts_grpc_calls(worker: Worker) -> None:
    assert worker.metrics_port is not None
    async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
        await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        stub = match_service_pb2_grpc.MatchServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.GetMatch(match_service_pb2.GetMatchRequest(match_id="nope"))
        call = stub.StreamObservations(match_service_pb2.StreamObservationsRequest(match_id="m"))
        await call.read()
        await call.read()
        call.cancel()
        await asyncio.sleep(0.1)
    text = await asyncio.to_thread(_scrape, worker.metrics_port)
    labels = 'grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"'
    assert f"grpc_server_started_total{{{labels}}}" in text
    assert (
        'grpc_server_handled_total{grpc_code="NOT_FOUND",grpc_method="GetMatch",'
        'grpc_service="truco.v1.MatchService",grpc_type="unary"}' in text
    )
    stream = 'grpc_method="StreamObservations",grpc_service="truco.v1.MatchService"'
    assert f'grpc_server_handled_total{{grpc_code="CANCELLED",{stream}' in text
    assert _sample(text, "grpc_server_msg_sent_total", stream) >= 2
    assert "grpc_server_handling_seconds_bucket" in text
    for name in (
        "truco_matches_created_total",
        "truco_actions_total",
        "truco_stream_subscribers",
        "truco_commit_conflicts_total",
    ):
        assert f"# TYPE {name.removesuffix('_total')}" in text


def _sample(text: str, name: str, labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and labels in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} with {labels} not found")


def test_metrics_disabled_when_port_is_zero() -> None:
    from truco_server.core.metrics import start_metrics_server

    assert start_metrics_server(0) is None


# --- errors -------------------------------------------------------------------------------


def _unpack_details(status: status_pb2.Status) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for detail in status.details:
        for cls in (
            error_details_pb2.ErrorInfo,
            error_details_pb2.BadRequest,
            truco_error_details_pb2.IllegalActionDetail,
        ):
            if detail.Is(cls.DESCRIPTOR):
                message = cls()
                detail.Unpack(message)
                out[cls.DESCRIPTOR.name] = message
    return out


def _status_of(error: grpc.aio.AioRpcError) -> status_pb2.Status:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            return status_pb2.Status.FromString(value)
    raise AssertionError("no grpc-status-details-bin trailer")


def _error_info(error: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    info = _unpack_details(_status_of(error))["ErrorInfo"]
    assert isinstance(info, error_details_pb2.ErrorInfo)
    return info


def test_illegal_action_maps_to_failed_precondition_with_legal_actions() -> None:
    err = IllegalAction("not legal now", legal_actions=[te.Action("play", "7H")], current_version=4)
    status = to_rpc_status(err)
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert status.message == "not legal now"
    details = _unpack_details(status)
    assert details["ErrorInfo"].reason == "ILLEGAL_ACTION"
    assert details["ErrorInfo"].domain == "truco.v1"
    detail = details["IllegalActionDetail"]
    assert [a.play_card.card for a in detail.legal_actions] == ["7H"]
    assert detail.current_version == 4
    assert detail.reason == "not legal now"


def test_invalid_argument_maps_to_bad_request() -> None:
    err = InvalidArgument(
        "bad card", field_violations=[FieldViolation("action.play_card.card", "not a card")]
    )
    status = to_rpc_status(err)
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    details = _unpack_details(status)
    assert details["ErrorInfo"].reason == "INVALID_REQUEST"
    violation = details["BadRequest"].field_violations[0]
    assert (violation.field, violation.description) == ("action.play_card.card", "not a card")
    assert "IllegalActionDetail" not in details


def test_stale_version_maps_to_aborted() -> None:
    status = to_rpc_status(StaleVersion("expected 3, match is at 5", current_version=5))
    assert status.code == grpc.StatusCode.ABORTED.value[0]
    assert _unpack_details(status)["IllegalActionDetail"].current_version == 5


def test_every_reason_is_in_the_proto_enum() -> None:
    ErrorReason = truco_error_details_pb2.ErrorReason

    from truco_server.core.errors import Reason

    names = {n.removeprefix("ERROR_REASON_") for n in ErrorReason.keys()}  # noqa: SIM118
    assert {r.value for r in Reason} - {"INTERNAL"} <= names
    assert {c.name for c in Code} <= set(grpc.StatusCode.__members__)
    for code in Code:
        assert grpc.StatusCode[code.name].value[0] == code.value


def test_domain_errors_do_not_import_grpc() -> None:
    import ast
    from pathlib import Path

    import truco_server.core.errors as errors_module

    tree = ast.parse(Path(errors_module.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert not imported & {"grpc", "google", "truco"}


@pytest.mark.asyncio
async def test_service_errors_reach_the_client_with_details(worker: Worker) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
        stub = match_service_pb2_grpc.MatchServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.SubmitAction(
                match_service_pb2.SubmitActionRequest(match_id="m1", request_id="r1", action=_play("4C"))
            )
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        details = _unpack_details(_status_of(info.value))
        assert details["ErrorInfo"].reason == "ILLEGAL_ACTION"
        assert len(details["IllegalActionDetail"].legal_actions) == 2

        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.GetMatch(match_service_pb2.GetMatchRequest(match_id="missing"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert _error_info(info.value).reason == "MATCH_NOT_FOUND"

        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.GetMatch(match_service_pb2.GetMatchRequest(match_id="boom"))
        assert info.value.code() == grpc.StatusCode.INTERNAL
        assert info.value.details() == "internal error"  # no internals, no cards


# --- stream registry ----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_stream_registry_counts_streams_and_refuses_new_ones_once_stopping() -> None:
    registry = StreamRegistry()
    async with registry.track():
        assert registry.active == 1
        waiting = asyncio.create_task(registry.wait_shutdown())
        await asyncio.sleep(0)
        registry.begin_shutdown()
        await asyncio.wait_for(waiting, 1)
        assert registry.shutting_down
    assert registry.active == 0
    with pytest.raises(ServiceError):
        async with registry.track():
            pass


@pytest.mark.asyncio
async def test_stream_registry_counts_the_streams_cut_apart_from_those_that_ran_to_their_end() -> None:
    """The memory release (truco_server.app.memory) counts only streams cancelled or failed:
    one that ran to its end leaves nothing in reference cycles."""
    registry = StreamRegistry()

    async def stream(end: str) -> None:
        async with registry.track():
            if end == "fails":
                raise RuntimeError("a store fault")
            if end == "cancelled":
                await asyncio.Event().wait()

    await stream("runs to its end")
    with pytest.raises(RuntimeError):
        await stream("fails")
    task = asyncio.create_task(stream("cancelled"))
    while registry.active == 0:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (registry.closed, registry.cut) == (3, 2)


# --- config ---------------------------------------------------------------------------


def test_config_precedence_flag_over_env_over_default() -> None:
    env = {"TRUCO_GRPC_PORT": "6000", "TRUCO_METRICS_PORT": "6001", "TRUCO_LOG_LEVEL": "DEBUG"}
    s = parse_settings(["--grpc-port", "7000"], env)
    assert s.grpc_port == 7000  # flag wins
    assert s.metrics_port == 6001  # env over default
    assert s.log_level == "debug"
    assert s.http_port == 8080  # default
    assert s.host == "127.0.0.1"
    assert s.redis_url is None
    assert s.store_description == "in-memory"
    assert parse_settings([], {}) == Settings()


def test_config_redis_url_is_redacted_and_validated() -> None:
    s = parse_settings(["--redis", "redis://user:hunter2@redis:6379/0"], {})
    assert s.redis_url == "redis://user:hunter2@redis:6379/0"
    assert s.store_description == "redis://user:***@redis:6379/0"
    assert "hunter2" not in repr(s)
    assert parse_settings([], {"REDIS_URL": "redis://:pw@h:1/2"}).store_description == ("redis://:***@h:1/2")
    with pytest.raises(ConfigError, match="REDIS_URL"):
        parse_settings([], {"REDIS_URL": "http://:secretpw@x"})
    try:
        parse_settings([], {"REDIS_URL": "http://:secretpw@x"})
    except ConfigError as exc:
        assert "secretpw" not in str(exc)


def test_config_errors_name_the_source() -> None:
    with pytest.raises(ConfigError, match="--grpc-port"):
        parse_settings(["--grpc-port", "70000"], {})
    with pytest.raises(ConfigError, match="TRUCO_HEARTBEAT_INTERVAL_SECONDS"):
        parse_settings([], {"TRUCO_HEARTBEAT_INTERVAL_SECONDS": "0"})
    with pytest.raises(ConfigError, match="TRUCO_LOG_LEVEL"):
        parse_settings([], {"TRUCO_LOG_LEVEL": "loud"})


def test_config_api_keys_from_environment_only() -> None:
    s = load_settings(None, {"TRUCO_API_KEYS": "ops=s3cret, bare-key ,"})
    assert [k.name for k in s.api_keys] == ["ops", f"key-{ApiKey('', 'bare-key').fingerprint}"]
    assert s.api_key_for("s3cret") == s.api_keys[0]
    assert s.api_key_for("nope") is None
    assert "s3cret" not in repr(s)
    rotating = load_settings(None, {"TRUCO_API_KEYS": "a=x,a=y"})  # one operator, old and new key
    assert [(k.name, k.secret) for k in rotating.api_keys] == [("a", "x"), ("a", "y")]
    with pytest.raises(ConfigError):
        load_settings(None, {"TRUCO_API_KEYS": "a=x,b=x"})
    assert all(o.flag is None for o in config.OPTIONS if o.name == "api_keys")


def test_every_setting_has_an_option_and_a_documented_row() -> None:
    import dataclasses
    from pathlib import Path

    assert {o.name for o in config.OPTIONS} == {f.name for f in dataclasses.fields(Settings)}
    root = Path(__file__).resolve().parents[2]
    for name in ("docs/operations.md", "README.md"):
        assert config.settings_markdown_table() in (root / name).read_text(), (
            f"{name} is stale: run python scripts/settings_table.py"
        )


# --- logging --------------------------------------------------------------------------


def test_logs_follow_the_current_stdout_even_after_the_first_one_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream replaced and closed after configuration (a capture, a daemon) breaks no log call."""
    import logging

    import structlog

    from truco_server.core.logging import configure_logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    first = io.StringIO()
    monkeypatch.setattr(sys, "stdout", first)
    configure_logging("info")
    try:
        structlog.get_logger().info("one")
        first.close()
        second = io.StringIO()
        monkeypatch.setattr(sys, "stdout", second)
        structlog.get_logger().info("two")
        logging.getLogger("stdlib.side").warning("three")
    finally:
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)
    lines = [json.loads(line) for line in second.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["two", "three"]


def test_log_lines_are_json_with_bound_context_and_no_secrets() -> None:
    import structlog

    from truco_server.core.logging import bind_seat, configure_logging

    out = io.StringIO()
    configure_logging("info", stream=out)
    try:
        structlog.contextvars.bind_contextvars(request_id="r-1", match_id="m-1")
        bind_seat(2)
        structlog.get_logger().info("hello", authorization="Bearer abc")
    finally:
        structlog.contextvars.clear_contextvars()
        structlog.reset_defaults()
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["request_id"] == "r-1"
    assert line["match_id"] == "m-1"
    assert line["seat"] == 2
    assert line["authorization"] == "***"
    assert line["timestamp"].endswith("Z")


def test_the_worker_serves_every_rpc_of_every_service() -> None:
    """The servicers are derived from the descriptors: each service's API object has a method
    for every RPC of the proto (nothing is listed by hand, so nothing can be missed)."""
    from truco_server.api.auth import Authenticator
    from truco_server.app.wiring import apis, build_services
    from truco_server.stores import open_store
    from truco_server.transports.grpc.servicers import method_handlers

    svc = build_services(settings(), asyncio.Event(), open_store(None))
    served = apis(svc, Authenticator(settings()))
    assert {service.name for service, _ in served} == {
        "MatchService",
        "OperatorService",
        "LeagueService",
        "MatchmakingService",
    }
    for service, api in served:
        assert set(method_handlers(api, service)) == {m.name for m in service.methods}, service.name
