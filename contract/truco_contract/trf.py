"""A Swiss league as a FIDE Tournament Report File (TRF-16), the interchange format pairing
checkers and rating officers read (FIDE Handbook C.04, Annex 2; docs/leagues.md, "Exports").

:func:`swiss_trf` writes, from what ``LeagueService`` answers (the league, its standings, its
pairings):

* the tournament lines ``012`` (name), ``042`` (start date, ``YYYY/MM/DD``), ``062`` (number of
  players), ``092`` (type), and ``XXR`` (the number of rounds, the TRF(x) extension pairing
  programs read);
* one ``001`` line per entrant, by starting number (the seed order): starting number
  (columns 5-8), name (15-47: the display name, else the id), rating (49-52: blank, entrants
  carry none), points (81-84), rank (86-89), then per round a block of ten columns from
  column 92: the opponent's starting number (4 columns, ``0000`` for none), the colour and
  the result.

Truco has no colours. A league paired by the FIDE Dutch system (``swiss_pairing: "dutch"``)
writes mano in the first hand as white (``w``) and the other side as black (``b``), the colours
that system allocated, so a pairing checker can replay its rounds; any other league writes ``-``
(the TRF's "no colour") in every colour column. Results: ``1``/``0``/``=`` for a win, a loss, a
draw; ``+``/``-`` for a forfeit won or lost (a no-show); ``U`` for a pairing-allocated bye,
``F`` for a late entrant's bye (a full-point bye) or ``H`` when the league makes it a
half-point bye; ``Z`` (zero, no opponent) for a round the
entrant was not in (before it joined, after it withdrew); blank while a match is not decided.
"""

from __future__ import annotations

from datetime import UTC, datetime

from truco_contract.pb import league_service_pb2

pb = league_service_pb2

#: The label the league gives a late entrant's bye (``truco_server.leagues.LATE_ENTRY``).
LATE_ENTRY = "late entry"
#: Column (1-based) of the first round's block, and the width of a block.
FIRST_ROUND_COLUMN, ROUND_WIDTH = 92, 10
NAME_WIDTH = 33


def _put(line: list[str], column: int, text: str) -> None:
    """Write ``text`` at the 1-based ``column`` of ``line`` (growing it as needed)."""
    end = column - 1 + len(text)
    if len(line) < end:
        line.extend(" " * (end - len(line)))
    line[column - 1 : end] = list(text)


def _round_block(
    me: str, p: league_service_pb2.LeaguePairing | None, number: dict[str, int], colours: bool
) -> str:
    """Opponent, colour and result of one round, as ``nnnn c r`` (colour ``-`` unless
    ``colours``: then ``w`` for mano in the first hand, ``b`` for the other)."""
    if p is None:
        return "0000 - Z"
    if not p.second:
        if p.label != LATE_ENTRY:
            return "0000 - U"
        return f"0000 - {'F' if p.result.winner else 'H'}"  # a late entrant's full or half-point bye
    opponent = p.second if p.first == me else p.first
    if not p.HasField("result"):
        result = " "
    elif p.result.forfeit:
        result = "+" if p.result.winner == me else "-"
    elif not p.result.winner:
        result = "="
    else:
        result = "1" if p.result.winner == me else "0"
    colour = ("w" if p.first == me else "b") if colours else "-"
    return f"{number[opponent]:>4} {colour} {result}"


def _system(league: league_service_pb2.League) -> str:
    return "FIDE Dutch system" if league.swiss_pairing == "dutch" else "maximum-weight matching"


def _start_date(league: league_service_pb2.League) -> str:
    when = league.schedule.start_time if league.schedule.HasField("start_time") else league.create_time
    return datetime.fromtimestamp(when.ToNanoseconds() / 1e9, UTC).strftime("%Y/%m/%d")


def swiss_trf(
    league: league_service_pb2.League,
    standings: league_service_pb2.GetStandingsResponse,
    pairings: league_service_pb2.ListPairingsResponse,
) -> str:
    """The league as TRF-16 text (lines end with CR LF); ``ValueError`` for another format."""
    if league.format != "swiss":
        raise ValueError(f"FIDE TRF is written for a swiss; this league is a {league.format}")
    entrants = sorted(league.entrants, key=lambda e: e.seed)
    number = {e.entrant_id: i for i, e in enumerate(entrants, 1)}
    table = {s.entrant_id: s for s in standings.standings}
    seat: dict[tuple[int, str], league_service_pb2.LeaguePairing] = {}
    for p in pairings.pairings:
        for side in (p.first, p.second):
            if side:
                seat[(p.round, side)] = p
    rounds = max([league.current_round, *(p.round for p in pairings.pairings)])
    lines = [
        f"012 {league.name}",
        f"042 {_start_date(league)}",
        f"062 {len(entrants)}",
        f"092 Swiss system (Truco, {league.rules.preset or 'rules'}): {_system(league)}",
        f"XXR {league.total_rounds or league.rounds}",
    ]
    colours = league.swiss_pairing == "dutch"
    for e in entrants:
        lines.append(_player_line(e, number, table.get(e.entrant_id), seat, rounds, colours))
    return "\r\n".join(lines) + "\r\n"


def _player_line(
    e: league_service_pb2.Entrant,
    number: dict[str, int],
    standing: league_service_pb2.Standing | None,
    seat: dict[tuple[int, str], league_service_pb2.LeaguePairing],
    rounds: int,
    colours: bool,
) -> str:
    line: list[str] = []
    _put(line, 1, "001")
    _put(line, 5, f"{number[e.entrant_id]:>4}")
    _put(line, 15, (e.display_name or e.entrant_id)[:NAME_WIDTH].ljust(NAME_WIDTH))
    _put(line, 81, f"{standing.score if standing else 0.0:>4.1f}")
    _put(line, 86, f"{standing.rank if standing else 0:>4}")
    for r in range(1, rounds + 1):
        block = _round_block(e.entrant_id, seat.get((r, e.entrant_id)), number, colours)
        _put(line, FIRST_ROUND_COLUMN + ROUND_WIDTH * (r - 1), block)
    return "".join(line).rstrip()


__all__ = ["LATE_ENTRY", "swiss_trf"]
