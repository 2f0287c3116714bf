"""The league codec: ``truco.v1.LeagueService`` messages to and from plain values, shared by
the server, the SDK and ``truco league``.

* :class:`Assignment` -- a match a bot must play (the bot lobby's message), with
  :func:`assignment_to_proto` / :func:`assignment_from_proto`;
* :func:`standings_rows`, :func:`pairings_rows`, :func:`results_rows` -- a league's
  standings, pairings and match results as flat rows (one dict each, stable column order),
  each entrant id with its display name beside it (:func:`entrant_names`);
* :func:`rows_to_csv`, :func:`rows_to_json` -- those rows as the CSV and JSON exports.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import timestamp_pb2

from truco_contract.pb import league_service_pb2

pb = league_service_pb2

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Assignment:
    """A match a bot account must play: its seat and the seat's credential."""

    match_id: str
    seat: int
    token: str
    league_id: str
    round: int
    table_key: str
    assigned_at: float
    """Seconds since the epoch."""


def _ts(seconds: float) -> timestamp_pb2.Timestamp:
    t = timestamp_pb2.Timestamp()
    t.FromNanoseconds(round(seconds * 1e9))
    return t


def assignment_to_proto(a: Assignment) -> league_service_pb2.Assignment:
    return pb.Assignment(
        match_id=a.match_id,
        seat=a.seat,
        token=a.token,
        league_id=a.league_id,
        round=a.round,
        table_key=a.table_key,
        assign_time=_ts(a.assigned_at),
    )


def assignment_from_proto(m: league_service_pb2.Assignment) -> Assignment:
    return Assignment(
        match_id=m.match_id,
        seat=m.seat,
        token=m.token,
        league_id=m.league_id,
        round=m.round,
        table_key=m.table_key,
        assigned_at=m.assign_time.ToNanoseconds() / 1e9,
    )


def entrant_names(league: league_service_pb2.League) -> dict[str, str]:
    """Each entrant's display name by id (the exports' name columns; empty when it has none)."""
    return {e.entrant_id: e.display_name for e in league.entrants}


def standings_rows(
    resp: league_service_pb2.GetStandingsResponse, names: Mapping[str, str] | None = None
) -> list[Row]:
    """One row per standing: rank, entrant and its display name (``names``, from
    :func:`entrant_names`), score, games, points and each tie-break by name."""
    names = names or {}
    rows = []
    for s in resp.standings:
        row: Row = {
            "rank": s.rank,
            "entrant": s.entrant_id,
            "name": names.get(s.entrant_id, ""),
            "score": s.score,
            "played": s.played,
            "wins": s.wins,
            "draws": s.draws,
            "losses": s.losses,
            "byes": s.byes,
            "points_for": s.points_for,
            "points_against": s.points_against,
        }
        for name, value in zip(resp.tie_breaks, s.tie_breaks, strict=False):
            row[name] = value
        rows.append(row)
    return rows


def group_standings_rows(
    resp: league_service_pb2.GetStandingsResponse, names: Mapping[str, str] | None = None
) -> list[Row]:
    """Groups then knockout: each group's table, one row per entrant: ``group`` (its label),
    then the columns of :func:`standings_rows` (``rank`` is the place in the group)."""
    rows: list[Row] = []
    for g in resp.groups:
        table = league_service_pb2.GetStandingsResponse(standings=g.standings, tie_breaks=resp.tie_breaks)
        rows += [{"group": g.label, **row} for row in standings_rows(table, names)]
    return rows


def pairings_rows(
    resp: league_service_pb2.ListPairingsResponse, names: Mapping[str, str] | None = None
) -> list[Row]:
    """One row per pairing: round, table, the two sides with their display names, the
    result (empty until recorded), a series' score (games won by first and second, once it
    has more than one game)."""
    names = names or {}
    rows = []
    for p in resp.pairings:
        has = p.HasField("result")
        rows.append(
            {
                "round": p.round,
                "table": p.table,
                "label": p.label,
                "first": p.first,
                "first_name": names.get(p.first, ""),
                "second": p.second or "(bye)",
                "second_name": names.get(p.second, "") if p.second else "",
                "winner": (p.result.winner or "(draw)") if has else "",
                "first_points": p.result.first_points if has else "",
                "second_points": p.result.second_points if has else "",
                "forfeit": p.result.forfeit if has else "",
                "net": p.result.net if has and p.result.deals else "",
                "imps": p.result.imps if has and p.result.deals else "",
                "series": f"{p.series_first_wins}-{p.series_second_wins}" if len(p.tables) > 1 else "",
                "matches": " ".join(t.match_id for t in p.tables),
            }
        )
    return rows


def results_rows(
    resp: league_service_pb2.ListPairingsResponse, names: Mapping[str, str] | None = None
) -> list[Row]:
    """One row per match: its table key, match id, the sides with their display names and
    whether it is over."""
    names = names or {}
    rows = []
    for p in resp.pairings:
        for t in p.tables:
            rows.append(
                {
                    "round": p.round,
                    "table": t.key,
                    "deal_set": t.deal_set,
                    "match_id": t.match_id,
                    "direction_0": t.sides[0] if t.sides else "",
                    "direction_0_name": names.get(t.sides[0], "") if t.sides else "",
                    "direction_1": t.sides[1] if len(t.sides) > 1 else "",
                    "direction_1_name": names.get(t.sides[1], "") if len(t.sides) > 1 else "",
                    "done": t.done,
                }
            )
    return rows


def rows_to_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """CSV with a header of the first row's columns (empty text for no rows)."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(dict(r))
    return out.getvalue()


def rows_to_json(rows: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps([dict(r) for r in rows], indent=2, ensure_ascii=False) + "\n"


__all__ = [
    "Assignment",
    "assignment_from_proto",
    "assignment_to_proto",
    "entrant_names",
    "pairings_rows",
    "results_rows",
    "rows_to_csv",
    "rows_to_json",
    "standings_rows",
]
