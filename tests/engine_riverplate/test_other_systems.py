"""Gaúcho / cego, Valencian truc, carancho, pica-pica and the larger tables (seed 001)."""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from tests.helpers.events import data
from truco_engine import EventKind, InvalidRulesError, get_rules
from truco_engine.cards import SPANISH_22
from truco_engine.ranking import strength_table


# --------------------------------------------------------------------- gaúcho
def test_gaucho_ranking_is_the_argentine_order():
    """001 (cego/gaúcho column): espadilha, pauzão, 7 de espadas, 7 de ouro, 3s, 2s, ases
    podres, 12s, 11s, 10s, the other 7s, 6s, 5s, 4s."""
    g = strength_table(get_rules("gaucho"), None)
    a = strength_table(get_rules("argentine"), None)
    assert g == a


def test_gaucho_games_of_twelve_best_of_three():
    """001: "até que uma equipe termine o jogo com 2 jogos de 12 pontos" (ruins and boas)."""
    r = get_rules("gaucho")
    assert (r.target_points, r.games_to_win, r.players) == (12, 2, 4)
    assert r.truco_call_names == ("truco", "retruco", "vale_quatro")
    assert get_rules("cego") == r and get_rules("gaúcho") == r


def test_gaucho_clean_deck_keeps_the_top_sevens():
    """001: "Usa-se tirar o baralho sujo ... a variação 'baralho limpo'": no plain 4–7; the
    7 de espadas and 7 de ouro stay (they rank above the 3s)."""
    r = get_rules("gaucho", clean_deck=True)
    assert "7e" in r.deck_cards and "7o" in r.deck_cards
    assert not any(c in r.deck_cards for c in ("7b", "7c", "6e", "5o", "4b"))
    assert len(r.deck_cards) == 26
    Table(r).deal()


# ------------------------------------------------------------------ Valencian
def test_valencian_deck_has_22_cards():
    """001: "baralho espanhol de 22 cartas, já que todos os noves, oitos, figuras ..., dois,
    ases de copas e de ouros ... são removidos"."""
    r = get_rules("valencian")
    assert r.deck_cards == SPANISH_22 and len(SPANISH_22) == 22


def test_valencian_order():
    table = strength_table(get_rules("valencian"), None)
    seq = ["1e", "1b", "7e", "7o", "3c", "7c", "6c", "5c", "4c"]
    values = [table[c] for c in seq]
    assert values == sorted(values, reverse=True) and len(set(values)) == len(seq)
    assert table["7b"] == table["7c"] and table["3e"] == table["3o"]


def test_valencian_players_two_four_six():
    """001: "por dois, quatro ou seis jogadores"."""
    for n in (2, 4, 6):
        Table(f"valencian-{n}p").deal()
    with pytest.raises(InvalidRulesError, match="players"):
        get_rules("valencian-8p")


def test_valencian_calls_and_envit():
    t = Table("valencian-2p").deal({0: ["7o", "6o", "1e"], 1: ["4e", "5b", "3c"]})
    assert "envido" in t.legal(0) and "flor" not in t.legal(0)
    t.play("0 truco")
    assert t.of(EventKind.CALL_MADE)[-1]["name"] == "truc"


# ----------------------------------------------------------- three, individual
def test_three_players_each_for_themselves():
    r = get_rules("argentine-3p")
    assert r.play_mode == "individual" and r.sides == 3
    t = Table(r).deal({0: ["1e", "4o", "5c"], 1: ["4e", "5b", "10c"], 2: ["6o", "6b", "11e"]})
    t.play("0 envido")
    assert t.turn() == 1  # the next player answers for the table
    t.play("1 accept")
    assert t.of(EventKind.BET_WON)[-1]["winner_team"] == 2  # 6 beats 5 and 5: seat 2 scores alone
    assert t.scores == [0, 0, 2]


# ------------------------------------------------------------------- carancho
CAR = {0: ["1e", "1b", "7e", "4c"], 1: ["4e", "5b", "10c"], 2: ["6o", "6b", "11e"]}


def test_carancho_gets_the_first_and_an_extra_card_and_discards():
    """001: "O carancho sempre recebe a primeira carta e uma carta extra. Destas, pode escolher
    as três melhores e descartar uma"."""
    t = Table("carancho").deal(CAR)
    assert t.hand.cards[0] == CAR[0] and [len(c) for c in t.hand.cards] == [4, 3, 3]
    assert t.legal(0) == [f"discard {c}" for c in CAR[0]]
    t.play("0 discard 4c")
    assert t.hand.cards[0] == ["1e", "1b", "7e"]
    ev = next(e for e in t.events if e.kind == EventKind.CARD_DISCARDED)
    assert data(ev.redact(1))["card"] is None and data(ev.redact(None))["card"] is None
    assert data(ev.redact(0))["card"] == "4c"


def test_carancho_pair_scores_jointly_per_player():
    """001: "os pontos são contados individualmente (mas a dupla ganha os pontos em conjunto)"."""
    t = Table("carancho").deal(CAR).play("0 discard 4c")
    obs = t.obs(1)
    assert (obs.carancho, obs.seat_teams, obs.team) == (0, (0, 1, 1), 1)
    t.play(
        "0 truco", "1 accept", "0 play 1e", "1 play 4e", "2 play 6o", "0 play 1b", "1 play 5b", "2 play 6b"
    )
    assert t.scores == [2, 0, 0]
    t.deal({1: ["1e", "1b", "7e", "4c"], 2: ["4e", "5b", "10c"], 0: ["6o", "6b", "11e"]})
    assert t.hand.mano == 1  # the role rotates with the deal
    t.play("1 discard 4c", "1 fold")
    assert t.scores == [3, 0, 1]  # the pair 0 and 2 both score
    assert t.ended()["winner_team"] == 0 and t.obs(None).seat_teams == (0, 1, 0)


def test_carancho_needs_three_players():
    with pytest.raises(InvalidRulesError, match="players"):
        get_rules("carancho", players=4)


# ------------------------------------------------------------------ pica-pica
def _six_hands() -> dict[int, list[str]]:
    return {
        0: ["1e", "4o", "5c"],
        1: ["4e", "5b", "10c"],
        2: ["7e", "6b", "11e"],
        3: ["12e", "6o", "11b"],
        4: ["1b", "12c", "2o"],
        5: ["4b", "6c", "11o"],
    }


def test_pica_pica_alternates_team_and_head_to_head_hands():
    """001: "as rodadas ímpares são jogadas em equipes e as rodadas pares são jogadas
    individualmente, somente os jogadores que estão de frente para o outro ... os pontos
    individuais contam para a equipe"."""
    t = Table("pica-pica").deal(_six_hands())
    assert len(t.hand.order) == 6  # hand 1: teams
    t.play("0 fold")
    t.deal()
    assert t.of(EventKind.HEAD_TO_HEAD_STARTED)[-1] == {"seats": [1, 4], "mano": 1, "index": 0}
    assert t.hand.order == (1, 4) and t.turn() == 1
    assert t.obs(1).head_to_head == (1, 4)
    t.play("1 fold")  # side 0 (seat 4's team) scores 1
    assert t.hand.order == (2, 5)
    t.play("2 truco", "5 decline")
    assert t.hand.order == (3, 0)
    t.play("3 fold")
    assert t.state.phase == "deal"
    assert t.scores == [1 + 1 + 1, 1]


def test_pica_pica_sub_hand_is_a_full_two_player_hand():
    t = Table("pica-pica").deal(_six_hands()).play("0 fold")
    hands = _six_hands()
    hands = {(k + 1) % 6: v for k, v in hands.items()}  # any deal: seat 1 leads now
    t.deal(hands)
    a, b = t.hand.order
    t.play(f"{a} envido", f"{b} accept")
    assert t.of(EventKind.POINTS_DECLARED)[-2]["seat"] == a
    assert not any(e.get("seat") in (0, 2, 3, 5) for e in t.of(EventKind.POINTS_DECLARED)[-2:])


def test_pica_pica_stops_near_the_target():
    """Reglamento: head-to-head rounds alternate "hasta faltar 5 tantos"."""
    t = Table("pica-pica").set_scores(25, 3).deal().play("0 fold")
    t.deal()
    assert len(t.hand.order) == 6


def test_pica_pica_at_every_table_from_six_to_twelve():
    """001: "Nas modalidades de 6 a 12 pessoas, as rodadas ímpares são jogadas em equipes e as
    rodadas pares são jogadas individualmente" -- 6, 8, 10 and 12 players; not 2 or 4."""
    assert get_rules("argentine-6p", pica_pica=True).pica_pica
    for n in (6, 8, 10, 12):
        assert get_rules(f"pica-pica-{n}p").players == n
    for n in (2, 4):
        with pytest.raises(InvalidRulesError, match="pica_pica"):
            get_rules("argentine", players=n, pica_pica=True)


@pytest.mark.parametrize(
    ("players", "mano", "pairs"),
    [
        (6, 0, [(0, 3), (1, 4), (2, 5)]),  # facing seats are opponents
        (10, 3, [(3, 8), (4, 9), (5, 0), (6, 1), (7, 2)]),
        (8, 0, [(0, 5), (1, 4), (2, 7), (3, 6)]),  # facing is a partner: the next seat instead
        (8, 1, [(1, 4), (2, 7), (3, 6), (5, 0)]),
        (12, 0, [(0, 7), (1, 6), (2, 9), (3, 8), (4, 11), (5, 10)]),
    ],
)
def test_who_plays_whom_in_the_head_to_head_round(players, mano, pairs):
    """001: "somente os jogadores que estão de frente para o outro (as chamadas partidas de
    testa)". With 6 or 10 players the facing seat is an opponent; with 8 or 12 it is a partner
    (seats alternate), so each player meets the opponent seated just after the partner facing
    him. Every player plays exactly once, against an opponent; pairs go round from the mano."""
    from truco_engine.variants import head_to_head_pairs

    got = list(head_to_head_pairs(players, mano))
    assert got == pairs
    assert sorted(x for p in got for x in p) == list(range(players))
    assert all(a % 2 != b % 2 for a, b in got)


def test_pica_pica_eight_players_alternate_team_and_head_to_head_hands():
    t = Table("pica-pica-8p").deal()
    assert len(t.hand.order) == 8
    t.play("0 fold")
    t.deal()  # hand 2: seat 1 is the mano
    seen = []
    while t.state.phase == "play":
        seen.append(t.hand.order)
        a = t.hand.order[0]
        t.play(f"{a} fold")
    assert seen == [(1, 4), (2, 7), (3, 6), (5, 0)]
    # hand 1: seat 0 folded (team 1 scores 1); then each sub-hand's point goes to the team of
    # the folder's opponent: seats 1, 3, 5 fold for team 1 (team 0 scores 3), seat 2 for team 0.
    assert t.scores == [3, 1 + 1]


# ------------------------------------------------------------ 8 to 12 players
@pytest.mark.parametrize("n", [8, 10, 12])
def test_eight_to_twelve_players_in_two_teams(n):
    """001: "Pode-se jogar com 2, 4, 6, 8, 10 ou 12 pessoas, sempre divididos em dois times";
    12 × 3 = 36 cards of 40."""
    t = Table(f"argentine-{n}p").deal()
    assert t.hand.side_of == tuple(x % 2 for x in range(n))
    assert sum(len(c) for c in t.hand.cards) == 3 * n
