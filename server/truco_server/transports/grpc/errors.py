"""gRPC side of the error model: a :class:`~truco_server.core.errors.ServiceError` ends the call
with its ``google.rpc.Status`` (:func:`truco_server.api.matches.to_status`) in the trailers.

:func:`map_service_errors` decorates servicer methods (unary and server streaming): a
``ServiceError`` becomes its status; any other exception is logged with its traceback and
answered INTERNAL without internals in the message.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn, TypeVar, cast

import grpc
import structlog
from grpc_status import rpc_status

from truco_server.api import limits
from truco_server.api.matches import INTERNAL, as_service_error, to_status
from truco_server.core.errors import ServiceError
from truco_server.core.logging import bind_refusal

_log = structlog.get_logger("truco_server.grpc")

_F = TypeVar("_F", bound=Callable[..., Any])


def to_grpc_status(err: ServiceError) -> grpc.Status:
    """The status of ``err`` in the form ``context.abort_with_status`` takes."""
    return rpc_status.to_status(to_status(err))


async def abort_with_service_error(
    context: grpc.aio.ServicerContext[Any, Any], err: ServiceError
) -> NoReturn:
    """End the current RPC with ``err``'s status and details (raises ``grpc.aio.AbortError``)."""
    bind_refusal(err.reason)
    await context.abort_with_status(to_grpc_status(err))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


async def _handle(exc: BaseException, context: grpc.aio.ServicerContext[Any, Any]) -> NoReturn:
    typed = as_service_error(exc)
    if typed is not None:
        if not isinstance(exc, ServiceError):
            _log.warning("store unavailable", error=f"{type(exc).__name__}: {exc}"[:300])
        await abort_with_service_error(context, typed)
    _log.exception("unexpected error in handler")
    await abort_with_service_error(context, INTERNAL)


def map_service_errors(method: _F) -> _F:
    """Decorator for async servicer methods (coroutines or async generators).

    The request is checked first (:func:`truco_server.api.limits.require`: parsed, within
    its size limits). ``ServiceError`` -> its status with details, a store fault -> UNAVAILABLE
    (:func:`~truco_server.api.matches.as_service_error`); ``grpc.aio.AbortError`` and cancellation pass
    through untouched; anything else is logged with its traceback and answered INTERNAL.
    """
    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def stream_wrapper(
            self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            try:
                limits.require(request)
                async for message in method(self, request, context):
                    yield message
            except (grpc.aio.AbortError, asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                await _handle(exc, context)

        return cast(_F, stream_wrapper)

    @functools.wraps(method)
    async def unary_wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            limits.require(request)
            return await method(self, request, context)
        except (grpc.aio.AbortError, asyncio.CancelledError):
            raise
        except Exception as exc:
            await _handle(exc, context)

    return cast(_F, unary_wrapper)
