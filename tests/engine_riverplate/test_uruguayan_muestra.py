"""Uruguayan truco: the muestra and its piezas (seed 001: "a versão uruguaia do jogo usa uma
'Muestra' de cada mão ... 'Piezas': 2, 4, 5, Cavaleiro ... e o Valete ... se qualquer jogador
tem o Rei do mesmo naipe que a 'Muestra' e a 'Muestra' é um 'Pieza', o rei torna-se essa
carta")."""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import EventKind, get_rules
from truco_engine.ranking import envido_points_for, flor_points_for, has_flor_for, strength_table
from truco_engine.ranking_spanish import piezas

R = get_rules("uruguayan")


def order(muestra: str, cards: list[str]) -> list[int]:
    table = strength_table(R, muestra)
    return [table[c] for c in cards]


def test_piezas_of_the_muestra_suit_above_every_fixed_card():
    """Piezas 2 > 4 > 5 > 11 > 10 of the muestra's suit, then 1e > 1b > 7e > 7o, then the rest."""
    seq = ["2o", "4o", "5o", "11o", "10o", "1e", "1b", "7e", "7o", "3c", "2c", "1c", "12c", "11c"]
    values = order("3o", seq)
    assert values == sorted(values, reverse=True) and len(set(values)) == len(values)
    table = strength_table(R, "3o")
    assert table["2o"] == max(table.values())


def test_other_cards_of_pieza_ranks_are_plain():
    """Only the muestra's suit makes piezas (treating every card of a number as a pieza is a
    known mistake: research/truco-engines.md)."""
    table = strength_table(R, "3o")
    assert table["2e"] == table["2c"] < table["1e"]
    assert table["4e"] < table["5e"] < table["6e"]


@pytest.mark.parametrize(
    ("muestra", "stand_in"), [("2o", "2"), ("4o", "4"), ("5o", "5"), ("11o", "11"), ("10o", "10")]
)
def test_twelve_of_the_suit_stands_in_when_the_muestra_is_a_pieza(muestra, stand_in):
    pz = piezas(muestra)
    assert pz["12o"] == stand_in and muestra not in pz and len(pz) == 5
    table = strength_table(R, muestra)
    ranks = [r for r in ("2", "4", "5", "11", "10") if r != muestra[:-1]]
    # the 12 takes exactly the place of the turned-up pieza
    expected = sorted([*(r + "o" for r in ranks), "12o"], key=lambda c: table[c], reverse=True)
    names = [pz[c] for c in expected]
    assert names == ["2", "4", "5", "11", "10"]


def test_twelve_is_plain_when_the_muestra_is_not_a_pieza():
    table = strength_table(R, "3o")
    assert table["12o"] == table["12e"]


@pytest.mark.parametrize(
    ("cards", "muestra", "points"),
    [
        (["2o", "7e", "1b"], "3o", 37),  # 2 = 30, plus the best other card
        (["4o", "6e", "12b"], "3o", 35),  # 4 = 29
        (["5o", "3e", "1b"], "3o", 31),  # 5 = 28
        (["11o", "12e", "10b"], "3o", 27),  # 11 = 27
        (["10o", "1e", "4c"], "3o", 31),  # 10 = 27
        (["12o", "6e", "1b"], "4o", 35),  # the 12 stands in for the 4: 29
        (["12o", "6e", "1b"], "3o", 6),  # a plain 12 counts 0
        (["7e", "6e", "1b"], "3o", 33),  # no pieza: the standard count
        (["2e", "4e", "1b"], "3o", 26),  # 2 and 4 of another suit are plain
    ],
)
def test_envido_values_of_piezas(cards, muestra, points):
    """2: 30, 4: 29, 5: 28, 11 and 10: 27, plus the best other card."""
    assert envido_points_for(R, muestra, cards) == points


@pytest.mark.parametrize(
    ("cards", "muestra", "flor", "points"),
    [
        (["7e", "6e", "5e"], "3o", True, 38),
        (["2o", "5e", "6e"], "3o", True, 41),  # a pieza and two of a suit
        (["2o", "4o", "7c"], "3o", True, 46),  # two piezas and any card: 30 + 9 + 7
        (["2o", "5e", "6c"], "3o", False, None),
        (["12o", "5e", "6e"], "3o", False, None),  # a plain 12 is not wild
        (["12o", "5e", "6e"], "2o", True, 41),  # the 12 standing in for the 2 is
    ],
)
def test_flor_with_piezas(cards, muestra, flor, points):
    assert has_flor_for(R, muestra, cards) is flor
    if flor:
        assert flor_points_for(R, muestra, cards) == points


def test_muestra_is_turned_up_after_the_deal_and_public():
    t = Table("uruguayan").deal({0: ["1e", "6c", "4b"], 1: ["10o", "7c", "5b"]}, turn_up="3o")
    assert t.hand.turn_up == "3o"
    assert t.of(EventKind.HAND_STARTED)[0]["turn_up"] == "3o"
    assert t.obs(1).turn_up == "3o" and t.obs(None).turn_up == "3o"


def test_a_pieza_beats_the_ancho_de_espadas():
    t = Table("uruguayan").deal({0: ["1e", "6c", "4b"], 1: ["10o", "7c", "5b"]}, turn_up="3o")
    t.play("0 play 1e", "1 play 10o")
    assert t.hand.tricks[0].winner == 1


def test_envido_with_a_pieza_is_played_and_won():
    t = Table("uruguayan").deal({0: ["7e", "6e", "4b"], 1: ["2o", "7c", "5b"]}, turn_up="3o")
    t.play("0 envido", "1 accept")
    decl = t.of(EventKind.POINTS_DECLARED)
    assert decl[0]["points"] == 33 and decl[1]["points"] == 37
    assert t.scores == [0, 2]


def test_flor_with_a_pieza_is_mandatory():
    t = Table("uruguayan").deal({0: ["2o", "5e", "6e"], 1: ["7c", "4b", "5b"]}, turn_up="3o")
    assert t.legal(0) == ["flor"]
    t.play("0 flor")
    assert t.scores == [3, 0]


def test_uruguayan_games_to_30_and_40():
    assert R.target_points == 30 and R.halves and R.ranking == "muestra" and R.flor
    assert get_rules("uruguayan-40").target_points == 40
    assert get_rules("uruguayo").name == "uruguayan"


def test_muestra_twelve_players_fit_the_deck():
    """12 players need 36 cards plus the muestra: 37 of 40."""
    t = Table("uruguayan-12p").deal()
    assert t.hand.turn_up is not None and sum(len(c) for c in t.hand.cards) == 36
