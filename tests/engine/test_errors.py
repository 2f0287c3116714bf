"""Errors: invalid rule sets name the field and the allowed values; illegal actions say why
and list what is legal; wrong seat; bad deck orders; bad records."""

from __future__ import annotations

import pytest

from tests.engine.helpers import Table
from truco_engine import (
    IllegalActionError,
    InvalidDeckError,
    InvalidRulesError,
    MatchOverError,
    MatchRecord,
    NotYourTurnError,
    RecordError,
    TrucoError,
    UnknownPresetError,
    deal,
    get_rules,
    new_match,
    observe,
    parse_action,
    replay,
    state_from_json,
)


@pytest.mark.parametrize(
    ("overrides", "field", "allowed"),
    [
        ({"deck": "spanish40"}, "deck", "french40"),
        ({"deck": "tarot"}, "deck", "french40, spanish40, spanish22"),
        ({"players": 5}, "players", "2, 4, 6, 8, 10, 12"),
        ({"players": 14}, "players", "allowed"),
        ({"all_tricks_tied": "nobody"}, "all_tricks_tied", "redeal, mano"),
        ({"lead_after_tie": "dealer"}, "lead_after_tie", "tied_trick_opener, nearest_to_mano, mano"),
        ({"ranking": "tarot"}, "ranking", "allowed"),
        ({"face_down_from_trick": 1}, "face_down_from_trick", "0 (never), 2, 3"),
        ({"face_down_from_trick": 7}, "face_down_from_trick", "integers 0..3"),
        ({"target_points": 0}, "target_points", "integers 1..1000"),
        ({"games_to_win": "two"}, "games_to_win", "integers 1..99"),
        ({"truco_ladder": [3, 2, 9, 12]}, "truco_ladder", "must rise"),
        ({"truco_call_names": ["truco"]}, "truco_call_names", "needs 4 names"),
        ({"hand_of_eleven_at": 12}, "hand_of_eleven_at", "integers 1..11"),
        ({"envido": True}, "envido", "allowed: false"),
        ({"flor": True}, "flor", "allowed: false"),
        ({"extra_manilhas": ["1e"]}, "extra_manilhas", "not a distinct card"),
        ({"extra_manilhas": ["5S", "5S"]}, "extra_manilhas", "not a distinct card"),
        ({"fold": "yes"}, "fold", "true or false"),
        ({"colour": "red"}, "colour", "fields are:"),
    ],
)
def test_invalid_rules_name_the_field_and_the_allowed_values(overrides, field, allowed):
    with pytest.raises(InvalidRulesError) as err:
        get_rules("paulista", **overrides)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")
    assert allowed in str(err.value)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(UnknownPresetError) as err:
        get_rules("truco-lunar")
    assert err.value.field == "preset"
    assert "paulista" in str(err.value) and "mineiro" in str(err.value)


def test_rule_errors_are_value_errors():
    assert issubclass(InvalidRulesError, ValueError) and issubclass(IllegalActionError, TrucoError)


def test_illegal_action_says_why_and_lists_what_is_legal():
    t = Table("paulista-2p")
    t.deal({0: ["3C", "2C", "KC"], 1: ["4H", "5H", "6H"]}, vira="7D")
    with pytest.raises(IllegalActionError) as err:
        t.act(0, "play 4H")
    assert err.value.reason == "4H is not in seat 0's hand"
    assert [a.text() for a in err.value.legal] == ["play 3C", "play 2C", "play KC", "truco"]
    assert str(err.value) == "4H is not in seat 0's hand; legal now: play 3C, play 2C, play KC, truco"
    with pytest.raises(IllegalActionError, match="there is no call to answer; legal now: play 3C"):
        t.act(0, "accept")
    t.act(0, "truco")
    with pytest.raises(IllegalActionError, match="a call must be answered before any card is played"):
        t.act(1, "play 4H")
    t.act(1, "truco")
    t.act(0, "truco")
    t.act(1, "truco")
    top = "the truco ladder is at its top; legal now: accept, decline"
    with pytest.raises(IllegalActionError, match=top):
        t.act(0, "truco")


def test_illegal_action_leaves_the_state_unchanged():
    t = Table("paulista-2p")
    t.deal(vira="7D")
    before = t.state.to_dict()
    with pytest.raises(IllegalActionError):
        t.act(0, "play 3D down")
    assert t.state.to_dict() == before


def test_not_your_turn_names_the_seat_and_who_is_to_act():
    t = Table("paulista-4p")
    t.deal(vira="7D")
    with pytest.raises(NotYourTurnError) as err:
        t.act(2, "play 5S")
    assert (err.value.seat, err.value.to_act) == (2, (0,))
    assert "seat 2 may not act now; to act: 0" in str(err.value)
    assert [a.text() for a in err.value.legal] == ["truco"]  # what seat 2 may do out of turn
    t.act(0, "truco")
    with pytest.raises(NotYourTurnError, match="to act: 1"):
        t.act(3, "accept")  # the next opponent after the caller answers, not seat 3


def test_acting_while_a_deal_is_awaited():
    t = Table("paulista-2p")
    with pytest.raises(NotYourTurnError, match="nobody \\(a deal is awaited\\)"):
        t.act(0, "truco")


def test_match_over():
    t = Table("paulista-2p").set(scores=[11, 11])
    t.deal({0: ["4C", "4H", "4S"]}, vira="3D")
    t.play("0 play #0", "1 play #0", "0 play #0", "1 play #0")
    assert t.state.phase == "over"
    with pytest.raises(MatchOverError):
        t.act(0, "play #0")
    with pytest.raises(MatchOverError):
        deal(t.state, list(t.rules.deck_cards))


@pytest.mark.parametrize(
    "deck",
    [
        [],
        ["4C"] * 40,
        ["1e", *list(get_rules("paulista").deck_cards)[1:]],
        [*list(get_rules("paulista").deck_cards), "3C"],
        [["4C"], *list(get_rules("paulista").deck_cards)[1:]],
        [None, *list(get_rules("paulista").deck_cards)[1:]],
    ],
    ids=["empty", "duplicates", "other-deck", "too-long", "unhashable", "none"],
)
def test_bad_deck_order(deck):
    state = new_match(get_rules("paulista-2p"))
    with pytest.raises(InvalidDeckError, match="permutation of the 40 cards"):
        deal(state, deck)


def test_deal_while_a_hand_is_in_progress():
    t = Table("paulista-2p")
    t.deal()
    with pytest.raises(InvalidDeckError, match="no deal is awaited"):
        deal(t.state, list(t.rules.deck_cards))


def test_observe_unknown_seat():
    with pytest.raises(ValueError, match=r"seats are 0\.\.3"):
        observe(new_match(get_rules("paulista")), 4)


@pytest.mark.parametrize("text", ["", "dance", "play", "play 4C up", "truco now", "discard 4C down"])
def test_unreadable_actions(text):
    with pytest.raises(TrucoError):
        parse_action(text)


def test_bad_records_and_states():
    with pytest.raises(RecordError):
        MatchRecord.from_json("{")
    with pytest.raises(RecordError):
        MatchRecord.from_dict({"format": "other"})
    with pytest.raises(RecordError):
        state_from_json('{"format": "truco-state/1"}')
    rec = MatchRecord(get_rules("paulista-2p"), None, [{"seat": 0, "action": {"kind": "truco"}}])
    with pytest.raises(RecordError, match="step 0"):
        replay(rec)
