"""The operator's manual control of a league: forbidden pairs, its own pairings and byes of
a round, result corrections, the rating policy; the start and its check-in.

Each is a change of the league document (checked here, then written by the service's
compare-and-set), so it is recorded once, whichever worker takes the call, and the league
job acts on it: the next round is paired with the forbidden pairs and the operator's
decisions; a corrected table is rated again under the policy (``TableDoc.rated`` cleared).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from truco_server.core import errors as E
from truco_server.leagues import (
    MIN_ENTRANTS,
    NO_CHECK_IN,
    NO_OVERRIDES,
    CheckInWindow,
    InvalidResultError,
    LeagueError,
    RoundOverrides,
    TooFewEntrantsError,
    check_fixed_schedule,
    not_checked_in,
    parse_format,
)
from truco_server.leagues.results import check_result
from truco_server.services.leagues.documents import (
    DEFAULT_COUNTED,
    EntrantDoc,
    LeagueDoc,
    PairingDoc,
    State,
    result_dict,
    result_of,
)
from truco_server.services.leagues.errors import LeagueNotFound, LeagueStateError, invalid, league_error
from truco_server.services.leagues.outcomes import ADJUDICATED, ENDINGS, NO_SHOW

MAX_FORBIDDEN = 1_000
"""Most forbidden pairs a league keeps."""
MAX_REASON = 500
"""Longest reason of a correction."""


def rating_policy(unrated: bool, count: Sequence[str]) -> dict[str, Any]:
    """A league's rating policy from CreateLeague's fields (INVALID_ARGUMENT naming the one
    that is wrong)."""
    for i, name in enumerate(count):
        if name not in ENDINGS:
            raise invalid(
                f"rating_policy.count[{i}]", f"unknown ending {name!r}; allowed: {', '.join(ENDINGS)}"
            )
    counted = set(count or DEFAULT_COUNTED)
    return {"rated": not unrated, "count": [e for e in ENDINGS if e in counted]}  # in ENDINGS' order


MAX_ROUND_INTERVAL = 7 * 24 * 3600.0
"""Longest pause between rounds (seconds)."""


def round_interval(seconds: float) -> float:
    """A league's round interval from CreateLeague (INVALID_ARGUMENT when out of range)."""
    if not 0 <= seconds <= MAX_ROUND_INTERVAL:
        raise invalid("schedule.round_interval", "from 0 to 7 days")
    return seconds


def check_in_window(start_time: float, seconds: float) -> float:
    """A league's check-in window from CreateLeague (INVALID_ARGUMENT when it has no start
    time or is out of range); 0: none."""
    if seconds:
        try:
            CheckInWindow(start_time, seconds)
        except LeagueError as exc:
            raise league_error(exc) from exc
    return seconds


def check_in(doc: LeagueDoc, entrant_id: str, now: float, bot_id: str = "") -> EntrantDoc:
    """Check ``entrant_id`` in (``bot_id``: the bot account asking, which must play for it)."""
    e = doc.entrant(entrant_id)
    if e is None:
        raise LeagueNotFound(f"no entrant {entrant_id[:64]!r} in this league")
    if bot_id and bot_id not in e.players:
        raise E.PermissionDenied(f"bot {bot_id!r} does not play for entrant {entrant_id[:64]!r}")
    window = doc.check_in_window()
    if window is None:
        raise LeagueStateError("this league has no check-in window (schedule.check_in)")
    if doc.state != State.REGISTRATION:
        raise LeagueStateError("check-in closed at the league's start", reason="CHECK_IN_CLOSED")
    try:
        window.check(now)
    except LeagueError as exc:
        raise league_error(exc) from exc
    e.checked_in = True
    return e


def start(doc: LeagueDoc, now: float) -> None:
    """Start the league (at its start time, or by StartLeague): with a check-in window, the
    entrants who did not check in are withdrawn first (``no_check_in``, one
    ``entrant.withdrawn`` each); a :class:`LeagueError` when too few are left."""
    window = doc.check_in_window()
    if window is not None:
        present = [e.id for e in doc.entrants if not e.withdrawn]
        for entrant_id in not_checked_in(present, {e.id for e in doc.entrants if e.checked_in}):
            e = doc.entrant(entrant_id)
            assert e is not None
            e.withdrawn, e.withdrawn_reason = True, NO_CHECK_IN
            drop_from_overrides(doc, entrant_id)
            doc.emit("entrant.withdrawn", now, entrant=entrant_id, reason=NO_CHECK_IN)
    doc.event()
    kind = parse_format(doc.format)
    left = sum(1 for e in doc.entrants if not e.withdrawn)
    if left < MIN_ENTRANTS[kind]:
        raise TooFewEntrantsError(
            "entrants", f"a {kind.value} needs at least {MIN_ENTRANTS[kind]} entrants; {left} checked in"
        )
    doc.state = State.RUNNING
    if doc.is_arena:  # its time runs from now
        doc.ends_at = now + doc.arena_duration
        doc.emit("league.started", now, entrants=left, ends_at=round(doc.ends_at, 3))
        return
    doc.emit("league.started", now, entrants=left)


def set_forbidden(doc: LeagueDoc, pairs: Sequence[tuple[str, str]]) -> None:
    if len(pairs) > MAX_FORBIDDEN:
        raise invalid("pairs", f"at most {MAX_FORBIDDEN}")
    known = {e.id for e in doc.entrants}
    for i, (a, b) in enumerate(pairs):
        for side, x in (("first", a), ("second", b)):
            if x not in known:
                raise invalid(f"pairs[{i}].{side}", f"{x[:64]!r} is not an entrant of this league")
        if a == b:
            raise invalid(f"pairs[{i}]", "a pair of two different entrants")
    _fixed_schedule(doc, forbidden=[frozenset(p) for p in pairs])
    doc.forbidden = sorted({tuple(sorted(p)) for p in pairs})  # type: ignore[misc]


def set_round(doc: LeagueDoc, round_no: int, pairs: Sequence[tuple[str, str]], byes: Sequence[str]) -> None:
    """The operator's pairings and byes of ``round_no`` (a round not paired yet)."""
    overrides = RoundOverrides(tuple(pairs), tuple(byes))
    _fixed_schedule(doc, overrides=overrides)
    if doc.state == State.FINISHED:
        raise LeagueStateError("the league is finished")
    if round_no <= doc.round:
        raise LeagueStateError(f"round {round_no} is already paired (the league is at round {doc.round})")
    total = doc.rounds or 0
    if not doc.round < round_no <= max(total, doc.round + 1):
        raise invalid("round", f"a round not paired yet, {doc.round + 1} to {total}")
    present = {e.id for e in doc.entrants if not e.withdrawn and e.joined_round <= round_no}
    try:
        overrides.check(present, doc.forbidden_pairs())
    except LeagueError as exc:
        raise league_error(exc) from exc
    if pairs or byes:
        doc.overrides[str(round_no)] = {"pairs": [list(p) for p in pairs], "byes": list(byes)}
    else:
        doc.overrides.pop(str(round_no), None)


def drop_from_overrides(doc: LeagueDoc, entrant_id: str) -> None:
    """A withdrawn entrant leaves the operator's pairings of the rounds to come (its table
    is left to the system) and their byes."""
    for key, got in list(doc.overrides.items()):
        got["pairs"] = [p for p in got["pairs"] if entrant_id not in p]
        got["byes"] = [b for b in got["byes"] if b != entrant_id]
        if not got["pairs"] and not got["byes"]:
            del doc.overrides[key]


def correct(
    doc: LeagueDoc,
    round_no: int,
    table: int,
    outcome: tuple[str, int, int, bool],
    reason: str,
    now: float,
    by: str,
) -> PairingDoc:
    """Replace the result of the pairing at ``round_no``/``table`` (a played pairing whose
    result is recorded) with ``outcome`` (winner or "", first's and second's points,
    forfeit), recording the correction; a pairing of one table carries it to its match,
    which the job rates again."""
    winner, first_points, second_points, forfeit = outcome
    if len(reason) > MAX_REASON:
        raise invalid("reason", f"at most {MAX_REASON} characters")
    p = next((p for p in doc.pairings if (p.round, p.table) == (round_no, table)), None)
    if p is None:
        raise LeagueNotFound(f"no pairing at round {round_no}, table {table}")
    if p.second is None:
        raise LeagueStateError("a bye has no result to correct")
    if p.result is None:
        raise LeagueStateError(
            "this pairing has no result yet: its matches are not over (AdjudicateMatch decides a live one)"
        )
    event = doc.event(min_entrants=False)
    knockout = event.is_knockout_round(round_no)
    new = p.pairing().result(winner or None, (first_points, second_points), forfeit)
    try:
        check_result(new, {p.first, p.second})
        if knockout and new.winner is None:
            raise InvalidResultError("winner", "a knockout result needs a winner")
    except LeagueError as exc:
        raise league_error(exc) from exc
    before = result_of(p.result)
    locked_by = event.result_locked_by(round_no)
    if locked_by is not None and any(q.round >= locked_by for q in doc.pairings):
        if not knockout:
            raise LeagueStateError(
                f"round {locked_by} is already paired: the groups' order seeded the knockout, so a "
                "group-stage result can be corrected until the knockout's first round is paired"
            )
        if new.winner != before.winner:
            raise LeagueStateError(
                f"round {locked_by} is already paired with {before.winner!r} through; a knockout's winner "
                "can be corrected until the next round is paired"
            )
    after = {**p.result, **result_dict(new)}  # a duplicate comparison stays, for the record
    p.corrections.append({"time": now, "by": by, "reason": reason, "before": p.result, "after": after})
    p.result = after
    doc.emit(
        "result.corrected", now, doc.tables[p.tables[0]].match_id if len(p.tables) == 1 else "",
        round=round_no, table=table, winner=new.winner or "", reason=reason,
    )  # fmt: skip
    if len(p.tables) == 1:
        t = doc.tables[p.tables[0]]
        t.winner_side = None if new.winner is None else t.sides.index(new.winner)
        t.points = [first_points, second_points] if t.sides[0] == p.first else [second_points, first_points]
        t.forfeit, t.ending, t.rated = forfeit, NO_SHOW if forfeit else ADJUDICATED, False
    elif doc.series_best_of > 1:  # a series is rated with its last game: rated again
        doc.tables[p.tables[-1]].rated = False
    return p


def _fixed_schedule(
    doc: LeagueDoc, *, forbidden: Sequence[frozenset[str]] = (), overrides: RoundOverrides = NO_OVERRIDES
) -> None:
    try:
        check_fixed_schedule(parse_format(doc.format), forbidden, overrides)
    except LeagueError as exc:
        raise league_error(exc) from exc


__all__ = [
    "check_in",
    "check_in_window",
    "correct",
    "drop_from_overrides",
    "rating_policy",
    "round_interval",
    "set_forbidden",
    "set_round",
    "start",
]
