"""A match's complete record: its setup and every step, enough to replay it exactly.

Each commit of a match appends one :class:`RecordStep` (an action, a join, an operator's
step, the server's abort); the rules, the seats, the lifecycle settings and the fairness come
from the match itself. Replaying the steps through :mod:`truco_match.table` rebuilds every
state, every event and every version (:func:`replay`), which is what ``truco replay`` and
``truco verify`` do with an exported record (``truco.v1.MatchRecord`` as JSON).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import truco_engine as te
from truco_engine._fast import fast_init
from truco_match import table
from truco_match.events import (
    CredentialReissued,
    DealSource,
    LogEntry,
    MatchAborted,
    MatchAdjudicated,
    MatchCancelled,
    MatchForfeited,
    MatchRevealed,
    SeatJoined,
    SeatTakenOver,
    TimeAdded,
    TimeoutCause,
    TurnReminder,
    TurnTimedOut,
)
from truco_match.lifecycle import Life
from truco_match.matches import MatchInfo

FORMAT = "truco-match-record/1"


class StepCause(StrEnum):
    """Who or what made a step."""

    PLAYER = "player"
    """The seat (or, for an operator's step, the creator)."""
    CLOCK = "clock"
    DISCONNECTED = "disconnected"
    SERVER = "server"
    """The join window or the idle timeout passed."""
    BOT = "bot"
    """The server's bot playing the seat (a bot seat, or a seat it took over)."""


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class RecordStep:
    """One step of a match (``truco.v1.RecordStep``); exactly one of the step fields is set."""

    version: int
    """Match version after the step."""
    time: float
    """Server time of the step (seconds since the epoch)."""
    seat: int | None = None
    cause: StepCause = StepCause.PLAYER
    clock_ms: int = 0
    action: te.Action | None = None
    join: SeatJoined | None = None
    add_time: TimeAdded | None = None
    adjudicate: MatchAdjudicated | None = None
    cancel: MatchCancelled | None = None
    abort: MatchAborted | None = None
    forfeit: MatchForfeited | None = None
    reissue_credential: CredentialReissued | None = None
    timeout: TurnTimedOut | None = None
    """A timeout that made no move: the seat's flor, which it had to sing, was lost and the
    decision passed to another seat (:mod:`truco_match.timeout`)."""
    remind: TurnReminder | None = None
    take_over: SeatTakenOver | None = None


# ------------------------------------------------------------------ compact storage
_CAUSES = list(StepCause)
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def pack_step(step: RecordStep, created_at: float) -> bytes:
    """The stored form of a step (a short JSON array; time in ms since the creation)."""
    return pack_stamped(step, step.version, step.time, step.clock_ms, created_at)


def pack_stamped(step: RecordStep, version: int, time: float, clock_ms: int, created_at: float) -> bytes:
    """:func:`pack_step` of ``step`` with the version, time and clock its commit gives it
    (what the commit knows only once it has decided the step)."""
    ms = round((time - created_at) * 1000)
    cause = _CAUSES.index(step.cause)
    action = step.action
    if action is not None and action.kind != table.RESIGN:  # nearly every step: written directly
        text = action.text()
        if text.isprintable() and '"' not in text and "\\" not in text:  # nothing JSON escapes
            seat = "null" if step.seat is None else step.seat
            return f'[{version},{ms},{seat},{cause},{clock_ms},"a","{text}"]'.encode()
    body: list[Any]
    if action is not None and action.kind == table.RESIGN:
        body = ["r"]
    elif action is not None:
        body = ["a", action.text()]
    elif step.join is not None:
        body = ["j", step.join.seat, step.join.client_seed.hex()]
    elif step.add_time is not None:
        body = ["t", step.add_time.seat, step.add_time.added]
    elif step.adjudicate is not None:
        body = ["w", step.adjudicate.winner_team, step.adjudicate.reason]
    elif step.cancel is not None:
        body = ["c", step.cancel.reason]
    elif step.abort is not None:
        body = ["x", step.abort.reason, list(step.abort.seats)]
    elif step.forfeit is not None:
        body = ["f", step.forfeit.seat, step.forfeit.team, step.forfeit.expiries]
    elif step.reissue_credential is not None:
        body = ["k", step.reissue_credential.seat]
    elif step.timeout is not None:
        body = ["o", step.timeout.expiries]
    elif step.remind is not None:
        body = ["m", step.remind.seat, step.remind.remaining]
    elif step.take_over is not None:
        body = ["b", step.take_over.seat, step.take_over.bot_level]
    else:
        raise ValueError("a record step needs a step")
    head = [version, ms, step.seat, cause, clock_ms]
    return _COMPACT.encode(head + body).encode()


def unpack_step(raw: bytes, created_at: float) -> RecordStep:
    """Inverse of :func:`pack_step`."""
    version, ms, seat, cause, clock_ms, kind, *rest = json.loads(raw)
    common: dict[str, Any] = {
        "version": version,
        "time": created_at + ms / 1000,
        "seat": seat,
        "cause": _CAUSES[cause],
        "clock_ms": clock_ms,
    }
    if kind == "a":
        common["action"] = te.parse_action(rest[0])
    elif kind == "r":
        common["action"] = te.Action(table.RESIGN)
    elif kind == "j":
        common["join"] = SeatJoined(seat=rest[0], client_seed=bytes.fromhex(rest[1]))
    elif kind == "t":
        common["add_time"] = TimeAdded(seat=rest[0], added=rest[1])
    elif kind == "w":
        common["adjudicate"] = MatchAdjudicated(winner_team=rest[0], reason=rest[1])
    elif kind == "c":
        common["cancel"] = MatchCancelled(reason=rest[0])
    elif kind == "x":
        common["abort"] = MatchAborted(reason=rest[0], seats=tuple(rest[1]))
    elif kind == "f":
        common["forfeit"] = MatchForfeited(seat=rest[0], team=rest[1], expiries=rest[2])
    elif kind == "k":
        common["reissue_credential"] = CredentialReissued(seat=rest[0])
    elif kind == "o":
        timed_cause = TimeoutCause.CLOCK if common["cause"] is StepCause.CLOCK else TimeoutCause.DISCONNECTED
        common["timeout"] = TurnTimedOut(seat=seat, cause=timed_cause, action=None, expiries=rest[0])
    elif kind == "m":
        common["remind"] = TurnReminder(seat=rest[0], remaining=rest[1])
    elif kind == "b":
        common["take_over"] = SeatTakenOver(seat=rest[0], bot_level=rest[1])
    else:
        raise ValueError(f"unknown record step kind {kind!r}")
    return RecordStep(**common)


# --------------------------------------------------------------------------- replay
@dataclass(slots=True)
class Replayed:
    """One replayed step: the states after it and the log entries it produced."""

    step: RecordStep
    state: te.MatchState
    life: Life
    entries: list[LogEntry]
    first_version: int
    """Version of the first of ``entries``."""


def apply_step(
    setup: table.Setup, state: te.MatchState, life: Life, step: RecordStep, now: int
) -> table.Step:
    """One recorded step through the table (``now``: ms since the creation)."""
    if step.action is not None and step.cause in (StepCause.PLAYER, StepCause.BOT):
        assert step.seat is not None
        by_server = step.cause is StepCause.BOT
        return table.act(setup, state, life, step.seat, step.action, now, by_server=by_server)
    if step.action is not None or step.forfeit is not None or step.timeout is not None:
        cause = TimeoutCause.CLOCK if step.cause is StepCause.CLOCK else TimeoutCause.DISCONNECTED
        done = table.expire(setup, state, life, cause, now)
        if done is None:
            what = "forfeit" if step.forfeit is not None else "timeout"
            raise te.RecordError(f"version {step.version}: the recorded {what} was not due")
        return done
    if step.join is not None:
        return table.join(setup, state, life, step.join.seat, step.join.client_seed, now)
    if step.add_time is not None:
        return table.add_time(setup, state, life, step.add_time.seat, step.add_time.added)
    if step.adjudicate is not None:
        return table.adjudicate(setup, state, life, step.adjudicate.winner_team, step.adjudicate.reason, now)
    if step.cancel is not None:
        return table.cancel(setup, state, life, step.cancel.reason)
    if step.abort is not None:
        return table.abort(setup, state, life, step.abort.reason)
    if step.reissue_credential is not None:
        return table.reissue(setup, state, life, step.reissue_credential.seat, now)
    if step.remind is not None:
        reminded = table.remind(setup, state, life, now)
        if reminded is None:
            raise te.RecordError(f"version {step.version}: the recorded reminder was not due")
        return reminded
    if step.take_over is not None:
        if not setup.lifecycle.takeover or step.take_over.seat != life.awaited:
            raise te.RecordError(f"version {step.version}: the recorded takeover was not due")
        return table.take_over(setup, state, life, step.take_over.seat)
    raise te.RecordError(f"version {step.version}: an empty step")


def replay(
    setup: table.Setup,
    seats: Sequence[Any],
    steps: Sequence[RecordStep],
    created_at: float,
    creator_seed: bytes = b"",
) -> Iterator[Replayed]:
    """Every step of a match again, from its creation (yielded first, with ``step`` set to a
    placeholder of version 0). Raises :class:`truco_engine.RecordError` naming the first step
    that does not reproduce its recorded version."""
    first = table.start(setup, seats, creator_seed, 0)
    version = len(first.entries)
    creation = RecordStep(version=version, time=created_at, cause=StepCause.SERVER)
    yield Replayed(creation, first.state, first.life, first.entries, 1)
    state, life = first.state, first.life
    for step in steps:
        now = round((step.time - created_at) * 1000)
        try:
            done = apply_step(setup, state, life, step, now)
        except te.TrucoError as exc:
            raise te.RecordError(f"version {step.version}: {exc}") from exc
        start = version + 1
        version += len(done.entries)
        if version != step.version:
            raise te.RecordError(f"step recorded at version {step.version} replays to version {version}")
        yield Replayed(step, done.state, done.life, done.entries, start)
        state, life = done.state, done.life


def step_to_dict(step: RecordStep) -> dict[str, Any]:
    """A step as plain values (for logs and tests)."""
    return {
        f.name: getattr(step, f.name) for f in dataclasses.fields(step) if getattr(step, f.name) is not None
    }


# --------------------------------------------------------------------------- records
@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedHand:
    """A hand of a record: who dealt and the commitment published when it started."""

    hand_number: int
    game_number: int
    dealer: int
    deck_commitment: str
    version: int
    """Version of its ``hand_started`` event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchRecord:
    """A match's record as a viewer may see it (``truco.v1.MatchRecord``)."""

    match: MatchInfo
    hands: tuple[RecordedHand, ...]
    steps: tuple[RecordStep, ...]
    reveal: MatchRevealed | None = None
    """The seed and every deal: present once the match is over."""
    format: str = FORMAT


def setup_of(record: MatchRecord) -> table.Setup:
    """The setup a finished record replays with (the seed and the creator's decks come from
    its reveal)."""
    if record.reveal is None:
        raise te.RecordError("the record of a match that is not over has no seed: it cannot be replayed")
    m = record.match
    fairness = m.fairness
    decks = tuple(d.cards for d in record.reveal.deals if d.operator_deck)
    return table.Setup(
        rules=m.rules,
        seed=record.reveal.seed,
        deck_orders=decks,
        source=fairness.deal_source if fairness is not None else DealSource.SERVER_SEED,
        lifecycle=m.lifecycle,
        bots=table.bots_of(m.seats),
    )


def creator_seed_of(record: MatchRecord) -> bytes:
    """The creator's client seed, if it gave one."""
    fairness = record.match.fairness
    if fairness is None:
        return b""
    return next((c.seed for c in fairness.client_seeds if c.seat is None), b"")


def hidden_for(step: RecordStep, viewer: int | None) -> RecordStep:
    """``step`` as ``viewer`` (``None``: a spectator) may see it while the match is on: a card
    played face down or discarded by another seat is not shown."""
    a = step.action
    if a is None or step.seat == viewer or not (a.kind == "discard" or (a.kind == "play" and a.face_down)):
        return step
    return dataclasses.replace(step, action=te.Action(a.kind, None, face_down=a.face_down))


def hands_of(entries: Sequence[LogEntry], first_version: int) -> list[RecordedHand]:
    """The hands that start among ``entries`` (the first of them at ``first_version``)."""
    out = []
    for v, e in enumerate(entries, first_version):
        if isinstance(e, te.Event) and isinstance(e.payload, te.HandStarted):
            p = e.payload
            out.append(
                RecordedHand(
                    hand_number=p.hand_number,
                    game_number=p.game_number,
                    dealer=p.dealer,
                    deck_commitment=p.deck_commitment,
                    version=v,
                )
            )
    return out


def replay_record(record: MatchRecord) -> Iterator[Replayed]:
    """:func:`replay` of a finished record: its setup (:func:`setup_of`), seats, steps,
    creation time and the creator's seed (what ``truco replay`` and ``truco verify`` run).
    A record from a file may be anything: a step that cannot even be applied (a seat out of
    range, an action without its seat) is a :class:`truco_engine.RecordError` too."""
    m = record.match
    done = 0
    try:
        for point in replay(setup_of(record), m.seats, record.steps, m.created_at, creator_seed_of(record)):
            yield point
            done += 1
    except te.RecordError:
        raise
    except (AssertionError, LookupError, TypeError, ValueError) as exc:
        step = record.steps[done - 1] if 0 < done <= len(record.steps) else None
        where = f"version {step.version}: " if step is not None else ""
        raise te.RecordError(f"{where}the step cannot be applied ({exc or type(exc).__name__})") from exc
