"""The gRPC servicers, derived from the service descriptors: every RPC of a service calls the
API method of the same name (:class:`~truco_server.api.matches.MatchApi` and the others) with
the call's credentials and its request, as the REST face does. Nothing is listed by hand:
adding an RPC is its proto and its API method.

One wrapper per method does, for every call:

* the request: bytes that do not parse are INVALID_ARGUMENT (gRPC itself would answer
  UNKNOWN), and every field is checked against its size limit (:mod:`truco_server.api.limits`);
* the metrics (the go-grpc-prometheus names of :mod:`truco_server.core.metrics`:
  ``grpc_server_started_total``, ``grpc_server_handled_total{grpc_code}``,
  ``grpc_server_msg_received_total``, ``grpc_server_msg_sent_total``,
  ``grpc_server_handling_seconds``) and the log context (``grpc_method``, the request's
  ``request_id`` and ``match_id``; never the metadata, so never a credential);
* the errors: a :class:`~truco_server.core.errors.ServiceError` ends the call with its
  ``google.rpc.Status`` (:func:`truco_server.api.status.to_status`) in the trailers, a store
  fault with UNAVAILABLE; anything else is logged with its traceback and answered INTERNAL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message_factory import GetMessageClass
from grpc_status import rpc_status

from truco_server.api import limits
from truco_server.api.status import INTERNAL, as_service_error, to_status
from truco_server.core import metrics
from truco_server.core.caller import Credentials
from truco_server.core.errors import ServiceError
from truco_server.core.logging import bind_refusal

_log = structlog.get_logger("truco_server.grpc")

Context = grpc.aio.ServicerContext[Any, Any]
LOGGED_CHARS = 128
"""Characters of a request's ``request_id`` / ``match_id`` bound into the log context."""
_CONTEXT_FIELDS = ("request_id", "match_id")


class _Method:
    """One RPC: its API method, its metric children (looked up once: ``labels()`` takes a
    lock and hashes the labels on every call) and the request fields it logs."""

    __slots__ = ("call", "full", "handled", "labels", "logged", "received", "seconds", "sent", "started")

    def __init__(
        self, api: object, service: ServiceDescriptor | str, method: MethodDescriptor | str, kind: str = ""
    ) -> None:
        service_name = service if isinstance(service, str) else service.full_name
        method_name = method if isinstance(method, str) else method.name
        self.call: Callable[..., Any] = getattr(api, method_name, _no_call)
        self.full = f"{service_name}/{method_name}"
        kind = kind or _kind(method)  # type: ignore[arg-type]
        self.labels = (kind, service_name, method_name)
        self.started = metrics.GRPC_SERVER_STARTED.labels(*self.labels)
        self.received = metrics.GRPC_SERVER_MSG_RECEIVED.labels(*self.labels)
        self.sent = metrics.GRPC_SERVER_MSG_SENT.labels(*self.labels)
        self.seconds = metrics.GRPC_SERVER_HANDLING_SECONDS.labels(*self.labels)
        self.handled: dict[grpc.StatusCode, Any] = {}
        fields = method.input_type.fields_by_name if not isinstance(method, str) else {}
        self.logged = tuple(name for name in _CONTEXT_FIELDS if name in fields)

    @classmethod
    def foreign(cls, service: str, method: str, kind: str) -> _Method:
        """The metrics of an RPC of another library's servicer."""
        return cls(None, service, method, kind)

    def begin(self, request: Any) -> float:
        self.started.inc()
        context: dict[str, str] = {"grpc_method": self.full}
        if request is not None:
            self.received.inc()
            for name in self.logged:
                value = getattr(request, name, "")
                if value:
                    context[name] = value[:LOGGED_CHARS]  # an oversized value is never logged whole
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(**context)
        return time.perf_counter()

    def finish(self, start: float, code: grpc.StatusCode) -> None:
        elapsed = time.perf_counter() - start
        child = self.handled.get(code)
        if child is None:
            child = self.handled[code] = metrics.GRPC_SERVER_HANDLED.labels(*self.labels, code.name)
        child.inc()
        self.seconds.observe(elapsed)
        if code not in (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED):
            _log.info("rpc finished", grpc_code=code.name, duration_s=round(elapsed, 6))
        structlog.contextvars.clear_contextvars()


def _no_call(*args: Any) -> Any:  # pragma: no cover - a foreign servicer's handler is called
    raise NotImplementedError


def _kind(method: MethodDescriptor) -> str:
    if method.client_streaming:
        return "bidi_stream" if method.server_streaming else "client_stream"
    return "server_stream" if method.server_streaming else "unary"


async def _refuse(exc: BaseException, context: Context) -> grpc.StatusCode:
    """End the call for ``exc`` (raises ``grpc.aio.AbortError``); returns nothing else."""
    typed = as_service_error(exc)
    if typed is None:
        _log.exception("unexpected error in handler")
        typed = INTERNAL
    elif not isinstance(exc, ServiceError):
        _log.warning("store unavailable", error=f"{type(exc).__name__}: {exc}"[:300])
    bind_refusal(typed.reason)
    await context.abort_with_status(rpc_status.to_status(to_status(typed)))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


def _status_of(context: Context, default: grpc.StatusCode) -> grpc.StatusCode:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(code, int):  # some grpc versions keep the raw integer
        return next((c for c in grpc.StatusCode if c.value[0] == code), default)
    return default


def _unary(m: _Method) -> Callable[[Any, Context], Awaitable[Any]]:
    async def handle(request: Any, context: Context) -> Any:
        start = m.begin(request)
        code = grpc.StatusCode.OK
        try:
            limits.require(request)
            response = await m.call(Credentials.from_pairs(context.invocation_metadata()), request)
            m.sent.inc()
            return response
        except asyncio.CancelledError:
            code = grpc.StatusCode.CANCELLED
            raise
        except grpc.aio.AbortError:
            code = _status_of(context, grpc.StatusCode.UNKNOWN)
            raise
        except Exception as exc:
            try:
                await _refuse(exc, context)
            finally:
                code = _status_of(context, grpc.StatusCode.INTERNAL)
        finally:
            m.finish(start, code)

    return handle


def _streaming(
    m: _Method, stream_request: bool, write: Callable[[Any], bytes]
) -> Callable[[Any, Context], AsyncIterator[bytes]]:
    """A streaming RPC's handler. It yields each message serialized (the handler is
    registered without a serializer): a reader that does not take a message then holds its
    bytes in the worker, not the message object beside them. A message the API method yields
    serialized already (the player connection's) passes as it is."""

    async def handle(request: Any, context: Context) -> AsyncIterator[bytes]:
        start = m.begin(None if stream_request else request)
        code = grpc.StatusCode.OK
        try:
            if stream_request:
                request = _counted(m, request)
            else:
                limits.require(request)
            async for message in m.call(Credentials.from_pairs(context.invocation_metadata()), request):
                data = message if type(message) is bytes else write(message)
                del message
                m.sent.inc()
                yield data
        except (asyncio.CancelledError, GeneratorExit):
            code = grpc.StatusCode.CANCELLED
            raise
        except grpc.aio.AbortError:
            code = _status_of(context, grpc.StatusCode.UNKNOWN)
            raise
        except Exception as exc:
            try:
                await _refuse(exc, context)
            finally:
                code = _status_of(context, grpc.StatusCode.INTERNAL)
        finally:
            m.finish(start, code)

    return handle


async def _counted(m: _Method, requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The client's messages, counted (the API checks each: a bad one ends the stream its own
    way)."""
    async for request in requests:
        m.received.inc()
        yield request


def method_handlers(api: object, service: ServiceDescriptor) -> dict[str, grpc.RpcMethodHandler[Any, Any]]:
    """The handlers of the RPCs of ``service`` that ``api`` has a method for, each calling the
    method of its name (an RPC without one answers UNIMPLEMENTED;
    ``tests/server/test_grpc_skeleton.py`` checks that the worker's APIs serve every RPC)."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in service.methods:
        if not callable(getattr(api, method.name, None)):
            continue
        m = _Method(api, service, method)
        read = limits.tolerant(GetMessageClass(method.input_type).FromString)
        write = GetMessageClass(method.output_type).SerializeToString
        if not method.server_streaming:
            if method.client_streaming:
                raise ValueError(f"{m.full}: client streaming RPCs are not served")
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                _unary(m), request_deserializer=read, response_serializer=write
            )
        elif method.client_streaming:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(
                _streaming(m, True, write), request_deserializer=read
            )
        else:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                _streaming(m, False, write), request_deserializer=read
            )
    return handlers


class Registry:
    """Registers another library's servicer (health, reflection) the way generated code does
    (``add_..._to_server(servicer, Registry(server))``), with the metrics and log context of
    our own RPCs around each of its handlers."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:  # pragma: no cover - grpc < 1.63
        self.server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        self.server.add_registered_method_handlers(
            service, {name: _counted_handler(h, service, name) for name, h in handlers.items()}
        )


def _counted_handler(
    handler: grpc.RpcMethodHandler[Any, Any], service: str, name: str
) -> grpc.RpcMethodHandler[Any, Any]:
    """``handler`` (a unary or server-streaming one) with metrics and the log context."""
    kind = "server_stream" if handler.unary_stream is not None else "unary"
    m = _Method.foreign(service, name, kind)
    read, write = handler.request_deserializer, handler.response_serializer
    if handler.unary_unary is not None:
        inner = handler.unary_unary

        async def unary(request: Any, context: Context) -> Any:
            start, code = m.begin(request), grpc.StatusCode.UNKNOWN
            try:
                response = await inner(request, context)  # type: ignore[arg-type]
                code = _status_of(context, grpc.StatusCode.OK)
                m.sent.inc()
                return response
            except asyncio.CancelledError:
                code = grpc.StatusCode.CANCELLED
                raise
            except grpc.aio.AbortError:
                code = _status_of(context, grpc.StatusCode.UNKNOWN)
                raise
            finally:
                m.finish(start, code)

        return grpc.unary_unary_rpc_method_handler(
            unary, request_deserializer=read, response_serializer=write
        )
    if handler.unary_stream is not None:
        stream_inner = handler.unary_stream

        async def stream(request: Any, context: Context) -> AsyncIterator[Any]:
            start, code = m.begin(request), grpc.StatusCode.UNKNOWN
            try:
                produced: Any = stream_inner(request, context)  # type: ignore[arg-type]
                if hasattr(produced, "__aiter__"):
                    async for message in produced:
                        m.sent.inc()
                        yield message
                else:  # a handler that writes with context.write() (the health watch)
                    await produced
                code = _status_of(context, grpc.StatusCode.OK)
            except (asyncio.CancelledError, GeneratorExit):
                code = grpc.StatusCode.CANCELLED
                raise
            except grpc.aio.AbortError:
                code = _status_of(context, grpc.StatusCode.UNKNOWN)
                raise
            finally:
                m.finish(start, code)

        return grpc.unary_stream_rpc_method_handler(
            stream, request_deserializer=read, response_serializer=write
        )
    return handler  # pragma: no cover - no other kind among them
