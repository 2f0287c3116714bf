"""Larger Brazilian tables (seed 001): 8, 10 and 12 players, extra manilhas.

Seed 001 ranking table columns: "Douradona 10 a 12 pessoas (quíntuplo ou sêxtuplo)", "Irra
Dourada 8 pessoas (quadra)", "Truco mineiro 6 pessoas (trio)", "Truco paulista 2 a 4 pessoas
(par)". "Pode-se jogar com 2, 4, 6, 8, 10 ou 12 pessoas, sempre divididos em dois times."
See docs/rules/brazilian.md for the reading of the garbled table.
"""

from __future__ import annotations

import pytest

from tests.engine.helpers import Table
from truco_engine import InvalidRulesError, get_rules
from truco_engine.ranking import MINEIRO_MANILHAS, strength_table

EXPECTED = {
    "mineiro-trio": (6, ["QD", "JC", "5S"]),
    "irra-dourada": (8, ["4S", "KD", "QD", "JC", "5S"]),
    "douradona": (12, ["KC", "7C", "KD", "JD", "2D", "AD", "QD", "JC", "2C", "AC", "5C", "4S"]),
}


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_extra_manilhas_rank_above_the_fixed_four_in_order(preset):
    """ "Manilha: 4 de espadas (Irra) Rei de ouros (Douradão) Dama de ouros (Dourada) Valete
    de paus (Caculo) 5 De espadas (Ferrão) 4 de paus (Zap) 7 de copas (7 copas) Ás de
    espadas (Espadilha) 7 de ouro (7 ouros)" (Irra Dourada); the other columns alike."""
    players, extra = EXPECTED[preset]
    rules = get_rules(preset)
    assert rules.players == players and list(rules.extra_manilhas) == extra
    assert rules.ranking == "fixed_mineiro" and rules.base_value == 2
    t = strength_table(rules, None)
    order = [*extra, *MINEIRO_MANILHAS]
    values = [t[c] for c in order]
    assert values == sorted(values, reverse=True) and len(set(values)) == len(values)
    assert t["7D"] > max(v for c, v in t.items() if c not in order)


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_other_cards_of_extra_manilha_ranks_stay_plain(preset):
    """ "Letras (ou figuras): Reis (todos menos o de ouros) Valetes (todos menos o de paus)
    Damas (todos menos a de ouros)" — only the named cards leave the plain ranks."""
    rules = get_rules(preset)
    t = strength_table(rules, None)
    special = {*rules.extra_manilhas, *MINEIRO_MANILHAS}
    for r in ("Q", "J", "K", "5", "4", "2", "A", "7"):
        plain = {t[r + s] for s in "CHSD" if r + s not in special}
        assert len(plain) <= 1


def test_mineiro_trio_six_players_teams_of_three():
    """Truco mineiro 6 pessoas (trio): two teams of three, alternating; Dourada beats zap."""
    t = Table("mineiro-trio")
    t.deal(
        {
            0: ["4C", "5C", "6C"],
            1: ["QD", "5H", "6H"],
            2: ["7H", "5D", "6D"],
            3: ["5S", "4H", "6S"],
            4: ["AS", "4D", "7S"],
            5: ["JC", "KC", "KH"],
        }
    )
    assert t.hand.side_of == (0, 1, 0, 1, 0, 1) and t.hand.turn_up is None
    t.play("0 play 4C", "1 play QD", "2 play 7H", "3 play 5S", "4 play AS", "5 play JC")
    assert (t.hand.tricks[0].winner, t.hand.tricks[0].side) == (1, 1)


def test_irra_dourada_eight_players_teams_of_four():
    """Irra Dourada, 8 players (quadra): teams of four alternate; Irra (4♠) is the top."""
    t = Table("irra-dourada")
    t.deal({7: ["4S", "5C", "6C"], 0: ["KD", "5H", "6H"]})
    assert t.hand.side_of == (0, 1) * 4
    for seat in range(8):
        t.act(seat, f"play {t.hand.cards[seat][0]}")
    assert (t.hand.tricks[0].winner, t.hand.tricks[0].side) == (7, 1)


@pytest.mark.parametrize("players", [10, 12])
def test_douradona_ten_or_twelve_players_deals_all_but_a_few_cards(players):
    """Douradona, 10 to 12 players: 3 cards each, no vira (30 or 36 of 40 cards); the king
    of clubs is the top card."""
    t = Table(get_rules("douradona", players=players))
    t.deal({players - 1: ["KC", "4C", "4H"], 0: ["7C", "5H", "6H"]})
    assert sum(len(c) for c in t.hand.cards) == 3 * players and t.hand.turn_up is None
    for seat in range(players):
        t.act(seat, f"play {t.hand.cards[seat][0]}")
    assert t.hand.tricks[0].winner == players - 1


@pytest.mark.parametrize(
    ("preset", "players"),
    [("paulista", 8), ("paulista", 10), ("paulista", 12), ("mineiro", 12), ("manilha-velha", 10)],
)
def test_teams_of_four_five_six_are_allowed_with_enough_cards(preset, players):
    """ "Pode-se jogar com 2, 4, 6, 8, 10 ou 12 pessoas" — 12 players with a vira need
    3 × 12 + 1 = 37 ≤ 40 cards."""
    rules = get_rules(preset, players=players)
    t = Table(rules)
    t.deal()
    assert len(t.hand.order) == players


def test_not_enough_cards_names_players():
    """A clean deck (24 cards) cannot serve 10 players."""
    with pytest.raises(InvalidRulesError) as err:
        get_rules("douradona", players=10, clean_deck=True)
    assert err.value.field == "players" and "need 30 cards" in str(err.value)


def test_clean_deck_keeps_extra_manilhas():
    """Baralho limpo removes plain 4–7 but keeps the manilhas, extra ones included."""
    rules = get_rules("mineiro-trio", clean_deck=True)
    assert "5S" in rules.deck_cards and "5C" not in rules.deck_cards and "4C" in rules.deck_cards


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("irra", "irra-dourada"),
        ("quadra", "irra-dourada"),
        ("truco-douradona", "douradona"),
        ("truco-mineiro-trio", "mineiro-trio"),
        ("douradona-10p", "douradona"),
    ],
)
def test_large_table_aliases(alias, name):
    assert get_rules(alias).name == name


def test_mineiro_6p_stays_plain_mineiro():
    """``mineiro-6p`` is plain mineiro with six seats (seed 000: "The rules of the hand are
    the same"); the seed 001 trio with its three extra manilhas is ``mineiro-trio``."""
    assert get_rules("mineiro-6p").extra_manilhas == ()
