"""A check-in window before a league's start time.

With a check-in of ``window`` seconds, entrants check in from ``start_time - window`` until
``start_time``; at the start, those who did not are withdrawn (kept, marked
:data:`NO_CHECK_IN`: they are never paired). Pure: every answer is a function of the times
and the ids passed in.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from truco_server.leagues.errors import CheckInClosedError, InvalidOptionError

NO_CHECK_IN = "no_check_in"
"""Why an entrant was withdrawn at the start: it did not check in."""
MAX_CHECK_IN = 7 * 24 * 3600.0
"""The longest check-in window (seconds)."""


@dataclass(frozen=True)
class CheckInWindow:
    """The check-in window of a league that starts at ``start_time``."""

    start_time: float
    """When the league starts (seconds since the epoch); the window closes then."""
    window: float
    """Seconds before ``start_time`` the window opens."""

    def __post_init__(self) -> None:
        if not self.start_time:
            raise InvalidOptionError("schedule.check_in", "a check-in window needs a start_time")
        if not 0 < self.window <= MAX_CHECK_IN:
            raise InvalidOptionError("schedule.check_in", f"from more than 0 to 7 days; got {self.window}s")

    @property
    def opens_at(self) -> float:
        return self.start_time - self.window

    def is_open(self, now: float) -> bool:
        return self.opens_at <= now < self.start_time

    def check(self, now: float) -> None:
        """:class:`CheckInClosedError` unless the window is open at ``now``, saying when it
        opens or that it closed."""
        if now < self.opens_at:
            raise CheckInClosedError(
                "check_in",
                f"check-in opens {self.opens_at - now:.0f}s from now ({self.window:.0f}s before the start)",
            )
        if now >= self.start_time:
            raise CheckInClosedError("check_in", "check-in closed at the league's start")


def not_checked_in(entrants: Iterable[str], checked_in: Collection[str]) -> tuple[str, ...]:
    """The entrants (in the order given) who did not check in: withdrawn at the start."""
    return tuple(e for e in entrants if e not in checked_in)


__all__ = ["MAX_CHECK_IN", "NO_CHECK_IN", "CheckInWindow", "not_checked_in"]
