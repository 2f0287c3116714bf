"""Typed errors of the SDK, built from a gRPC status and its ``google.rpc`` details.

Every server error carries a reason (``ErrorInfo.reason``, e.g. ``NOT_YOUR_TURN``); illegal
or stale actions also carry the legal actions and the current version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from truco_contract import codec
from truco_contract.pb import error_details_pb2 as truco_error_details_pb2
from truco_kit.actions import Action


class TrucoClientError(Exception):
    """Base class of every SDK error."""


class TrucoApiError(TrucoClientError):
    """The server refused a call."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        reason: str = "",
        legal_actions: tuple[Action, ...] = (),
        current_version: int | None = None,
        field_violations: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(f"{code.name}{f' ({reason})' if reason else ''}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        """``ErrorInfo.reason``: ``ILLEGAL_ACTION``, ``NOT_YOUR_TURN``, ``STALE_VERSION``…"""
        self.legal_actions = legal_actions
        """What is legal now (illegal and stale actions)."""
        self.current_version = current_version
        self.field_violations = field_violations
        """(field, description) pairs of a malformed request."""


class InvalidArgument(TrucoApiError):
    """INVALID_ARGUMENT: malformed request or invalid rules."""


class IllegalAction(TrucoApiError):
    """FAILED_PRECONDITION: the action is not legal now (or not your turn, or match over)."""


class StaleVersion(TrucoApiError):
    """ABORTED: ``expected_version`` is not the current version."""


class NotFound(TrucoApiError):
    """NOT_FOUND: no such match."""


class Unauthenticated(TrucoApiError):
    """UNAUTHENTICATED: missing or unknown credential."""


class PermissionDenied(TrucoApiError):
    """PERMISSION_DENIED: the credential may not do this."""


class RequestIdReused(TrucoApiError):
    """ALREADY_EXISTS: the request id was used for a different request."""


class ResourceExhausted(TrucoApiError):
    """RESOURCE_EXHAUSTED: a server limit was hit."""


class Unavailable(TrucoApiError):
    """UNAVAILABLE (or DEADLINE_EXCEEDED) after every retry."""


class ServerUnreachable(Unavailable):
    """No server accepted a connection at any of the client's addresses within its
    ``connect_timeout``, on the client's first call (nothing listens there, or the address is
    wrong). Its message is one line naming the addresses and how to start a server."""

    def __init__(self, targets: Sequence[str], waited: float) -> None:
        where = " or ".join(targets)
        message = (
            f"no Truco server answers at {where} (waited {waited:g} s); start one with "
            "`truco serve` (`make serve` in a checkout), or check the address"
        )
        super().__init__(grpc.StatusCode.UNAVAILABLE, message, "SERVER_UNREACHABLE")
        self.targets = tuple(targets)
        """The addresses tried."""

    def __str__(self) -> str:
        return self.message


_BY_CODE: dict[grpc.StatusCode, type[TrucoApiError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: IllegalAction,
    grpc.StatusCode.ABORTED: StaleVersion,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.ALREADY_EXISTS: RequestIdReused,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: Unavailable,
}

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
"""Codes after which a call is retried (with the same request id)."""


def lost_in_transport(err: TrucoApiError) -> bool:
    """Whether ``err`` is the gRPC library's account of a broken connection rather than a
    server's answer: INTERNAL with no ``ErrorInfo`` (every error a Truco server sends has one).
    grpcio's asyncio client reports a write to a stream whose server is gone as ``INTERNAL:
    Internal error from Core`` instead of UNAVAILABLE (grpc/grpc#36066)."""
    return err.code is grpc.StatusCode.INTERNAL and not err.reason


def from_rpc_error(err: grpc.RpcError) -> TrucoApiError:
    """The typed error of a failed call (sync or asyncio)."""
    call: Any = err
    code: grpc.StatusCode = call.code() if hasattr(call, "code") else grpc.StatusCode.UNKNOWN
    message: str = (call.details() if hasattr(call, "details") else None) or str(err)
    trailing = call.trailing_metadata() if hasattr(call, "trailing_metadata") else None
    for key, value in trailing or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            return _typed(code, message, status_pb2.Status.FromString(value))
    return _typed(code, message, None)


_CODES = {c.value[0]: c for c in grpc.StatusCode}


def from_status(status: status_pb2.Status) -> TrucoApiError:
    """The typed error of a ``google.rpc.Status`` received as a message (the player
    connection's refused actions and ended subscriptions)."""
    return _typed(_CODES.get(status.code, grpc.StatusCode.UNKNOWN), status.message, status)


def _typed(code: grpc.StatusCode, message: str, status: status_pb2.Status | None) -> TrucoApiError:
    reason = ""
    legal: tuple[Action, ...] = ()
    version: int | None = None
    violations: tuple[tuple[str, str], ...] = ()
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
        elif detail.Is(truco_error_details_pb2.IllegalActionDetail.DESCRIPTOR):
            ill = truco_error_details_pb2.IllegalActionDetail()
            detail.Unpack(ill)
            legal = tuple(codec.action_from_proto(a) for a in ill.legal_actions)
            version = ill.current_version
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations = tuple((v.field, v.description) for v in bad.field_violations)
    cls = _BY_CODE.get(code, TrucoApiError)
    return cls(code, message, reason, legal, version, violations)
