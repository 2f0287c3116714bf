"""gRPC side of the error model: `ServiceError` -> `google.rpc.Status` with details.

- `to_rpc_status(err)` builds the `google.rpc.Status` (also the REST JSON error body):
  always an `ErrorInfo` (domain `truco.v1`, the reason, metadata); a `BadRequest` with the
  field violations for INVALID_ARGUMENT; a `truco.v1.IllegalActionDetail` with the legal
  actions for illegal or stale actions.
- `abort_with_service_error(context, err)` ends the current RPC with that status.
- `map_service_errors` decorates servicer methods (unary and server streaming): a
  `ServiceError` becomes its status, any other exception is logged and becomes a bare
  INTERNAL without internals in the message.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn, TypeVar, cast

import grpc
import structlog
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from truco.v1 import action_pb2
from truco.v1 import error_details_pb2 as truco_error_details_pb2
from truco_server.errors import ERROR_DOMAIN, Code, ServiceError

ActionEncoder = Callable[[object], action_pb2.Action]
"""Converts a service-layer action (e.g. an engine action) to a `truco.v1.Action`."""

_log = structlog.get_logger("truco_server.grpc")

_F = TypeVar("_F", bound=Callable[..., Any])


def _default_encoder(action: object) -> action_pb2.Action:
    if isinstance(action, action_pb2.Action):
        return action
    raise TypeError(f"cannot encode legal action {type(action).__name__}; pass encode_action to the mapper")


def _pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def to_rpc_status(err: ServiceError, encode_action: ActionEncoder | None = None) -> status_pb2.Status:
    """The `google.rpc.Status` (code, message, details) for `err`."""
    encode = encode_action or _default_encoder
    details: list[any_pb2.Any] = [
        _pack(error_details_pb2.ErrorInfo(reason=err.reason, domain=ERROR_DOMAIN, metadata=err.metadata))
    ]
    if err.field_violations or err.code is Code.INVALID_ARGUMENT:
        details.append(
            _pack(
                error_details_pb2.BadRequest(
                    field_violations=[
                        error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
                        for v in err.field_violations
                    ]
                )
            )
        )
    if err.legal_actions is not None or err.code in (Code.FAILED_PRECONDITION, Code.ABORTED):
        detail = truco_error_details_pb2.IllegalActionDetail(
            legal_actions=[encode(a) for a in err.legal_actions or ()],
            reason=err.message,
        )
        if err.current_version is not None:
            detail.current_version = err.current_version
        details.append(_pack(detail))
    return status_pb2.Status(code=err.code.value, message=err.message, details=details)


def to_grpc_status(err: ServiceError, encode_action: ActionEncoder | None = None) -> grpc.Status:
    """`to_rpc_status` in the form `context.abort_with_status` takes."""
    return rpc_status.to_status(to_rpc_status(err, encode_action))


async def abort_with_service_error(
    context: grpc.aio.ServicerContext[Any, Any],
    err: ServiceError,
    encode_action: ActionEncoder | None = None,
) -> NoReturn:
    """End the current RPC with `err`'s status and details (raises `grpc.aio.AbortError`)."""
    await context.abort_with_status(to_grpc_status(err, encode_action))
    raise AssertionError("abort_with_status returned")  # pragma: no cover


def _internal() -> ServiceError:
    return ServiceError("internal error", code=Code.INTERNAL)


async def _handle(
    exc: BaseException,
    context: grpc.aio.ServicerContext[Any, Any],
    encode_action: ActionEncoder | None,
) -> NoReturn:
    if isinstance(exc, ServiceError):
        await abort_with_service_error(context, exc, encode_action)
    _log.exception("unexpected error in handler")
    await abort_with_service_error(context, _internal())


def map_service_errors(
    encode_action: ActionEncoder | None = None,
) -> Callable[[_F], _F]:
    """Decorator for async servicer methods (coroutines or async generators).

    `ServiceError` -> its status with details; `grpc.aio.AbortError` and cancellation pass
    through untouched; anything else is logged with its traceback and answered INTERNAL.
    """

    def decorate(method: _F) -> _F:
        if inspect.isasyncgenfunction(method):

            @functools.wraps(method)
            async def stream_wrapper(
                self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                try:
                    async for message in method(self, request, context):
                        yield message
                except (grpc.aio.AbortError, asyncio.CancelledError, GeneratorExit):
                    raise
                except Exception as exc:
                    await _handle(exc, context, encode_action)

            return cast(_F, stream_wrapper)

        @functools.wraps(method)
        async def unary_wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                return await method(self, request, context)
            except (grpc.aio.AbortError, asyncio.CancelledError):
                raise
            except Exception as exc:
                await _handle(exc, context, encode_action)

        return cast(_F, unary_wrapper)

    return decorate
