"""What one viewer sees of a match at one version (the payload of every observation on the
wire): the engine's observation, the version, the match's lifecycle state, its turn clock,
who has still to join and which seats a bot has taken over."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import truco_engine as te
from truco_engine._fast import fast_init
from truco_match.events import MatchStatus
from truco_match.lifecycle import Life

_V = TypeVar("_V")


def _made(make: Callable[..., _V], fields: dict[str, Any]) -> _V:
    """A view made again from its fields: how a view is unpickled (a bot's decision is made in
    a process of its own). By its constructor, not by setting its fields one by one, which a
    frozen class compiled by mypyc refuses (docs/engine.md, "Compiled build")."""
    return make(**fields)


def _reduced(view: Any) -> tuple[Any, ...]:
    return (_made, (type(view), {f.name: getattr(view, f.name) for f in dataclasses.fields(view)}))


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockView:
    """The turn clock at one moment (``truco.v1.Clock``). Equality ignores when it was read."""

    seat: int | None
    """The seat being timed, if any."""
    deadline: float | None
    """When its time runs out (seconds since the epoch)."""
    remaining_ms: int = field(compare=False)
    server_time: float = field(compare=False)
    bank_ms: tuple[int, ...] = ()
    expiries: tuple[int, ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduced(self)


def clock_view(life: Life, created_at: float, now: float) -> ClockView | None:
    """The clock of a match (``None`` when it has none) read at ``now`` (epoch seconds)."""
    if not life.expiries:  # no time control
        return None
    end = life.deadline()
    at = round((now - created_at) * 1000)
    return ClockView(
        seat=life.awaited if end is not None else None,
        deadline=None if end is None else created_at + end / 1000,
        remaining_ms=0 if end is None else max(0, end - at),
        server_time=now,
        bank_ms=tuple(life.bank),
        expiries=tuple(life.expiries),
    )


@dataclass(frozen=True, slots=True)
class SeatView:
    """A seat's (or a spectator's) observation at ``version``."""

    observation: te.Observation
    version: int
    match_state: MatchStatus
    clock: ClockView | None = None
    not_joined: tuple[int, ...] = ()
    """Seats that have not joined yet (the first hand waits for them)."""
    joined: bool = True
    """The viewer has joined (a spectator always has)."""
    taken_over: tuple[int, ...] = ()
    """Seats the server's bot has taken over (their players were away) and plays until their
    players act again."""

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduced(self)


fast_init(SeatView)  # a call: mypyc compiles a class it decorates as a Python class


def view(
    state: te.MatchState,
    seat: int | None,
    version: int,
    match_state: MatchStatus,
    life: Life | None = None,
    created_at: float = 0.0,
    now: float = 0.0,
) -> SeatView:
    """What ``seat`` (``None``: a spectator) sees of ``state`` at ``version``. A match that
    is no longer active awaits nobody and offers no action; nor does one still waiting for its
    seats to join."""
    obs = te.observe(state, seat)
    if match_state is not MatchStatus.ACTIVE and (obs.legal_actions or obs.awaited):
        obs = dataclasses.replace(obs, legal_actions=(), awaited=())
    if life is None:
        return SeatView(obs, version, match_state)
    clock = clock_view(life, created_at, now) if match_state is MatchStatus.ACTIVE else None
    missing = tuple(i for i, j in enumerate(life.joined) if not j)
    joined = True if seat is None else life.joined[seat]
    held = tuple(i for i, level in enumerate(life.takeovers) if level)
    return SeatView(obs, version, match_state, clock, missing, joined, held)
