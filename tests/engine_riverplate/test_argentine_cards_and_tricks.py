"""Argentine truco (seeds 002 and 003): cards, the deal, mano, tricks and every parda case.

Hands are chosen without flor (never three cards of one suit) unless a test is about flor.
"""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import EventKind, HandStarted, IllegalActionError, deal, get_rules, new_match
from truco_engine.cards import SPANISH_40
from truco_engine.ranking import strength_table

# 003: "Every one of the 40 cards falls into one of 14 strength tiers, from strongest to weakest"
TIERS_003 = [
    ["1e"],
    ["1b"],
    ["7e"],
    ["7o"],
    ["3e", "3b", "3c", "3o"],
    ["2e", "2b", "2c", "2o"],
    ["1c", "1o"],
    ["12e", "12b", "12c", "12o"],
    ["11e", "11b", "11c", "11o"],
    ["10e", "10b", "10c", "10o"],
    ["7b", "7c"],
    ["6e", "6b", "6c", "6o"],
    ["5e", "5b", "5c", "5o"],
    ["4e", "4b", "4c", "4o"],
]


# ----------------------------------------------------------------------- the deck
def test_forty_cards_no_eights_nines():
    """002 rule 1: "Truco uses forty cards: no eights, nines or tens" (of the French deck;
    the Spanish deck has 1–7, 10, 11, 12)."""
    r = get_rules("argentine")
    assert r.deck_cards == SPANISH_40
    assert len(r.deck_cards) == 40
    assert not any(c[:-1] in ("8", "9") for c in r.deck_cards)


def test_fourteen_strength_tiers_of_003():
    """003 "The ranking isn't sequential": the 14 tiers, equal within a tier."""
    table = strength_table(get_rules("argentine"), None)
    assert sorted(c for tier in TIERS_003 for c in tier) == sorted(SPANISH_40)
    for i, tier in enumerate(TIERS_003):
        assert len({table[c] for c in tier}) == 1, tier
        for lower in TIERS_003[i + 1 :]:
            assert table[tier[0]] > table[lower[0]]


def test_card_order_of_002_matches_003():
    """002 rule 3: ace of spades, ace of clubs, seven of spades, seven of diamonds (oros),
    threes, twos, the other two aces, kings, queens, jacks, the other two sevens, sixes,
    fives, fours."""
    table = strength_table(get_rules("argentine"), None)
    seq = ["1e", "1b", "7e", "7o", "3c", "2c", "1c", "12c", "11c", "10c", "7c", "6c", "5c", "4c"]
    values = [table[c] for c in seq]
    assert values == sorted(values, reverse=True) and len(set(values)) == 14


# ------------------------------------------------------------------ deal and mano
def test_first_dealer_is_last_seat_and_mano_is_next():
    """002 rule 2: "The player after the dealer is the mano: they lead first"."""
    for n in (2, 3, 4, 6):
        s = new_match(get_rules(f"argentine-{n}p"))
        assert s.dealer == n - 1
        s, ev = deal(s, list(s.rules.deck_cards))
        assert s.hand is not None and s.hand.mano == 0 and s.hand.turn == 0
        assert isinstance(ev[0].payload, HandStarted) and ev[0].payload.mano == 0


def test_deal_one_card_at_a_time_from_the_mano():
    """Dealing: one card at a time in play order starting with the mano, three rounds."""
    s = new_match(get_rules("argentine-4p"))
    deck = list(SPANISH_40)
    s, _ = deal(s, deck)
    assert s.hand is not None
    for seat in range(4):
        assert s.hand.cards[seat] == [deck[seat], deck[4 + seat], deck[8 + seat]]


def test_everyone_gets_three_cards():
    """002 rule 2: "Everyone gets three cards"."""
    t = Table("argentine-6p").deal()
    assert [len(c) for c in t.hand.cards] == [3] * 6


def test_mano_alternates_every_round():
    """003: "Mano alternates every round"."""
    t = Table("argentine").deal({0: ["4e", "5b", "6c"], 1: ["4b", "5c", "6o"]})
    assert t.hand.mano == 0
    t.play("0 fold")
    t.deal({0: ["4e", "5b", "6c"], 1: ["4b", "5c", "6o"]})
    assert t.hand.mano == 1 and t.turn() == 1


# ------------------------------------------------------------------------- tricks
def test_strongest_card_wins_the_trick_and_leads_next():
    """002 rule 4: "Each trick is won by the strongest card, and the winner leads the next
    one"; suits don't matter for following (any card may be played)."""
    t = Table("argentine").deal({0: ["4e", "1o", "6c"], 1: ["1e", "5c", "6o"]})
    assert set(t.legal(0)) >= {"play 4e", "play 1o", "play 6c"}
    t.play("0 play 4e", "1 play 1e")
    assert t.hand.tricks[0].winner == 1
    assert t.turn() == 1


def test_two_tricks_win_the_hand_third_not_played():
    """002 rule 4 "Two tricks win the hand"; 003: "Win the first two tricks outright and the
    round is over immediately — the third trick is never played"."""
    t = Table("argentine").deal({0: ["1e", "1b", "4o"], 1: ["4e", "5b", "6c"]})
    t.play("0 play 1e", "1 play 4e", "0 play 1b", "1 play 5b")
    assert t.ended() == {"winner_team": 0, "points": 1, "reason": "tricks"}
    assert len(t.hand.tricks) == 2
    assert t.scores == [1, 0]


def test_a_hand_is_worth_one_point():
    """002 rule 5: "A hand is worth 1 point"."""
    t = Table("argentine").deal({0: ["4e", "5b", "6c"], 1: ["1e", "1b", "4o"]})
    t.play("0 play 4e", "1 play 1e", "1 play 1b", "0 play 5b")
    assert t.ended()["points"] == 1 and t.scores == [0, 1]


def test_same_tier_cards_tie_a_parda():
    """003: "If both players play a card from the same strength tier, that trick is a parda"."""
    t = Table("argentine").deal({0: ["3e", "1b", "4o"], 1: ["3o", "4c", "5c"]})
    t.play("0 play 3e", "1 play 3o")
    assert t.hand.tricks[0].tied


def test_partners_equal_cards_are_not_a_parda():
    """Four players: a trick is tied only when the strongest cards belong to both sides."""
    t = Table("argentine-4p").deal(
        {0: ["3e", "4o", "5o"], 1: ["4b", "6o", "5e"], 2: ["3b", "6b", "7c"], 3: ["5c", "6c", "12o"]}
    )
    t.play("0 play 3e", "1 play 4b", "2 play 3b", "3 play 5c")
    trick = t.hand.tricks[0]
    assert not trick.tied and trick.side == 0


# ------------------------------------------------------------ parda cases of 003
def test_parda_win_one_then_tie_the_other_wins():
    """003: "Win one trick and tie the other (in either order) and you take the round
    outright" — won first, tied second."""
    t = Table("argentine").deal({0: ["1e", "3b", "4o"], 1: ["4e", "3c", "5b"]})
    t.play("0 play 1e", "1 play 4e", "0 play 3b", "1 play 3c")
    assert t.ended()["winner_team"] == 0 and len(t.hand.tricks) == 2


@pytest.mark.parametrize(("second", "winner"), [("4c", 0), ("1e", 1)])
def test_parda_tie_first_then_the_second_decides(second, winner):
    """003: tied first, won second (by either player) takes the round; 002 rule 4: "the hand
    goes to whoever won the first trick that didn't tie"."""
    t = Table("argentine").deal({0: ["3e", "1b", "4o"], 1: ["3b", second, "5c"]})
    t.play("0 play 3e", "1 play 3b")
    assert t.turn() == 0  # lead after a tie: the tying seat nearest the mano
    t.play("0 play 1b", f"1 play {second}")
    assert t.ended()["winner_team"] == winner and len(t.hand.tricks) == 2


@pytest.mark.parametrize(("third0", "third1", "winner"), [("2o", "3c", 1), ("3o", "2c", 0)])
def test_parda_split_one_one_third_decides(third0, third1, winner):
    """003: "Split the first two tricks 1–1 and the third trick decides the round"."""
    t = Table("argentine").deal({0: ["1e", "4b", third0], 1: ["5e", "1b", third1]})
    t.play("0 play 1e", "1 play 5e", "0 play 4b", "1 play 1b", f"1 play {third1}", f"0 play {third0}")
    assert t.ended()["winner_team"] == winner and len(t.hand.tricks) == 3


@pytest.mark.parametrize("first_winner", [0, 1])
def test_parda_split_then_third_tied_goes_to_first_trick_winner(first_winner):
    """003: "If the third trick is also a parda, whoever won the very first trick takes the
    round"."""
    if first_winner == 0:
        t = Table("argentine").deal({0: ["1e", "4b", "2o"], 1: ["5e", "1b", "2c"]})
        t.play("0 play 1e", "1 play 5e", "0 play 4b", "1 play 1b", "1 play 2c", "0 play 2o")
    else:
        t = Table("argentine").deal({0: ["5e", "1b", "2o"], 1: ["1e", "4b", "2c"]})
        t.play("0 play 5e", "1 play 1e", "1 play 4b", "0 play 1b", "0 play 2o", "1 play 2c")
    assert t.ended()["winner_team"] == first_winner


@pytest.mark.parametrize(("last0", "last1", "winner"), [("1e", "4o", 0), ("4o", "1e", 1)])
def test_parda_first_two_tied_third_decides(last0, last1, winner):
    """003: "Tie both of the first two tricks and the third trick decides the round"."""
    t = Table("argentine").deal({0: ["3e", "2b", last0], 1: ["3b", "2c", last1]})
    t.play("0 play 3e", "1 play 3b", "0 play 2b", "1 play 2c", f"0 play {last0}", f"1 play {last1}")
    assert t.ended() == {"winner_team": winner, "points": 1, "reason": "tricks"}


@pytest.mark.parametrize("first_dealer", [1, 0])
def test_parda_all_three_tied_mano_wins(first_dealer):
    """002 rule 4 "if all three tie, the mano's side wins"; 003 "If every trick in the round
    ties, the Mano wins by default" (checked with either seat as mano)."""
    t = Table("argentine", first_dealer=first_dealer)
    mano = (first_dealer + 1) % 2
    other = 1 - mano
    t.deal({mano: ["3e", "2b", "6o"], other: ["3b", "2c", "6c"]})
    a, b = ("3e", "2b", "6o"), ("3b", "2c", "6c")
    for x, y in zip(a, b, strict=True):
        t.play(f"{mano} play {x}", f"{other} play {y}")
    assert t.ended() == {"winner_team": mano, "points": 1, "reason": "all_tied_mano"}


def test_rules_defaults_for_parda():
    r = get_rules("argentine")
    assert r.all_tricks_tied == "mano" and r.lead_after_tie == "nearest_to_mano"


def test_cannot_play_a_card_not_in_hand():
    t = Table("argentine").deal({0: ["4e", "5b", "6c"], 1: ["4b", "5c", "6o"]})
    with pytest.raises(IllegalActionError):
        t.play("0 play 1e")
    assert t.of(EventKind.CARD_PLAYED) == []
