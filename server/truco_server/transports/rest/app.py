"""The REST/JSON face of a worker: aiohttp app, handlers, streaming, lifecycle.

Every RPC route is generated from the proto (``routes.routes_of``) and served by calling the
method of the same name of the API layer the gRPC servicer calls too
(:class:`truco_server.api.matches.MatchApi`), with the credentials from the HTTP headers. So
auth, idempotency, conversions and the error model exist once; this module only moves bytes:

- unary RPCs: JSON in, JSON out (protobuf JSON mapping); errors are the ``google.rpc.Status``
  gRPC would send, as JSON, with the HTTP status mapped from its code;
- server-streaming RPCs: NDJSON (``application/x-ndjson``, one message per line) or, when the
  client asks with ``Accept: text/event-stream``, Server-Sent Events whose ``id`` is the
  version, so a browser's automatic reconnect (``Last-Event-ID``) resumes exactly;
- ``/openapi.json`` (generated), ``/play`` (the reference page), ``/healthz`` (the worker's
  health and its details, when the worker gives them: :data:`Health`), ``/leagues/{public_id}``
  (a league's public page) and the public reads' ETags (:mod:`.public`).

Credentials: ``Authorization: Bearer <token>`` or ``X-Api-Key: <key>`` headers, as over
gRPC. Streaming routes also take ``?access_token=<token>`` because a browser's EventSource
cannot send headers (see docs/rest.md for the tradeoff). Query strings are never logged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from importlib import resources
from typing import Any, cast

import structlog
from aiohttp import web
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2  # type: ignore[import-untyped]
from prometheus_client import Counter, Histogram

from truco_contract.pb import match_pb2, match_service_pb2
from truco_match.credentials import SHAPE
from truco_server.api import limits
from truco_server.api.status import INTERNAL, as_service_error, to_status
from truco_server.core import errors as E
from truco_server.core.caller import Credentials, looks_like_match_credential, looks_like_ticket_credential
from truco_server.transports.rest import public
from truco_server.transports.rest.cors import CorsPolicy
from truco_server.transports.rest.errors import (
    HTTP_STATUS,
    error_response,
    http_status,
    status_json,
)
from truco_server.transports.rest.errors import (
    dumps as _dumps,
)
from truco_server.transports.rest.openapi import build_openapi
from truco_server.transports.rest.routes import (
    SSE_END_EVENT,
    SSE_ERROR_EVENT,
    SSE_UPDATE_EVENT,
    TRANSPORT_QUERY_PARAMS,
    Route,
    decode_request,
    encode_response,
    last_event_version,
    message_to_json,
    routes_of,
)

_log = structlog.get_logger("truco_server.transports.rest")

#: Request field a Server-Sent Events ``Last-Event-ID`` header resumes from.
RESUME_FIELD = "from_version"
#: Browser reconnect delay announced to SSE clients (``retry:``), milliseconds.
SSE_RETRY_MS = 1000
MAX_BODY_BYTES = limits.MAX_MESSAGE_BYTES
#: Content types a request body may be declared as: JSON (and ``...+json``), or none at all.
#: A body declared as anything else (text, a form, multipart, XML...) is refused rather than
#: misread -- a text or form body is also what another site's page may send without asking.
JSON_TYPES = ("application/json",)

NDJSON = "application/x-ndjson"
_CLIENT_GONE = web.RequestKey("truco.client_gone", bool)
"""Set on a request whose stream lost its client: logged and counted 499, as a cancel is."""
EVENT_STREAM = "text/event-stream"

HTTP_REQUESTS = Counter(
    "truco_http_requests_total",
    "HTTP requests answered by the REST face, by route (RPC name) and status.",
    ("route", "method", "code"),
)
HTTP_SECONDS = Histogram(
    "truco_http_request_duration_seconds",
    "Time to answer an HTTP request (streams: until the stream ends).",
    ("route",),
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Health = Callable[[], tuple[bool, Mapping[str, Any]]]
"""The worker's health for ``GET /healthz``: whether its services are SERVING, and the
details it reports beside (``WorkerContext.serving`` and ``health_details``)."""


def _unexpected(exc: Exception, where: str) -> status_pb2.Status:
    """The Status of an exception that is not a ServiceError: a store fault is UNAVAILABLE
    (logged as a warning), anything else INTERNAL (logged with its traceback)."""
    typed = as_service_error(exc)
    if typed is not None:
        _log.warning("store unavailable", where=where, error=f"{type(exc).__name__}: {exc}"[:300])
        return to_status(typed)
    _log.exception(f"unexpected error in {where}")
    return to_status(INTERNAL)


def _transport_status(code: int, message: str) -> status_pb2.Status:
    """A Status for errors found before any RPC ran (unknown path, wrong verb...)."""
    return status_pb2.Status(code=code, message=message)


_HTTP_TO_CODE = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    403: code_pb2.PERMISSION_DENIED,
    404: code_pb2.NOT_FOUND,
    405: code_pb2.UNIMPLEMENTED,
    406: code_pb2.INVALID_ARGUMENT,
    409: code_pb2.ABORTED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
    503: code_pb2.UNAVAILABLE,
}


def _credentials(request: web.Request, route: Route) -> Credentials:
    """The credentials of an HTTP request (the headers gRPC metadata would carry)."""
    md: list[tuple[str, str]] = []
    auth = request.headers.get("Authorization")
    if auth:
        md.append(("authorization", auth))
    api_key = request.headers.get("X-Api-Key")
    if api_key:
        md.append(("x-api-key", api_key))
    token = request.query.get("access_token")
    if token is not None:
        if not route.server_streaming:
            raise E.InvalidArgument(
                "access_token is only accepted on streaming routes: send 'Authorization: Bearer <token>'",
                field_violations=[E.FieldViolation("access_token", "only for streaming routes")],
            )
        if not (looks_like_match_credential(token) or looks_like_ticket_credential(token)):
            # an operator key in a URL (history, proxy logs) would expose every match
            raise E.MalformedCredential(
                f"access_token takes a match credential ({SHAPE}) or a ticket credential (tk1...) "
                "only, never an API key"
            )
        if not auth:
            md.append(("authorization", f"Bearer {token}"))
    return Credentials.from_pairs(md)


def _bind_log_context(route: Route, message: Message | None) -> None:
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(http_route=route.method_name)
    if message is not None:
        values = {
            name: getattr(message, name)
            for name in ("request_id", "match_id")
            if name in message.DESCRIPTOR.fields_by_name and getattr(message, name)
        }
        if values:
            structlog.contextvars.bind_contextvars(**values)


def _json_content(request: web.Request) -> bool:
    """Whether the declared body type may be read as JSON (:data:`JSON_TYPES`, ``...+json``)."""
    if "Content-Type" not in request.headers:
        return True
    kind = request.content_type.lower()
    return kind in JSON_TYPES or kind.endswith("+json")


def _wants_sse(request: web.Request) -> bool:
    return EVENT_STREAM in request.headers.get("Accept", "").lower()


class RestFace:
    """The HTTP/JSON face of one worker, over the API objects of its services (every route
    calls the API method of its RPC, as the gRPC servicers do)."""

    def __init__(
        self,
        served: Sequence[tuple[ServiceDescriptor, object]],
        *,
        version: str = "v1",
        cors_origins: Sequence[str] = (),
        health: Health | None = None,
    ) -> None:
        self.routes: list[Route] = []
        self._apis: dict[str, object] = {}
        for service, api in served:  # each service over its API object (MatchApi...)
            more = routes_of(service)
            for r in more:
                if r.method_name in self._apis:
                    raise ValueError(f"two services define {r.method_name}")
                self._apis[r.method_name] = api
            self.routes = [*self.routes, *more]
        self.cors = CorsPolicy(cors_origins, {r.http_method for r in self.routes})
        self.openapi = build_openapi(self.routes, title="Truco API", version=version)
        self._openapi_body = _dumps(self.openapi)
        self._health = health
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self.installers: list[Callable[[web.Application], None]] = []
        """More routes on the same app (the WebSocket player connection)."""

    # ------------------------------------------------------------------------ the app
    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._middleware])
        for route in self.routes:
            handler = self._stream_handler(route) if route.server_streaming else self._unary_handler(route)
            app.router.add_route(route.http_method, route.aiohttp_path, handler, name=route.method_name)
        app.router.add_get("/openapi.json", self._openapi, name="openapi")
        app.router.add_get("/", self._root, name="root")
        app.router.add_get("/play", self._play, name="play")
        public.install(app)  # the league page: /leagues/{public_id}
        if self._health is not None:
            app.router.add_get("/healthz", self._healthz, name="healthz")
        for install in self.installers:
            install(app)
        self.cors.install(app)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        start = time.perf_counter()
        match_info = request.match_info
        route_name = match_info.route.name if match_info.route is not None else None
        label = route_name or "unmatched"
        code = 500
        try:
            response = await handler(request)
            code = 499 if request.get(_CLIENT_GONE) else response.status
            return response
        except asyncio.CancelledError:
            code = 499  # the client went away (nginx's "client closed request")
            raise
        except web.HTTPException as exc:
            # Router-level errors (unknown path, wrong verb, body too large): JSON Status too.
            code = exc.status
            if exc.status < 400:
                raise
            grpc_code = _HTTP_TO_CODE.get(exc.status, code_pb2.UNKNOWN)
            message = f"{exc.reason}: {request.method} {request.path}"
            resp = web.json_response(
                status_json(_transport_status(grpc_code, message)), status=exc.status, dumps=_dumps
            )
            if exc.status == 405:
                resp.headers["Allow"] = exc.headers.get("Allow", "")
            return resp
        finally:
            elapsed = time.perf_counter() - start
            HTTP_REQUESTS.labels(label, request.method, str(code)).inc()
            HTTP_SECONDS.labels(label).observe(elapsed)
            level = "debug" if code < 400 else "info"  # as gRPC: every refusal at info
            # The path only, never the query string (it may carry access_token).
            getattr(_log, level)(
                "http request",
                method=request.method,
                path=request.path,
                status=code,
                duration_s=round(elapsed, 6),
            )
            structlog.contextvars.clear_contextvars()

    async def _openapi(self, request: web.Request) -> web.Response:
        return web.Response(text=self._openapi_body, content_type="application/json")

    async def _healthz(self, request: web.Request) -> web.Response:
        """200 ``{"status": "SERVING", ...details}`` while the services are SERVING (the
        readiness the gRPC health service answers), else 503 with ``NOT_SERVING``."""
        assert self._health is not None
        serving, details = self._health()
        body = {"status": "SERVING" if serving else "NOT_SERVING", **details}
        return web.Response(
            text=_dumps(body),
            status=200 if serving else 503,
            content_type="application/json",
            headers={"Cache-Control": "no-store"},
        )

    async def _root(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/play")

    async def _play(self, request: web.Request) -> web.Response:
        return web.Response(
            text=reference_page(),
            content_type="text/html",
            headers={
                "Cache-Control": "no-cache",
                "Content-Security-Policy": (
                    "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                    "style-src 'self' 'unsafe-inline'; img-src 'self' data:"
                ),
            },
        )

    # ---------------------------------------------------------------------- one RPC
    async def _prepare(
        self, request: web.Request, route: Route
    ) -> tuple[Message, Credentials] | web.Response:
        """Decode the request and its credentials; an error response when malformed."""
        try:
            creds = _credentials(request, route)
            body = await request.read() if route.body else b""
            if body and not _json_content(request):
                raise E.InvalidArgument(
                    "the body must be JSON: send 'Content-Type: application/json'",
                    field_violations=[E.FieldViolation("Content-Type", "must be application/json")],
                )
            message = decode_request(route, request.match_info, list(request.query.items()), body)
            limits.require(message)
        except E.ServiceError as exc:
            _bind_log_context(route, None)
            return error_response(to_status(exc))
        _bind_log_context(route, message)
        return message, creds

    def _unary_handler(self, route: Route) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            prepared = await self._prepare(request, route)
            if isinstance(prepared, web.Response):
                return prepared
            message, creds = prepared
            method = getattr(self._apis[route.method_name], route.method_name)
            try:
                response = await method(creds, message)
            except E.ServiceError as exc:
                return error_response(to_status(exc))
            except Exception as exc:
                return error_response(_unexpected(exc, "REST handler"))
            body = encode_response(route, response)
            if public.is_public(route.http_method, route.template):
                return public.public_response(request, _dumps(body))
            return web.json_response(body, dumps=_dumps, headers={"Cache-Control": "no-store"})

        return handle

    # ---------------------------------------------------------------------- streams
    def _stream_handler(self, route: Route) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            prepared = await self._prepare(request, route)
            if isinstance(prepared, web.Response):
                return prepared
            message, creds = prepared
            sse = _wants_sse(request)
            resumed = False
            if RESUME_FIELD in route.input.fields_by_name:
                resumed = message.HasField(RESUME_FIELD)
                if not resumed:
                    try:
                        version = last_event_version(request.headers.get("Last-Event-ID", ""))
                    except E.ServiceError as exc:
                        return error_response(to_status(exc))
                    if version is not None:
                        setattr(message, RESUME_FIELD, version)
                        resumed = True
            return await self._stream(request, route, message, creds, sse=sse, resumed=resumed)

        return handle

    async def _stream(
        self,
        request: web.Request,
        route: Route,
        message: Message,
        creds: Credentials,
        *,
        sse: bool,
        resumed: bool,
    ) -> web.StreamResponse:
        method = getattr(self._apis[route.method_name], route.method_name)
        messages: AsyncIterator[Message] = method(creds, message)
        try:
            # Nothing is sent before the first message, so call errors (auth, unknown match,
            # bad from_version) get a real HTTP status.
            try:
                first: Message | None = await anext(messages)
            except StopAsyncIteration:
                first = None
            except E.ServiceError as exc:
                return error_response(to_status(exc))
            except Exception as exc:
                return error_response(_unexpected(exc, "REST stream"))
            if sse and resumed and first is not None and _over_and_nothing_new(first):
                # The match is over and the client has everything: 204 tells a browser's
                # EventSource to stop reconnecting.
                return web.Response(status=204, headers={"Cache-Control": "no-store"})
            response = web.StreamResponse(
                headers={
                    "Content-Type": (EVENT_STREAM + "; charset=utf-8") if sse else NDJSON,
                    "Cache-Control": "no-store",
                    "X-Accel-Buffering": "no",  # proxies: do not buffer the stream
                }
            )
            await response.prepare(request)
            writer = _SseWriter(response) if sse else _NdjsonWriter(response)
            try:
                await writer.start()
                try:
                    if first is not None:
                        await writer.message(first)
                        first = None  # not kept for the stream's life
                    async for item in messages:
                        await writer.message(item)
                except E.ServiceError as exc:
                    await writer.error(to_status(exc))
                except (ConnectionError, asyncio.CancelledError):
                    raise
                except Exception as exc:
                    await writer.error(_unexpected(exc, "REST stream"))
                else:
                    await writer.end()
                await response.write_eof()
            except ConnectionError:  # the client went away as a message was written
                request[_CLIENT_GONE] = True
            return response
        finally:
            aclose = getattr(messages, "aclose", None)
            if aclose is not None:
                await aclose()

    # --------------------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("REST face not started")
        return self._port

    async def start(
        self, host: str, port: int, *, shutdown_timeout: float = 10.0, reuse_port: bool = False
    ) -> int:
        """Bind and serve; returns the bound port (``port`` 0 picks a free one; ``reuse_port``:
        ``SO_REUSEPORT``, for the workers of one ``truco serve --workers N``)."""
        if self._runner is not None:
            raise RuntimeError("REST face already started")
        runner = web.AppRunner(
            self.build_app(),
            handle_signals=False,
            access_log=None,  # our middleware logs, without query strings
            handler_cancellation=True,  # a client that goes away ends its stream at once
            shutdown_timeout=shutdown_timeout,
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        bound = runner.addresses[0]
        self._port = int(bound[1])
        _log.info("REST face started", host=host, http_port=self._port)
        return self._port

    async def stop(self) -> None:
        """Stop listening, let in-flight requests finish (up to shutdown_timeout), close."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
            _log.info("REST face stopped")


def _over_and_nothing_new(message: Message) -> bool:
    if message.WhichOneof("message") != "update":
        return False
    update = cast(match_service_pb2.ObservationUpdate, cast(Any, message).update)
    return not update.events and update.observation.match_state != match_pb2.MATCH_STATE_ACTIVE


class _NdjsonWriter:
    """One JSON message per line; a server-side error ends with ``{"error": Status}``."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response

    async def start(self) -> None:
        return None

    async def message(self, message: Message) -> None:
        await self.response.write((_dumps(message_to_json(message)) + "\n").encode())

    async def error(self, status: status_pb2.Status) -> None:
        await self.response.write((_dumps({"error": status_json(status)}) + "\n").encode())

    async def end(self) -> None:
        return None


class _SseWriter:
    """Server-Sent Events: ``update`` (id = version), ``heartbeat``, ``rpc_error``, ``end``."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response

    async def _event(self, event: str, data: Any, event_id: str | None = None) -> None:
        head = f"id: {event_id}\n" if event_id is not None else ""
        await self.response.write(f"{head}event: {event}\ndata: {_dumps(data)}\n\n".encode())

    async def start(self) -> None:
        await self.response.write(f"retry: {SSE_RETRY_MS}\n: truco stream\n\n".encode())

    async def message(self, message: Message) -> None:
        kind = message.WhichOneof("message") or "message"
        payload = message_to_json(message)
        if kind == SSE_UPDATE_EVENT:
            # id = version: EventSource sends it back as Last-Event-ID when it reconnects.
            await self._event(SSE_UPDATE_EVENT, payload, str(cast(Any, message).update.version))
        else:
            await self._event(kind, payload)

    async def error(self, status: status_pb2.Status) -> None:
        await self._event(SSE_ERROR_EVENT, status_json(status))

    async def end(self) -> None:
        await self._event(SSE_END_EVENT, {})


def reference_page() -> str:
    """The reference browser client (``web/play.html``) with the preset names and their
    default numbers of players filled in."""
    import truco_engine as te

    html = resources.files("truco_server.web").joinpath("play.html").read_text(encoding="utf-8")
    names = list(te.preset_names())
    players = {name: te.get_rules(name).players for name in names}
    return html.replace("/*PRESETS*/[]", _dumps(names)).replace("/*PLAYERS*/{}", _dumps(players))


__all__ = [
    "EVENT_STREAM",
    "HTTP_STATUS",
    "NDJSON",
    "TRANSPORT_QUERY_PARAMS",
    "RestFace",
    "error_response",
    "http_status",
    "status_json",
]
