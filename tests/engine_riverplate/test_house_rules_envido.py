"""House rules of the envido other engines play (docs/rules/house-rules.md): each scenario is
restated from the named engine's test in our own cards and seats, and played with and without
the option.

gotruco plays the Uruguayan game to 20 (halves of 10) with a muestra; marianogappa the
Argentine game to 15 or 30 without flor. The hands below hold no pieza and no flor unless the
test says so.
"""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import EventKind, IllegalActionError

HIGH = ["7o", "6o", "1e"]  # envido 33
LOW = ["4e", "5b", "10c"]  # envido 5
MUESTRA = "4c"  # a muestra of copas: none of these cards is a pieza


def uruguayan_20(**kw: object) -> Table:
    """gotruco's ``NuevoJuego(pdt.A20, ...)``: two players, a game to 20."""
    return Table("uruguayan", target_points=20, **kw).deal({0: HIGH, 1: LOW}, turn_up=MUESTRA)


def call(t: Table, *chain: str) -> int:
    """Seat 0 opens, the seats alternate; returns the seat that answers the last call."""
    seat = 0
    for name in chain:
        t.play(f"{seat} {name}")
        seat = 1 - seat
    return seat


# ------------------------------------------------------ envido_declined_plus_one
@pytest.mark.parametrize(
    ("chain", "default", "plus_one"),
    [
        # gotruco truco/juego_test.go, the table at its top ("Envido + envido 2+2/2+1" ...)
        # and TestEnvidoNoQuiero, TestEnvidoEnvidoNoQuiero, TestEnvidoRealEnvidoNoQuiero,
        # TestEnvidoEnvidoRealEnvidoNoQuiero, TestEnvidoFaltaEnvidoNoQuiero,
        # TestRealEnvidoFaltaEnvidoNoQuiero, TestEnvidoEnvidoRealEnvidoFaltaEnvidoNoQuiero.
        (["envido"], 1, 1),
        (["real_envido"], 1, 1),
        (["falta_envido"], 1, 1),
        (["envido", "envido"], 2, 3),
        (["envido", "real_envido"], 2, 3),
        (["envido", "envido", "real_envido"], 4, 5),
        (["envido", "falta_envido"], 2, 3),
        (["real_envido", "falta_envido"], 3, 4),
        (["envido", "envido", "real_envido", "falta_envido"], 7, 8),
    ],
)
def test_a_declined_chain_pays_what_it_reached_plus_one(chain, default, plus_one):
    for option, points in ((False, default), (True, plus_one)):
        t = uruguayan_20(envido_declined_plus_one=option)
        answerer = call(t, *chain)
        caller = 1 - answerer
        assert t.obs(answerer).pending.value_if_declined == points
        t.play(f"{answerer} decline")
        assert t.scores[caller] == points and t.scores[answerer] == 0


def test_plus_one_also_when_folding_counts_the_envido_as_declined():
    """Interaction with ``fold_on_envido="declined"``: folding to a pending envido is declining
    it, so it pays the same plus one, and then the hand."""
    for option, envido in ((False, 2), (True, 3)):
        t = uruguayan_20(envido_declined_plus_one=option, fold_on_envido="declined")
        t.play("0 envido", "1 envido", "0 fold")
        assert t.scores == [0, envido + 1]


# ------------------------------------------------------- falta_envido_adds_chain
@pytest.mark.parametrize(
    ("chain", "before"),
    [
        # gotruco truco/juego_test.go: TestFaltaEnvidoQuiero (10), TestEnvidoFaltaEnvidoQuiero
        # (2+10), TestRealEnvidoFaltaEnvidoQuiero (3+10), TestEnvidoEnvidoRealEnvidoFaltaEnvidoQuiero
        # (2+2+3+10): at 0-0 of 20 the falta closes the first half, 10.
        (["falta_envido"], 0),
        (["envido", "falta_envido"], 2),
        (["real_envido", "falta_envido"], 3),
        (["envido", "real_envido", "falta_envido"], 5),
        (["envido", "envido", "real_envido", "falta_envido"], 7),
    ],
)
def test_an_accepted_falta_adds_the_calls_before_it(chain, before):
    for option, points in ((False, 10), (True, 10 + before)):
        t = uruguayan_20(falta_envido_adds_chain=option)
        answerer = call(t, *chain)
        assert t.obs(answerer).pending.value_if_accepted == points
        t.play(f"{answerer} accept")
        assert t.scores == [points, 0]  # seat 0 holds 33
        assert t.of(EventKind.CALL_ANSWERED)[-1]["value"] == points


def test_adds_chain_and_plus_one_together_play_gotrucos_table():
    """gotruco's table: "Envido + falta envido 2+x/2+1", both options on."""
    t = uruguayan_20(falta_envido_adds_chain=True, envido_declined_plus_one=True).play(
        "0 envido", "1 falta_envido"
    )
    pending = t.obs(0).pending
    assert (pending.value_if_accepted, pending.value_if_declined) == (12, 3)


def test_adds_chain_leaves_the_contraflor_al_resto_alone():
    """Interaction with flor: gotruco (pdt/jugada.go) pays an accepted contraflor al resto its
    falta only, the envido called before the flor not added."""
    flor_a, flor_b = ["7e", "6e", "5e"], ["1c", "2c", "3c"]  # 38 and 26
    for option in (False, True):
        t = Table("argentine", falta_envido_adds_chain=option, flor_mandatory=False, envido_with_flor=True)
        t.deal({0: flor_b, 1: flor_a}).play("0 envido", "1 flor", "0 contraflor_al_resto", "1 accept")
        assert t.scores == [0, 15]
        assert [e["family"] for e in t.of(EventKind.BET_WON)] == ["flor"]


# -------------------------------------------------------- falta_envido_by_winner
def test_in_the_first_half_the_falta_pays_what_its_winner_needs():
    """marianogappa truco/actions_any_envido_test.go, "falta envido with son mejores with 30
    points, loser has 14 points, but winner still wins 15 points because the game goes to 30":
    at 14-0 of 30 the player at 0 wins the falta and scores 15 (the leader would need 1)."""
    for option, points in ((False, 1), (True, 15)):
        t = Table("argentine-30", falta_envido="half", falta_envido_by_winner=option, flor=False)
        t.set_scores(14, 0).deal({0: LOW, 1: HIGH}).play("0 falta_envido", "1 accept")
        assert t.scores == [14, points]
        assert t.of(EventKind.BET_WON)[-1]["points"] == points
        assert t.of(EventKind.CALL_ANSWERED)[-1]["value"] == points


def test_by_winner_the_leader_winning_pays_its_own_need():
    """The same table, the leader wins: what he needs to close the half, as without the
    option; the pending call showed the most it could pay (the trailing side's need)."""
    t = Table("argentine-30", falta_envido="half", falta_envido_by_winner=True, flor=False)
    t.set_scores(14, 0).deal({0: HIGH, 1: LOW}).play("0 falta_envido")
    assert t.obs(1).pending.value_if_accepted == 15
    t.play("1 accept")
    assert t.scores == [15, 0]


def test_by_winner_in_the_second_half_pays_what_the_leader_needs():
    """gotruco pdt/partida.go CalcPtsFaltaEnvido: once the leader is in the second half
    (buenas), the falta is what the leader needs to win, whoever wins it."""
    t = Table("argentine-30", falta_envido="half", falta_envido_by_winner=True, flor=False)
    t.set_scores(20, 3).deal({0: LOW, 1: HIGH}).play("0 falta_envido", "1 accept")
    assert t.scores == [20, 13]


def test_by_winner_also_pays_the_contraflor_al_resto_played_as_the_falta():
    """Interaction with flor: gotruco pays a contraflor al resto ``CalcPtsContraFlorAlResto``
    = the falta envido of its winner (pdt/partida.go)."""
    flor_a, flor_b = ["7e", "6e", "5e"], ["1c", "2c", "3c"]  # 38 and 26
    for option, points in ((False, 1), (True, 15)):
        t = Table("argentine-30", falta_envido="half", falta_envido_by_winner=option)
        t.set_scores(14, 0).deal({0: flor_b, 1: flor_a})
        t.play("0 flor", "1 contraflor_al_resto", "0 accept")
        assert t.scores == [14, points]


# ----------------------------------------------------- falta_after_envido_envido
def test_no_falta_envido_straight_after_envido_envido():
    """marianogappa truco/envido_sequence.go: its table of valid envido sequences lists no
    envido, envido, falta envido (nor its quiero / no quiero)."""
    t = Table("argentine", flor=False).deal({0: HIGH, 1: LOW}).play("0 envido", "1 envido")
    assert "falta_envido" in t.legal(0)
    t = Table("argentine", flor=False, falta_after_envido_envido=False).deal({0: HIGH, 1: LOW})
    t.play("0 envido", "1 envido")
    assert [a for a in t.legal(0) if "envido" in a] == ["real_envido"]
    with pytest.raises(IllegalActionError, match="falta_after_envido_envido"):
        t.play("0 falta_envido")


def test_falta_still_follows_envido_and_the_real_envido():
    """marianogappa's table keeps envido, falta; real envido, falta; envido, envido, real
    envido, falta."""
    for chain in (["envido"], ["real_envido"], ["envido", "envido", "real_envido"]):
        t = Table("argentine", flor=False, falta_after_envido_envido=False).deal({0: HIGH, 1: LOW})
        answerer = call(t, *chain)
        assert "falta_envido" in t.legal(answerer)
