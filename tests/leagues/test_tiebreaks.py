"""Tie-breaks: the worked examples of docs/leagues.md, checked by hand."""

from __future__ import annotations

import pytest

from truco_server.leagues import (
    Entrant,
    InvalidOptionError,
    Pairing,
    Result,
    Scoring,
    TieBreak,
    parse_tie_breaks,
    standings,
)

# Example 1 (docs/leagues.md): a round robin of four, every match to 30.
#   A-B 30-28, C-A 30-10, A-D 30-15, B-C 30-29, B-D 30-5, D-C 30-27
ROUND_ROBIN = [Entrant("A", 1), Entrant("B", 2), Entrant("C", 3), Entrant("D", 4)]
RR_RESULTS = [
    Pairing(1, 1, "A", "B").result("A", (30, 28)),
    Pairing(1, 2, "C", "D").result("D", (27, 30)),
    Pairing(2, 1, "C", "A").result("C", (30, 10)),
    Pairing(2, 2, "B", "D").result("B", (30, 5)),
    Pairing(3, 1, "A", "D").result("A", (30, 15)),
    Pairing(3, 2, "B", "C").result("B", (30, 29)),
]

ALL = (
    TieBreak.BUCHHOLZ,
    TieBreak.MEDIAN_BUCHHOLZ,
    TieBreak.SONNEBORN_BERGER,
    TieBreak.HEAD_TO_HEAD,
    TieBreak.POINTS_DIFFERENCE,
)


def test_round_robin_example_values() -> None:
    table = {s.entrant_id: s for s in standings(ROUND_ROBIN, RR_RESULTS, tie_breaks=ALL)}
    # score, (Buchholz, median Buchholz, Sonneborn-Berger, head-to-head, points difference).
    # Sonneborn-Berger already split both ties, so head-to-head finds nobody tied: 0.
    assert (table["A"].score, table["A"].tie_breaks) == (2, (4, 1, 3, 0, -3))
    assert (table["B"].score, table["B"].tie_breaks) == (2, (4, 1, 2, 0, 24))
    assert (table["C"].score, table["C"].tie_breaks) == (1, (5, 2, 2, 0, 16))
    assert (table["D"].score, table["D"].tie_breaks) == (1, (5, 2, 1, 0, -37))
    assert (table["A"].points_for, table["A"].points_against) == (70, 73)


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        (ALL, ["A", "B", "C", "D"]),  # Buchholz and median tie; Sonneborn-Berger decides
        ((TieBreak.POINTS_DIFFERENCE,), ["B", "A", "C", "D"]),
        ((TieBreak.HEAD_TO_HEAD,), ["A", "B", "D", "C"]),
        ((TieBreak.BUCHHOLZ,), ["A", "B", "C", "D"]),  # tied all the way: seed order
        ((), ["A", "B", "C", "D"]),
    ],
)
def test_round_robin_example_orders(order: tuple[TieBreak, ...], expected: list[str]) -> None:
    assert [s.entrant_id for s in standings(ROUND_ROBIN, RR_RESULTS, tie_breaks=order)] == expected


def test_head_to_head_first_in_the_round_robin_example() -> None:
    table = {
        s.entrant_id: s.tie_breaks[0]
        for s in standings(ROUND_ROBIN, RR_RESULTS, tie_breaks=(TieBreak.HEAD_TO_HEAD,))
    }
    assert table == {"A": 1, "B": 0, "C": 0, "D": 1}


# Example 2 (docs/leagues.md): six entrants, three Swiss rounds, no points recorded.
SWISS = [Entrant(x, i) for i, x in enumerate("ABCDEF", start=1)]
SWISS_RESULTS = [
    Pairing(1, 1, "A", "B").result("A"),
    Pairing(1, 2, "C", "D").result("C"),
    Pairing(1, 3, "E", "F").result("E"),
    Pairing(2, 1, "A", "C").result("A"),
    Pairing(2, 2, "E", "B").result("B"),
    Pairing(2, 3, "D", "F").result("D"),
    Pairing(3, 1, "A", "E").result("E"),
    Pairing(3, 2, "C", "F").result("C"),
    Pairing(3, 3, "B", "D").result("B"),
]


def test_swiss_example_values_and_order() -> None:
    order = (TieBreak.BUCHHOLZ, TieBreak.MEDIAN_BUCHHOLZ, TieBreak.SONNEBORN_BERGER, TieBreak.HEAD_TO_HEAD)
    table = standings(SWISS, SWISS_RESULTS, tie_breaks=order)
    got = {s.entrant_id: (s.score, s.tie_breaks[:3]) for s in table}
    assert got == {
        "A": (2, (6, 2, 4)),
        "B": (2, (5, 2, 3)),
        "C": (2, (3, 1, 1)),
        "D": (1, (4, 2, 0)),
        "E": (2, (4, 2, 2)),
        "F": (0, (5, 2, 0)),
    }
    assert [s.entrant_id for s in table] == ["A", "B", "E", "C", "D", "F"]
    assert [s.rank for s in table] == [1, 2, 3, 4, 5, 6]


def test_head_to_head_counts_only_games_inside_the_tied_group() -> None:
    table = standings(SWISS, SWISS_RESULTS, tie_breaks=(TieBreak.HEAD_TO_HEAD,))
    h2h = {s.entrant_id: s.tie_breaks[0] for s in table}
    # Among {A, B, C, E}: A beat B and C, lost to E; B beat E; E beat A; C none.
    assert h2h == {"A": 2, "B": 1, "C": 0, "E": 1, "D": 0, "F": 0}
    assert [s.entrant_id for s in table] == ["A", "B", "E", "C", "D", "F"]


def test_byes_draws_and_forfeits_in_the_standings() -> None:
    entrants = [Entrant("A", 1), Entrant("B", 2), Entrant("C", 3)]
    results: list[Result] = [
        Pairing(1, 1, "A", "B").result(None, (20, 20)),
        Pairing(1, 2, "C", None).bye_result(),
        Pairing(2, 1, "C", "A").result("C", forfeit=True),
        Pairing(2, 2, "B", None).bye_result(),
    ]
    table = {s.entrant_id: s for s in standings(entrants, results, Scoring(bye=0.5))}
    assert (table["A"].score, table["A"].draws, table["A"].losses) == (0.5, 1, 1)
    assert (table["B"].score, table["B"].byes) == (1.0, 1)
    assert (table["C"].score, table["C"].played, table["C"].byes) == (1.5, 1, 1)
    # Buchholz ignores byes: C's only opponent is A (0.5).
    assert table["C"].tie_breaks[0] == 0.5


def test_median_buchholz_with_fewer_than_three_opponents_is_buchholz() -> None:
    table = {s.entrant_id: s for s in standings(SWISS, SWISS_RESULTS[:6], tie_breaks=ALL)}
    assert table["A"].tie_breaks[0] == table["A"].tie_breaks[1]


def test_tie_break_names() -> None:
    assert parse_tie_breaks(["sonneborn_berger", "buchholz"]) == (
        TieBreak.SONNEBORN_BERGER,
        TieBreak.BUCHHOLZ,
    )
    with pytest.raises(InvalidOptionError, match="allowed: buchholz"):
        parse_tie_breaks(["koya"])
    with pytest.raises(InvalidOptionError, match="twice"):
        parse_tie_breaks(["buchholz", "buchholz"])
