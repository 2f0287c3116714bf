"""House rules of the mazo other engines play (docs/rules/house-rules.md): the envido point a
fold concedes after an accepted truco (marianogappa/truco) and folding alone in team games
(gotruco's individual mazo). Each scenario is restated from the named engine's test in our
own cards and seats, and played with and without the option."""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import EventKind, IllegalActionError, NotYourTurnError

HIGH = ["7o", "6o", "1e"]  # envido 33
LOW = ["4e", "5b", "10c"]  # envido 5
FLOR = ["1c", "2c", "3c"]


# ---------------------------------------------------- fold_concedes_envido_after_truco
def conceding(after_truco: bool, **kw: object) -> Table:
    rules = {"fold_concedes_envido": True, "fold_concedes_envido_after_truco": after_truco, "flor": False}
    return Table("argentine", **rules, **kw).deal({0: HIGH, 1: LOW})


def test_the_mazo_concedes_the_envido_after_an_accepted_truco():
    """marianogappa truco/action_me_voy_al_mazo_test.go, "quiero_vale_cuatro_accepted_leads_to_5
    _points": truco, retruco, vale cuatro, quiero, then the mazo in the first trick: 4 for the
    vale cuatro and 1 for the envido nobody played."""
    for option, points in ((False, 4), (True, 5)):
        t = conceding(option).play("0 truco", "1 truco", "0 truco", "1 accept", "0 fold")
        assert t.scores == [0, points]


def test_after_truco_the_envido_window_stays_closed():
    """The option keeps the point, not the call: once a truco is accepted nobody calls envido
    (seed 002 rule 7), nor sings flor."""
    t = conceding(True).play("0 truco", "1 accept")
    assert not any("envido" in a for a in t.legal(0))
    t = Table(
        "argentine", fold_concedes_envido=True, fold_concedes_envido_after_truco=True, flor_mandatory=False
    ).deal({0: LOW, 1: FLOR})
    t.play("0 truco", "1 accept", "0 play 4e")
    assert "flor" not in t.legal(1) and "fold" in t.legal(1)


def test_folding_as_the_answer_to_a_raise_concedes_it_too():
    for option, points in ((False, 2), (True, 3)):
        t = conceding(option).play("0 truco", "1 truco", "0 fold")
        assert t.scores == [0, points]


def test_no_point_once_the_envido_was_played_or_the_first_trick_is_over():
    t = conceding(True).play("0 envido", "1 accept", "0 truco", "1 accept", "0 fold")
    assert t.scores == [2, 2]  # the envido's 2 to seat 0, the truco's 2 to seat 1
    t = conceding(True).play("0 truco", "1 accept", "0 play 1e", "1 play 4e", "0 fold")
    assert t.scores == [0, 2]


def test_a_sung_flor_closes_the_envido_for_the_mazo():
    """Interaction with flor: a flor is the envido of its hand; after it, no point."""
    t = Table("argentine", fold_concedes_envido=True, fold_concedes_envido_after_truco=True)
    t.deal({0: LOW, 1: FLOR}).play("0 truco", "1 flor", "1 accept", "0 fold")
    assert t.scores == [0, 3 + 2]


# ------------------------------------------------------------------------ fold_alone
SEATS = {0: ["4e", "5b", "10c"], 1: HIGH, 2: ["7e", "5e", "12c"], 3: ["11o", "7c", "4b"]}
"""Envido 5, 33, 32, 7: seat 1 has the best envido, his opponent seat 2 the next best."""


def four(alone: bool = True, preset: str = "argentine-4p", **kw: object) -> Table:
    return Table(preset, fold_alone=alone, **kw).deal(SEATS)


def test_a_player_folds_alone_and_his_partner_plays_on():
    """gotruco pdt/partida_test.go TestFixTurnoDeAlguienQueSeFueAlMazo: the mano plays, the
    next player goes to the mazo alone, play goes on with the player after him; his partner
    is still in. Without the option the fold gives up the hand for the side."""
    t = four(False).play("0 play 4e", "1 fold")
    assert t.ended() == {"winner_team": 0, "points": 1, "reason": "folded"}
    t = four().play("0 play 4e", "1 fold")
    assert not t.of(EventKind.HAND_ENDED) and t.of(EventKind.FOLDED) == [{"seat": 1, "team": 1}]
    assert t.turn() == 2 and t.state.hand.out == (1,)
    assert t.obs(1).hand == () and t.obs(0).hand_sizes == (2, 0, 3, 3) and t.legal(1) == []
    t.play("2 play 5e", "3 play 11o")  # three cards complete the trick
    assert t.of(EventKind.TRICK_ENDED) == [
        {"trick_index": 0, "winner_seat": 3, "winner_team": 1, "tied": False}
    ]
    t.play("3 play 7c", "0 play 5b")
    assert t.turn() == 2  # seat 1 is skipped


def test_the_last_of_a_side_to_fold_gives_up_the_hand():
    t = four().play("0 play 4e", "1 fold", "2 play 5e", "3 fold")
    assert t.ended() == {"winner_team": 0, "points": 1, "reason": "folded"}
    assert t.scores == [1, 0]


def test_a_seat_that_left_does_not_declare_its_envido():
    """gotruco pdt/partida_test.go TestFixNoLeDeberiaResponderDesdeUltratumba: a player who
    went to the mazo does not answer ("from beyond the grave") the envido played after him."""
    t = four().play("0 play 4e", "1 fold", "2 envido")
    assert t.obs(3).pending.responder == 3  # the next opponent still in
    t.play("3 accept")
    assert [d["seat"] for d in t.of(EventKind.POINTS_DECLARED)] == [0, 2, 3]
    assert t.of(EventKind.BET_WON)[-1] == {
        "family": "envido",
        "winner_seat": 2,
        "winner_team": 0,
        "points": 2,
    }


def test_a_seat_that_left_calls_nothing():
    """gotruco pdt/partida_test.go TestFixRespuestaNadaQueVer: a player who went to the mazo
    cannot call envido; nor, with calls out of turn (paulista), truco."""
    t = four().play("0 play 4e", "1 fold")
    with pytest.raises(NotYourTurnError):
        t.play("1 envido")
    p = Table("paulista-4p", fold=True, fold_alone=True).deal({}, turn_up="4D")
    p.play("0 play " + p.state.hand.cards[0][0], "1 fold")
    assert "truco" in p.legal(3) and p.legal(1) == []
    with pytest.raises(NotYourTurnError):
        p.play("1 truco")


def test_folding_as_an_answer_gives_up_the_hand_for_the_side():
    """An answer speaks for the side (one seat answers a call): folding then is the side's."""
    t = four().play("0 truco", "1 fold")
    assert t.ended() == {"winner_team": 0, "points": 1, "reason": "folded"}


def test_folding_alone_concedes_no_envido_point():
    """Interaction with ``fold_concedes_envido``: the point goes with the side's fold only."""
    t = four(fold_concedes_envido=True).play("0 play 4e", "1 fold")
    assert t.scores == [0, 0]
    t.play("2 play 5e", "3 fold")
    assert t.scores == [2, 0]


def test_the_flor_of_a_seat_that_left_is_void():
    """gotruco pdt/jugada.go (IrseAlMazo): "si tenia flor -> ya no lo tomo en cuenta"."""
    hands = {0: ["4e", "5b", "10c"], 1: FLOR, 2: ["7o", "6o", "5o"], 3: ["11o", "7c", "4b"]}
    t = Table("argentine-4p", fold_alone=True, flor_mandatory=False).deal(hands)
    t.play("0 play 4e", "1 fold", "2 flor")
    assert t.of(EventKind.CALL_MADE)[-1]["responder"] is None  # unopposed: scored at once
    assert t.scores == [3, 0]


def test_a_leader_who_leaves_hands_the_lead_on():
    """The seat after him in play order opens the trick in his place."""
    t = four().play("0 fold")
    assert t.turn() == 1 and t.state.hand.tricks[0].leader == 1


def test_a_mano_who_left_has_a_stand_in_for_the_lead_after_a_tie():
    """Interaction with ``lead_after_tie="mano"`` (decision): after a tied trick the first seat
    after the mano still in leads."""
    ties = {0: ["4e", "5b", "10c"], 1: ["3o", "6b", "11c"], 2: ["3e", "4o", "12c"], 3: ["5e", "6e", "12b"]}
    for alone, leader in ((False, 0), (True, 1)):
        t = Table("argentine-4p", fold_alone=True, lead_after_tie="mano", flor=False).deal(ties)
        t.play("0 play 4e" if not alone else "0 fold", "1 play 3o", "2 play 3e", "3 play 5e")
        assert t.of(EventKind.TRICK_ENDED)[-1]["tied"] is True
        assert t.turn() == leader and t.state.hand.tricks[1].leader == leader


def test_head_to_head_sub_hands_have_no_partner_to_play_on():
    """Interaction with pica-pica: in a one-against-one sub-hand the fold is the side's."""
    t = Table("pica-pica", fold_alone=True, flor=False).deal({})
    t.play("0 fold", "1 fold", "2 fold", "3 fold")
    assert not t.of(EventKind.HAND_ENDED) and t.state.hand.out == (0, 1, 2, 3)
    t.play("4 fold")  # the last of seats 0, 2, 4
    assert t.ended() == {"winner_team": 1, "points": 1, "reason": "folded"}
    t.deal({})
    pair = t.state.hand.order
    assert len(pair) == 2 and t.turn() == pair[0]
    t.play(f"{pair[0]} fold")
    assert t.ended()["reason"] == "folded" and t.state.hand.order != pair


def test_no_lone_fold_before_a_flor_that_must_be_sung():
    t = Table("argentine-4p", fold_alone=True).deal(
        {0: FLOR, 1: LOW, 2: ["7o", "6e", "4b"], 3: ["11o", "7c", "5e"]}
    )
    assert t.legal(0) == ["flor"]
    with pytest.raises(IllegalActionError):
        t.play("0 fold")
