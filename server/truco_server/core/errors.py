"""Transport-neutral errors of the service layer.

The service layer raises these; transport adapters map them to their wire form
(`truco_server.api.status.to_status`: a `google.rpc.Status` with details, in gRPC's trailers; the REST
adapter uses the same Status as its JSON body). Nothing here imports grpc or an HTTP
framework.

Each error has a canonical `code` (the gRPC code names, which REST maps to HTTP
statuses), a machine-readable `reason` (the `truco.v1.ErrorReason` value names without
the `ERROR_REASON_` prefix) and a message for humans. Messages must never name a card the
caller may not see (invariant "no leak").
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from truco_engine import Action

#: ErrorInfo.domain of every error this service returns.
ERROR_DOMAIN = "truco.v1"


class Code(enum.Enum):
    """Canonical status codes (same names and numbers as google.rpc.Code)."""

    INVALID_ARGUMENT = 3
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    INTERNAL = 13
    UNAVAILABLE = 14
    UNAUTHENTICATED = 16


class Reason(enum.StrEnum):
    """ErrorInfo.reason values (proto enum `truco.v1.ErrorReason` without its prefix)."""

    INVALID_REQUEST = "INVALID_REQUEST"
    INVALID_RULES = "INVALID_RULES"
    ILLEGAL_ACTION = "ILLEGAL_ACTION"
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    MATCH_NOT_ACTIVE = "MATCH_NOT_ACTIVE"
    STALE_VERSION = "STALE_VERSION"
    MATCH_NOT_FOUND = "MATCH_NOT_FOUND"
    INVALID_CREDENTIAL = "INVALID_CREDENTIAL"
    MISSING_CREDENTIAL = "MISSING_CREDENTIAL"
    MALFORMED_CREDENTIAL = "MALFORMED_CREDENTIAL"
    EXPIRED_CREDENTIAL = "EXPIRED_CREDENTIAL"
    WRONG_CREDENTIAL_KIND = "WRONG_CREDENTIAL_KIND"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    REQUEST_ID_REUSED = "REQUEST_ID_REUSED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    SHUTTING_DOWN = "SHUTTING_DOWN"
    ALREADY_STARTED = "ALREADY_STARTED"
    NO_CLOCK = "NO_CLOCK"
    WEBHOOK_NOT_FOUND = "WEBHOOK_NOT_FOUND"
    DESTINATION_NOT_ALLOWED = "DESTINATION_NOT_ALLOWED"
    INTERNAL = "INTERNAL"
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"


#: Longest piece of a caller's input an error message or field violation quotes.
QUOTE_LIMIT = 40


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` of a caller's input for an error message, cut to ``limit`` characters (an
    error never echoes input of any size back, nor into the log)."""
    return clip(repr(value), limit)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (ending in ``...`` when cut)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class QuotaViolation:
    """One exceeded quota (``google.rpc.QuotaFailure.Violation``): ``subject`` is the quota's
    name (``actions_per_second``...), ``description`` the limit in words."""

    subject: str
    description: str


@dataclass(frozen=True)
class FieldViolation:
    """One malformed field: `field` is a dotted path in the request ("action.play_card.card")."""

    field: str
    description: str


class ServiceError(Exception):
    """Base class: a typed, client-facing error that never changes match state.

    Attributes:
        code: canonical status code.
        reason: machine-readable reason.
        message: human-readable text (safe to show to the caller).
        field_violations: for INVALID_ARGUMENT, which fields were wrong.
        legal_actions: for illegal actions, what the seat may do now (engine actions; the
            API layer encodes them with the contract's codec).
        current_version: the match version the check was made against, when known.
        metadata: extra ErrorInfo metadata (string to string; never secrets or hidden cards).
        retry_after: seconds after which a retry may succeed (``google.rpc.RetryInfo``; REST
            ``Retry-After``), for UNAVAILABLE and RESOURCE_EXHAUSTED.
        quota_violations: for a quota, which one (``google.rpc.QuotaFailure``).
    """

    default_code: ClassVar[Code] = Code.INTERNAL
    default_reason: ClassVar[Reason] = Reason.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        code: Code | None = None,
        reason: Reason | str | None = None,
        field_violations: Sequence[FieldViolation] = (),
        legal_actions: Sequence[Action] | None = None,
        current_version: int | None = None,
        metadata: Mapping[str, str] | None = None,
        retry_after: float | None = None,
        quota_violations: Sequence[QuotaViolation] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.reason = str(reason if reason is not None else self.default_reason)
        self.field_violations = tuple(field_violations)
        self.legal_actions = None if legal_actions is None else tuple(legal_actions)
        self.current_version = current_version
        self.metadata = dict(metadata or {})
        self.retry_after = retry_after
        self.quota_violations = tuple(quota_violations)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code.name}, {self.reason}, {self.message!r})"


class InvalidArgument(ServiceError):
    """The request is malformed (missing field, bad card code, bad rule override)."""

    default_code = Code.INVALID_ARGUMENT
    default_reason = Reason.INVALID_REQUEST


class IllegalAction(ServiceError):
    """A well-formed action that is not legal now. Carries the legal actions."""

    default_code = Code.FAILED_PRECONDITION
    default_reason = Reason.ILLEGAL_ACTION


class NotYourTurn(IllegalAction):
    """The seat may not act now."""

    default_reason = Reason.NOT_YOUR_TURN


class MatchNotActive(ServiceError):
    """The match is finished or cancelled."""

    default_code = Code.FAILED_PRECONDITION
    default_reason = Reason.MATCH_NOT_ACTIVE


class StaleVersion(ServiceError):
    """`expected_version` is not the current version."""

    default_code = Code.ABORTED
    default_reason = Reason.STALE_VERSION


class MatchNotFound(ServiceError):
    """No match with this id."""

    default_code = Code.NOT_FOUND
    default_reason = Reason.MATCH_NOT_FOUND


class WebhookNotFound(ServiceError):
    """No webhook with this id for this operator."""

    default_code = Code.NOT_FOUND
    default_reason = Reason.WEBHOOK_NOT_FOUND


class Unauthenticated(ServiceError):
    """Not a valid credential (an unknown API key, a credential of another match)."""

    default_code = Code.UNAUTHENTICATED
    default_reason = Reason.INVALID_CREDENTIAL


class MissingCredential(Unauthenticated):
    """No credential where the call needs one; the message says where one goes."""

    default_reason = Reason.MISSING_CREDENTIAL


class MalformedCredential(Unauthenticated):
    """What was sent is not shaped like a credential; the message says what one looks like."""

    default_reason = Reason.MALFORMED_CREDENTIAL


class WrongCredentialKind(Unauthenticated):
    """A credential of another kind than the call takes (a match credential where an operator
    key is needed, an operator key where a seat's token is, a bot account's credential
    anywhere but the bot lobby); the message names both kinds. Decided from the call alone."""

    default_reason = Reason.WRONG_CREDENTIAL_KIND


class CredentialNotValid(Unauthenticated):
    """A well-shaped match credential that does not stand for a viewer of the match it names:
    a signature that does not verify, a match that does not exist (or is no longer kept), a
    re-issued credential. One answer, byte for byte, for all of them, so that a made-up token
    cannot tell which match ids exist nor whether a credential was once valid."""

    MESSAGE: ClassVar[str] = (
        "invalid credential: not a valid seat or spectator token of this match (the signature "
        "does not verify, the match does not exist or is no longer kept, or the credential was "
        "re-issued)"
    )

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


class ExpiredCredential(Unauthenticated):
    """A genuine match credential (its signature verifies) past its lifetime
    (``credential_ttl``). Only the holder of a credential the match issued gets this answer,
    so it tells nothing a made-up token could learn."""

    MESSAGE: ClassVar[str] = (
        "expired credential: this seat or spectator token of the match is past its lifetime "
        "(the match's credential_ttl); its operator can hand out a new one (ReissueCredential)"
    )
    default_reason = Reason.EXPIRED_CREDENTIAL

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


class PermissionDenied(ServiceError):
    """A valid credential that may not do this (wrong seat, spectator, other operator)."""

    default_code = Code.PERMISSION_DENIED
    default_reason = Reason.PERMISSION_DENIED


class RequestIdReused(ServiceError):
    """The request_id was already used with a different request."""

    default_code = Code.ALREADY_EXISTS
    default_reason = Reason.REQUEST_ID_REUSED


class ResourceExhausted(ServiceError):
    """A server limit was hit."""

    default_code = Code.RESOURCE_EXHAUSTED
    default_reason = Reason.RESOURCE_EXHAUSTED


class QuotaExceeded(ResourceExhausted):
    """A quota was hit (open streams, actions per second, matches created per minute, live
    matches, bytes of new matches per day; :mod:`truco_server.services.quotas`): retry after
    ``retry_after`` seconds."""

    default_reason = Reason.QUOTA_EXCEEDED

    def __init__(self, quota: str, limit: str, retry_after: float) -> None:
        super().__init__(
            f"quota {quota} exceeded ({limit}); retry in {retry_after:.3g}s",
            retry_after=retry_after,
            quota_violations=[QuotaViolation(quota, limit)],
            metadata={"quota": quota},
        )


class Unavailable(ServiceError):
    """The store cannot be reached (Redis down, paused, failing over): nothing is known to
    have been written; retry (an action with the same ``request_id``) after ``retry_after``."""

    default_code = Code.UNAVAILABLE
    default_reason = Reason.STORE_UNAVAILABLE

    def __init__(
        self, message: str = "the match store is unavailable; retry", retry_after: float = 1.0
    ) -> None:
        super().__init__(message, retry_after=retry_after)


class ShuttingDown(ServiceError):
    """The worker is shutting down: the client should reconnect (streams: resume)."""

    default_code = Code.UNAVAILABLE
    default_reason = Reason.SHUTTING_DOWN

    def __init__(self, message: str = "server is shutting down; reconnect and resume") -> None:
        super().__init__(message)
