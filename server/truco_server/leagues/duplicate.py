"""Duplicate deals: the same deals played at two (or more) tables with the seats swapped,
so that the luck of the cards cancels out and entrants are compared deal by deal.

Vocabulary:

- **direction**: side 0 or side 1 of a table (in a 2 v 2 or 3 v 3 rule set, the seats of
  one side). Side 0 is mano in the first deal. Every table of a deal set deals deal ``k``
  with the same deck order from the same dealer seat, so direction 0 holds the same cards
  at every table.
- **deal set**: the deck orders shared by some tables (the service draws and commits them;
  this module only names them). Per pairing (two tables) or per round (every table of the
  round, for matchpoints across many tables).
- **tables form**: each table plays a whole match; deal ``k`` is the k-th hand of that
  match. Only the deal indexes played at every compared table are compared (a match ends
  after a different number of hands at each table).
- **boards form**: each deal is a *board*, one hand played from a fixed score context
  (:class:`Board`: the scores before the hand and which direction is mano), so the running
  score of a match does not change how a hand is played. Boards are scored exactly like
  deals.

What the service gives this module for every table of a deal set: a :class:`DuplicateTable`
(which entrant sat in each direction) and, for every deal (or board) index played there, a
:class:`DealScore` with the Truco points each direction scored on that deal.

Scoring (worked examples in docs/leagues.md):

- **net points** of a pairing A v B played at tables 1 (A in direction 0) and 2 (B in
  direction 0): on deal k, ``net_A(k) = (A - B at table 1) + (A - B at table 2)``; the
  pairing's net is the sum over the compared deals, and A wins it when it is positive.
- **IMPs**: ``imps_A(k) = sign(net_A(k)) * imp(|net_A(k)|)`` on the :data:`TRUCO_IMP_SCALE`.
- **matchpoints** (more than two tables on one deal set, bridge convention): on each deal,
  each table's direction-0 result (its points minus direction 1's) is compared with every
  other table's direction-0 result: 1 matchpoint per result beaten, 1/2 per tie; direction
  1 gets the rest, ``(tables - 1) - direction 0's``. The top on a deal is tables - 1.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from truco_server.leagues.errors import InvalidOptionError, InvalidScoresError
from truco_server.leagues.results import Pairing, Result


class DuplicateMode(enum.StrEnum):
    OFF = "off"
    TABLES = "tables"
    """Whole matches at two tables on the same deal set, seats swapped."""
    BOARDS = "boards"
    """Single hands from fixed score contexts at two tables, seats swapped."""


class DealSets(enum.StrEnum):
    PAIRING = "pairing"
    """Each pairing's two tables share a deal set of their own."""
    ROUND = "round"
    """Every table of a round shares one deal set (for matchpoints across tables)."""


class PairScoring(enum.StrEnum):
    NET = "net"
    """The pairing's winner is decided by total net points."""
    IMPS = "imps"
    """By total IMPs (each deal's net converted on the IMP scale first)."""


#: Lower bounds of the Truco IMP scale: a net difference of d points on one deal is worth
#: as many IMPs as there are bounds <= d (0 → 0, 1 → 1, 2 → 2, 3-4 → 3, 5-6 → 4,
#: 7-9 → 5, 10-12 → 6, 13-16 → 7, 17-21 → 8, 22-29 → 9, 30 or more → 10). Like bridge's,
#: it grows about logarithmically, so one huge swing (a falta envido) cannot outweigh many
#: hands of steady small gains.
TRUCO_IMP_SCALE: tuple[int, ...] = (1, 2, 3, 5, 7, 10, 13, 17, 22, 30)


def imps(difference: int, scale: Sequence[int] = TRUCO_IMP_SCALE) -> int:
    """The signed IMPs of a net point ``difference``."""
    size = sum(1 for bound in scale if abs(difference) >= bound)
    return size if difference >= 0 else -size


@dataclass(frozen=True)
class DuplicateOptions:
    mode: DuplicateMode = DuplicateMode.OFF
    deal_sets: DealSets = DealSets.PAIRING
    scoring: PairScoring = PairScoring.NET
    imp_scale: tuple[int, ...] = TRUCO_IMP_SCALE

    def __post_init__(self) -> None:
        scale = self.imp_scale
        if not scale or any(b < 1 for b in scale) or any(a >= b for a, b in itertools.pairwise(scale)):
            raise InvalidOptionError(
                "duplicate.imp_scale", "must be a non-empty increasing list of integers >= 1"
            )


#: Duplicate off (the default of every format).
NO_DUPLICATE = DuplicateOptions()


@dataclass(frozen=True)
class DuplicateTable:
    """One table of a deal set: who sits in each direction."""

    key: str
    """The table's key (the service makes one match per key): ``r<round>.t<table>.<a|b>``."""
    deal_set: str
    """The deal set it plays: ``r<round>.t<table>`` (per pairing) or ``r<round>`` (per round)."""
    sides: tuple[str, str]
    """Entrant ids in direction 0 and direction 1."""


@dataclass(frozen=True)
class DealScore:
    """What the service reports for one deal (or board) played at one table."""

    table: str
    """A :attr:`DuplicateTable.key`."""
    deal: int
    """Deal index within the deal set (the hand's number in the match, or the board number), from 0."""
    points: tuple[int, int]
    """Truco points scored on this deal by direction 0 and by direction 1."""


@dataclass(frozen=True)
class Board:
    """One board of the boards form: a hand played from a fixed score context."""

    number: int
    """The deal index the board is played as, from 0."""
    scores_before: tuple[int, int]
    """Match scores of direction 0 and direction 1 before the hand (so "mano de 11",
    falta envido and the like are played as at that score)."""
    mano: int = 0
    """The direction that is mano in this hand (0 or 1); the dealer sits before it."""


def check_boards(boards: Sequence[Board], target_points: int) -> None:
    """Board numbers unique, scores within 0 .. target_points - 1, mano a direction."""
    seen: set[int] = set()
    for i, b in enumerate(boards):
        where = f"boards[{i}]"
        if b.number < 0 or b.number in seen:
            raise InvalidOptionError(f"{where}.number", "board numbers are distinct integers >= 0")
        seen.add(b.number)
        if len(b.scores_before) != 2 or any(not 0 <= s < target_points for s in b.scores_before):
            raise InvalidOptionError(
                f"{where}.scores_before",
                f"two scores, each from 0 to {target_points - 1} (the match is not over)",
            )
        if b.mano not in (0, 1):
            raise InvalidOptionError(f"{where}.mano", "0 or 1 (a direction)")
    if not boards:
        raise InvalidOptionError("boards", "at least one board")


def tables_for(
    pairing: Pairing, deal_sets: DealSets = DealSets.PAIRING
) -> tuple[DuplicateTable, DuplicateTable]:
    """The two tables of a pairing: table ``a`` seats first in direction 0, table ``b``
    seats second there (each entrant takes the seats the other had at the other table)."""
    if pairing.second is None:
        raise InvalidScoresError("pairing", "a bye has no tables")
    base = f"r{pairing.round}.t{pairing.table}"
    deal_set = base if deal_sets is DealSets.PAIRING else f"r{pairing.round}"
    return (
        DuplicateTable(f"{base}.a", deal_set, (pairing.first, pairing.second)),
        DuplicateTable(f"{base}.b", deal_set, (pairing.second, pairing.first)),
    )


def _index(
    tables: Sequence[DuplicateTable], scores: Sequence[DealScore]
) -> dict[str, dict[int, tuple[int, int]]]:
    keys = {t.key for t in tables}
    if len(keys) != len(tables):
        raise InvalidScoresError("tables", "two tables share a key")
    if len({t.deal_set for t in tables}) > 1:
        raise InvalidScoresError("tables", "tables of different deal sets cannot be compared")
    out: dict[str, dict[int, tuple[int, int]]] = {t.key: {} for t in tables}
    for i, s in enumerate(scores):
        where = f"scores[{i}]"
        if s.table not in out:
            raise InvalidScoresError(f"{where}.table", f"{s.table!r} is not one of the compared tables")
        if s.deal < 0 or s.deal in out[s.table]:
            raise InvalidScoresError(
                f"{where}.deal", f"deal {s.deal} of table {s.table!r} is < 0 or scored twice"
            )
        if len(s.points) != 2 or min(s.points) < 0:
            raise InvalidScoresError(f"{where}.points", "two point counts >= 0")
        out[s.table][s.deal] = (s.points[0], s.points[1])
    return out


@dataclass(frozen=True)
class DealComparison:
    """One deal of a pairing, from the point of view of entrant ``a`` (table a's direction 0)."""

    deal: int
    net_table_a: int
    """a's points minus b's at table a (a in direction 0)."""
    net_table_b: int
    """a's points minus b's at table b (a in direction 1)."""
    net: int
    """``net_table_a + net_table_b``: what a gained over b on this deal, card luck removed."""
    imps: int


@dataclass(frozen=True)
class PairComparison:
    a: str
    b: str
    deals: tuple[DealComparison, ...]
    """The deals played at both tables, by index."""
    unmatched: tuple[int, ...]
    """Deal indexes played at one table only (not compared)."""
    a_points: int
    """a's Truco points on the compared deals, both tables."""
    b_points: int

    @property
    def net(self) -> int:
        return sum(d.net for d in self.deals)

    @property
    def imps(self) -> int:
        return sum(d.imps for d in self.deals)

    def winner(self, by: PairScoring = PairScoring.NET) -> str | None:
        """a or b by net points or IMPs, ``None`` when level."""
        total = self.net if by is PairScoring.NET else self.imps
        return self.a if total > 0 else self.b if total < 0 else None

    def result(self, pairing: Pairing, by: PairScoring = PairScoring.NET) -> Result:
        """The pairing's :class:`Result` for the standings (points: each side's Truco points on
        the compared deals, so the points difference is the net)."""
        if {pairing.first, pairing.second} != {self.a, self.b}:
            raise InvalidScoresError("pairing", "these tables are not this pairing's")
        first_points, second_points = (
            (self.a_points, self.b_points) if pairing.first == self.a else (self.b_points, self.a_points)
        )
        return pairing.result(self.winner(by), (first_points, second_points))


def compare_pair(
    tables: tuple[DuplicateTable, DuplicateTable],
    scores: Sequence[DealScore],
    scale: Sequence[int] = TRUCO_IMP_SCALE,
) -> PairComparison:
    """Compare a pairing's two tables deal by deal (tables or boards form alike)."""
    ta, tb = tables
    if ta.sides != (tb.sides[1], tb.sides[0]) or ta.sides[0] == ta.sides[1]:
        raise InvalidScoresError(
            "tables", "the second table must seat the same two entrants the other way round"
        )
    index = _index(tables, scores)
    a_deals, b_deals = index[ta.key], index[tb.key]
    both = sorted(set(a_deals) & set(b_deals))
    unmatched = tuple(sorted(set(a_deals) ^ set(b_deals)))
    deals: list[DealComparison] = []
    a_points = b_points = 0
    for k in both:
        a0, b1 = a_deals[k]  # table a: direction 0 is entrant a
        b0, a1 = b_deals[k]  # table b: direction 0 is entrant b
        net_a, net_b = a0 - b1, a1 - b0
        net = net_a + net_b
        deals.append(DealComparison(k, net_a, net_b, net, imps(net, scale)))
        a_points += a0 + a1
        b_points += b1 + b0
    return PairComparison(ta.sides[0], ta.sides[1], tuple(deals), unmatched, a_points, b_points)


@dataclass(frozen=True)
class DealMatchpoints:
    deal: int
    tables: int
    """How many tables played this deal (the top is tables - 1)."""
    by_table: tuple[tuple[str, float, float], ...]
    """(table key, direction 0's matchpoints, direction 1's) for each table that played it."""


@dataclass(frozen=True)
class MatchpointScore:
    entrant_id: str
    matchpoints: float
    top: float
    """The most it could have made: the sum of (tables - 1) over the deals it played."""

    @property
    def percentage(self) -> float:
        return 100.0 * self.matchpoints / self.top if self.top else 0.0


@dataclass(frozen=True)
class MatchpointTable:
    deals: tuple[DealMatchpoints, ...]
    scores: tuple[MatchpointScore, ...]
    """Per entrant, best first (then by id)."""


def matchpoints(tables: Sequence[DuplicateTable], scores: Sequence[DealScore]) -> MatchpointTable:
    """Matchpoints across every table of one deal set (see the module doc)."""
    index = _index(tables, scores)
    sides = {t.key: t.sides for t in tables}
    deal_numbers = sorted({k for per in index.values() for k in per})
    totals: dict[str, list[float]] = {}
    for t in tables:
        for e in t.sides:
            totals.setdefault(e, [0.0, 0.0])
    out: list[DealMatchpoints] = []
    for k in deal_numbers:
        nets = [(key, per[k][0] - per[k][1]) for key, per in index.items() if k in per]
        top = len(nets) - 1
        rows: list[tuple[str, float, float]] = []
        for key, net in nets:
            others = [other for okey, other in nets if okey != key]
            mp0 = sum(1.0 if net > other else 0.5 if net == other else 0.0 for other in others)
            mp1 = top - mp0
            rows.append((key, mp0, mp1))
            d0, d1 = sides[key]
            totals[d0][0] += mp0
            totals[d1][0] += mp1
            totals[d0][1] += top
            totals[d1][1] += top
        out.append(DealMatchpoints(k, len(nets), tuple(rows)))
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return MatchpointTable(tuple(out), tuple(MatchpointScore(e, mp, top) for e, (mp, top) in ranked))
