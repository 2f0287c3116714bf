"""What a finished match of a league table gives the league: who won, whether it was a
forfeit, the final points and the points of each deal (for duplicate comparisons).

Read from the match's record (every step replayed through the same table code the server
ran), so a league result is derived from exactly what was played.
"""

from __future__ import annotations

from dataclasses import dataclass

import truco_engine as te
from truco_match import records
from truco_match.events import MatchAborted, MatchAdjudicated, MatchForfeited, MatchStatus

PLAYED, ADJUDICATED, TIME_FORFEIT, NO_SHOW, UNDECIDED = (
    "played",
    "adjudicated",
    "time_forfeit",
    "no_show",
    "undecided",
)
"""How a table's match ended (what a league's rating policy counts): played to its end (or
resigned), decided by the operator (an adjudication, or a result corrected after the end),
lost on time, a side (or both: no winner) that did not join, nobody won otherwise."""
ENDINGS = (PLAYED, ADJUDICATED, TIME_FORFEIT, NO_SHOW)
"""The endings a rating policy may count (an undecided match is never rated)."""


@dataclass(frozen=True, slots=True)
class TableOutcome:
    winner_side: int | None
    """The direction (team) that won; ``None``: nobody (both sides absent, cancelled)."""
    forfeit: bool
    """The match was not played to its end: a no-show, or a forfeit on time."""
    points: tuple[int, int]
    deals: tuple[tuple[int, int], ...]
    """Points directions 0 and 1 made on each hand, in order (index = deal)."""
    ending: str = PLAYED
    """How it ended (:data:`ENDINGS`, or :data:`UNDECIDED`)."""


def outcome_of(record: records.MatchRecord) -> TableOutcome:
    """The outcome of a match that is over (finished, aborted or cancelled)."""
    info = record.match
    deals: list[tuple[int, int]] = []
    scores = [0, 0]
    aborted: MatchAborted | None = None
    forfeited = adjudicated = False
    for point in records.replay_record(record):
        for entry in point.entries:
            if isinstance(entry, MatchAborted):
                aborted = entry
            elif isinstance(entry, MatchForfeited):
                forfeited = True
            elif isinstance(entry, MatchAdjudicated):
                adjudicated = True
            elif isinstance(entry, te.Event):
                p = entry.payload
                if isinstance(p, te.HandStarted):
                    deals.append((0, 0))
                elif isinstance(p, te.ScoreChanged) and deals:
                    new = [int(x) for x in p.scores[:2]]
                    # a new game starts from 0: what was scored is then the new score
                    gained = [n - o if n >= o else n for n, o in zip(new, scores, strict=True)]
                    last = deals[-1]
                    deals[-1] = (last[0] + gained[0], last[1] + gained[1])
                    scores = new
    if info.state is MatchStatus.FINISHED and info.result is not None:
        final = tuple(int(x) for x in info.result.scores[:2])
        points = (final[0], final[1]) if len(final) == 2 else (scores[0], scores[1])
        ending = TIME_FORFEIT if forfeited else ADJUDICATED if adjudicated else PLAYED
        return TableOutcome(info.result.winner_team, forfeited, points, tuple(deals), ending)
    if aborted is not None and aborted.reason == "not_joined" and aborted.seats:
        absent = {s % 2 for s in aborted.seats}  # a seat's team: seats alternate 0, 1, 0, 1...
        winner = None if len(absent) == 2 else 1 - absent.pop()
        return TableOutcome(
            winner, True, (scores[0], scores[1]), tuple(deals), NO_SHOW
        )  # both absent: no winner
    return TableOutcome(None, True, (scores[0], scores[1]), tuple(deals), UNDECIDED)
