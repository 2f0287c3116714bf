"""Duplicate deals and boards: the worked examples of docs/leagues.md, checked by hand."""

from __future__ import annotations

import pytest

from truco_server.leagues import (
    TRUCO_IMP_SCALE,
    Board,
    DealScore,
    DealSets,
    DuplicateMode,
    DuplicateOptions,
    DuplicateTable,
    EventSpec,
    FormatKind,
    InvalidOptionError,
    InvalidScoresError,
    Pairing,
    PairScoring,
    check_boards,
    compare_pair,
    create_event,
    imps,
    matchpoints,
    standings,
    tables_for,
)
from truco_server.leagues.entrants import Entrant

PAIRING = Pairing(1, 1, "A", "B")
TABLE_A, TABLE_B = tables_for(PAIRING)

# Example 3 (docs/leagues.md): A v B at two tables; points are (direction 0, direction 1).
#   deal:      0        1       2       3       4
#   table a: (12, 0)  (0, 3)  (1, 2)  (2, 3)  (0, 1)    A is direction 0
#   table b: (2, 0)   (1, 1)  (3, 1)  (2, 1)    -       B is direction 0
SCORES = [
    DealScore("r1.t1.a", 0, (12, 0)),
    DealScore("r1.t1.a", 1, (0, 3)),
    DealScore("r1.t1.a", 2, (1, 2)),
    DealScore("r1.t1.a", 3, (2, 3)),
    DealScore("r1.t1.a", 4, (0, 1)),
    DealScore("r1.t1.b", 0, (2, 0)),
    DealScore("r1.t1.b", 1, (1, 1)),
    DealScore("r1.t1.b", 2, (3, 1)),
    DealScore("r1.t1.b", 3, (2, 1)),
]


def test_two_tables_with_the_seats_swapped() -> None:
    assert DuplicateTable("r1.t1.a", "r1.t1", ("A", "B")) == TABLE_A
    assert DuplicateTable("r1.t1.b", "r1.t1", ("B", "A")) == TABLE_B
    per_round = tables_for(PAIRING, DealSets.ROUND)
    assert {t.deal_set for t in per_round} == {"r1"}


def test_net_points_deal_by_deal() -> None:
    cmp = compare_pair((TABLE_A, TABLE_B), SCORES)
    assert [(d.deal, d.net_table_a, d.net_table_b, d.net, d.imps) for d in cmp.deals] == [
        (0, 12, -2, 10, 6),
        (1, -3, 0, -3, -3),
        (2, -1, -2, -3, -3),
        (3, -1, -1, -2, -2),
    ]
    assert cmp.unmatched == (4,)
    assert (cmp.net, cmp.imps) == (2, -2)
    assert (cmp.a_points, cmp.b_points) == (18, 16)
    assert cmp.winner(PairScoring.NET) == "A"
    assert cmp.winner(PairScoring.IMPS) == "B"


def test_the_comparison_becomes_the_pairings_result() -> None:
    cmp = compare_pair((TABLE_A, TABLE_B), SCORES)
    result = cmp.result(PAIRING)
    assert (result.winner, result.first_points, result.second_points) == ("A", 18, 16)
    by_imps = cmp.result(PAIRING, PairScoring.IMPS)
    assert by_imps.winner == "B"
    row = {s.entrant_id: s for s in standings([Entrant("A", 1), Entrant("B", 2)], [result])}
    assert row["A"].tie_breaks[-1] == 2  # points difference = the net


def test_a_level_comparison_is_a_draw() -> None:
    scores = [DealScore("r1.t1.a", 0, (3, 0)), DealScore("r1.t1.b", 0, (3, 0))]
    cmp = compare_pair((TABLE_A, TABLE_B), scores)
    assert cmp.net == 0 and cmp.winner() is None and cmp.result(PAIRING).winner is None


def test_the_truco_imp_scale() -> None:
    table = {d: imps(d) for d in (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 16, 17, 21, 22, 29, 30, 99)}
    assert table == {
        0: 0, 1: 1, 2: 2, 3: 3, 4: 3, 5: 4, 6: 4, 7: 5, 9: 5, 10: 6, 12: 6,
        13: 7, 16: 7, 17: 8, 21: 8, 22: 9, 29: 9, 30: 10, 99: 10,
    }  # fmt: skip
    assert imps(-8) == -5 and len(TRUCO_IMP_SCALE) == 10


# Example 4 (docs/leagues.md): four tables on one deal set (per round), two deals.
MP_TABLES = [
    DuplicateTable("t1", "r1", ("A", "B")),
    DuplicateTable("t2", "r1", ("B", "A")),
    DuplicateTable("t3", "r1", ("C", "D")),
    DuplicateTable("t4", "r1", ("D", "C")),
]
MP_SCORES = [
    DealScore("t1", 0, (3, 1)),
    DealScore("t2", 0, (1, 1)),
    DealScore("t3", 0, (2, 0)),
    DealScore("t4", 0, (0, 4)),
    DealScore("t1", 1, (0, 2)),
    DealScore("t2", 1, (2, 0)),
    DealScore("t3", 1, (1, 1)),
    DealScore("t4", 1, (3, 0)),
]


def test_matchpoints_across_four_tables() -> None:
    mp = matchpoints(MP_TABLES, MP_SCORES)
    assert [d.by_table for d in mp.deals] == [
        (("t1", 2.5, 0.5), ("t2", 1.0, 2.0), ("t3", 2.5, 0.5), ("t4", 0.0, 3.0)),
        (("t1", 0.0, 3.0), ("t2", 2.0, 1.0), ("t3", 1.0, 2.0), ("t4", 3.0, 0.0)),
    ]
    assert [(s.entrant_id, s.matchpoints, s.top) for s in mp.scores] == [
        ("B", 6.5, 12),
        ("C", 6.5, 12),
        ("A", 5.5, 12),
        ("D", 5.5, 12),
    ]
    assert round(mp.scores[0].percentage, 2) == 54.17
    assert sum(s.matchpoints for s in mp.scores) == 4 * 2 * 3


def test_matchpoints_skip_tables_that_did_not_play_a_deal() -> None:
    scores = [*MP_SCORES, DealScore("t1", 2, (1, 0)), DealScore("t3", 2, (0, 1))]
    mp = matchpoints(MP_TABLES, scores)
    assert mp.deals[2].tables == 2 and mp.deals[2].by_table == (("t1", 1.0, 0.0), ("t3", 0.0, 1.0))


def test_boards_are_checked_and_scored_like_deals() -> None:
    boards = [Board(0, (0, 0)), Board(1, (10, 13), mano=1), Board(2, (14, 14)), Board(3, (29, 0))]
    check_boards(boards, target_points=30)
    with pytest.raises(InvalidOptionError, match=r"boards\[1\]\.scores_before"):
        check_boards([Board(0, (0, 0)), Board(1, (30, 0))], target_points=30)
    with pytest.raises(InvalidOptionError, match="distinct"):
        check_boards([Board(0, (0, 0)), Board(0, (1, 0))], target_points=30)
    with pytest.raises(InvalidOptionError, match="mano"):
        check_boards([Board(0, (0, 0), mano=2)], target_points=30)
    event = create_event(
        EventSpec(
            FormatKind.ROUND_ROBIN,
            duplicate=DuplicateOptions(DuplicateMode.BOARDS, scoring=PairScoring.IMPS),
        ),
        [Entrant("A", 1), Entrant("B", 2)],
    )
    (pairing,) = event.pairings(1, [])
    tables = event.tables(pairing)
    assert len(tables) == 2
    cmp = compare_pair(
        (tables[0], tables[1]), [DealScore(t.key, s.deal, s.points) for t, s in _relabel(SCORES)]
    )
    assert cmp.result(pairing, event.spec.duplicate.scoring).winner == "B"


def _relabel(scores: list[DealScore]) -> list[tuple[DuplicateTable, DealScore]]:
    return [(TABLE_A if s.table.endswith(".a") else TABLE_B, s) for s in scores]


def test_bad_duplicate_input() -> None:
    with pytest.raises(InvalidScoresError, match="not one of the compared tables"):
        compare_pair((TABLE_A, TABLE_B), [DealScore("elsewhere", 0, (1, 0))])
    with pytest.raises(InvalidScoresError, match="scored twice"):
        compare_pair((TABLE_A, TABLE_B), [DealScore("r1.t1.a", 0, (1, 0)), DealScore("r1.t1.a", 0, (0, 1))])
    with pytest.raises(InvalidScoresError, match="other way round"):
        compare_pair((TABLE_A, TABLE_A), [])
    with pytest.raises(InvalidScoresError, match=">= 0"):
        compare_pair((TABLE_A, TABLE_B), [DealScore("r1.t1.a", 0, (-1, 0))])
    with pytest.raises(InvalidScoresError, match="different deal sets"):
        matchpoints([TABLE_A, DuplicateTable("x", "r9", ("C", "D"))], [])
    with pytest.raises(InvalidScoresError, match="bye"):
        tables_for(Pairing(1, 2, "C", None))


def test_a_double_round_robin_with_duplicate_deals() -> None:
    """Every pairing at two tables with the seats swapped, every deal index compared at
    both, and the standings built from the comparisons (points difference = net)."""
    import random
    from collections import Counter

    event = create_event(
        EventSpec(FormatKind.DOUBLE_ROUND_ROBIN, duplicate=DuplicateOptions(DuplicateMode.TABLES)),
        [Entrant(f"e{i}", i) for i in range(1, 6)],
    )
    rnd = random.Random(4)
    results = []
    seatings: Counter[tuple[str, str]] = Counter()
    nets: Counter[str] = Counter()
    for r in range(1, event.total_rounds() + 1):
        for pairing in event.pairings(r, results):
            if pairing.is_bye:
                results.append(pairing.bye_result())
                continue
            a, b = event.tables(pairing)
            seatings.update([a.sides, b.sides])
            deals = rnd.randrange(3, 8)
            scores = [
                DealScore(t.key, k, (rnd.randrange(5), rnd.randrange(5)))
                for t in (a, b)
                for k in range(deals)
            ]
            cmp = compare_pair((a, b), scores)
            assert [d.deal for d in cmp.deals] == list(range(deals)) and cmp.unmatched == ()
            nets[cmp.a] += cmp.net
            nets[cmp.b] -= cmp.net
            results.append(cmp.result(pairing))
    # Each pair meets twice and each meeting seats them both ways: every ordered seating twice.
    assert len(seatings) == 20 and set(seatings.values()) == {2}
    table = standings(event.entrants, results, tie_breaks=event.spec.tie_breaks)
    assert {s.entrant_id: s.points_for - s.points_against for s in table} == dict(nets)
