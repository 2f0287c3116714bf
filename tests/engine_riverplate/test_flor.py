"""Flor: three cards of one suit (seed 000 "players bid on envido and flor, which score for
cards of the same suit in hand"; seed 001 on the pé's flor). Values and table conventions:
docs/rules/river-plate.md#flor."""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import EventKind, IllegalActionError, get_rules
from truco_engine.ranking import flor_points, has_flor

FLOR_HI = ["7o", "6o", "5o"]  # 38
FLOR_LO = ["1c", "2c", "3c"]  # 26
PLAIN = ["4e", "5b", "10c"]  # envido 5
ENVIDO_33 = ["7e", "6e", "1b"]


def flor_table(h0: list[str], h1: list[str], preset: str = "argentine", **kw: object) -> Table:
    return Table(preset, **kw).deal({0: h0, 1: h1})


def test_flor_is_three_cards_of_one_suit():
    assert has_flor(FLOR_HI) and has_flor(FLOR_LO)
    assert not has_flor(["7o", "6o", "5e"])
    assert flor_points(FLOR_HI) == 38 and flor_points(["10e", "11e", "12e"]) == 20


def test_mandatory_flor_must_be_sung_first():
    """``flor_mandatory`` (default): a holder whose window is open can only sing flor."""
    t = flor_table(FLOR_HI, PLAIN)
    assert t.legal(0) == ["flor"]
    with pytest.raises(IllegalActionError, match="flor"):
        t.play("0 play 7o")


def test_unopposed_flor_scores_three_at_once():
    t = flor_table(FLOR_HI, PLAIN).play("0 flor")
    assert t.scores == [3, 0]
    assert t.of(EventKind.BET_WON) == [{"family": "flor", "winner_seat": 0, "winner_team": 0, "points": 3}]
    legal = t.legal(0)
    assert "play 7o" in legal and "truco" in legal
    assert not any("envido" in a or "flor" in a for a in legal)


def test_flor_shown_at_hand_end_only():
    t = flor_table(FLOR_HI, PLAIN).play("0 flor")
    assert not t.of(EventKind.CARDS_REVEALED)
    assert t.obs(1).revealed == {}
    t.play("0 play 7o", "1 play 4e", "0 play 6o", "1 play 5b")
    assert t.of(EventKind.CARDS_REVEALED) == [
        {"seat": 0, "cards": FLOR_HI, "count": 3, "reason": "flor", "public": True}
    ]


def test_flor_cancels_a_pending_envido():
    """A flor answering an envido cancels it: nobody scores the envido."""
    t = flor_table(ENVIDO_33, FLOR_LO).play("0 envido")
    assert t.legal(1) == ["flor"]
    t.play("1 flor")
    assert t.scores == [0, 3]
    assert [e["family"] for e in t.of(EventKind.BET_WON)] == ["flor"]
    assert t.of(EventKind.CALL_MADE)[-1]["cancels"] == "envido"
    assert not any("envido" in a for a in t.legal(0))


def test_flor_answers_the_first_truco_then_the_truco_is_answered():
    t = flor_table(PLAIN, FLOR_LO).play("0 truco")
    assert t.legal(1) == ["flor"]
    t.play("1 flor")
    assert t.scores == [0, 3]
    assert t.turn() == 1 and t.obs(1).pending.family == "truco"
    t.play("1 accept")
    assert t.hand.value == 2


def test_flor_gone_once_truco_accepted():
    """Flor shares the envido window; accepting a truco closes it (as for envido)."""
    t = flor_table(PLAIN, FLOR_LO, flor_mandatory=False).play("0 truco", "1 accept")
    assert "flor" not in t.legal(0)


@pytest.mark.parametrize(
    ("answers", "scores"),
    [
        (["1 accept"], [4, 0]),  # con flor quiero: best flor takes 4
        (["1 decline"], [3, 0]),  # con flor me achico: the first flor takes 3
        (["1 contraflor", "0 accept"], [6, 0]),  # contraflor accepted: 6
        (["1 contraflor", "0 decline"], [0, 4]),  # contraflor refused: 4
        (["1 contraflor_al_resto", "0 accept"], [15, 0]),  # al resto: the falta
        (["1 contraflor_al_resto", "0 decline"], [0, 4]),
        (["1 contraflor", "0 contraflor_al_resto", "1 accept"], [15, 0]),
        (["1 contraflor", "0 contraflor_al_resto", "1 decline"], [6, 0]),
    ],
)
def test_flor_against_flor_values(answers, scores):
    t = flor_table(FLOR_HI, FLOR_LO).play("0 flor")
    assert t.turn() == 1
    assert set(t.legal(1)) == {"accept", "decline", "contraflor", "contraflor_al_resto", "fold"}
    t.play(*answers)
    assert t.scores == scores


def test_contraflor_answer_options():
    t = flor_table(FLOR_HI, FLOR_LO).play("0 flor", "1 contraflor")
    assert set(t.legal(0)) == {"accept", "decline", "contraflor_al_resto", "fold"}
    t.play("0 contraflor_al_resto")
    assert set(t.legal(1)) == {"accept", "decline", "fold"}


def test_contraflor_al_resto_is_worth_the_falta():
    t = Table("argentine-30", falta_envido="half").set_scores(4, 9).deal({0: FLOR_LO, 1: FLOR_HI})
    t.play("0 flor", "1 contraflor_al_resto")
    assert t.obs(0).pending.value_if_accepted == 6  # 15 - 9 while the leader is in malas
    t.play("0 accept")
    assert t.scores == [4, 15]


def test_flor_against_flor_declarations_and_show():
    t = flor_table(FLOR_LO, FLOR_HI).play("0 flor", "1 accept")
    assert t.of(EventKind.POINTS_DECLARED) == [
        {"seat": 0, "family": "flor", "points": 26},
        {"seat": 1, "family": "flor", "points": 38},
    ]
    assert t.scores == [0, 4]


def test_flor_tie_goes_to_the_mano():
    t = flor_table(["7o", "6o", "5o"], ["7c", "6c", "5c"]).play("0 flor", "1 accept")
    assert t.scores == [4, 0]
    assert t.of(EventKind.POINTS_DECLARED)[-1]["points"] is None  # son buenas


def test_flor_can_end_the_match_mid_hand():
    t = Table("argentine").set_scores(13, 0).deal({0: FLOR_HI, 1: PLAIN}).play("0 flor")
    assert t.state.phase == "over" and t.state.winner == 0
    assert t.of(EventKind.CARDS_REVEALED) == [
        {"seat": 0, "cards": FLOR_HI, "count": 3, "reason": "flor", "public": True}
    ]


def test_fold_to_a_pending_flor_pays_the_refusal_and_the_hand():
    t = flor_table(FLOR_HI, FLOR_LO).play("0 flor", "1 fold")
    assert t.scores == [3 + 1, 0]


def test_flor_not_mandatory_holder_may_play_on():
    t = flor_table(FLOR_HI, PLAIN, flor_mandatory=False)
    legal = t.legal(0)
    assert "flor" in legal and "play 7o" in legal
    assert not any("envido" in a for a in legal)  # a holder of flor does not call envido
    t.play("0 play 7o")
    assert "flor" not in t.legal(0)


def test_envido_with_flor_in_hand_option():
    """``envido_with_flor``: a flor holder may call envido (flor not mandatory)."""
    t = flor_table(FLOR_HI, PLAIN, flor_mandatory=False, envido_with_flor=True)
    assert {"envido", "flor"} <= set(t.legal(0))
    t.play("0 envido", "1 accept")
    assert t.scores == [2, 0]  # 7 + 6 + 20 = 33 beats 5


def test_playing_without_flor():
    """``flor=False``: no flor; three cards of a suit are an envido of the two best."""
    t = flor_table(FLOR_HI, PLAIN, flor=False)
    assert "flor" not in t.legal(0) and "envido" in t.legal(0)
    t.play("0 envido", "1 accept")
    assert t.of(EventKind.POINTS_DECLARED)[0]["points"] == 33


def test_flor_needs_envido_and_options_need_flor():
    with pytest.raises(ValueError, match="flor"):
        get_rules("argentine", envido=False)
    with pytest.raises(ValueError, match="envido_with_flor"):
        get_rules("argentine", flor=False, envido_with_flor=True)


def test_four_players_flor_holder_answers_an_envido_for_his_side():
    """Mandatory flor: the opponent holding flor answers an envido (he must sing it)."""
    t = Table("argentine-4p").deal({0: ENVIDO_33, 1: PLAIN, 2: ["4o", "5c", "11e"], 3: FLOR_LO})
    t.play("0 envido")
    assert t.turn() == 3 and t.legal(3) == ["flor"]
    t.play("3 flor")
    assert t.scores == [0, 3]


def test_four_players_two_flors_on_one_side_unopposed():
    """Each flor of the side counts 3 when nobody opposes one."""
    t = Table("argentine-4p").deal({0: FLOR_HI, 1: PLAIN, 2: FLOR_LO, 3: ["4o", "5c", "11e"]})
    t.play("0 flor")
    assert t.scores == [6, 0]
    assert t.turn() == 0 and "flor" not in t.legal(0)
    t.play("0 play 7o", "1 play 4e")
    assert t.turn() == 2 and "flor" not in t.legal(2)  # the partner's flor was counted


def test_observations_never_show_the_opponents_flor_before_the_hand_ends():
    t = flor_table(FLOR_HI, FLOR_LO).play("0 flor", "1 accept")
    for seat in (1, None):
        o = t.obs(seat).to_dict()
        text = str(o)
        for c in FLOR_HI:
            assert c not in text


def test_four_players_the_callers_partner_sings_his_flor_before_the_envido_is_answered():
    """La flor está primero: the envido caller's partner holding flor must sing it (his only
    action) before the opponents answer; the flor scores and the envido is void."""
    t = Table("argentine-4p").deal({0: ENVIDO_33, 1: PLAIN, 2: FLOR_LO, 3: ["4o", "5c", "11e"]})
    t.play("0 envido")
    assert t.turn() == 2 and t.legal(2) == ["flor"]
    t.play("2 flor")
    assert t.scores == [3, 0]
    assert t.of(EventKind.CALL_MADE)[-1]["cancels"] == "envido"
    assert [e["family"] for e in t.of(EventKind.BET_WON)] == ["flor"]
    assert t.turn() == 0 and not any("envido" in a for a in t.legal(0))  # the caller plays on


def test_four_players_partners_flor_then_an_opponents_flor_answers_it():
    """The partner sings first (he comes before the opponent with flor), the opponent's flor
    answers it, and both flors are declared when it is accepted."""
    t = Table("argentine-4p").deal({0: ENVIDO_33, 1: PLAIN, 2: FLOR_LO, 3: FLOR_HI})
    t.play("0 envido")
    assert t.turn() == 2
    t.play("2 flor")
    assert t.turn() == 3 and "accept" in t.legal(3)
    t.play("3 accept")
    assert t.scores == [0, 4]  # con flor quiero: the best flor (38 against 26) takes 4
