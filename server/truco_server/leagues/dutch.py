"""Swiss pairing by the FIDE Dutch system (FIDE Handbook C.04.3), through caissify-pairings.

The league's own Swiss (:mod:`truco_server.leagues.swiss`) pairs by maximum-weight matching;
an operator may choose the Dutch system instead (``swiss_pairing: "dutch"``), the system
chess players know and pairing checkers verify. The pairing itself is the library's
(``caissify_pairings``, Apache-2.0, pure Python; checked by its authors against the
FIDE-endorsed bbpPairings: the FIDE A.7 test, 0 discrepancies over 70,000 rounds); this
module only states an event in the library's terms, as FIDE's own checker derives them from
a tournament report (TRF):

* **starting numbers** follow the seeds (seed 1 is number 1); ratings are not used, so the
  initial order is the seed order;
* **scores** are game points (a win 1, a draw ½, a loss 0; a bye and a forfeit won 1),
  whatever the league's standings count: the system's score groups and its rules for the
  last rounds are defined on those;
* **colours**: being mano in the first hand is white, the other side black (Truco's "first
  move"); only matches played count for colour, as in chess;
* **floats** per round: a bye and a forfeit won are a downfloat; a played match between
  different scores is a downfloat for the higher and an upfloat for the lower;
* **byes**: at most one per entrant (the pairing-allocated bye, ``U``); a late entrant's bye
  counts as a bye already had;
* rematches and the operator's **forbidden pairs** are both given as pairs already played.
  The system's first round is its fixed top-half-against-bottom-half split, which knows no
  pairs to avoid: when that split seats a forbidden pair, the round is paired as a later
  round with everyone on zero is (one score group, the same split, with the transpositions
  the system allows to avoid a pair). The library's checker does not know forbidden pairs,
  so it may differ on a round they changed.

Whatever the library answers, a pairing that seats a pair already met or forbidden, leaves a
present entrant out or gives two byes is refused (:class:`NoValidPairingError`).

The Dutch system's cost grows steeply with the field (``benchmarks/swiss_pairing.py
--system dutch``): a league refuses it above :data:`MAX_DUTCH_ENTRANTS` entrants.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import NoValidPairingError
from truco_server.leagues.results import History

#: Largest field paired with the Dutch system (about 4 s of CPU a round at 100 entrants,
#: minutes at 1,000; docs/leagues.md, "FIDE Dutch pairing").
MAX_DUTCH_ENTRANTS = 128


def _played(history: History, entrant_id: str) -> list[tuple[int, str | None, float, bool, bool]]:
    """(round, opponent, game points, mano, played) of each game, in round order."""
    return sorted((g.round, g.opponent, g.fraction, g.mano, not g.forfeit) for g in history.of(entrant_id))


def _score_before(history: History, ids: Sequence[str]) -> dict[str, dict[int, float]]:
    """Each entrant's game points after each round (round 0: 0)."""
    table: dict[str, dict[int, float]] = {}
    for e in ids:
        running, seen = 0.0, {0: 0.0}
        for rnd, _, points, _, _ in _played(history, e):
            running += points
            seen[rnd] = running
        table[e] = seen
    return table


def _at(scores: Mapping[int, float], rnd: int) -> float:
    """The score after the last round before ``rnd`` the entrant has one for."""
    return max(((r, s) for r, s in scores.items() if r < rnd), default=(0, 0.0))[1]


def _player(
    e: Entrant, number: int, history: History, scores: Mapping[str, Mapping[int, float]]
) -> dict[str, Any]:
    colours: list[str] = []
    floats: list[str] = []
    byes = forfeit_wins = 0
    total = 0.0
    for rnd, opponent, points, mano, played in _played(history, e.id):
        total += points
        if opponent is None:
            byes += 1
            floats.append("down")
            continue
        if not played:
            forfeit_wins += points == 1.0
            floats.append("down" if points == 1.0 else "none")
            continue
        colours.append("white" if mano else "black")
        mine, theirs = _at(scores[e.id], rnd), _at(scores[opponent], rnd)
        floats.append("down" if mine > theirs else "up" if mine < theirs else "none")
    return {
        "id": number,
        "name": e.id,
        "score": total,
        "rating": 0,
        "starting_number": number,
        "color_hist": colours,
        "float_history": floats,
        "bye_count": byes,
        "forfeit_win_count": forfeit_wins,
    }


def dutch_pairings(
    entrants: Sequence[Entrant],
    present: Sequence[Entrant],
    history: History,
    round_no: int,
    total_rounds: int,
    forbidden: Collection[frozenset[str]] = (),
) -> tuple[list[tuple[str, str]], str | None]:
    """The Dutch system's tables for the ``present`` entrants (first of each pair: white,
    i.e. mano in the first hand), in its table order, and the entrant it gives the bye
    (``None`` for an even field). :class:`NoValidPairingError` when it finds no pairing."""
    from caissify_pairings import (  # type: ignore[import-untyped]  # the library ships no types
        MissingFloatHistoryWarning,
        generate_pairings,
    )

    number = {e.id: i for i, e in enumerate(sorted(entrants, key=lambda e: e.seed), 1)}
    by_number = {n: e for e, n in number.items()}
    scores = _score_before(history, [e.id for e in entrants])
    players = [_player(e, number[e.id], history, scores) for e in present]
    met = {frozenset((a, b)) for a in number for b in history.opponents(a)} | set(forbidden)
    previous = {tuple(sorted(number[x] for x in pair)) for pair in met if all(x in number for x in pair)}

    def pair(as_round: int) -> list[dict[str, Any]]:
        with warnings.catch_warnings():
            # A round after one of forfeits only has no floats: not a mistake here.
            warnings.simplefilter("ignore", MissingFloatHistoryWarning)
            rows: list[dict[str, Any]] = generate_pairings(
                system="dutch",
                players=players,
                previous_pairings=previous,
                round_number=as_round,
                total_rounds=max(total_rounds, as_round),
                bye_value=1.0,
                max_byes_per_player=1,
            )
            return rows

    def seats_a_met_pair(rows: list[dict[str, Any]]) -> bool:
        return any(
            tuple(sorted((int(r["white_id"]), int(r["black_id"])))) in previous
            for r in rows
            if r.get("black_id") is not None
        )

    rows = pair(round_no)
    if round_no == 1 and seats_a_met_pair(rows):
        rows = pair(2)
    pairs: list[tuple[str, str]] = []
    bye: str | None = None
    for row in sorted(rows, key=lambda r: int(r["table"])):
        if row.get("black_id") is None:
            bye = by_number[int(row["white_id"])]
        else:
            pairs.append((by_number[int(row["white_id"])], by_number[int(row["black_id"])]))
    seated = {x for p in pairs for x in p} | ({bye} if bye else set())
    byes = sum(1 for r in rows if r.get("black_id") is None)
    if seated != {e.id for e in present} or byes > 1 or seats_a_met_pair(rows):
        raise NoValidPairingError(
            "round",
            f"the Dutch system finds no pairing of round {round_no} without a rematch; the event should end",
        )
    return pairs, bye


__all__ = ["MAX_DUTCH_ENTRANTS", "dutch_pairings"]
