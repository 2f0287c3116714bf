"""The league service's errors, and the service error of a tournament library error."""

from __future__ import annotations

from truco_server.core import errors as E
from truco_server.leagues import CheckInClosedError, LeagueError, RegistrationClosedError


class LeagueNotFound(E.ServiceError):
    default_code = E.Code.NOT_FOUND
    default_reason = "LEAGUE_NOT_FOUND"  # type: ignore[assignment]


class LeagueStateError(E.ServiceError):
    """The league is not in a state that allows this (already started, not paused...)."""

    default_code = E.Code.FAILED_PRECONDITION
    default_reason = "LEAGUE_STATE"  # type: ignore[assignment]


def invalid(field: str, message: str) -> E.InvalidArgument:
    return E.InvalidArgument(f"{field}: {message}", field_violations=[E.FieldViolation(field, message)])


def league_error(exc: LeagueError) -> E.ServiceError:
    """The service error of a library error (the field it names, its message)."""
    if isinstance(exc, CheckInClosedError):
        return LeagueStateError(exc.message, reason="CHECK_IN_CLOSED")
    if isinstance(exc, RegistrationClosedError):
        return LeagueStateError(exc.message, reason="REGISTRATION_CLOSED")
    return invalid(exc.field, exc.message)
