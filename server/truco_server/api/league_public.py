"""The public view of a league (``GetPublicLeague``) in messages: what a spectator may see.

Built from the league document field by field, so nothing is in it unless named here:
entrants by seed and display name (never their ids, their members or anything the operator
keeps about them), the standings, every pairing's seeds, label, result and series score.
No credential, match id, operator, settings, duplicate deals or correction reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import timestamp_pb2

from truco_contract.pb import league_service_pb2
from truco_server.leagues import Standing
from truco_server.services.leagues import LeagueDoc, PairingDoc, series_wins

pb = league_service_pb2


def public_league_to_proto(
    version: int,
    doc: LeagueDoc,
    standings: Sequence[Standing],
    states: Mapping[str, league_service_pb2.LeagueState.ValueType],
) -> league_service_pb2.PublicLeague:
    """The league as a spectator sees it (``states``: the wire value of each state)."""
    seeds = {e.id: e.seed for e in doc.entrants}
    try:
        total = doc.event(min_entrants=True).total_rounds()
    except ValueError:  # not enough entrants yet
        total = 0
    m = pb.PublicLeague(
        public_id=doc.public_id,
        name=doc.name,
        format=doc.format,
        state=states[doc.state],
        current_round=doc.round,
        total_rounds=total,
        rating_family=doc.family,
        third_place=doc.third_place,
        series_best_of=doc.series_best_of,
        finish_reason=doc.finish_reason,
        entrants=[
            pb.PublicEntrant(
                seed=e.seed, display_name=e.display_name, withdrawn=e.withdrawn, joined_round=e.joined_round
            )
            for e in sorted(doc.entrants, key=lambda e: e.seed)
        ],
        standings=[_standing(s, seeds[s.entrant_id]) for s in standings],
        tie_breaks=doc.tie_break_names(),
        pairings=[_pairing(doc, p, seeds) for p in doc.pairings],
        version=version,
    )
    if doc.starts_at:
        start = timestamp_pb2.Timestamp()
        start.FromNanoseconds(round(doc.starts_at * 1e9))
        m.start_time.CopyFrom(start)
    return m


def standing_fields(s: Standing) -> dict[str, Any]:
    """A standing's figures, the same in ``Standing`` and the public ``PublicStanding``."""
    return {
        "rank": s.rank,
        "score": s.score,
        "played": s.played,
        "wins": s.wins,
        "draws": s.draws,
        "losses": s.losses,
        "byes": s.byes,
        "points_for": s.points_for,
        "points_against": s.points_against,
        "tie_breaks": list(s.tie_breaks),
    }


def _standing(s: Standing, seed: int) -> league_service_pb2.PublicStanding:
    return pb.PublicStanding(seed=seed, **standing_fields(s))


def _pairing(doc: LeagueDoc, p: PairingDoc, seeds: dict[str, int]) -> league_service_pb2.PublicPairing:
    wins = series_wins(doc, p)
    m = pb.PublicPairing(
        round=p.round,
        table=p.table,
        label=p.label,
        first=seeds[p.first],
        second=seeds[p.second] if p.second else 0,
        series_first_wins=wins[0],
        series_second_wins=wins[1],
        corrected=bool(p.corrections),
    )
    r = p.result
    if r is not None:
        m.result.CopyFrom(
            pb.PublicResult(
                winner=seeds[r["winner"]] if r["winner"] else 0,
                first_points=r["first_points"],
                second_points=r["second_points"],
                forfeit=r["forfeit"],
            )
        )
    return m
