"""Truco mineiro and manilha velha (seed 000, "Common variations").

"Truco mineiro: there is no turn-up card. The manilhas are always the same, in this order of
strength: 4 of clubs (zap), 7 of hearts, ace of spades (espadilha) and 7 of diamonds. In many
rule sets, a plain hand is worth 2 points and truco is worth 4. With that count, a team on 10
points plays the hand of ten, worth 4. The value of the next raises changes from one rule set
to another, and some tables count 1 and 3, as in paulista. Agree first."

"Manilha velha: truco paulista played with the fixed manilhas of truco mineiro, with no
turn-up card."
"""

from __future__ import annotations

import pytest

from tests.engine.helpers import Table
from truco_engine import EventKind, IllegalActionError, get_rules
from truco_engine.cards import FRENCH_RANKS
from truco_engine.ranking import strength_table

FIXED = ["4C", "7H", "AS", "7D"]


def finish_hand(t: Table) -> None:
    while t.state.phase == "play":
        legal = t.legal()
        t.act(t.turn(), "accept" if "accept" in legal else legal[0])


@pytest.mark.parametrize("preset", ["mineiro", "manilha-velha"])
def test_fixed_manilhas_zap_7H_AS_7D(preset):
    """ "The manilhas are always the same, in this order of strength: 4 of clubs (zap), 7 of
    hearts, ace of spades (espadilha) and 7 of diamonds.\""""
    t = strength_table(get_rules(preset), None)
    assert t["4C"] > t["7H"] > t["AS"] > t["7D"]
    best_plain = max(v for c, v in t.items() if c not in FIXED)
    assert t["7D"] > best_plain == t["3C"]


@pytest.mark.parametrize("preset", ["mineiro", "manilha-velha"])
def test_fixed_manilhas_other_cards_of_those_ranks_stay_plain(preset):
    """Only those four cards are manilhas: the other 4s stay the weakest cards, the other 7s
    and aces keep their plain rank, and equal plain ranks tie."""
    t = strength_table(get_rules(preset), None)
    for r in FRENCH_RANKS:
        plain = [t[r + s] for s in "CHSD" if r + s not in FIXED]
        assert len(set(plain)) == 1
    assert t["4H"] == t["4S"] == t["4D"] == min(t.values())
    assert t["AC"] == t["AH"] == t["AD"] > t["KC"]


@pytest.mark.parametrize("preset", ["mineiro", "manilha-velha"])
def test_no_turn_up_card(preset):
    """ "There is no turn-up card." The deal turns nothing up and the zap beats everything
    whatever the deck order."""
    t = Table(f"{preset}-2p")
    ev = t.deal({0: ["7D", "5C", "6C"], 1: ["4C", "3C", "3H"]})
    assert t.hand.turn_up is None
    assert t.of(EventKind.HAND_STARTED, ev)[0]["turn_up"] is None
    assert t.obs(0).turn_up is None
    t.play("0 play 7D", "1 play 4C", "1 play 3C", "0 play 5C")
    assert t.hand_end()["winner_team"] == 1


def test_mineiro_in_play_zap_beats_7_of_hearts_beats_espadilha():
    """The fixed order decides tricks between manilhas (they never tie)."""
    t = Table("mineiro-4p")
    t.deal({0: ["AS", "5C", "6C"], 1: ["7H", "5H", "6H"], 2: ["7D", "5S", "6S"], 3: ["4C", "5D", "6D"]})
    t.play("0 play AS", "1 play 7H", "2 play 7D", "3 play 4C")
    assert (t.hand.tricks[0].winner, t.hand.tricks[0].side) == (3, 1)


def test_mineiro_plain_hand_is_worth_2():
    """ "In many rule sets, a plain hand is worth 2 points [...]\""""
    t = Table("mineiro-2p")
    t.deal({0: ["4C", "7H", "AS"], 1: ["5C", "5H", "5S"]})
    assert t.obs(0).hand_value == 2
    finish_hand(t)
    assert t.hand_end() == {"winner_team": 0, "points": 2, "reason": "tricks"}


@pytest.mark.parametrize(("raises", "value"), [(1, 4), (2, 6), (3, 10), (4, 12)])
def test_mineiro_truco_is_worth_4_and_the_ladder(raises, value):
    """ "[...] and truco is worth 4." The next raises (six, ten, twelve) follow miniTruco's
    ladder 4 → 6 → 10 → 12 (research notes); "The value of the next raises changes from one
    rule set to another" — override ``truco_ladder``."""
    t = Table("mineiro-2p", target_points=30)
    t.deal({0: ["4C", "7H", "AS"], 1: ["5C", "5H", "5S"]})
    seat = 0
    for _ in range(raises):
        t.act(seat, "truco")
        seat = 1 - seat
    names = [c["name"] for c in t.of(EventKind.CALL_MADE)]
    assert names == ["truco", "six", "ten", "twelve"][:raises]
    t.act(seat, "accept")
    finish_hand(t)
    assert t.hand_end()["points"] == value


@pytest.mark.parametrize(("raises", "points"), [(1, 2), (2, 4), (3, 6), (4, 10)])
def test_mineiro_decline_gives_up_the_value_before_the_raise(raises, points):
    """Rule 11 with the mineiro count: declining truco gives 2, six gives 4, ten gives 6,
    twelve gives 10."""
    t = Table("mineiro-2p")
    t.deal()
    seat = 0
    for _ in range(raises):
        t.act(seat, "truco")
        seat = 1 - seat
    t.act(seat, "decline")
    assert t.hand_end() == {"winner_team": 1 - seat, "points": points, "reason": "declined"}


def test_mineiro_hand_of_ten_worth_4():
    """ "With that count, a team on 10 points plays the hand of ten, worth 4.\""""
    t = Table("mineiro-4p").set(scores=[4, 10])
    t.deal({1: ["4C", "7H", "AS"]})
    assert t.hand.special == "eleven" and t.turn() == 1
    assert t.obs(1).revealed == {3: tuple(t.hand.cards[3])}
    assert t.obs(0).revealed == {}
    t.act(1, "accept")
    assert t.hand.value == 4
    assert "truco" not in t.legal()
    finish_hand(t)
    assert t.hand_end()["points"] == 4 and t.state.winner == 1


def test_mineiro_hand_of_ten_refused_gives_2():
    """The hand of ten given up: the other side scores 2 (miniTruco, research notes)."""
    t = Table("mineiro-2p").set(scores=[10, 6])
    t.deal()
    t.act(0, "decline")
    assert t.hand_end() == {"winner_team": 1, "points": 2, "reason": "eleven_refused"}
    assert t.state.scores == [10, 8]


def test_mineiro_hand_of_ten_no_truco():
    """Rule 13 applies to the hand of ten: nobody calls truco."""
    t = Table("mineiro-2p").set(scores=[10, 6])
    t.deal()
    t.act(0, "accept")
    with pytest.raises(IllegalActionError, match="hand of eleven"):
        t.act(0, "truco")


def test_mineiro_iron_hand_at_ten_ten():
    """Rule 14 with the mineiro count: both sides on 10 play blind, the winner takes the
    game."""
    t = Table("mineiro-2p").set(scores=[10, 10])
    t.deal({0: ["4C", "7H", "AS"], 1: ["5C", "5H", "5S"]})
    assert t.hand.special == "iron" and t.legal(0) == ["play #0", "play #1", "play #2"]
    finish_hand(t)
    assert t.state.winner == 0 and t.state.scores[0] >= 12


def test_mineiro_reaches_ten_by_legal_play():
    """Five plain hands of 2 points reach 10: the sixth hand is the hand of ten."""
    t = Table("mineiro-2p")
    for _ in range(5):
        t.deal({0: ["4C", "7H", "AS"], 1: ["5C", "5H", "5S"]})
        finish_hand(t)
    assert t.state.scores == [10, 0]
    t.deal()
    assert t.hand.special == "eleven" and t.obs(0).pending.value_if_declined == 2


def test_mineiro_can_count_like_paulista():
    """ "[...] some tables count 1 and 3, as in paulista. Agree first." — overrides."""
    rules = get_rules(
        "mineiro-2p",
        base_value=1,
        truco_ladder=[3, 6, 9, 12],
        truco_call_names=["truco", "six", "nine", "twelve"],
        hand_of_eleven_at=11,
        hand_of_eleven_value=3,
        hand_of_eleven_refusal=1,
    )
    t = Table(rules)
    t.deal({0: ["4C", "7H", "AS"], 1: ["5C", "5H", "5S"]})
    t.play("0 truco", "1 accept")
    finish_hand(t)
    assert t.state.scores == [3, 0]


def test_manilha_velha_counts_like_paulista():
    """Manilha velha is "truco paulista played with the fixed manilhas": 1 point, truco 3,
    hand of eleven at 11 worth 3."""
    rules = get_rules("manilha-velha-4p")
    assert (rules.base_value, rules.truco_ladder, rules.hand_of_eleven_at) == (1, (3, 6, 9, 12), 11)
    t = Table(rules)
    t.deal({0: ["4C", "7H", "AS"]})
    t.play("0 truco", "1 accept")
    finish_hand(t)
    assert t.hand_end()["points"] == 3
    t.set(scores=[11, 3]).deal()
    assert t.hand.special == "eleven"


@pytest.mark.parametrize("alias", ["truco-mineiro", "mineiro", "TRUCO_MINEIRO-2p"])
def test_mineiro_aliases(alias):
    """Preset aliases resolve to ``mineiro``."""
    assert get_rules(alias).name == "mineiro"


@pytest.mark.parametrize("alias", ["manilha_velha", "velha", "manilhavelha-4p"])
def test_manilha_velha_aliases(alias):
    assert get_rules(alias).name == "manilha-velha"
