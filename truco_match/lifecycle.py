"""A match's life outside the rules: who has joined, the turn clock, the client seeds.

Times are whole milliseconds since the match was created (``now``): the functions here are
pure, the service passes the time in, and a record replays with the times it holds.

The clock (``TimeControl``): each decision of the awaited seat has an allowance
(``per_decision``, or ``first_decision`` for the first decision of a hand, plus any time the
creator added), then draws on the seat's bank; ``increment`` is added to the bank after each
of its decisions. The clock runs for one decision at a time, identified by the engine's
decision counter, so a late expiry never applies to a decision already made. Allowances and
banks go up to fourteen days (correspondence play); ``remind_before`` makes the server remind
the awaited seat once per decision that long before its time runs out (``turn_reminder``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

MAX_DURATION_MS = 24 * 3600 * 1000
"""Longest window or timeout a match may set, and the longest increment (one day)."""
MAX_DECISION_MS = 14 * MAX_DURATION_MS
"""Longest allowance, bank or reminder of a turn clock (fourteen days: a correspondence
match gives hours or days per decision)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeControl:
    """A turn clock (``truco.v1.TimeControl``); every duration in milliseconds."""

    per_decision: int = 0
    bank: int = 0
    increment: int = 0
    first_decision: int = 0
    forfeit_after: int = 0
    """Expiries of one seat after which its side loses; 0: never."""
    remind_before: int = 0
    """Remind the awaited seat this long before its decision's time runs out (a
    ``turn_reminder`` event, once per decision); 0: never."""

    def problems(self) -> list[tuple[str, str]]:
        """(field, what is wrong) for an invalid clock; empty when valid."""
        out = []
        for name in ("per_decision", "bank", "increment", "first_decision", "remind_before"):
            value = getattr(self, name)
            most = MAX_DURATION_MS if name == "increment" else MAX_DECISION_MS
            if not 0 <= value <= most:
                out.append((name, f"between 0 and {most // 1000} seconds"))
            elif 0 < value < 1000 and name != "increment":
                out.append((name, "at least 1 second (or unset)"))
        if not self.per_decision and not self.bank:
            out.append(("per_decision", "a clock needs per_decision or bank"))
        elif (
            self.remind_before
            and self.remind_before >= max(self.per_decision, self.first_decision) + self.bank
        ):
            out.append(("remind_before", "less than a decision's time (per_decision plus bank)"))
        if not 0 <= self.forfeit_after <= 1000:
            out.append(("forfeit_after", "between 0 and 1000"))
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Lifecycle:
    """The lifecycle settings of one match, fixed at creation."""

    time_control: TimeControl | None = None
    join_window: int = 0
    """Every seat must join within this long, or the match is aborted; 0: no joining."""
    idle_timeout: int = 0
    """Nothing happening for this long aborts the match (never with a clock); 0: never."""
    disconnect_grace: int = 0
    """The awaited seat away this long gets its default move; 0: never."""
    spectator_delay: int = 0
    """Spectators see the match this many actions late."""
    show_hands: bool = False
    """Spectators see every seat's cards once a hand is over."""
    credential_ttl: int = 0
    """A match credential is valid this long after it was issued; 0: as long as the match is
    kept."""
    takeover: bool = False
    """The awaited seat away for ``disconnect_grace`` is taken over by the server's bot (at
    ``takeover_level``), which plays it until the seat's credential acts again; otherwise it
    gets its default move, an expiry toward the clock's ``forfeit_after``."""
    takeover_level: int = 0
    """The level (1 to 6) of the bot that takes a seat over."""
    bot_think: int = 0
    """How long the server's bots think over a decision, on average (ms; set at creation,
    the server's default unless the creator chose)."""

    def to_dict(self) -> dict[str, Any]:
        """The settings that are set (a clock without a reminder stores as it always did)."""
        out: dict[str, Any] = {}
        for name in _LIFECYCLE_FIELDS:
            value = getattr(self, name)
            if not value:
                continue
            if name == "time_control":
                clock = value
                value = {n: getattr(clock, n) for n in _CLOCK_FIELDS}
                if not clock.remind_before:
                    del value["remind_before"]
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Lifecycle:
        tc = d.get("time_control")
        return cls(**{**d, "time_control": None if tc is None else TimeControl(**tc)})


@dataclass(slots=True, kw_only=True)
class Life:
    """The lifecycle state of one match (changes with every step; stored with the game state)."""

    joined: list[bool]
    """Per seat: has joined (always true without a join window)."""
    client_seeds: list[tuple[int | None, str]] = field(default_factory=list)
    """(seat or ``None`` for the creator, hex seed), in the order given."""
    started: bool = False
    """The first hand has been dealt."""
    bank: list[int] = field(default_factory=list)
    """Per seat: the clock's bank, ms (empty without a bank)."""
    expiries: list[int] = field(default_factory=list)
    """Per seat: expiries so far."""
    decision: int = -1
    """The engine decision awaited (its counter, ``MatchState.actions``; -1: none)."""
    awaited: int | None = None
    """The seat whose decision that is."""
    since: int = 0
    """When that decision started (ms since creation)."""
    timed: bool = False
    """The clock runs for that decision."""
    allowance: int = 0
    """Time that decision has before the bank is used (ms)."""
    last_activity: int = 0
    """Time of the last step (ms since creation)."""
    credentials: list[list[int]] = field(default_factory=list)
    """Per viewer (the seats, then the spectators last): ``[generation, issued at]`` of its
    current credential (ms since creation); empty until the first re-issue (every viewer at
    generation 0, issued at creation)."""
    reminded: int = -1
    """The decision (its counter) whose seat was last reminded (``turn_reminder``); -1: none."""
    takeovers: list[int] = field(default_factory=list)
    """Per seat: the level of the bot that has taken it over (0: none); empty until the first
    takeover."""

    def credential(self, viewer: int) -> tuple[int, int]:
        """``(generation, issued at)`` of the current credential of ``viewer`` (a seat, or a
        negative number for the spectators)."""
        if not self.credentials:
            return 0, 0
        gen, at = self.credentials[viewer if viewer >= 0 else len(self.joined)]
        return gen, at

    def copy(self) -> Life:
        return Life(
            joined=list(self.joined),
            client_seeds=list(self.client_seeds),
            started=self.started,
            bank=list(self.bank),
            expiries=list(self.expiries),
            decision=self.decision,
            awaited=self.awaited,
            since=self.since,
            timed=self.timed,
            allowance=self.allowance,
            last_activity=self.last_activity,
            credentials=[list(c) for c in self.credentials],
            reminded=self.reminded,
            takeovers=list(self.takeovers),
        )

    def taken_over(self, seat: int) -> int:
        """The level of the bot that has taken ``seat`` over; 0: none."""
        return self.takeovers[seat] if self.takeovers else 0

    def to_dict(self) -> dict[str, Any]:
        d = {name: getattr(self, name) for name in _LIFE_FIELDS}
        d["client_seeds"] = [list(c) for c in self.client_seeds]
        if not self.takeovers:
            del d["takeovers"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Life:
        return cls(**{**d, "client_seeds": [(s, h) for s, h in d.get("client_seeds", [])]})

    # ------------------------------------------------------------------- the clock
    def deadline(self) -> int | None:
        """When the timed decision's time runs out (ms since creation), or ``None``."""
        if not self.timed or self.awaited is None:
            return None
        bank = self.bank[self.awaited] if self.bank else 0
        return self.since + self.allowance + bank

    def reminder_due(self, tc: TimeControl | None) -> int | None:
        """When the timed decision's seat is to be reminded (ms since creation), or ``None``
        (no reminder set, none timed, or reminded already)."""
        end = self.deadline()
        if tc is None or not tc.remind_before or end is None or self.reminded == self.decision:
            return None
        return max(self.since, end - tc.remind_before)

    def remaining(self, now: int) -> int | None:
        """Milliseconds the timed decision has left at ``now``."""
        end = self.deadline()
        return None if end is None else max(0, end - now)

    def used(self, now: int) -> int:
        """Milliseconds the awaited decision has run for at ``now``."""
        return max(0, now - self.since) if self.awaited is not None else 0

    def stop(self, tc: TimeControl | None, now: int, by: int | None = None) -> int:
        """The awaited decision is over at ``now``, ended by seat ``by`` (``None``: by the
        server). When timed, the awaited seat's bank pays for the time over its allowance;
        the increment is added only when that seat made the decision itself (not when another
        seat's call out of turn interrupted it). Returns the milliseconds the clock of ``by``
        ran (0 when not timed or when ``by`` was not the awaited seat)."""
        seat, timed = self.awaited, self.timed
        self.awaited, self.decision, self.timed = None, -1, False
        if seat is None or not timed or tc is None:
            return 0
        ran = max(0, now - self.since)
        if self.bank:
            over = max(0, ran - self.allowance)
            self.bank[seat] = max(0, self.bank[seat] - over) + (tc.increment if by == seat else 0)
        return ran if by == seat else 0

    def wait_for(
        self, tc: TimeControl | None, seat: int, decision: int, now: int, first_of_hand: bool
    ) -> None:
        """Await ``seat``'s ``decision`` from ``now`` (timed when there is a clock)."""
        self.awaited, self.decision, self.since = seat, decision, now
        self.timed = tc is not None
        if tc is not None:
            self.allowance = tc.first_decision if first_of_hand and tc.first_decision else tc.per_decision


_CLOCK_FIELDS = tuple(f.name for f in dataclasses.fields(TimeControl))
_LIFECYCLE_FIELDS = tuple(f.name for f in dataclasses.fields(Lifecycle))
_LIFE_FIELDS = tuple(f.name for f in dataclasses.fields(Life))
