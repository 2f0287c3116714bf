"""Errors on the wire: the ``google.rpc.Status`` every transport sends for a typed service
error (gRPC trailers, the REST JSON body, the player connection's per-action result), and how
an exception raised below the API layer is classified (once, for every transport)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from truco_contract import codec
from truco_contract.pb import error_details_pb2 as truco_error_details_pb2
from truco_server.core import errors as E
from truco_server.core.caller import Caller, MatchCredential
from truco_server.ports.errors import MatchNotFound as StoreMatchNotFound
from truco_server.ports.errors import StoreUnavailable


def _pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def to_status(err: E.ServiceError) -> status_pb2.Status:
    """The ``google.rpc.Status`` (code, message, details) of a service error: always an
    ``ErrorInfo`` (domain ``truco.v1``, the reason, metadata); a ``BadRequest`` with the field
    violations for INVALID_ARGUMENT; a ``truco.v1.IllegalActionDetail`` with the legal actions
    for illegal or stale actions; a ``RetryInfo`` when a retry may succeed later
    (UNAVAILABLE, quotas) and a ``QuotaFailure`` naming the quota. Messages are cut to
    :data:`MESSAGE_LIMIT` characters."""
    details = [
        _pack(error_details_pb2.ErrorInfo(reason=err.reason, domain=E.ERROR_DOMAIN, metadata=err.metadata))
    ]
    if err.field_violations or err.code is E.Code.INVALID_ARGUMENT:
        violations = [
            error_details_pb2.BadRequest.FieldViolation(
                field=_clip(v.field), description=_clip(v.description)
            )
            for v in err.field_violations
        ]
        details.append(_pack(error_details_pb2.BadRequest(field_violations=violations)))
    if err.legal_actions is not None or err.code in (E.Code.FAILED_PRECONDITION, E.Code.ABORTED):
        detail = truco_error_details_pb2.IllegalActionDetail(
            legal_actions=[codec.action_to_proto(a) for a in err.legal_actions or ()], reason=err.message
        )
        if err.current_version is not None:
            detail.current_version = err.current_version
        details.append(_pack(detail))
    if err.quota_violations:
        quota = error_details_pb2.QuotaFailure(
            violations=[
                error_details_pb2.QuotaFailure.Violation(subject=v.subject, description=v.description)
                for v in err.quota_violations
            ]
        )
        details.append(_pack(quota))
    if err.retry_after is not None:
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(max(1, round(err.retry_after * 1000)))
        details.append(_pack(error_details_pb2.RetryInfo(retry_delay=delay)))
    return status_pb2.Status(code=err.code.value, message=_clip(err.message), details=details)


#: Longest error message a caller is sent (a message quotes at most a short prefix of any
#: input, :func:`truco_server.core.errors.quote`; this is the backstop).
MESSAGE_LIMIT = 500


def _clip(text: str) -> str:
    return E.clip(text, MESSAGE_LIMIT)


INTERNAL = E.ServiceError("internal error", code=E.Code.INTERNAL)
"""What a caller sees of an unexpected failure (details are in the worker's log only)."""

#: Seconds a caller is told to wait after a store fault (``RetryInfo``, ``Retry-After``).
STORE_RETRY_SECONDS = 1.0


_STORE_FAULTS = (StoreUnavailable, ConnectionError, TimeoutError)


def as_service_error(exc: BaseException) -> E.ServiceError | None:
    """The typed error a transport answers for an exception raised below the API layer: a
    :class:`~truco_server.core.errors.ServiceError` as it is; a store fault (Redis unreachable
    after the store's own retries, or a connection or timeout error escaping it)
    :class:`~truco_server.core.errors.Unavailable`; a match the store no longer has
    :class:`~truco_server.core.errors.MatchNotFound`; ``None`` for anything else, which the
    transport logs and answers :data:`INTERNAL`. Both transports call this, so a fault is
    classified once."""
    if isinstance(exc, E.ServiceError):
        return exc
    if isinstance(exc, _STORE_FAULTS):
        return E.Unavailable(retry_after=STORE_RETRY_SECONDS)
    if isinstance(exc, StoreMatchNotFound):  # the match vanished under a call (a data loss)
        return E.MatchNotFound(f"no match {exc.match_id!r}")
    return None


@contextlib.contextmanager
def uniform(caller: Caller) -> Iterator[None]:
    """A match credential for a match that does not exist is answered like one that does not
    verify (:class:`~truco_server.core.errors.CredentialNotValid`, byte for byte), so a made-up
    token cannot tell a real match id from an unknown one. An operator still gets NOT_FOUND:
    it may list its matches anyway."""
    try:
        yield
    except E.MatchNotFound:
        if isinstance(caller, MatchCredential):
            raise E.CredentialNotValid() from None
        raise
