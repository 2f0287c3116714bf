"""What an operator follows of its matches: the lifecycle events (``truco.v1.OperatorEvent``).

A match's log says everything; an operator's backend wants only the moments that change what
it shows or owes: a match was created, started (its first deal), a hand ended, the match ended
(with its result), was aborted or cancelled, a seat's clock ran out, a credential was
re-issued, a seat was reminded that its time runs out soon -- and whose decision the match now
awaits (``match.turn``: what an app needs to tell its player "your move"). :func:`of_commit`
picks them out of one commit (its log entries, and the awaited decision before and after it),
so the same commit that writes the log decides them.

An event's ``id`` is ``<match_id>:<version>`` (the version of the log entry it reports), and
``<match_id>:<version>:turn`` for a ``match.turn`` (the match's version once the decision is
awaited): it is the same however often the event is relayed or delivered, so a consumer
dedupes by it, and it is the ``webhook-id`` of its webhook deliveries (docs/webhooks.md).

A ``match.turn`` carries the seat, its player id, the decision's number, what is awaited
(``play``: a card or a call; ``answer``: the pending call named in ``call``) and the deadline
when a clock runs -- never a card: it is public, like everything an operator event carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import truco_engine as te
from truco_engine._fast import fast_init
from truco_match.events import (
    CredentialReissued,
    EventView,
    LogEntry,
    MatchAborted,
    MatchCancelled,
    MatchCreated,
    SeatInfo,
    TurnReminder,
    TurnTimedOut,
    redact,
)
from truco_match.lifecycle import Life
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
    TURN = "match.turn"
    TURN_REMINDER = "match.turn_reminder"
    TICKET_MATCHED = "ticket.matched"
    """A matchmaking ticket's table was formed (:mod:`truco_match.matchmaking`)."""
    LEAGUE_STARTED = "league.started"
    ROUND_PAIRED = "round.paired"
    ENTRANT_FORFEITED = "entrant.forfeited"
    ENTRANT_WITHDRAWN = "entrant.withdrawn"
    RESULT_CORRECTED = "result.corrected"
    LEAGUE_PAUSED = "league.paused"
    LEAGUE_RESUMED = "league.resumed"
    LEAGUE_FINISHED = "league.finished"


LEAGUE_EVENT_TYPES = frozenset(
    {
        OperatorEventType.LEAGUE_STARTED,
        OperatorEventType.ROUND_PAIRED,
        OperatorEventType.ENTRANT_FORFEITED,
        OperatorEventType.ENTRANT_WITHDRAWN,
        OperatorEventType.RESULT_CORRECTED,
        OperatorEventType.LEAGUE_PAUSED,
        OperatorEventType.LEAGUE_RESUMED,
        OperatorEventType.LEAGUE_FINISHED,
    }
)
"""The events of a league (no match log entry; ``labels`` say which league, round, table,
entrant)."""


class Awaiting(StrEnum):
    """What a ``match.turn`` awaits from its seat."""

    PLAY = "play"
    """Its turn: a card, or a call."""
    ANSWER = "answer"
    """An answer to the pending call (``Turn.call``), or the hand-of-eleven decision."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """A decision the match awaits (``truco.v1.TurnAwaited``): public, no card."""

    seat: int
    player_id: str = ""
    """The seat's player id, when the creator gave one."""
    decision: int
    """The decision's number (the observation's ``decision``)."""
    awaiting: Awaiting
    call: str = ""
    """When answering: the call awaiting the answer (``truco``, ``envido``... or
    ``hand_of_eleven``)."""
    hand_number: int = 0
    deadline: float | None = None
    """When its time runs out (seconds since the epoch), when a clock runs."""


fast_init(Turn)  # a call: mypyc compiles a class it decorates as a Python class


@dataclass(frozen=True, slots=True, kw_only=True)
class TicketSeat:
    """One player of a matched ticket: the seat it got and that seat's credential."""

    player_id: str
    seat: int
    token: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TicketMatch:
    """A matched matchmaking ticket (``truco.v1.TicketMatch``)."""

    ticket_id: str
    pool_id: str
    seats: tuple[TicketSeat, ...]


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
    """The log entry, as a spectator sees it (none on ``match.turn``, ``ticket.matched``
    and a league event)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    result: MatchResult | None = None
    """On ``match.ended``."""
    cursor: str = ""
    """Position in the operator's stream (set when read from it)."""
    turn: Turn | None = None
    """On ``match.turn`` and ``match.turn_reminder``."""
    ticket: TicketMatch | None = None
    """On ``ticket.matched``."""


fast_init(OperatorEvent)  # a call: mypyc compiles a class it decorates as a Python class


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
    if isinstance(entry, TurnReminder):
        return OperatorEventType.TURN_REMINDER
    return None


@dataclass(frozen=True, slots=True)
class Committed:
    """One commit of a match, as :func:`of_commit` reads it."""

    match_id: str
    entries: Sequence[LogEntry]
    first_version: int
    """The version of ``entries[0]`` (the match's version before the commit, plus one)."""
    time: float
    labels: Mapping[str, str]
    result: MatchResult | None
    """The match's result when the commit finished it."""
    state: te.MatchState
    """The engine state after the commit."""
    before: Life | None
    """The lifecycle state before the commit (``None``: the commit created the match)."""
    after: Life
    seats: Sequence[SeatInfo]
    epoch_ms: int
    """When the match was created (ms since the epoch): its times are ms since then."""


fast_init(Committed)  # a call: mypyc compiles a class it decorates as a Python class


def of_commit(c: Committed) -> list[OperatorEvent]:
    """The operator events of one commit: those of its log entries, in order, then the
    ``match.turn`` of the decision it leaves awaited, if that is a new one."""
    out = []
    version = c.first_version
    for version, entry in enumerate(c.entries, c.first_version):
        kind = type_of(entry)
        if kind is None:
            continue
        out.append(
            OperatorEvent(
                id=f"{c.match_id}:{version}",
                match_id=c.match_id,
                type=kind,
                time=c.time,
                event=EventView(version, redact(entry, None), time=c.time),
                labels=dict(c.labels),
                result=c.result if kind is OperatorEventType.ENDED else None,
                turn=turn_of(c) if kind is OperatorEventType.TURN_REMINDER else None,
            )
        )
    if new_decision(c.before, c.after, c.seats) and c.entries:
        out.append(
            OperatorEvent(
                id=f"{c.match_id}:{version}:turn",
                match_id=c.match_id,
                type=OperatorEventType.TURN,
                time=c.time,
                labels=dict(c.labels),
                turn=turn_of(c),
            )
        )
    return out


def new_decision(before: Life | None, after: Life, seats: Sequence[SeatInfo]) -> bool:
    """Whether a commit leaves a decision awaited from a player that was not awaited from him
    before it (another decision number, another seat, or a seat its player took back from the
    server's bot): each such decision is one ``match.turn``. A decision the server's bot makes
    (a bot seat, or a seat it has taken over) has none: nobody is to be told "your move"."""
    if after.awaited is None or bot_plays(seats, after, after.awaited):
        return False
    if before is None or (before.decision, before.awaited) != (after.decision, after.awaited):
        return True
    return bot_plays(seats, before, after.awaited)  # its player took the seat back


def bot_plays(seats: Sequence[SeatInfo], life: Life, seat: int) -> bool:
    """Whether the server's bot plays ``seat`` at ``life`` (a bot seat, or taken over)."""
    return bool((seats[seat].bot_level if seat < len(seats) else 0) or life.taken_over(seat))


def turn_of(c: Committed) -> Turn | None:
    """The decision the match awaits after the commit, as a ``match.turn`` describes it."""
    seat = c.after.awaited
    if seat is None:
        return None
    pending = te.pending_call(c.state)
    answering = pending is not None and pending.responder == seat
    deadline = c.after.deadline()
    hand = c.state.hand
    return Turn(
        seat=seat,
        player_id=c.seats[seat].player_id if seat < len(c.seats) else "",
        decision=c.after.decision,
        awaiting=Awaiting.ANSWER if answering else Awaiting.PLAY,
        call=pending.name if answering and pending is not None else "",
        hand_number=hand.number if hand is not None else 0,
        deadline=None if deadline is None else (c.epoch_ms + deadline) / 1000,
    )
