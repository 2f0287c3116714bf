"""Typed requests and responses of the match API, one pair per RPC.

The transports decode their wire messages into these (:mod:`truco_server.api.matches`), call
:class:`truco_server.services.matches.MatchService` with them and a caller
(:mod:`truco_server.api.auth`), and encode what comes back. Nothing here knows gRPC or HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass

import truco_engine as te
from truco_engine._fast import fast_init
from truco_match.create import MatchSpec
from truco_match.events import EventView, MatchStatus
from truco_match.match import Match, Moment
from truco_match.matches import MatchInfo
from truco_match.records import MatchRecord
from truco_match.views import ClockView, SeatView


@dataclass(frozen=True, slots=True)
class CreateMatchRequest(MatchSpec):
    """A match to create (:class:`truco_match.create.MatchSpec`) and the creator's idempotency
    key: a retried ``request_id`` returns the match it created."""

    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class CreateMatchResponse:
    match: MatchInfo
    seat_tokens: tuple[str, ...]
    spectator_token: str


@fast_init
@dataclass(frozen=True, slots=True)
class SubmitActionRequest:
    match_id: str
    action: te.Action
    request_id: str | None = None
    expected_version: int | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class SubmitActionResponse:
    """The outcome of an action. For a retried ``request_id`` (``duplicate``) ``version`` and
    ``events`` are those of the first commit (``events`` is empty when the log no longer
    holds them); ``view`` is always the current one."""

    match_id: str
    seat: int
    version: int
    events: tuple[EventView, ...]
    view: SeatView
    rules: te.RuleSet
    duplicate: bool = False
    match: Match | None = None
    """The match version ``view`` is of (the encodings of the view are kept on it)."""
    moment: Moment | None = None
    """The commit ``events`` come from (the encodings of the events are kept on it)."""


@dataclass(frozen=True, slots=True)
class StreamRequest:
    match_id: str
    from_version: int | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class StreamUpdate:
    """One message of an observation stream: events and the view after them, or a
    heartbeat (``view`` is ``None``)."""

    version: int
    events: tuple[EventView, ...]
    view: SeatView | None
    rules: te.RuleSet
    snapshot: bool = False
    clock: ClockView | None = None
    """A heartbeat's reading of the turn clock."""
    viewer: int = 0
    """Who it is for (a seat, or ``truco_match.credentials.SPECTATOR``)."""
    match: Match | None = None
    """The match version ``view`` is of, when it is the current one (encodings kept on it)."""
    moment: Moment | None = None
    """The commit ``events`` come from, when they are exactly one (encodings kept on it)."""

    @property
    def heartbeat(self) -> bool:
        return self.view is None

    @property
    def match_state(self) -> MatchStatus:
        return MatchStatus.ACTIVE if self.view is None else self.view.match_state


@dataclass(frozen=True, slots=True)
class GetMatchRequest:
    match_id: str


@dataclass(frozen=True, slots=True)
class GetMatchResponse:
    match: MatchInfo
    view: SeatView
    viewer: int = 0
    at: Match | None = None
    """The match version ``view`` is of, when it is the current one (encodings kept on it)."""


@dataclass(frozen=True, slots=True)
class ListMatchesRequest:
    status: MatchStatus | None = None
    page_size: int = 0
    page_token: str | None = None


@dataclass(frozen=True, slots=True)
class ListMatchesResponse:
    matches: tuple[MatchInfo, ...]
    next_page_token: str | None


@dataclass(frozen=True, slots=True)
class CancelMatchRequest:
    match_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CancelMatchResponse:
    match: MatchInfo


@dataclass(frozen=True, slots=True)
class JoinMatchRequest:
    match_id: str
    client_seed: bytes = b""


@dataclass(frozen=True, slots=True)
class JoinMatchResponse:
    version: int
    view: SeatView
    rules: te.RuleSet
    seat: int = 0
    match: Match | None = None
    """The match version ``view`` is of (the encodings of the view are kept on it)."""


@dataclass(frozen=True, slots=True)
class GetMatchRecordRequest:
    match_id: str


@dataclass(frozen=True, slots=True)
class GetMatchRecordResponse:
    record: MatchRecord


@dataclass(frozen=True, slots=True)
class AddTimeRequest:
    match_id: str
    seat: int | None
    added_ms: int


@dataclass(frozen=True, slots=True)
class AdjudicateMatchRequest:
    match_id: str
    winner_team: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class MatchResponse:
    """A response that is the match (AddTime, AdjudicateMatch)."""

    match: MatchInfo


@dataclass(frozen=True, slots=True)
class ReissueCredentialRequest:
    match_id: str
    seat: int | None
    """The seat whose credential is re-issued; ``None``: the spectators'."""
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class ReissueCredentialResponse:
    token: str
    seat: int | None
    version: int
    """The version of the ``credential_reissued`` event."""
    expires_at: float | None
    """Seconds since the epoch; ``None``: valid as long as the match is kept."""
