"""What the clock makes due in a match, and when it next needs the server.

A match needs the server at some time when a seat must join within a window, when its turn
clock runs, when the server's bot plays the awaited seat and has thought long enough, when a
seat away for its disconnect grace must get its default move or be taken over by a bot, when
the awaited seat is to be reminded that its time runs out soon, or when it may idle out
(:func:`truco_match.table.due`). At that time the server asks :func:`due_step` what to do -- in
this order: abort a match whose seats did not all join in time; time out the awaited decision
whose clock ran out; play the default move of an awaited seat away for longer than its grace,
or hand it to a bot; remind the awaited seat that its time runs out soon; abort a match idle
for its idle timeout -- commits it; then, when :func:`bot_turn` names a seat, it has the bot
decide from that seat's observation and commits :func:`bot_step`; and it asks
:func:`next_wake` for the next time. Times are milliseconds since the match's creation.
"""

from __future__ import annotations

import truco_engine as te
from truco_match import records, table
from truco_match.events import (
    MatchAborted,
    MatchForfeited,
    MatchStatus,
    SeatTakenOver,
    TimeoutCause,
    TurnReminder,
    TurnTimedOut,
)
from truco_match.lifecycle import Life

Due = tuple[table.Step, records.RecordStep, MatchStatus | None]
"""A step that is due: the step, its record entry, and the status it ends the match in."""


def presence_matters(setup: table.Setup, life: Life, now: int) -> bool:
    """Whether what is due now may depend on when the awaited seat was last seen (the caller
    then reads it and passes :func:`due_step` how long the seat has been away)."""
    grace = setup.lifecycle.disconnect_grace
    seat = life.awaited
    return (
        bool(grace)
        and life.started
        and seat is not None
        and not setup.bot_level(life, seat)
        and now >= life.since + grace
    )


def due_step(
    setup: table.Setup,
    state: te.MatchState,
    life: Life,
    now: int,
    away_ms: int | None = None,
    presence_timeout_ms: float = 0,
) -> Due | None:
    """The step due at ``now``, or ``None``. ``away_ms``: how long the awaited seat has been
    away, when :func:`presence_matters`; a seat counts as away only past both its grace and
    ``presence_timeout_ms`` (how long a seat with an open stream may go unseen)."""
    lc = setup.lifecycle
    if not life.started and lc.join_window and now >= lc.join_window:
        missing = tuple(i for i, j in enumerate(life.joined) if not j)
        abort = MatchAborted(reason="not_joined", seats=missing)
        return _aborted(table.abort(setup, state, life, "not_joined"), abort)
    end = life.deadline()
    if end is not None and now >= end:
        done = table.expire(setup, state, life, TimeoutCause.CLOCK, now)
        if done is not None:
            return done, _timed_out(done, records.StepCause.CLOCK), None
    if away_ms is not None and away_ms >= max(lc.disconnect_grace, presence_timeout_ms):
        seat = life.awaited
        if lc.takeover and seat is not None and not setup.bot_level(life, seat):
            taken = table.take_over(setup, state, life, seat)
            takeover = taken.entries[0]
            assert isinstance(takeover, SeatTakenOver)
            record = records.RecordStep(
                version=0, time=0.0, seat=seat, cause=records.StepCause.DISCONNECTED, take_over=takeover
            )
            return taken, record, None
        done = table.expire(setup, state, life, TimeoutCause.DISCONNECTED, now)
        if done is not None:
            return done, _timed_out(done, records.StepCause.DISCONNECTED), None
    reminded = table.remind(setup, state, life, now)
    if reminded is not None:
        entry = reminded.entries[0]
        assert isinstance(entry, TurnReminder)
        record = records.RecordStep(
            version=0, time=0.0, seat=entry.seat, cause=records.StepCause.CLOCK, remind=entry
        )
        return reminded, record, None
    if lc.idle_timeout and lc.time_control is None and now >= life.last_activity + lc.idle_timeout:
        return _aborted(table.abort(setup, state, life, "idle"), MatchAborted(reason="idle"))
    return None


def bot_turn(setup: table.Setup, state: te.MatchState, life: Life, now: int) -> int | None:
    """The seat whose decision the server's bot makes now (it plays the awaited seat and has
    thought long enough: :func:`truco_match.table.think_time`), or ``None``."""
    seat = life.awaited
    if te.is_over(state) or not life.started or seat is None or not setup.bot_level(life, seat):
        return None
    return seat if now >= life.since + table.think_time(setup, state, life) else None


def bot_step(
    setup: table.Setup, state: te.MatchState, life: Life, seat: int, action: te.Action, now: int
) -> Due:
    """The decision of the server's bot for ``seat`` (what it chose from the seat's observation),
    as a step of the match."""
    step = table.act(setup, state, life, seat, action, now, by_server=True)
    record = records.RecordStep(version=0, time=0.0, seat=seat, cause=records.StepCause.BOT, action=action)
    return step, record, None


def next_wake(setup: table.Setup, state: te.MatchState, life: Life, now: int) -> int | None:
    """When the match next needs the server: its due time; when a bot's decision is due and
    was not made (a failed decision), a second from now; when only an away check is due and
    did not find the seat away, one more grace from now."""
    due = table.due(setup, state, life)
    if due is None:
        return None
    lc = setup.lifecycle
    if due <= now and life.awaited is not None and setup.bot_level(life, life.awaited):
        return now + 1000
    if due <= now and lc.disconnect_grace and life.awaited is not None:
        # only the away check can be due and not done: the seat is there; look again later
        times = (
            life.deadline(),
            life.reminder_due(lc.time_control),
            lc.join_window if not life.started else None,
        )
        others = [t for t in times if t is not None]
        due = min([now + lc.disconnect_grace, *[t for t in others if t > now]])
    return max(due, now)


def _aborted(step: table.Step, abort: MatchAborted) -> Due:
    record = records.RecordStep(version=0, time=0.0, cause=records.StepCause.SERVER, abort=abort)
    return step, record, MatchStatus.ABORTED


def _timed_out(step: table.Step, cause: records.StepCause) -> records.RecordStep:
    timed = step.entries[0]
    assert isinstance(timed, TurnTimedOut)
    if timed.action is None:
        forfeit = next((e for e in step.entries if isinstance(e, MatchForfeited)), None)
        if forfeit is None:  # no move: the seat's flor was lost and the decision passed on
            return records.RecordStep(version=0, time=0.0, seat=timed.seat, cause=cause, timeout=timed)
        return records.RecordStep(version=0, time=0.0, seat=timed.seat, cause=cause, forfeit=forfeit)
    return records.RecordStep(version=0, time=0.0, seat=timed.seat, cause=cause, action=timed.action)
