"""The texts' readings as defaults, the disagreements as options: the envido that speaks for
the pair (seed 001), the Uruguayan piezas as seed 001 writes them, flor values, the Valencian
joc fora. Each test quotes the statement it checks."""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import EventKind, IllegalActionError, get_rules, observe
from truco_engine.ranking import envido_points_for, flor_points_for

ENVIDO_33 = ["7e", "6e", "1b"]
PLAIN = ["4e", "5b", "10c"]
PLAIN_2 = ["4o", "5c", "11e"]
FLOR_LO = ["1c", "2c", "3c"]  # 26
FLOR_HI = ["7o", "6o", "5o"]  # 38

SEED_001_PRESETS = ("gaucho", "uruguayan", "uruguayan-40", "carancho", "pica-pica", "valencian")


# ------------------------------------------------------ the envido speaks for the pair
@pytest.mark.parametrize("preset", SEED_001_PRESETS)
def test_seed_001_presets_void_the_partners_flor(preset):
    assert get_rules(preset).partner_flor == "voided"


def test_seed_001_the_manos_envido_speaks_for_the_pair_and_voids_his_partners_flor():
    """Seed 001: "se o mão chamar o envido, está falando pela dupla (ou equipe), o que
    anularia a flor do seu parceiro." Seat 0 (the pair's mão) calls envido; his partner,
    seat 2, holds a flor: it is void for the hand. The envido is answered by the next
    opponent and played as usual; seat 2 never sings."""
    t = Table("gaucho").deal({0: ENVIDO_33, 1: PLAIN, 2: FLOR_LO, 3: PLAIN_2})
    t.play("0 envido")
    assert t.turn() == 1 and "flor" not in t.legal(2)
    t.play("1 accept")
    assert t.scores == [2, 0]  # 33 against 5: the envido stands
    assert [e["family"] for e in t.of(EventKind.BET_WON)] == ["envido"]
    t.play("0 play 7e", "1 play 4e")
    assert t.turn() == 2 and "flor" not in t.legal(2)
    assert t.hand.flor_void == (2,)


def test_seed_001_an_opponents_flor_still_answers_the_envido():
    """The voided flor is the partner's only: an opponent holding flor still sings it over the
    envido (mandatory flor), and with the partner's flor void nobody opposes it."""
    t = Table("gaucho").deal({0: ENVIDO_33, 1: PLAIN, 2: FLOR_LO, 3: FLOR_HI})
    t.play("0 envido")
    assert t.turn() == 3 and t.legal(3) == ["flor"]
    t.play("3 flor")
    assert t.scores == [0, 3]
    assert t.of(EventKind.CALL_MADE)[-1]["cancels"] == "envido"


def test_option_la_flor_esta_primero_in_the_argentine_presets():
    """``partner_flor="first"`` (argentine): the caller's partner sings his flor before the
    envido is answered, and it voids the envido."""
    assert get_rules("argentine").partner_flor == "first"
    t = Table("gaucho", partner_flor="first").deal({0: ENVIDO_33, 1: PLAIN, 2: FLOR_LO, 3: PLAIN_2})
    t.play("0 envido")
    assert t.turn() == 2 and t.legal(2) == ["flor"]
    t.play("2 flor")
    assert t.scores == [3, 0] and [e["family"] for e in t.of(EventKind.BET_WON)] == ["flor"]


def test_without_mandatory_flor_the_partner_may_sing_out_of_turn_over_the_envido():
    """Item of the turn model: "a partner may sing flor when the envido is called where the
    rule set says so". Without ``flor_mandatory`` nobody is made to wait for him: the envido's
    responder is awaited, and the partner may sing his flor out of turn (it voids the envido)."""
    t = Table("argentine-4p", flor_mandatory=False).deal({0: ENVIDO_33, 1: PLAIN, 2: FLOR_LO, 3: PLAIN_2})
    t.play("0 envido")
    assert t.turn() == 1 and t.obs(2).awaited == (1,)
    assert t.legal(2) == ["flor"] and t.legal(3) == []
    t.play("2 flor")
    assert t.scores == [3, 0] and t.of(EventKind.CALL_MADE)[-1]["cancels"] == "envido"
    assert t.turn() == 0  # nothing pending: the caller plays on
    with pytest.raises(IllegalActionError):
        t.play("2 flor")


def test_a_seats_possible_flor_never_shows_in_another_seats_observation():
    """Whether a seat may sing flor depends on its hidden cards: the other seats' (and a
    spectator's) observations are the same whether or not it holds one."""
    views = []
    for partner in (FLOR_LO, ["1c", "2o", "3e"]):
        t = Table("argentine-4p", flor_mandatory=False).deal({0: ENVIDO_33, 1: PLAIN, 2: partner, 3: PLAIN_2})
        t.play("0 envido")
        views.append({seat: observe(t.state, seat).to_dict() for seat in (0, 1, 3, None)})
        assert ("flor" in t.legal(2)) == (partner is FLOR_LO)
    assert views[0] == views[1]


def test_voided_partner_flor_cannot_be_sung_out_of_turn_either():
    t = Table("gaucho", flor_mandatory=False).deal({0: ENVIDO_33, 1: PLAIN, 2: FLOR_LO, 3: PLAIN_2})
    t.play("0 envido")
    assert t.legal(2) == []


# ------------------------------------------------------------------ Uruguayan piezas
def test_seed_001_pieza_values_as_written_are_an_option():
    """Seed 001: "2, 4, 5, Cavaleiro (Cavalo) ... valem 30 pontos, e o Valete ... vale 29
    pontos" (the caballo is the 11, the sota the 10). The default keeps the Uruguayan tables
    (2 = 30, 4 = 29, 5 = 28, 11 = 27, 10 = 27); ``pieza_values="text"`` plays the text."""
    tables, text = get_rules("uruguayan"), get_rules("uruguayan", pieza_values="text")
    assert tables.pieza_values == "tables"
    for card, want_tables, want_text in [("2o", 30, 30), ("4o", 29, 30), ("5o", 28, 30), ("11o", 27, 30)]:
        assert envido_points_for(tables, "3o", [card, "7e", "12b"]) == want_tables + 7
        assert envido_points_for(text, "3o", [card, "7e", "12b"]) == want_text + 7
    assert envido_points_for(tables, "3o", ["10o", "6c", "12e"]) == 27 + 6
    assert envido_points_for(text, "3o", ["10o", "6c", "12e"]) == 29 + 6
    # The 12 that stands in for a muestra that is a pieza takes that pieza's value.
    assert envido_points_for(text, "4o", ["12o", "1c", "10e"]) == 30 + 1
    assert flor_points_for(text, "3o", ["5o", "6c", "7c"]) == 30 + 13


def test_pieza_values_reach_a_played_envido():
    t = Table("uruguayan", pieza_values="text").deal({0: ["4o", "7e", "12b"], 1: ["5b", "6b", "1e"]}, "3o")
    t.play("0 envido", "1 accept")
    assert t.of(EventKind.POINTS_DECLARED)[0] == {"seat": 0, "family": "envido", "points": 37}


# ------------------------------------------------------------------------ flor values
def test_flor_values_are_rule_options():
    """Flor 3, flor against flor 4 ("con flor quiero"), contraflor 6 are the defaults; each
    is a rule option."""
    t = Table("argentine", flor_value=4).deal({0: FLOR_HI, 1: PLAIN}).play("0 flor")
    assert t.scores == [4, 0]
    kw = {"flor_value": 2, "flor_accepted_value": 5, "contraflor_value": 9}

    def duel() -> Table:
        return Table("argentine", **kw).deal({0: FLOR_HI, 1: FLOR_LO}).play("0 flor")

    assert duel().play("1 accept").scores == [5, 0]
    assert duel().play("1 decline").scores == [2, 0]
    t = duel().play("1 contraflor")
    assert t.obs(0).pending.value_if_accepted == 9 and t.obs(0).pending.value_if_declined == 5
    assert t.play("0 decline").scores == [0, 5]


@pytest.mark.parametrize(
    ("options", "answers"),
    [
        ({}, {"accept", "decline", "contraflor", "contraflor_al_resto", "fold"}),
        ({"contraflor": False}, {"accept", "decline", "contraflor_al_resto", "fold"}),
        ({"contraflor_al_resto": "off"}, {"accept", "decline", "contraflor", "fold"}),
        ({"contraflor": False, "contraflor_al_resto": "off"}, {"accept", "decline", "fold"}),
    ],
)
def test_contraflor_and_contraflor_al_resto_can_be_left_out(options, answers):
    t = Table("argentine", **options).deal({0: FLOR_HI, 1: FLOR_LO}).play("0 flor")
    assert set(t.legal(1)) == answers


def test_contraflor_al_resto_worth_the_game_option():
    """``contraflor_al_resto="game"``: what the leader needs to win the game (acanomas.com:
    "la diferencia entre 30 y la anotación más alta"), even where the falta envido counts
    the half."""
    for option, value in (("falta", 6), ("game", 21)):
        t = Table("argentine-30", falta_envido="half", contraflor_al_resto=option)
        t.set_scores(4, 9).deal({0: FLOR_LO, 1: FLOR_HI}).play("0 flor", "1 contraflor_al_resto")
        assert t.obs(0).pending.value_if_accepted == value


# ------------------------------------------------------------------ Valencian joc fora
def _joc_fora_table() -> Table:
    return Table("valencian-2p").set_scores(3, 7).deal({0: ["1e", "1b", "7e"], 1: ["4o", "5c", "6b"]})


def test_valencian_ladder_ends_with_joc_fora():
    """Valencian truc: truc (2), retruc (3), quatre val (4), then joc fora, worth "la cifra
    necessaria al vincitore per completare il letto" (what the winner needs to finish the
    game, the cama)."""
    r = get_rules("valencian")
    assert (r.truco_call_names, r.truco_game_call) == (("truc", "retruc", "quatre_val"), "joc_fora")
    t = _joc_fora_table().play("0 truco", "1 truco", "0 truco", "1 truco")
    assert t.of(EventKind.CALL_MADE)[-1]["name"] == "joc_fora"
    pending = t.obs(0).pending
    assert (pending.name, pending.value_if_declined) == ("joc_fora", 4)
    assert "truco" not in t.legal(0)  # the top of the ladder


def test_joc_fora_accepted_the_winner_takes_the_game():
    t = _joc_fora_table().play("0 truco", "1 truco", "0 truco", "1 truco", "0 accept")
    assert t.obs(1).hand_wins_game
    t.play("0 play 1e", "1 play 4o", "0 play 1b", "1 play 5c")
    assert t.ended() == {"winner_team": 0, "points": 12 - 3, "reason": "tricks"}
    assert t.of(EventKind.GAME_ENDED)[-1] == {"game_number": 1, "winner_team": 0, "games_won": [1, 0]}
    assert t.state.phase == "deal" and t.scores == [0, 0]  # best of three: the next game


def test_joc_fora_declined_gives_the_quatre_val():
    t = _joc_fora_table().play("0 truco", "1 truco", "0 truco", "1 truco", "0 decline")
    assert t.ended() == {"winner_team": 1, "points": 4, "reason": "declined"}
    assert t.scores == [3, 11]


def test_joc_fora_is_an_option():
    t = Table("valencian-2p", truco_game_call=None).deal({0: ["1e", "1b", "7e"], 1: ["4o", "5c", "6b"]})
    t.play("0 truco", "1 truco", "0 truco")
    assert "truco" not in t.legal(1)
