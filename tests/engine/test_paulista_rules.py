"""One test (or more) per rule statement of the truco paulista text (seed 000).

Each docstring quotes the statement it checks. Deals are explicit deck orders
(:func:`tests.engine.helpers.deck_for`); seat 0 is the first hand's mano unless a test says
otherwise (the first dealer is the last seat).
"""

from __future__ import annotations

import itertools

import pytest

from tests.engine.helpers import Table
from tests.helpers.events import data
from truco_engine import EventKind, IllegalActionError, PlayView, get_rules
from truco_engine.cards import FRENCH_RANKS, FRENCH_SUITS
from truco_engine.ranking import manilha_rank, strength_table


def beats(rules_name: str, vira: str | None, a: str, b: str, **kw: object) -> bool:
    t = strength_table(get_rules(rules_name, **kw), vira)
    return t[a] > t[b]


def ties(rules_name: str, vira: str | None, a: str, b: str) -> bool:
    t = strength_table(get_rules(rules_name), vira)
    return t[a] == t[b]


def finish_hand(t: Table) -> None:
    """Play the hand to its end: answers accept, plays take the first card in hand."""
    while t.state.phase == "play":
        legal = t.legal()
        t.act(t.turn(), "accept" if "accept" in legal else legal[0])


# --------------------------------------------------------------------- setup and deal
def test_setup_deck_is_40_cards_without_8_9_10():
    """ "Remove the 8s, 9s, 10s and jokers from the deck. Truco paulista uses the 40 cards
    that remain.\""""
    deck = get_rules("paulista").deck_cards
    assert len(deck) == 40 and len(set(deck)) == 40
    assert not [c for c in deck if c[:-1] in ("8", "9", "10")]
    assert {c[:-1] for c in deck} == set(FRENCH_RANKS)


def test_setup_four_players_partners_sit_across():
    """ "With four players, partners sit across from each other. This way the teams take
    turns around the table.\""""
    t = Table("paulista-4p")
    t.deal()
    assert t.hand.side_of == (0, 1, 0, 1)
    assert [t.hand.side_of[s] for s in t.hand.order] == [0, 1, 0, 1]


def test_setup_six_players_two_teams_of_three_alternating():
    """ "Six-player truco: two teams of three, seated in alternating order. The rules of the
    hand are the same.\""""
    t = Table("paulista-6p")
    t.deal({0: ["4C", "4H", "4S"]}, vira="3D")
    assert t.hand.side_of == (0, 1, 0, 1, 0, 1)
    assert t.state.scores == [0, 0]
    # A truco call is answered by the next opponent; the hand is played as usual.
    t.act(0, "truco")
    assert t.turn() == 1
    t.act(1, "accept")
    finish_hand(t)
    assert t.hand_end()["winner_team"] == 0 and t.state.scores == [3, 0]


@pytest.mark.parametrize("players", [2, 4, 6])
def test_setup_deal_three_cards_each_then_the_vira(players):
    """ "One player shuffles and deals three cards to each player. [...] The dealer then
    turns one card face up in the middle of the table. This is the turn-up card, called the
    vira." Dealing is one card at a time from the mano in play order."""
    t = Table(get_rules("paulista", players=players))
    deck = list(t.rules.deck_cards)
    from truco_engine import deal

    t.state, events = deal(t.state, deck)
    n = players
    for seat in range(n):
        assert t.hand.cards[seat] == [deck[seat], deck[n + seat], deck[2 * n + seat]]
    assert t.hand.turn_up == deck[3 * n]
    started = next(e for e in events if e.kind == EventKind.HAND_STARTED)
    assert data(started)["turn_up"] == deck[3 * n]


def test_setup_first_mano_is_seat_0_and_mano_is_the_dealers_right():
    """ "The deal passes to the next player after each hand. [...] the player to the dealer's
    right leads first." Seats are numbered in play order, so the dealer's right is the next
    seat; the first dealer is the last seat, making seat 0 the first mano."""
    t = Table("paulista-4p")
    manos, dealers = [], []
    for _ in range(5):
        t.deal()
        dealers.append(t.hand.dealer)
        manos.append(t.hand.mano)
        assert t.turn() == t.hand.mano
        finish_hand(t)
    assert dealers == [3, 0, 1, 2, 3]
    assert manos == [0, 1, 2, 3, 0]


def test_setup_first_dealer_can_be_chosen():
    """The first dealer is a match parameter; the mano is always the next seat."""
    t = Table("paulista-4p", first_dealer=1)
    t.deal()
    assert (t.hand.dealer, t.hand.mano, t.hand.order) == (1, 2, (2, 3, 0, 1))


# ---------------------------------------------------------------------- the rules 1-14
@pytest.mark.parametrize(
    ("vira", "manilha"),
    [
        ("7D", "Q"),
        ("3D", "4"),
        ("5H", "6"),
        ("KS", "A"),
        ("4C", "5"),
        ("QH", "J"),
        ("JC", "K"),
        ("AD", "2"),
        ("2S", "3"),
        ("6D", "7"),
    ],
)
def test_rule_01_manilha_is_the_rank_after_the_vira(vira, manilha):
    """1. "The manilha is the rank that comes right after the turn-up card in truco order. If
    the turn-up card is a 7, the four queens are the manilhas. If it is a 3, the four 4s are
    the manilhas." (FAQ: "Turn-up 5, manilha 6. Turn-up 7, manilha queen. Turn-up king,
    manilha ace. Turn-up 3, manilha 4.")"""
    rules = get_rules("paulista")
    assert manilha_rank(rules, vira) == manilha
    table = strength_table(rules, vira)
    best_plain = max(v for c, v in table.items() if c[:-1] != manilha)
    assert all(table[manilha + s] > best_plain for s in FRENCH_SUITS)


def test_rule_01_vira_3_wraps_to_4s_in_play():
    """1. "If it is a 3, the four 4s are the manilhas." — a 4 beats a 3 in a real trick."""
    t = Table("paulista-2p")
    t.deal({0: ["4D", "5C", "5H"], 1: ["3C", "6C", "6H"]}, vira="3D")
    t.play("0 play 4D", "1 play 3C")
    assert t.trick_results() == [(0, False)]


def test_rule_02_any_card_may_be_played_no_need_to_follow_suit():
    """2. "The leader places one card face up on the table. Then each player places one card
    [...] Any card may be played: in truco you do not have to follow suit.\""""
    t = Table("paulista-2p")
    t.deal({0: ["KC", "5H", "6S"], 1: ["AD", "2H", "7S"]}, vira="4D")
    t.act(0, "play KC")
    plays = [a for a in t.legal(1) if a.startswith("play") and not a.endswith("down")]
    assert plays == ["play AD", "play 2H", "play 7S"]
    t.act(1, "play 2H")


def test_rule_03_strongest_card_wins_and_the_trick_belongs_to_the_team():
    """3. "The strongest card wins the trick. With teams, the trick belongs to that player's
    team.\""""
    t = Table("paulista-4p")
    t.deal(
        {0: ["5C", "5H", "6C"], 1: ["6H", "6S", "7C"], 2: ["3C", "7H", "7S"], 3: ["2C", "QD", "QS"]},
        vira="7D",
    )
    t.play("0 play 5C", "1 play 6H", "2 play 3C", "3 play 2C")
    trick = t.hand.tricks[0]
    assert (trick.winner, trick.side, trick.tied) == (2, 0, False)


def test_rule_04_winner_of_a_trick_leads_the_next():
    """4. "The winner of a trick leads the next one.\""""
    t = Table("paulista-4p")
    t.deal(
        {0: ["5C", "5H", "6C"], 1: ["3C", "6S", "7C"], 2: ["6H", "7H", "7S"], 3: ["2C", "QD", "QS"]},
        vira="7D",
    )
    t.play("0 play 5C", "1 play 3C", "2 play 6H", "3 play 2C")
    assert t.hand.tricks[1].leader == 1 and t.turn() == 1


def test_rule_05_two_tricks_win_and_the_third_is_not_played():
    """5. "The team that wins two tricks wins the hand. If the same team wins the first two,
    the third trick is not played.\""""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "2C", "5C"], 1: ["4H", "5H", "6H"]}, vira="7D")
    t.play("0 play 3C", "1 play 4H", "0 play 2C", "1 play 5H")
    assert len(t.hand.tricks) == 2
    assert t.hand_end() == {"winner_team": 0, "points": 1, "reason": "tricks"}
    assert t.state.scores == [1, 0] and t.state.phase == "deal"


def test_rule_05_two_of_three_tricks_win():
    """5. "The team that wins two tricks wins the hand." — after splitting the first two,
    the third decides."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "4C", "2C"], 1: ["2H", "3H", "5H"]}, vira="7D")
    t.play("0 play 3C", "1 play 2H", "0 play 4C", "1 play 3H", "1 play 5H", "0 play 2C")
    assert t.trick_results() == [(0, False), (1, False), (0, False)]
    assert t.hand_end()["winner_team"] == 0 and t.state.scores == [1, 0]


def test_rule_06_plain_cards_of_the_same_rank_tie():
    """6. "Two plain cards of the same rank tie, because suits do not count for them. If the
    strongest cards in a trick tie and belong to different teams, the trick is tied.\""""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "5C", "6C"], 1: ["3D", "5H", "6H"]}, vira="7D")
    t.play("0 play 3C", "1 play 3D")
    assert t.trick_results() == [(None, True)]
    assert all(ties("paulista", "7D", r + "C", r + s) for r in "4567JKA23" for s in "HSD")


def test_rule_06_tie_between_partners_is_won_by_their_team():
    """6. "If the strongest cards in a trick tie and belong to different teams, the trick is
    tied." — when they belong to the same team the team wins; the partner who played the
    card first wins the trick (and leads the next)."""
    t = Table("paulista-4p")
    t.deal(
        {0: ["3C", "5C", "6C"], 1: ["2H", "5H", "6H"], 2: ["3H", "5S", "6S"], 3: ["2S", "5D", "6D"]},
        vira="7D",
    )
    t.play("0 play 3C", "1 play 2H", "2 play 3H", "3 play 2S")
    trick = t.hand.tricks[0]
    assert (trick.winner, trick.side, trick.tied) == (0, 0, False)
    assert t.turn() == 0


def test_rule_06_tie_with_a_weaker_opponent_card_is_not_a_tie():
    """6. Only the strongest cards matter: a pair of equal cards below the best does not
    tie the trick."""
    t = Table("paulista-4p")
    t.deal(
        {0: ["3C", "5C", "6C"], 1: ["2H", "5H", "6H"], 2: ["2C", "5S", "6S"], 3: ["4S", "5D", "6D"]},
        vira="7D",
    )
    t.play("0 play 3C", "1 play 2H", "2 play 2C", "3 play 4S")
    assert t.trick_results() == [(0, False)]


def _two_player_hand(vira: str, p0: list[str], p1: list[str], plays: list[str], **kw: object) -> Table:
    t = Table("paulista-2p", **kw)
    t.deal({0: p0, 1: p1}, vira=vira)
    t.play(*plays)
    return t


def test_rule_07_tie_in_first_trick_second_trick_decides():
    """7. "A tie in the first trick: whoever wins the second trick wins the hand.\""""
    t = _two_player_hand(
        "7D", ["3C", "5C", "6C"], ["3H", "2H", "6H"], ["0 play 3C", "1 play 3H", "0 play 5C", "1 play 2H"]
    )
    assert t.trick_results() == [(None, True), (1, False)]
    assert t.hand_end()["winner_team"] == 1 and t.state.scores == [0, 1]
    assert len(t.hand.tricks) == 2


def test_rule_07_tie_in_second_trick_first_trick_winner_wins():
    """7. "A tie in the second or third trick: whoever won the first trick wins the hand.\""""
    t = _two_player_hand(
        "7D", ["3C", "2C", "6C"], ["4H", "2H", "6H"], ["0 play 3C", "1 play 4H", "0 play 2C", "1 play 2H"]
    )
    assert t.trick_results() == [(0, False), (None, True)]
    assert t.hand_end()["winner_team"] == 0 and len(t.hand.tricks) == 2


def test_rule_07_tie_in_third_trick_first_trick_winner_wins():
    """7. "A tie in the second or third trick: whoever won the first trick wins the hand.\""""
    t = _two_player_hand(
        "7D",
        ["5C", "2C", "6C"],
        ["4H", "3H", "6H"],
        ["0 play 5C", "1 play 4H", "0 play 2C", "1 play 3H", "1 play 6H", "0 play 6C"],
    )
    assert t.trick_results() == [(0, False), (1, False), (None, True)]
    assert t.hand_end()["winner_team"] == 0


def test_rule_07_tie_in_third_trick_first_trick_winner_wins_other_side():
    """7. "A tie in the second or third trick: whoever won the first trick wins the hand." —
    the same with the other side winning the first trick."""
    t = _two_player_hand(
        "7D",
        ["4C", "3C", "6C"],
        ["5H", "2H", "6H"],
        ["0 play 4C", "1 play 5H", "1 play 2H", "0 play 3C", "0 play 6C", "1 play 6H"],
    )
    assert t.trick_results() == [(1, False), (0, False), (None, True)]
    assert t.hand_end()["winner_team"] == 1


@pytest.mark.parametrize("winner", [0, 1])
def test_rule_07_first_two_tied_third_decides(winner):
    """7. "If the first two tricks are tied, the third one decides.\""""
    p0, p1 = ["3C", "2C", "KC"], ["3H", "2H", "5H"]
    if winner == 1:
        p0, p1 = ["3C", "2C", "5C"], ["3H", "2H", "KH"]
    t = _two_player_hand(
        "7D",
        p0,
        p1,
        ["0 play 3C", "1 play 3H", "0 play 2C", "1 play 2H", f"0 play {p0[2]}", f"1 play {p1[2]}"],
    )
    assert t.trick_results() == [(None, True), (None, True), (winner, False)]
    assert t.hand_end()["winner_team"] == winner


ALL_TIED = ["0 play 3C", "1 play 3H", "0 play 2C", "1 play 2H", "0 play KC", "1 play KH"]


def test_variation_three_tied_tricks_redeal_nobody_scores():
    """Common variations: "Three tied tricks: at some tables nobody scores and the hand is
    dealt again." (``all_tricks_tied="redeal"``, the default.) The deal passes on."""
    t = _two_player_hand("7D", ["3C", "2C", "KC"], ["3H", "2H", "KH"], ALL_TIED)
    assert t.trick_results() == [(None, True)] * 3
    assert t.hand_end() == {"winner_team": None, "points": 0, "reason": "all_tied_redeal"}
    assert t.state.scores == [0, 0] and t.state.phase == "deal"
    assert t.state.dealer == 0  # the deal passed to the next seat, as after any hand


@pytest.mark.parametrize("first_dealer", [1, 0])
def test_variation_three_tied_tricks_go_to_the_first_leaders_team(first_dealer):
    """Common variations: "At others, the hand goes to the team of the player who led
    first." (``all_tricks_tied="mano"``.)"""
    t = Table("paulista-2p", first_dealer=first_dealer, all_tricks_tied="mano")
    mano = t.state.dealer ^ 1
    hands = {mano: ["3C", "2C", "KC"], 1 - mano: ["3H", "2H", "KH"]}
    t.deal(hands, vira="7D")
    for trick in range(3):
        t.act(mano, f"play {hands[mano][trick]}")
        t.act(1 - mano, f"play {hands[1 - mano][trick]}")
    assert t.hand_end() == {"winner_team": mano, "points": 1, "reason": "all_tied_mano"}
    assert t.state.scores[mano] == 1


def test_rule_07_all_tied_with_truco_accepted_is_worth_the_hand_value():
    """Three tied tricks under ``all_tricks_tied="mano"`` pay what the hand is worth."""
    t = Table("paulista-2p", all_tricks_tied="mano")
    t.deal({0: ["3C", "2C", "KC"], 1: ["3H", "2H", "KH"]}, vira="7D")
    t.play("0 truco", "1 accept", *ALL_TIED)
    assert t.hand_end()["points"] == 3 and t.state.scores == [3, 0]


# -------------------------------------------------------------- who leads after a tie
TIE_HANDS = {0: ["5C", "5H", "KC"], 1: ["3H", "6D", "KH"], 2: ["3S", "7D", "KS"], 3: ["4S", "6S", "KD"]}


@pytest.mark.parametrize(("rule", "leader"), [("tied_trick_opener", 0), ("mano", 0), ("nearest_to_mano", 1)])
def test_variation_who_leads_after_a_tied_trick(rule, leader):
    """Common variations: "Who leads after a tied trick also changes from table to table.
    The simplest rule: the player who led the tied trick leads again." Options:
    ``tied_trick_opener`` (default), ``mano``, ``nearest_to_mano`` (the tying player nearest
    the mano). Seats 1 and 2 tie the first trick led by seat 0."""
    t = Table("paulista-4p", lead_after_tie=rule)
    t.deal(TIE_HANDS, vira="7C")
    t.play("0 play 5C", "1 play 3H", "2 play 3S", "3 play 4S")
    assert t.trick_results() == [(None, True)]
    assert t.hand.tricks[1].leader == leader and t.turn() == leader


@pytest.mark.parametrize(("rule", "leader"), [("tied_trick_opener", 2), ("mano", 2), ("nearest_to_mano", 3)])
def test_variation_who_leads_after_a_tie_with_another_mano(rule, leader):
    """The same with seat 2 as mano (first dealer 1): seats 3 and 0 tie the first trick."""
    t = Table("paulista-4p", first_dealer=1, lead_after_tie=rule)
    t.deal(
        {2: ["5C", "5H", "KC"], 3: ["3H", "6D", "KH"], 0: ["3S", "7D", "KS"], 1: ["4S", "6S", "KD"]},
        vira="7C",
    )
    t.play("2 play 5C", "3 play 3H", "0 play 3S", "1 play 4S")
    assert t.hand.tricks[1].leader == leader


def test_variation_lead_after_tie_opener_and_mano_coincide_in_a_three_trick_hand():
    """A tied trick that does not end the hand is the first, or the second after a tied
    first; in both the opener is the mano (under ``tied_trick_opener``), so the options
    ``tied_trick_opener`` and ``mano`` differ only in name for the Brazilian hand."""
    for rule in ("tied_trick_opener", "mano"):
        t = _two_player_hand(
            "7D",
            ["3C", "2C", "KC"],
            ["3H", "2H", "5H"],
            ["0 play 3C", "1 play 3H", "0 play 2C", "1 play 2H"],
            lead_after_tie=rule,
        )
        assert t.hand.tricks[2].leader == 0


# -------------------------------------------------------------------------- face down
def test_rule_08_face_down_is_illegal_in_the_first_trick():
    """8. "From the second trick on, you may play a card face down." — so not in the first."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "2C", "KC"], 1: ["3H", "2H", "KH"]}, vira="7D")
    assert not [a for a in t.legal() if a.endswith("down")]
    with pytest.raises(IllegalActionError) as err:
        t.act(0, "play 3C down")
    assert "face down" in err.value.reason
    assert "play 3C" in str(err.value)


def test_rule_08_face_down_card_is_worth_nothing():
    """8. "A face-down card has no value and helps you hide your hand." — a face-down
    manilha loses to the weakest 4."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "QC", "KC"], 1: ["4H", "3H", "KH"]}, vira="7D")
    t.play("0 play 3C", "1 play 4H")
    assert "play QC down" in t.legal(0)
    t.play("0 play QC down", "1 play KH")
    assert t.trick_results() == [(0, False), (1, False)]


def test_rule_08_two_face_down_cards_tie():
    """8. Face-down cards have no value, so two face-down cards tie (and a tie in the
    second trick gives the hand to the first trick's winner)."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "QC", "KC"], 1: ["4H", "3H", "KH"]}, vira="7D")
    t.play("0 play 3C", "1 play 4H", "0 play QC down", "1 play 3H down")
    assert t.trick_results() == [(0, False), (None, True)]
    assert t.hand_end()["winner_team"] == 0


def test_rule_08_face_down_card_is_hidden_from_everybody_else():
    """8. "[...] helps you hide your hand." — only the player sees its face-down card, in
    the observation and in the events."""
    t = Table("paulista-4p")
    t.deal(
        {0: ["3C", "QC", "KC"], 1: ["4H", "3H", "KH"], 2: ["5C", "5H", "5S"], 3: ["6C", "6H", "6S"]},
        vira="7D",
    )
    t.play("0 play 3C", "1 play 4H", "2 play 5C", "3 play 6C")
    ev = t.act(0, "play QC down")
    played = next(e for e in ev if e.kind == EventKind.CARD_PLAYED)
    assert data(played.redact(0))["card"] == "QC"
    for viewer in (1, 2, 3, None):
        assert data(played.redact(viewer))["card"] is None
        assert data(played.redact(viewer))["face_down"] is True
        assert t.obs(viewer).tricks[1].plays[0] == PlayView(seat=0, card=None, face_down=True)
    assert t.obs(0).tricks[1].plays[0] == PlayView(seat=0, card="QC", face_down=True)


# --------------------------------------------------------------------------- truco
def test_rule_09_truco_raises_the_hand_from_1_to_3():
    """9. "At any moment during the hand, a player may call truco. Most players call it on
    their own turn, before playing a card. The call raises the hand from 1 to 3 points."
    (The engine offers truco on the caller's own turn, before its card.)"""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "2C", "KC"], 1: ["4H", "5H", "6H"]}, vira="7D")
    assert "truco" in t.legal(0)
    ev = t.act(0, "truco")
    called = t.of(EventKind.CALL_MADE, ev)[0]
    assert called == {
        "seat": 0,
        "family": "truco",
        "name": "truco",
        "value_if_accepted": 3,
        "value_if_declined": 1,
        "responder": 1,
        "cancels": None,
    }
    t.act(1, "accept")
    assert t.hand.value == 3 and t.obs(0).hand_value == 3
    t.play("0 play 3C", "1 play 4H", "0 play 2C", "1 play 5H")
    assert t.hand_end() == {"winner_team": 0, "points": 3, "reason": "tricks"}


def test_rule_09_truco_in_a_later_trick_and_not_after_playing():
    """9. A call may come in any trick, on the caller's turn before it plays; after playing
    its card a seat waits for its next turn."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "2C", "KC"], 1: ["4H", "5H", "6H"]}, vira="7D")
    t.act(0, "play 3C")
    assert t.turn() == 1 and "truco" in t.legal(1)
    t.act(1, "play 4H")
    t.act(0, "truco")
    assert t.turn() == 1


def test_rule_10_accept_continues_at_three():
    """10. "The other team has three answers. Accept: the hand goes on, worth 3.\""""
    t = Table("paulista-4p")
    t.deal(vira="7D")
    t.act(0, "truco")
    assert t.turn() == 1 and t.legal() == ["accept", "decline", "truco"]
    t.act(1, "accept")
    assert t.hand.value == 3 and t.turn() == 0
    assert t.of(EventKind.CALL_ANSWERED)[-1] == {"seat": 1, "family": "truco", "accepted": True, "value": 3}


def test_rule_10_decline_gives_the_calling_team_1():
    """10. "Fold: the hand ends and the calling team scores 1 point.\""""
    t = Table("paulista-4p")
    t.deal(vira="7D")
    t.play("0 play 4C", "1 truco")
    assert t.turn() == 2  # the next opponent after the caller answers
    t.act(2, "decline")
    assert t.hand_end() == {"winner_team": 1, "points": 1, "reason": "declined"}
    assert t.state.scores == [0, 1] and t.state.phase == "deal"


def test_rule_10_raise_to_six_the_first_team_must_answer():
    """10. "Raise to six: the hand is now worth 6, and the first team must answer." The
    raise is answered by the seat that made the raised call."""
    t = Table("paulista-4p")
    t.deal(vira="7D")
    t.play("0 truco", "1 truco")
    assert t.turn() == 0
    called = t.of(EventKind.CALL_MADE)[-1]
    assert (called["name"], called["value_if_accepted"], called["value_if_declined"]) == ("six", 6, 3)
    t.act(0, "accept")
    assert t.hand.value == 6


def test_rule_11_the_ladder_is_3_6_9_12():
    """11. "The raises go in this order: truco (3), six (6), nine (9) and twelve (12).\""""
    t = Table("paulista-2p")
    t.deal(vira="7D")
    t.play("0 truco", "1 truco", "0 truco", "1 truco")
    calls = [(c["name"], c["value_if_accepted"]) for c in t.of(EventKind.CALL_MADE)]
    assert calls == [("truco", 3), ("six", 6), ("nine", 9), ("twelve", 12)]
    assert t.legal(0) == ["accept", "decline"]  # twelve is the top
    t.act(0, "accept")
    assert t.hand.value == 12 and "truco" not in t.legal()


def test_rule_11_only_the_team_that_accepted_may_raise():
    """11. "A team cannot raise twice in a row: only the team that accepted the last call
    may make the next one.\""""
    t = Table("paulista-4p")
    t.deal(
        {0: ["5C", "5H", "5S"], 1: ["6C", "6H", "6S"], 2: ["KC", "KH", "KS"], 3: ["JC", "JH", "JS"]},
        vira="7D",
    )
    t.play("0 truco", "1 accept", "0 play 5C")
    assert "truco" in t.legal(1)  # the accepting team may raise
    t.act(1, "play 6C")
    assert "truco" not in t.legal(2)  # the calling team may not raise again
    with pytest.raises(IllegalActionError) as err:
        t.act(2, "truco")
    assert err.value.reason == "only the side that accepted the last call may raise"
    assert "play KC" in str(err.value)
    t.play("2 play KC", "3 play JC")
    assert t.turn() == 2
    t.play("2 play KH", "3 truco")
    assert t.turn() == 0  # next opponent after seat 3
    t.act(0, "accept")
    assert t.hand.value == 6 and t.hand.raise_side == 0
    assert t.turn() == 3 and "truco" not in t.legal(3)


@pytest.mark.parametrize(
    ("calls", "payer_side", "points"),
    [(1, 1, 1), (2, 0, 3), (3, 1, 6), (4, 0, 9)],
)
def test_rule_11_decline_gives_up_the_value_before_the_raise(calls, payer_side, points):
    """11. "A team that folds gives up the value the hand had before that raise."
    "Folding to truco gives up 1 point. Folding to six gives up 3. Folding to nine gives up
    6. Folding to twelve gives up 9." (Raises made as answers.)"""
    t = Table("paulista-2p")
    t.deal(vira="7D")
    seat = 0
    for _ in range(calls):
        t.act(seat, "truco")
        seat = 1 - seat
    t.act(seat, "decline")
    assert t.hand_end() == {"winner_team": 1 - seat, "points": points, "reason": "declined"}
    assert seat == payer_side
    assert t.state.scores[1 - seat] == points


def test_rule_11_decline_after_accepted_raises_on_own_turn():
    """11. The same payouts when each raise is made on the raiser's own turn after an
    acceptance: truco accepted (3), six declined pays 3."""
    t = Table("paulista-2p")
    t.deal({0: ["5C", "5H", "5S"], 1: ["6C", "6H", "6S"]}, vira="7D")
    t.play("0 truco", "1 accept", "0 play 5C", "1 truco", "0 decline")
    assert t.hand_end() == {"winner_team": 1, "points": 3, "reason": "declined"}


def test_option_fold_gives_up_the_current_value():
    """``fold=True`` (irse al mazo, not in the paulista text): a seat may give up the hand on
    its turn, the other side scores what the hand is worth; as an answer it pays like a
    decline."""
    t = Table("paulista-2p", fold=True)
    t.deal(vira="7D")
    assert "fold" in t.legal(0)
    t.act(0, "fold")
    assert t.hand_end() == {"winner_team": 1, "points": 1, "reason": "folded"}
    t.deal(vira="7D")  # seat 1 is mano now
    t.play("1 truco", "0 accept", "1 play " + t.hand.cards[1][0], "0 fold")
    assert t.hand_end() == {"winner_team": 1, "points": 3, "reason": "folded"}
    t.deal(vira="7D")
    t.play("0 truco", "1 truco", "0 fold")
    assert t.hand_end() == {"winner_team": 1, "points": 3, "reason": "folded"}
    assert t.state.scores == [0, 7]


def test_option_fold_in_the_iron_hand_gives_the_game():
    """With ``fold=True`` a fold in the iron hand gives the other side the hand, which is
    worth the game to whoever takes it."""
    t = Table("paulista-2p", fold=True).set(scores=[11, 11])
    t.deal(vira="7D")
    assert t.hand.special == "iron"
    t.act(0, "fold")
    assert t.hand_end() == {"winner_team": 1, "points": 1, "reason": "folded"}
    assert t.state.phase == "over" and t.state.winner == 1


def test_option_fold_is_off_by_default():
    """The paulista text has no folding outside an answer; ``fold`` defaults to false."""
    t = Table("paulista-2p")
    t.deal(vira="7D")
    assert "fold" not in t.legal()
    with pytest.raises(IllegalActionError, match="no folding"):
        t.act(0, "fold")


def test_rule_12_new_hand_new_vira_winner_scores():
    """12. "When the hand ends, the winning team scores its points. The cards are shuffled
    again and a new hand begins, with a new turn-up card.\""""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "2C", "5C"], 1: ["4H", "5H", "6H"]}, vira="7D")
    t.play("0 play 3C", "1 play 4H", "0 play 2C", "1 play 5H")
    assert t.state.scores == [1, 0]
    assert t.of(EventKind.SCORE_CHANGED)[-1] == {"scores": [1, 0], "games_won": [0, 0]}
    t.deal({1: ["4C", "4H", "4S"]}, vira="3D")
    assert t.hand.turn_up == "3D" and t.hand.number == 2 and t.hand.mano == 1


# ---------------------------------------------------------------- hand of eleven
def _eleven_table(scores: list[int], players: int = 4, first_dealer: int | None = None) -> Table:
    t = Table(get_rules("paulista", players=players), first_dealer=first_dealer).set(scores=scores)
    pool = [r + s for r in "567QJ" for s in "CHSD"]
    hands = {s: pool[3 * s - 3 : 3 * s] for s in range(1, players)}
    hands[0] = ["4C", "4H", "KC"]
    t.deal(hands, vira="3D")
    return t


def test_rule_13_hand_of_eleven_partners_see_each_others_cards():
    """13. "Hand of eleven: when one team reaches 11 points, the partners show each other
    their cards and decide whether to play." Only the side at 11 sees its partners' cards:
    observations of all four seats, the spectator and the redacted events."""
    t = _eleven_table([11, 5])
    assert t.hand.special == "eleven"
    cards = {s: tuple(t.hand.cards[s]) for s in range(4)}
    assert t.obs(0).revealed == {2: cards[2]}
    assert t.obs(2).revealed == {0: cards[0]}
    assert t.obs(1).revealed == {} and t.obs(3).revealed == {} and t.obs(None).revealed == {}
    shown = [e for e in t.events if e.kind == EventKind.CARDS_REVEALED]
    assert sorted(data(e)["seat"] for e in shown) == [0, 2]
    assert not any(data(e)["public"] for e in shown) and all(data(e)["count"] == 3 for e in shown)
    for e in shown:
        for viewer in (0, 2):
            assert data(e.redact(viewer))["cards"] == list(cards[data(e)["seat"]])
        for viewer in (1, 3, None):
            assert data(e.redact(viewer))["cards"] == []
    dealt = [e for e in t.events if e.kind == EventKind.CARDS_DEALT]
    for e in dealt:
        for viewer in (0, 1, 2, 3, None):
            expect = list(cards[data(e)["seat"]]) if viewer == data(e)["seat"] else []
            assert data(e.redact(viewer))["cards"] == expect


def test_rule_13_the_side_at_eleven_decides_first_seat_nearest_the_mano():
    """13. "[...] decide whether to play." The decision is asked of the seat of the side at
    11 nearest the mano; nobody else may act meanwhile."""
    t = _eleven_table([5, 11])
    assert t.turn() == 1 and t.legal() == ["accept", "decline"]
    assert t.obs(1).pending is not None and t.obs(1).pending.family == "hand_of_eleven"
    t2 = _eleven_table([11, 5], first_dealer=0)  # mano is seat 1, side 0's first seat is 2
    assert t2.turn() == 2


def test_rule_13_hand_of_eleven_played_is_worth_3():
    """13. "If they play, the hand is worth 3 points." (Whoever wins it.)"""
    t = _eleven_table([11, 5])
    t.act(0, "accept")
    assert t.hand.value == 3 and t.obs(0).hand_value == 3
    finish_hand(t)
    end = t.hand_end()
    assert end["points"] == 3
    assert t.state.phase == "over" and t.state.winner == 0 and t.state.scores == [14, 5]


def test_rule_13_hand_of_eleven_lost_gives_3_to_the_other_side():
    """13. The side at 11 that plays and loses the hand gives 3 points."""
    t = Table("paulista-2p").set(scores=[11, 2])
    t.deal({0: ["5C", "6C", "7C"], 1: ["4C", "4H", "KC"]}, vira="3D")
    t.act(0, "accept")
    t.play("0 play 5C", "1 play 4C", "1 play 4H", "0 play 6C")
    assert t.hand_end() == {"winner_team": 1, "points": 3, "reason": "tricks"}
    assert t.state.scores == [11, 5]


def test_rule_13_hand_of_eleven_given_up_gives_1():
    """13. "If they give up, the other team scores 1 point.\""""
    t = _eleven_table([11, 5])
    t.act(0, "decline")
    assert t.hand_end() == {"winner_team": 1, "points": 1, "reason": "eleven_refused"}
    assert t.state.scores == [11, 6]
    assert t.of(EventKind.HAND_OF_ELEVEN_DECISION) == [{"seat": 0, "team": 0, "play": False}]


def test_rule_13_nobody_calls_truco_in_the_hand_of_eleven():
    """13. "Nobody calls truco in this hand.\""""
    t = _eleven_table([11, 5])
    t.act(0, "accept")
    for _ in range(4):
        seat = t.turn()
        assert "truco" not in t.legal(seat)
        with pytest.raises(IllegalActionError, match="nobody calls truco in the hand of eleven"):
            t.act(seat, "truco")
        t.act(seat, t.legal(seat)[0])


def test_rule_13_hand_of_eleven_two_players_no_partner_to_show():
    """13. With two players there is no partner: no cards are shown to anybody."""
    t = _eleven_table([11, 5], players=2)
    assert t.hand.special == "eleven" and t.obs(0).revealed == {} and t.obs(1).revealed == {}
    assert not [e for e in t.events if e.kind == EventKind.CARDS_REVEALED]


def test_rule_13_hand_of_eleven_six_players_the_three_partners_see():
    """13. With six players all three partners of the side at 11 see each other's cards."""
    t = _eleven_table([3, 11], players=6)
    assert t.turn() == 1
    assert set(t.obs(1).revealed) == {3, 5} and set(t.obs(5).revealed) == {1, 3}
    assert all(t.obs(s).revealed == {} for s in (0, 2, 4))


def test_rule_13_reached_by_legal_play():
    """13. Reaching 11 by playing (3 + 3 + 3 + 1 + 1) makes the next hand a hand of
    eleven."""
    t = Table("paulista-2p")
    for truco in (True, True, True, False, False):
        mano = (t.state.dealer + 1) % 2
        t.deal({0: ["4C", "4H", "4S"], 1: ["5C", "5H", "5S"]}, vira="3D")
        if truco:
            t.play(f"{mano} truco", f"{1 - mano} accept")
        finish_hand(t)
    assert t.state.scores == [11, 0]
    t.deal(vira="3D")
    assert t.hand.special == "eleven" and t.turn() == 0


def test_rule_14_iron_hand_everybody_plays_blind():
    """14. "Iron hand: when both teams have 11 points, everybody plays with cards face down,
    without looking. Nobody calls truco, and the team that wins the hand wins the game.\""""
    t = Table("paulista-4p").set(scores=[11, 11])
    t.deal(
        {0: ["4C", "4H", "KC"], 1: ["5C", "5H", "5S"], 2: ["6C", "6H", "6S"], 3: ["7C", "7H", "7S"]},
        vira="3D",
    )
    assert t.hand.special == "iron" and t.turn() == 0
    for seat in (0, 1, 2, 3):
        o = t.obs(seat)
        assert o.hand == () and o.hidden_hand == 3 and o.revealed == {}
    for e in t.events:
        if e.kind == EventKind.CARDS_DEALT:
            for viewer in (0, 1, 2, 3, None):
                assert data(e.redact(viewer))["cards"] == [] and data(e)["count"] == 3
        assert e.kind != EventKind.CARDS_REVEALED
    assert t.legal(0) == ["play #0", "play #1", "play #2"]
    with pytest.raises(IllegalActionError, match="by slot"):
        t.act(0, "play 4C")
    with pytest.raises(IllegalActionError, match="nobody calls truco in the iron hand"):
        t.act(0, "truco")
    ev = t.act(0, "play #0")
    assert t.of(EventKind.CARD_PLAYED, ev)[0]["card"] == "4C"  # turned up when played
    assert t.obs(0).hidden_hand == 2
    t.play("1 play #0", "2 play #0", "3 play #0", "0 play #0", "1 play #0", "2 play #0", "3 play #0")
    assert t.hand_end()["winner_team"] == 0
    assert t.state.phase == "over" and t.state.winner == 0 and t.state.scores[0] >= 12


def test_rule_14_iron_hand_winner_takes_the_game_in_best_of_three():
    """14. "[...] the team that wins the hand wins the game." — in a best of three, the game
    (not only 1 point) goes to the winner of the iron hand."""
    t = Table("paulista-2p", games_to_win=2).set(scores=[11, 11])
    t.deal({0: ["5C", "5H", "5S"], 1: ["4C", "4H", "KC"]}, vira="3D")
    t.play("0 play #0", "1 play #0", "1 play #0", "0 play #0")
    assert t.hand_end() == {"winner_team": 1, "points": 1, "reason": "tricks"}
    assert t.state.games == [0, 1] and t.state.scores == [0, 0] and t.state.phase == "deal"
    assert t.of(EventKind.GAME_ENDED)[-1]["winner_team"] == 1


# ------------------------------------------------------------------ card ranking
def test_ranking_plain_cards_order_3_2_A_K_J_Q_7_6_5_4():
    """ "Plain cards, from strongest to weakest: 3, 2, ace, king, jack, queen, 7, 6, 5 and
    4.\""""
    order = ["3", "2", "A", "K", "J", "Q", "7", "6", "5", "4"]
    # A vira whose manilha is not among the ranks compared two at a time.
    for hi, lo in itertools.pairwise(order):
        vira = "6D" if "7" not in (hi, lo) else "QD"
        assert beats("paulista", vira, hi + "S", lo + "C"), (hi, lo)


def test_ranking_jack_beats_queen():
    """ "Note that the jack beats the queen.\""""
    t = _two_player_hand("4D", ["QC", "5H", "6H"], ["JD", "6C", "7C"], ["0 play QC", "1 play JD"])
    assert t.trick_results() == [(1, False)]


def test_ranking_manilha_cycle_from_the_bottom_up():
    """ "The manilha is the rank right after the turn-up card in the same order, read from
    the bottom up: 4, 5, 6, 7, queen, jack, king, ace, 2, 3. If the turn-up card is a 3,
    the manilha is the 4.\""""
    cycle = ["4", "5", "6", "7", "Q", "J", "K", "A", "2", "3"]
    rules = get_rules("paulista")
    for i, r in enumerate(cycle):
        assert manilha_rank(rules, r + "H") == cycle[(i + 1) % 10]


def test_ranking_manilhas_beat_every_plain_card_clubs_hearts_spades_diamonds():
    """ "The four manilhas beat every plain card. Among them, the suit decides: clubs is the
    strongest, then hearts, then spades, and diamonds is the weakest.\""""
    for vira in ("7D", "3S", "KC", "4H"):
        m = manilha_rank(get_rules("paulista"), vira)
        t = strength_table(get_rules("paulista"), vira)
        assert t[m + "C"] > t[m + "H"] > t[m + "S"] > t[m + "D"]
        assert t[m + "D"] > max(v for c, v in t.items() if c[:-1] != m)


def test_ranking_zap_and_pica_fumo_in_play():
    """ "The manilha of clubs is called the zap. The manilha of diamonds is called the
    pica-fumo." The zap beats the pica-fumo in a trick."""
    t = _two_player_hand("7D", ["QD", "5H", "6H"], ["QC", "6C", "7C"], ["0 play QD", "1 play QC"])
    assert t.trick_results() == [(1, False)]


def test_ranking_manilhas_never_tie_plain_cards_always_tie():
    """ "Manilhas never tie. Plain cards of the same rank always tie.\""""
    for vira in ("7D", "3S"):
        rules = get_rules("paulista")
        m = manilha_rank(rules, vira)
        t = strength_table(rules, vira)
        values = [t[m + s] for s in FRENCH_SUITS]
        assert len(set(values)) == 4
        for r in FRENCH_RANKS:
            if r != m:
                assert len({t[r + s] for s in FRENCH_SUITS}) == 1


@pytest.mark.parametrize(
    ("vira", "option", "manilha"),
    [("2D", True, "4"), ("2D", False, "3"), ("AD", True, "2"), ("3D", True, "4")],
)
def test_option_three_never_manilha(vira, option, manilha):
    """Seed 001: "É comum em alguns jogos os participantes optarem por evitar o 3 como
    manilha [...] nesse caso quando tomba-se um 2, que acarretaria no 3 como manilha, o 4
    passa a ser manilha." (``three_never_manilha``.)"""
    assert manilha_rank(get_rules("paulista", three_never_manilha=option), vira) == manilha


def test_option_three_never_manilha_in_play():
    """With ``three_never_manilha``, vira 2: the 4 of diamonds beats a 3."""
    t = Table("paulista-2p", three_never_manilha=True)
    t.deal({0: ["4D", "5H", "6H"], 1: ["3C", "6C", "7C"]}, vira="2D")
    t.play("0 play 4D", "1 play 3C")
    assert t.trick_results() == [(0, False)]


# --------------------------------------------------------------- hand values, end
@pytest.mark.parametrize(("raises", "value"), [(0, 1), (1, 3), (2, 6), (3, 9), (4, 12)])
def test_hand_values_1_3_6_9_12(raises, value):
    """ "Hand with no call: 1 point. Truco: 3 points. Six: 6 points. Nine: 9 points. Twelve:
    12 points.\""""
    t = Table("paulista-2p", target_points=30)
    t.deal({0: ["4C", "4H", "4S"], 1: ["5C", "5H", "5S"]}, vira="3D")
    seat = 0
    for _ in range(raises):
        t.act(seat, "truco")
        seat = 1 - seat
    if raises:
        t.act(seat, "accept")
    finish_hand(t)
    assert t.hand_end()["points"] == value and t.state.scores == [value, 0]


def test_end_game_to_12_points():
    """ "The game ends when a team reaches 12 points. That team wins.\""""
    t = Table("paulista-2p").set(scores=[9, 10])
    t.deal({0: ["4C", "4H", "4S"], 1: ["5C", "5H", "5S"]}, vira="3D")
    t.play("0 truco", "1 accept")
    finish_hand(t)
    assert t.state.scores == [12, 10] and t.state.phase == "over" and t.state.winner == 0
    assert t.of(EventKind.GAME_ENDED)[-1] == {"winner_team": 0, "game_number": 1, "games_won": [1, 0]}
    assert t.of(EventKind.MATCH_ENDED)[-1] == {"winner_team": 0, "games_won": [1, 0]}


def test_end_best_of_three_games():
    """ "Many groups play best of three games. Each game won is marked separately, and the
    team that wins two takes the match." (``games_to_win=2``.)"""
    t = Table("paulista-2p", games_to_win=2)
    for game in (1, 2, 3):
        t.set(scores=[9, 10])
        assert t.state.game == game
        winner = 1 if game == 2 else 0
        hands = {winner: ["4C", "4H", "4S"], 1 - winner: ["5C", "5H", "5S"]}
        t.deal(hands, vira="3D")
        mano = t.hand.mano
        t.play(f"{mano} truco", f"{1 - mano} accept")
        finish_hand(t)
        if game < 3:
            assert t.state.phase == "deal" and t.state.scores == [0, 0]
    assert t.state.games == [2, 1] and t.state.winner == 0 and t.state.phase == "over"


def test_end_paulista_to_24_points():
    """Seed 001: "O jogo é jogado até que uma equipe termine o jogo com 2 jogos de 12
    pontos. São 24 pontos [...]" — a game to 24 (``target_points=24``) has its hand of
    eleven one point before the end (23), not at 11."""
    rules = get_rules("paulista", players=2, target_points=24)
    assert rules.target_points == 24 and rules.hand_of_eleven_at == 23
    t = Table(rules).set(scores=[12, 11])
    t.deal(vira="3D")
    assert t.hand.special == ""
    t2 = Table(rules).set(scores=[23, 11])
    t2.deal(vira="3D")
    assert t2.hand.special == "eleven"
