"""Best-of-N series in the league job: a series pairing's games are its tables, one after
the other.

The job collects a game's match like any other table; when every table of a series
pairing is done, :func:`advance_series` asks the library
(:meth:`~truco_server.leagues.Event.series_result`) whether the series is decided: then the
pairing gets its result, otherwise the next game's table is added to the pairing (seats
swapped), in the same compare-and-set write, and the job's next step creates its match as
it creates a round's -- once, whichever worker does it.

A series is rated once, as one match between its two sides (:func:`series_rating`), under
the league's rating policy, when its result is recorded (and again when it is corrected).
"""

from __future__ import annotations

from truco_server.leagues import RatedMatch, SeriesGame, ranks_from_winner, series_score
from truco_server.services.leagues.documents import LeagueDoc, PairingDoc, TableDoc, result_dict
from truco_server.services.leagues.outcomes import ADJUDICATED, ENDINGS, NO_SHOW, PLAYED, UNDECIDED


def is_series(doc: LeagueDoc, p: PairingDoc) -> bool:
    return doc.series_best_of > 1 and p.second is not None


def series_games(doc: LeagueDoc, p: PairingDoc) -> list[SeriesGame]:
    """The finished games of a series pairing, from the pairing's sides."""
    games = []
    for key in p.tables:
        t = doc.tables[key]
        if not t.done:
            continue
        winner = None if t.winner_side is None else t.sides[t.winner_side]
        mine, theirs = t.points[0], t.points[1]
        if t.sides[0] != p.first:
            mine, theirs = theirs, mine
        games.append(SeriesGame(winner, mine, theirs, t.forfeit))
    return games


def series_wins(doc: LeagueDoc, p: PairingDoc) -> tuple[int, int]:
    """Games won so far by ``p.first`` and ``p.second`` (0, 0 without a series)."""
    if not is_series(doc, p):
        return 0, 0
    return series_score(p.pairing(), series_games(doc, p))


def advance_series(doc: LeagueDoc, p: PairingDoc) -> None:
    """A series pairing whose tables are all done: record its result when it is decided,
    else add the table of its next game (the job creates its match)."""
    event = doc.event(min_entrants=False)
    pairing = p.pairing()
    result = event.series_result(pairing, series_games(doc, p))
    if result is not None:
        p.result = result_dict(result)
        return
    table = event.series_table(pairing, len(p.tables) + 1)
    doc.tables[table.key] = TableDoc(table.key, table.deal_set, list(table.sides))
    p.tables.append(table.key)


def series_ending(doc: LeagueDoc, p: PairingDoc) -> str:
    """How a decided series ended, for the rating policy: the furthest from a played match
    among its games' endings (``outcomes.ENDINGS`` order: a series with a game lost on time
    is a ``time_forfeit`` series); a corrected series is ``adjudicated`` (``no_show`` when
    corrected to a forfeit)."""
    if p.corrections:
        return NO_SHOW if p.result and p.result["forfeit"] else ADJUDICATED
    endings = [_ending(doc.tables[k]) for k in p.tables]
    decided = [e for e in endings if e in ENDINGS]
    return max(decided, key=ENDINGS.index) if decided else UNDECIDED


def _ending(t: TableDoc) -> str:
    return t.ending or (NO_SHOW if t.forfeit else PLAYED)


def series_rating(doc: LeagueDoc, p: PairingDoc, players: dict[str, list[str]]) -> RatedMatch | None:
    """The series as one rated match (keyed by its first game's match id), or ``None`` when
    the policy does not rate it (a draw, an ending it does not count)."""
    assert p.result is not None and p.second is not None
    winner = p.result["winner"]
    counted = doc.rating["rated"] and winner is not None and series_ending(doc, p) in doc.rating["count"]
    if not counted:
        return None
    sides = (tuple(players[p.first]), tuple(players[p.second]))
    match_id = doc.tables[p.tables[0]].match_id
    return RatedMatch(match_id, doc.family, sides, ranks_from_winner(sides, 0 if winner == p.first else 1))


__all__ = ["advance_series", "is_series", "series_ending", "series_games", "series_rating", "series_wins"]
