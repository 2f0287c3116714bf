"""House rule ``truco_capped_at_game`` (docs/rules/house-rules.md): no truco call or raise once
the hand is already worth what every side needs to win the game. The scenarios are CTruco's
(domain/src/test/java/com/bueno/domain/entities/hand/HandTest.java), restated in our cards and
seats, and played with and without the option."""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import IllegalActionError

CAPPED = "truco_capped_at_game"


def paulista(scores: tuple[int, int], capped: bool, **kw: object) -> Table:
    t = Table("paulista-2p", truco_capped_at_game=capped, **kw).set_scores(*scores)
    return t.deal({0: ["4C", "5C", "6C"], 1: ["4H", "5H", "6H"]}, turn_up="7D")


def test_at_ten_ten_the_accepted_truco_is_the_last_call():
    """CTruco "Should not be able to raise when hand reaches the max of points": at 10-10 the
    truco (3) is accepted and the next player may only play (each side needs 2)."""
    t = paulista((10, 10), False).play("0 truco", "1 accept", "0 play 4C")
    assert "truco" in t.legal(1)
    t = paulista((10, 10), True).play("0 truco", "1 accept", "0 play 4C")
    assert t.legal(1) == ["play 4H", "play 5H", "play 6H"]
    with pytest.raises(IllegalActionError, match=CAPPED):
        t.play("1 truco")


def test_the_first_truco_stays_open_while_it_can_change_the_outcome():
    """At 10-10 the hand's 1 point decides nothing, so the truco may be called (CTruco
    ``getMaxHandPoints``: what the losing player needs, up to the ladder step)."""
    assert "truco" in paulista((10, 10), True).legal(0)


def test_at_five_eight_no_re_raise_past_what_the_trailing_side_needs():
    """CTruco "Should not be able to re-raise the bet when already reached the max hand
    points": at 5-8, truco, six, nine; the answer to the nine is accept or decline (the player
    at 5 needs 7, the nine already gives it)."""
    t = paulista((5, 8), False).play("0 truco", "1 truco", "0 truco")
    assert t.legal(1) == ["accept", "decline", "truco"]
    t = paulista((5, 8), True).play("0 truco", "1 truco", "0 truco")
    assert t.legal(1) == ["accept", "decline"]


def test_raises_up_to_just_enough_for_both_sides():
    """CTruco "Should allow to raise the bet just enough to enable both players to win": at
    5-8 the six (6 < 7) may still be raised to nine."""
    t = paulista((5, 8), True).play("0 truco", "1 truco")
    assert "truco" in t.legal(0)
    t.play("0 truco", "1 accept")
    assert t.state.hand.value == 9


def test_capped_calls_out_of_turn_too():
    """Interaction with ``truco_out_of_turn`` (paulista): the cap holds for every call, on a
    seat's turn or not."""
    t = paulista((10, 10), True).play("0 truco", "1 accept")
    assert "truco" not in t.legal(1)  # seat 1 (whose side holds the raise) out of turn
    t = paulista((10, 10), False).play("0 truco", "1 accept")
    assert "truco" in t.legal(1)


def test_envido_points_scored_in_the_hand_count():
    """Interaction with envido: the need is counted from the scores at the call. Argentine, to
    15, at 11-12: the vale cuatro may answer the retruco (the side at 11 needs 4); after an
    envido of the same hand won by the side at 11 (13-12) it may not (3 gives each side the
    game)."""
    hands = {0: ["7o", "6o", "1e"], 1: ["4e", "5b", "10c"]}
    t = Table("argentine", truco_capped_at_game=True, flor=False).set_scores(11, 12).deal(hands)
    t.play("0 truco", "1 truco")
    assert "truco" in t.legal(0)
    t = Table("argentine", truco_capped_at_game=True, flor=False).set_scores(11, 12).deal(hands)
    t.play("0 envido", "1 accept", "0 truco", "1 truco")
    assert t.scores == [13, 12] and t.legal(0) == ["accept", "decline", "fold"]


def test_the_game_step_of_the_ladder_is_capped_too():
    """Interaction with Valencian joc fora: at 9-9 of 12 the quatre val is not called over an
    accepted retruc (3 already decides), nor joc fora; at 0-0 joc fora is called over the
    quatre val."""
    t = Table("valencian-2p", truco_capped_at_game=True).set_scores(9, 9).deal({})
    t.play("0 truco", "1 truco")
    assert "truco" not in t.legal(0)
    t = Table("valencian-2p", truco_capped_at_game=True).deal({})
    t.play("0 truco", "1 truco", "0 truco")
    assert "truco" in t.legal(1)
    t.play("1 truco")
    assert t.obs(0).pending.name == "joc_fora"
