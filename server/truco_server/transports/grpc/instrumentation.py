"""gRPC server instrumentation: Prometheus metrics and per-call log context.

`InstrumentedRegistry` wraps every RPC handler (unary and streaming) at registration to

- record the go-grpc-prometheus metrics defined in `truco_server.core.metrics`
  (`grpc_server_started_total`, `grpc_server_handled_total{grpc_code}`,
  `grpc_server_msg_received_total`, `grpc_server_msg_sent_total`,
  `grpc_server_handling_seconds`);
- bind `grpc_method`, `request_id` and `match_id` (read from the request message when it
  has such fields) into structlog contextvars for the duration of the call. Handlers add
  `seat` with `truco_server.core.logging.bind_seat()` once they have authenticated the caller.
  Metadata, and so the credential, is never bound.

Streaming handlers should be async generators: messages they yield are counted. A handler
that writes with `context.write()` still works, but its messages are not counted.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog

from truco_server.api import limits
from truco_server.core import metrics

_log = structlog.get_logger("truco_server.grpc")

#: Request fields bound into the log context when present and non-empty.
_CONTEXT_FIELDS = ("request_id", "match_id")
#: Characters of a request's `request_id` / `match_id` bound into the log context.
LOGGED_CHARS = 128


def _split_method(full_method: str) -> tuple[str, str]:
    """'/truco.v1.MatchService/GetMatch' -> ('truco.v1.MatchService', 'GetMatch')."""
    _, _, rest = full_method.partition("/")
    service, _, method = rest.rpartition("/")
    return (service or "unknown", method or "unknown")


def _code_of(context: grpc.aio.ServicerContext[Any, Any]) -> grpc.StatusCode:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(code, int):  # some grpc versions return the raw integer
        for candidate in grpc.StatusCode:
            if candidate.value[0] == code:
                return candidate
    return grpc.StatusCode.OK


def _failure_code(exc: BaseException, context: grpc.aio.ServicerContext[Any, Any]) -> grpc.StatusCode:
    """Status a handler that raised `exc` ends with."""
    if isinstance(exc, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED
    code = _code_of(context)  # e.g. generated base servicers: set_code() then raise
    return code if code is not grpc.StatusCode.OK else grpc.StatusCode.UNKNOWN


class _MethodMetrics:
    """The labelled metric children of one (grpc_type, service, method), looked up once:
    ``labels()`` takes a lock and hashes the label tuple on every call."""

    __slots__ = ("grpc_method", "handled", "labels", "received", "seconds", "sent", "started")

    def __init__(self, grpc_type: str, service: str, method: str) -> None:
        self.labels = (grpc_type, service, method)
        self.grpc_method = f"{service}/{method}"
        self.started = metrics.GRPC_SERVER_STARTED.labels(*self.labels)
        self.received = metrics.GRPC_SERVER_MSG_RECEIVED.labels(*self.labels)
        self.sent = metrics.GRPC_SERVER_MSG_SENT.labels(*self.labels)
        self.seconds = metrics.GRPC_SERVER_HANDLING_SECONDS.labels(*self.labels)
        self.handled: dict[grpc.StatusCode, Any] = {}

    def handled_child(self, code: grpc.StatusCode) -> Any:
        child = self.handled.get(code)
        if child is None:
            child = self.handled[code] = metrics.GRPC_SERVER_HANDLED.labels(*self.labels, code.name)
        return child


class _Call:
    """Metrics and log context of one RPC."""

    __slots__ = ("_m", "_start")

    def __init__(self, m: _MethodMetrics) -> None:
        self._m = m
        self._start = time.perf_counter()
        m.started.inc()

    def received(self, request: Any) -> None:
        self._m.received.inc()
        self.bind_request(request)

    def sent(self) -> None:
        self._m.sent.inc()

    def bind(self) -> None:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(grpc_method=self._m.grpc_method)

    @staticmethod
    def bind_request(request: Any) -> None:
        fields = _context_fields(request)
        if not fields:
            return
        # cut to the limit the servicer enforces: an oversized value is never logged whole
        values = {name: value[:LOGGED_CHARS] for name in fields if (value := getattr(request, name))}
        if values:
            structlog.contextvars.bind_contextvars(**values)

    def finish(self, code: grpc.StatusCode) -> None:
        elapsed = time.perf_counter() - self._start
        m = self._m
        m.handled_child(code).inc()
        m.seconds.observe(elapsed)
        level = "debug" if code in (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED) else "info"
        getattr(_log, level)("rpc finished", grpc_code=code.name, duration_s=round(elapsed, 6))
        structlog.contextvars.clear_contextvars()


_FIELDS_BY_TYPE: dict[type, tuple[str, ...]] = {}


def _context_fields(request: Any) -> tuple[str, ...]:
    """The names of `_CONTEXT_FIELDS` a request message type has (cached per type)."""
    kind = type(request)
    fields = _FIELDS_BY_TYPE.get(kind)
    if fields is None:
        descriptor = getattr(request, "DESCRIPTOR", None)
        by_name = getattr(descriptor, "fields_by_name", None) or {}
        fields = _FIELDS_BY_TYPE[kind] = tuple(n for n in _CONTEXT_FIELDS if n in by_name)
    return fields


async def _unary_response(call: _Call, context: grpc.aio.ServicerContext[Any, Any], produced: Any) -> Any:
    """Await a handler's single response (if it is awaitable), then record the outcome.
    Exceptions are re-raised unchanged."""
    try:
        result = await produced if inspect.isawaitable(produced) else produced
    except grpc.aio.AbortError:
        call.finish(_code_of(context))
        raise
    except BaseException as exc:  # CancelledError included: record, never swallow
        call.finish(_failure_code(exc, context))
        raise
    call.finish(_code_of(context))
    if result is not None:
        call.sent()
    return result


def _wrap_unary_unary(
    behavior: Callable[..., Any], call_factory: Callable[[], _Call]
) -> Callable[..., Awaitable[Any]]:
    async def wrapper(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        call = call_factory()
        call.bind()
        call.received(request)
        try:
            produced = behavior(request, context)
        except BaseException as exc:
            call.finish(_failure_code(exc, context))
            raise
        return await _unary_response(call, context, produced)

    return wrapper


def _wrap_stream_unary(
    behavior: Callable[..., Any], call_factory: Callable[[], _Call]
) -> Callable[..., Awaitable[Any]]:
    async def wrapper(
        request_iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        call = call_factory()
        call.bind()
        try:
            produced = behavior(_count_requests(call, request_iterator), context)
        except BaseException as exc:
            call.finish(_failure_code(exc, context))
            raise
        return await _unary_response(call, context, produced)

    return wrapper


def _wrap_streaming_response(
    behavior: Callable[..., Any], call_factory: Callable[[], _Call], *, stream_request: bool
) -> Callable[..., AsyncIterator[Any]]:
    async def wrapper(
        request_or_iterator: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Any]:
        call = call_factory()
        call.bind()
        if stream_request:
            argument = _count_requests(call, request_or_iterator)
        else:
            call.received(request_or_iterator)
            argument = request_or_iterator
        try:
            produced = behavior(argument, context)
            if inspect.isawaitable(produced):  # handler writes with context.write()
                await produced
            elif hasattr(produced, "__aiter__"):
                async for message in produced:
                    call.sent()
                    yield message
            elif produced is not None:
                for message in produced:  # a plain (sync) generator
                    call.sent()
                    yield message
        except grpc.aio.AbortError:
            call.finish(_code_of(context))
            raise
        except BaseException as exc:  # CancelledError included: record, never swallow
            call.finish(_failure_code(exc, context))
            raise
        call.finish(_code_of(context))

    return wrapper


async def _count_requests(call: _Call, iterator: Any) -> AsyncIterator[Any]:
    if hasattr(iterator, "__aiter__"):
        async for request in iterator:
            call.received(request)
            yield request
    else:
        for request in iterator:
            call.received(request)
            yield request


class _InstrumentedGenericHandler(grpc.GenericRpcHandler):
    """A generic handler whose method handlers come back wrapped (each wrapped once)."""

    def __init__(self, inner: grpc.GenericRpcHandler) -> None:
        self._inner = inner
        # method -> (the handler it wrapped, the wrapped handler)
        self._wrapped: dict[str, tuple[Any, grpc.RpcMethodHandler[Any, Any]]] = {}

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = self._inner.service(handler_call_details)
        if handler is None:  # not ours: the next handler, or grpc answers UNIMPLEMENTED
            return None
        full = handler_call_details.method
        hit = self._wrapped.get(full)
        if hit is not None and hit[0] is handler:
            return hit[1]
        wrapped = _wrap_handler(handler, *_split_method(full))
        if len(self._wrapped) < 1024:  # method names come from clients: bound the cache
            self._wrapped[full] = (handler, wrapped)
        return wrapped


class InstrumentedRegistry:
    """Registers servicers on a ``grpc.aio`` server with every method handler wrapped
    once, at registration, to record metrics and bind the log context.

    Pass it where generated code expects the server
    (``add_FooServicer_to_server(servicer, InstrumentedRegistry(server))``). Unlike a
    ``grpc.aio.ServerInterceptor``, which grpc awaits once per call before finding the
    handler, this costs nothing per call beyond the wrapper itself.
    """

    def __init__(self, server: grpc.aio.Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, generic_rpc_handlers: Any) -> None:
        self.server.add_generic_rpc_handlers(
            tuple(_InstrumentedGenericHandler(h) for h in generic_rpc_handlers)
        )

    def add_registered_method_handlers(
        self, service_name: str, method_handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        self.server.add_registered_method_handlers(
            service_name, {name: _wrap_handler(h, service_name, name) for name, h in method_handlers.items()}
        )


def _wrap_handler(
    handler: grpc.RpcMethodHandler[Any, Any], service: str, method: str
) -> grpc.RpcMethodHandler[Any, Any]:
    def factory(grpc_type: str) -> Callable[[], _Call]:
        m = _MethodMetrics(grpc_type, service, method)
        return lambda: _Call(m)

    deserializer = handler.request_deserializer
    if service.startswith("truco."):  # ours: unparsable bytes reach the servicer, which refuses them
        deserializer = limits.tolerant(deserializer)
    serializer = handler.response_serializer
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            _wrap_unary_unary(handler.unary_unary, factory("unary")),
            request_deserializer=deserializer,
            response_serializer=serializer,
        )
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(
            _wrap_streaming_response(handler.unary_stream, factory("server_stream"), stream_request=False),
            request_deserializer=deserializer,
            response_serializer=serializer,
        )
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(
            _wrap_stream_unary(handler.stream_unary, factory("client_stream")),
            request_deserializer=deserializer,
            response_serializer=serializer,
        )
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(
            _wrap_streaming_response(handler.stream_stream, factory("bidi_stream"), stream_request=True),
            request_deserializer=deserializer,
            response_serializer=serializer,
        )
    return handler


__all__ = ["InstrumentedRegistry"]
