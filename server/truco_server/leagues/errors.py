"""Typed errors of the tournament library.

Every error is a :class:`LeagueError` (a ``ValueError``) that names the offending ``field``
(a dotted path such as ``entrants[3].members`` or ``format``) and a message saying what is
allowed. The league service maps them to its wire errors (INVALID_ARGUMENT or
FAILED_PRECONDITION); nothing here imports a transport.
"""

from __future__ import annotations


class LeagueError(ValueError):
    """Base class. ``field`` names what was wrong, ``message`` says what is allowed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class UnknownFormatError(LeagueError):
    """The format name is not one of :class:`~truco_server.leagues.formats.FormatKind`."""


class InvalidOptionError(LeagueError):
    """A format, scoring, duplicate or rating option is out of its allowed range."""


class TooFewEntrantsError(LeagueError):
    """Fewer entrants than the format needs (or more than the library accepts)."""


class InvalidEntrantError(LeagueError):
    """An entrant's id, seed, rating or members are malformed."""


class EntrantShapeError(InvalidEntrantError):
    """Team entries for a one-a-side rule set, single entrants for a team rule set, or a
    team of the wrong size."""


class DuplicateEntrantError(InvalidEntrantError):
    """Two entrants share an id or a seed, or one player is a member of two entrants."""


class UnknownEntrantError(LeagueError):
    """A result, withdrawal or table names an entrant that is not registered."""


class RegistrationClosedError(LeagueError):
    """Registering after the start where the format forbids it (or after its cut-off)."""


class CheckInClosedError(RegistrationClosedError):
    """Checking in outside the league's check-in window (not open yet, or closed at the start)."""


class InvalidResultError(LeagueError):
    """A result that does not fit the pairings: unknown table, wrong players, a winner who
    did not play, a draw where the format needs a winner, a round given twice."""


class RoundOrderError(LeagueError):
    """Pairings asked for a round that cannot be paired yet (an earlier round is incomplete)
    or that does not exist (the event is over)."""


class NoValidPairingError(LeagueError):
    """No pairing without a rematch exists for this round; the event should end here."""


class InvalidScoresError(LeagueError):
    """Duplicate-deal or board input that does not fit its tables (unknown table, a deal
    scored twice, negative points, a board whose tables do not share its deal)."""
