"""Calls out of turn (rule option ``truco_out_of_turn``, on in the Brazilian presets) and what
an observation says about who may act: ``awaited`` is the seat whose decision the game waits
for; ``legal_actions`` is the observing seat's own set, awaited or not, and nothing about any
other seat."""

from __future__ import annotations

import pytest

from tests.engine.helpers import Table
from truco_engine import (
    IllegalActionError,
    NotYourTurnError,
    apply,
    get_rules,
    is_legal,
    legal_actions,
    observe,
    parse_action,
    preset_names,
    verify_action,
)

BRAZILIAN = ("paulista", "mineiro", "manilha-velha", "mineiro-trio", "irra-dourada", "douradona")


def test_seed_000_rule_9_a_player_may_call_truco_at_any_moment_of_the_hand():
    """Seed 000, rule 9: "At any moment during the hand, a player may call truco. Most
    players call it on their own turn, before playing a card." Seat 0 has played its card;
    before seat 1 plays, seat 0 calls truco; seat 1 answers, then plays on."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "5C", "6C"], 1: ["4H", "5H", "6H"]}, vira="7D")
    t.act(0, "play 3C")
    o = t.obs(0)
    assert o.awaited == (1,) and "truco" in [a.text() for a in o.legal_actions]
    t.act(0, "truco")
    assert t.turn() == 1 and t.obs(1).pending.caller == 0
    t.act(1, "accept")
    assert t.hand.value == 3 and t.turn() == 1  # play resumes with the seat whose turn it was
    t.act(1, "play 4H")
    assert t.trick_results() == [(0, False)]


def test_most_players_call_it_on_their_own_turn():
    """Seed 000, rule 9: "Most players call it on their own turn, before playing a card." The
    seat on turn still has truco among its actions, beside its cards."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "5C", "6C"], 1: ["4H", "5H", "6H"]}, vira="7D")
    assert t.legal(0) == ["play 3C", "play 5C", "play 6C", "truco"]
    assert t.legal(1) == ["truco"]


@pytest.mark.parametrize("preset", BRAZILIAN)
def test_every_brazilian_preset_plays_calls_out_of_turn(preset):
    assert get_rules(preset).truco_out_of_turn


@pytest.mark.parametrize("preset", [p for p in preset_names() if p not in BRAZILIAN])
def test_river_plate_presets_call_on_ones_turn(preset):
    """Seed 002: "On your turn you can call Truco"; seed 003: "Anyone can call Truco on their
    turn"."""
    assert not get_rules(preset).truco_out_of_turn


def test_out_of_turn_call_is_answered_by_the_next_opponent_after_the_caller():
    """Four players: seat 2 calls while seat 1 is to play; seat 3 (the next opponent after the
    caller in play order) answers; then seat 1 plays."""
    t = Table("paulista-4p")
    t.deal({0: ["5C", "6C", "7C"]}, vira="7D")
    t.act(0, "play 5C")
    assert t.turn() == 1
    t.act(2, "truco")
    assert t.obs(None).pending.responder == 3 and t.turn() == 3
    t.act(3, "accept")
    assert t.turn() == 1


def test_raising_rights_hold_out_of_turn():
    """Seed 000, rule 11: "only the team that accepted the last call may make the next one"."""
    t = Table("paulista-4p")
    t.deal(vira="7D")
    t.act(0, "truco")
    t.act(1, "accept")  # team 1 holds the right to raise
    assert "truco" not in t.legal(2) and "truco" not in t.legal(0)
    assert t.legal(3) == ["truco"]
    with pytest.raises(IllegalActionError, match="only the side that accepted the last call may raise"):
        t.act(2, "truco")
    t.act(3, "truco")
    assert t.obs(None).pending.name == "six" and t.turn() == 0


def test_no_call_out_of_turn_while_a_call_is_pending():
    t = Table("paulista-4p")
    t.deal(vira="7D")
    t.act(0, "truco")
    assert t.legal(2) == [] and t.legal(3) == []
    with pytest.raises(IllegalActionError, match="a call is pending: seat 1 answers it first"):
        t.act(3, "truco")


@pytest.mark.parametrize("scores", [[11, 4], [11, 11]])
def test_nobody_calls_truco_in_the_hand_of_eleven_or_the_iron_hand(scores):
    """Seed 000, rules 13 and 14: "Nobody calls truco in this hand"."""
    t = Table("paulista-2p").set(scores=scores)
    t.deal(vira="7D")
    for seat in (0, 1):
        assert "truco" not in t.legal(seat)


def test_out_of_turn_calls_are_an_option():
    t = Table("paulista-2p", truco_out_of_turn=False)
    t.deal(vira="7D")
    assert t.legal(1) == []
    with pytest.raises(NotYourTurnError) as err:
        t.act(1, "truco")
    assert err.value.legal == () and err.value.to_act == (0,)


def test_a_seat_that_is_not_awaited_cannot_play_and_is_told_what_it_may_do():
    t = Table("paulista-2p")
    t.deal({0: ["3C", "5C", "6C"], 1: ["4H", "5H", "6H"]}, vira="7D")
    with pytest.raises(NotYourTurnError) as err:
        t.act(1, "play 4H")
    assert err.value.to_act == (0,) and [a.text() for a in err.value.legal] == ["truco"]


def test_two_legal_actions_racing_at_one_state_each_apply_to_the_state_given():
    """Seat 0 calls truco out of turn while seat 1 plays, both against the same state: the
    engine applies whichever it is given; the other, tried on the new state, is refused with
    the new legal set (the store's version check does this between clients)."""
    t = Table("paulista-2p")
    t.deal({0: ["3C", "5C", "6C"], 1: ["4H", "5H", "6H"]}, vira="7D")
    t.act(0, "play 3C")
    start = t.state
    truco, play = parse_action("truco"), parse_action("play 4H")
    assert is_legal(start, 0, truco) and is_legal(start, 1, play)
    after_truco, _ = apply(start, 0, truco)
    after_play, _ = apply(start, 1, play)
    with pytest.raises(IllegalActionError) as err:
        apply(after_truco, 1, play)
    assert "a call must be answered" in err.value.reason
    assert err.value.legal == tuple(legal_actions(after_truco, 1))
    assert [a.text() for a in legal_actions(after_play, 0)] == [
        "play 5C",
        "play 6C",
        "play 5C down",
        "play 6C down",
        "truco",
    ]
    verify_action(after_play, 0, truco)  # still legal: it is seat 0's turn now


def test_observation_carries_the_seats_own_legal_actions_and_the_awaited_seat():
    t = Table("paulista-4p")
    t.deal(vira="7D")
    for seat in range(4):
        o = observe(t.state, seat)
        assert o.awaited == (0,)
        assert o.legal_actions == tuple(legal_actions(t.state, seat))
    assert [a.text() for a in observe(t.state, 1).legal_actions] == ["truco"]
    assert observe(t.state, None).legal_actions == ()


def test_an_action_with_stray_fields_is_not_the_legal_one():
    t = Table("paulista-2p")
    t.deal({0: ["3C", "5C", "6C"], 1: ["4H", "5H", "6H"]}, vira="7D")
    from truco_engine import Action

    with pytest.raises(IllegalActionError, match="truco takes no card"):
        apply(t.state, 0, Action("truco", card="3C"))
    legal_actions(t.state, 0)  # with the legal set already worked out, the same answer
    with pytest.raises(IllegalActionError, match="truco takes no card"):
        apply(t.state, 0, Action("truco", face_down=True))
