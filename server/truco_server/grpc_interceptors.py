"""grpc.aio server interceptor: Prometheus metrics and per-call log context.

`ObservabilityInterceptor` wraps every RPC handler (unary and streaming) to

- record the go-grpc-prometheus metrics defined in `truco_server.metrics`
  (`grpc_server_started_total`, `grpc_server_handled_total{grpc_code}`,
  `grpc_server_msg_received_total`, `grpc_server_msg_sent_total`,
  `grpc_server_handling_seconds`);
- bind `grpc_method`, `request_id` and `match_id` (read from the request message when it
  has such fields) into structlog contextvars for the duration of the call. Handlers add
  `seat` with `truco_server.logging.bind_seat()` once they have authenticated the caller.
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

from truco_server import metrics

_log = structlog.get_logger("truco_server.grpc")

#: Request fields bound into the log context when present and non-empty.
_CONTEXT_FIELDS = ("request_id", "match_id")


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


class _Call:
    """Metrics and log context of one RPC."""

    __slots__ = ("_labels", "_start", "_tokens")

    def __init__(self, grpc_type: str, service: str, method: str) -> None:
        self._labels = (grpc_type, service, method)
        self._start = time.perf_counter()
        self._tokens: Any = None
        metrics.GRPC_SERVER_STARTED.labels(*self._labels).inc()

    def received(self, request: Any) -> None:
        metrics.GRPC_SERVER_MSG_RECEIVED.labels(*self._labels).inc()
        self.bind_request(request)

    def sent(self) -> None:
        metrics.GRPC_SERVER_MSG_SENT.labels(*self._labels).inc()

    def bind(self) -> None:
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(grpc_method=f"{self._labels[1]}/{self._labels[2]}")

    @staticmethod
    def bind_request(request: Any) -> None:
        descriptor = getattr(request, "DESCRIPTOR", None)
        if descriptor is None:
            return
        values = {
            name: getattr(request, name)
            for name in _CONTEXT_FIELDS
            if name in descriptor.fields_by_name and getattr(request, name)
        }
        if values:
            structlog.contextvars.bind_contextvars(**values)

    def finish(self, code: grpc.StatusCode) -> None:
        elapsed = time.perf_counter() - self._start
        metrics.GRPC_SERVER_HANDLED.labels(*self._labels, code.name).inc()
        metrics.GRPC_SERVER_HANDLING_SECONDS.labels(*self._labels).observe(elapsed)
        level = "debug" if code in (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED) else "info"
        getattr(_log, level)("rpc finished", grpc_code=code.name, duration_s=round(elapsed, 6))
        structlog.contextvars.clear_contextvars()


async def _settle(call: _Call, context: grpc.aio.ServicerContext[Any, Any], body: Awaitable[Any]) -> Any:
    """Await `body`, then record the outcome. Exceptions are re-raised unchanged."""
    try:
        result = await body
    except grpc.aio.AbortError:
        call.finish(_code_of(context))
        raise
    except BaseException as exc:  # CancelledError included: record, never swallow
        call.finish(_failure_code(exc, context))
        raise
    call.finish(_code_of(context))
    return result


def _wrap_unary_unary(
    behavior: Callable[..., Any], call_factory: Callable[[], _Call]
) -> Callable[..., Awaitable[Any]]:
    async def wrapper(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        call = call_factory()
        call.bind()
        call.received(request)
        result = await _settle(call, context, _maybe_await(behavior(request, context)))
        if result is not None:
            call.sent()
        return result

    return wrapper


def _wrap_stream_unary(
    behavior: Callable[..., Any], call_factory: Callable[[], _Call]
) -> Callable[..., Awaitable[Any]]:
    async def wrapper(
        request_iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        call = call_factory()
        call.bind()
        result = await _settle(
            call, context, _maybe_await(behavior(_count_requests(call, request_iterator), context))
        )
        if result is not None:
            call.sent()
        return result

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


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class ObservabilityInterceptor(grpc.aio.ServerInterceptor):
    """Records gRPC server metrics and binds the per-call log context for every RPC."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:  # unknown method: grpc answers UNIMPLEMENTED itself
            return handler
        service, method = _split_method(handler_call_details.method)
        return _wrap_handler(handler, service, method)


def _wrap_handler(
    handler: grpc.RpcMethodHandler[Any, Any], service: str, method: str
) -> grpc.RpcMethodHandler[Any, Any]:
    def factory(grpc_type: str) -> Callable[[], _Call]:
        return lambda: _Call(grpc_type, service, method)

    deserializer = handler.request_deserializer
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


__all__ = ["ObservabilityInterceptor"]
