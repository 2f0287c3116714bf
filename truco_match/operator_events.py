"""What an operator follows of its matches: the lifecycle events (``truco.v1.OperatorEvent``).

A match's log says everything; an operator's backend wants only the moments that change what
it shows or owes: a match was created, started (its first deal), a hand ended, the match ended
(with its result), was aborted or cancelled, a seat's clock ran out, a credential was
re-issued. :func:`of_entries` picks
them out of one commit's log entries, so the same commit that writes the log decides them.

An event's ``id`` is ``<match_id>:<version>`` (the version of the log entry it reports): it is
the same however often the event is relayed or delivered, so a consumer dedupes by it, and it
is the ``webhook-id`` of its webhook deliveries (docs/webhooks.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import truco_engine as te
from truco_match.events import (
    CredentialReissued,
    EventView,
    LogEntry,
    MatchAborted,
    MatchCancelled,
    MatchCreated,
    TurnTimedOut,
    redact,
)
from truco_match.matches import MatchResult


class OperatorEventType(StrEnum):
    """The event types (``OperatorEvent.type``, the webhook payload's ``type``)."""

    CREATED = "match.created"
    STARTED = "match.started"
    HAND_ENDED = "match.hand_ended"
    ENDED = "match.ended"
    ABORTED = "match.aborted"
    CANCELLED = "match.cancelled"
    TURN_TIMED_OUT = "match.turn_timed_out"
    CREDENTIAL_REISSUED = "match.credential_reissued"
    LEAGUE_STARTED = "league.started"
    ROUND_PAIRED = "round.paired"
    ENTRANT_FORFEITED = "entrant.forfeited"
    RESULT_CORRECTED = "result.corrected"
    LEAGUE_PAUSED = "league.paused"
    LEAGUE_RESUMED = "league.resumed"
    LEAGUE_FINISHED = "league.finished"


LEAGUE_EVENT_TYPES = frozenset(t for t in OperatorEventType if not t.value.startswith("match."))
"""The events of a league (no match log entry; ``labels`` say which league, round, table,
entrant)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorEvent:
    """One lifecycle event of a match, or of a league (:data:`LEAGUE_EVENT_TYPES`: then
    ``match_id`` is empty, or the match concerned, and there is no ``event``)."""

    id: str
    match_id: str
    type: OperatorEventType
    time: float
    """Server time of the commit (seconds since the epoch)."""
    event: EventView | None = None
    """The match's log entry, as a spectator sees it (``None`` for a league event)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    result: MatchResult | None = None
    """On ``match.ended``."""
    cursor: str = ""
    """Position in the operator's stream (set when read from it)."""


def type_of(entry: LogEntry) -> OperatorEventType | None:
    """The operator event a log entry makes, if any."""
    if isinstance(entry, te.Event):
        p = entry.payload
        if isinstance(p, te.HandStarted):
            return OperatorEventType.STARTED if p.hand_number == 1 else None
        if isinstance(p, te.HandEnded):
            return OperatorEventType.HAND_ENDED
        if isinstance(p, te.MatchEnded):
            return OperatorEventType.ENDED
        return None
    if isinstance(entry, MatchCreated):
        return OperatorEventType.CREATED
    if isinstance(entry, MatchAborted):
        return OperatorEventType.ABORTED
    if isinstance(entry, MatchCancelled):
        return OperatorEventType.CANCELLED
    if isinstance(entry, TurnTimedOut):
        return OperatorEventType.TURN_TIMED_OUT
    if isinstance(entry, CredentialReissued):
        return OperatorEventType.CREDENTIAL_REISSUED
    return None


def of_entries(
    match_id: str,
    entries: Sequence[LogEntry],
    first_version: int,
    time: float,
    labels: Mapping[str, str],
    result: MatchResult | None,
) -> list[OperatorEvent]:
    """The operator events of one commit (``entries`` start at version ``first_version``;
    ``result`` is the match's result when the commit finished it)."""
    out = []
    for version, entry in enumerate(entries, first_version):
        kind = type_of(entry)
        if kind is None:
            continue
        out.append(
            OperatorEvent(
                id=f"{match_id}:{version}",
                match_id=match_id,
                type=kind,
                time=time,
                event=EventView(version, redact(entry, None), time=time),
                labels=dict(labels),
                result=result if kind is OperatorEventType.ENDED else None,
            )
        )
    return out
