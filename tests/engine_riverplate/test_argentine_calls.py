"""Argentine truco (seeds 002 and 003): truco / retruco / vale cuatro, irse al mazo, envido,
real envido, falta envido, and how envido and truco interact. 15 and 30 points."""

from __future__ import annotations

import pytest

from tests.engine_riverplate.helpers import Table
from truco_engine import EventKind, NotYourTurnError, get_rules
from truco_engine.ranking import envido_points

# No flor in these hands; seat 0 has 33 for envido, seat 1 has 5.
STRONG = ["7o", "6o", "1e"]
WEAK = ["4e", "5b", "10c"]


def table(preset: str = "argentine", **kw: object) -> Table:
    return Table(preset, **kw).deal({0: STRONG, 1: WEAK})


# ------------------------------------------------------------------------ truco
def test_truco_accepted_makes_the_hand_worth_two():
    """002 rule 5: "On your turn you can call Truco to make it worth 2"."""
    t = table().play("0 truco", "1 accept")
    assert t.hand.value == 2
    t.play("0 play 1e", "1 play 4e", "0 play 7o", "1 play 5b")
    assert t.ended()["points"] == 2 and t.scores == [2, 0]


@pytest.mark.parametrize(
    ("calls", "value"),
    [
        (["0 truco", "1 accept"], 2),
        (["0 truco", "1 truco", "0 accept"], 3),
        (["0 truco", "1 truco", "0 truco", "1 accept"], 4),
        (["0 truco", "1 accept", "0 play 1e", "1 truco", "0 accept"], 3),
    ],
)
def test_truco_retruco_vale_cuatro_values(calls, value):
    """003: "Retruco (3 points) and Vale Cuatro (4 points)"; 002 rule 5."""
    t = table().play(*calls)
    assert t.hand.value == value


@pytest.mark.parametrize(
    ("calls", "winner", "points"),
    [
        (["0 truco", "1 decline"], 0, 1),
        (["0 truco", "1 truco", "0 decline"], 1, 2),
        (["0 truco", "1 truco", "0 truco", "1 decline"], 0, 3),
    ],
)
def test_no_quiero_gives_the_caller_the_value_before_the_call(calls, winner, points):
    """003: "the caller collects whatever the round was worth a moment before — 1 point if no
    Truco call had been accepted yet this round, or the value of the last accepted level"."""
    t = table().play(*calls)
    assert t.ended() == {"winner_team": winner, "points": points, "reason": "declined"}


def test_raise_as_answer_accepts_the_previous_call():
    """003: "Escalate ... This counts as accepting the previous call's value and raising
    further in the same move"."""
    t = table().play("0 truco", "1 truco")
    assert t.hand.value == 2
    assert t.obs(0).pending.name == "retruco" and t.obs(0).pending.value_if_accepted == 3


def test_only_the_side_that_accepted_may_raise():
    """002 rule 5: "The side that accepted the last call is the only one that can raise
    again, up to Vale cuatro (4)"."""
    t = table().play("0 truco", "1 accept")
    assert "truco" not in t.legal(0)
    t.play("0 play 1e")
    assert "truco" in t.legal(1)


def test_cannot_raise_own_pending_call():
    """003: "you can't raise your own call while your opponent hasn't answered yet"."""
    t = table().play("0 truco")
    assert t.turn() == 1
    with pytest.raises(NotYourTurnError):
        t.play("0 truco")


def test_vale_cuatro_is_the_ceiling():
    """003: "Vale Cuatro is the ceiling; once it's on the table, there's nothing left to call
    but a response"."""
    t = table().play("0 truco", "1 truco", "0 truco")
    assert t.legal(1) == ["accept", "decline", "fold"]
    t.play("1 accept")
    assert "truco" not in t.legal(0)


def test_truco_may_be_called_before_the_first_card():
    """003: "Truco can be called at any point in the round, including before the very first
    card"."""
    assert "truco" in table().legal(0)


def test_truco_call_names():
    r = get_rules("argentine")
    assert r.truco_ladder == (2, 3, 4) and r.truco_call_names == ("truco", "retruco", "vale_cuatro")


# ------------------------------------------------------------------ irse al mazo
def test_fold_on_own_turn_gives_the_current_value():
    """002 rule 8: "fold and give the other side the hand at its current value"."""
    t = table().play("0 fold")
    assert t.ended() == {"winner_team": 1, "points": 1, "reason": "folded"}


def test_fold_after_accepted_truco_gives_the_escalated_value():
    """003: "or the escalated value (2, 3, or 4) if one has"."""
    t = table().play("0 truco", "1 truco", "0 accept", "0 play 1e", "1 fold")
    assert t.ended() == {"winner_team": 0, "points": 3, "reason": "folded"}


def test_fold_as_answer_to_pending_truco():
    """003: "use it as your answer to a pending Truco or Envido call"; the pending call was
    not accepted, so the hand is worth what it was."""
    t = table().play("0 truco", "1 fold")
    assert t.ended() == {"winner_team": 0, "points": 1, "reason": "folded"}


def test_seed_003_fold_to_a_pending_envido_awards_what_the_round_is_worth():
    """Seed 003: "You can fold on your own turn instead of playing a card, or use it as your
    answer to a pending Truco or Envido call" -- "When you fold, your opponent is awarded
    whatever the round is currently worth: 1 point if no Truco call has been accepted yet".
    The pending envido is dropped: nobody scores it."""
    t = table().play("0 envido", "1 fold")
    assert t.scores == [1, 0]
    assert t.ended() == {"winner_team": 0, "points": 1, "reason": "folded"}
    assert not t.of(EventKind.BET_WON)
    assert get_rules("argentine").fold_on_envido == "hand"


def test_seed_003_fold_to_an_envido_that_interrupted_a_truco():
    """The envido answered a pending truco; folding to it awards the round's current value
    (the truco was never accepted: 1)."""
    t = table().play("0 truco", "1 envido", "0 fold")
    assert t.scores == [0, 1] and not t.of(EventKind.BET_WON)


def test_option_fold_counts_the_pending_envido_as_declined():
    """``fold_on_envido="declined"`` (the earlier reading, kept in the presets no text
    describes): folding to an envido is declining it (1) and giving up the hand (1)."""
    t = table(fold_on_envido="declined").play("0 envido", "1 fold")
    assert t.scores == [2, 0]
    assert t.of(EventKind.BET_WON) == [{"family": "envido", "winner_seat": 0, "winner_team": 0, "points": 1}]
    for preset in ("uruguayan", "gaucho", "carancho", "valencian"):
        assert get_rules(preset).fold_on_envido == "declined"


def test_caller_cannot_fold_own_call():
    """003: "The caller of a pending call can't fold their own call away"."""
    t = table().play("0 truco")
    with pytest.raises(NotYourTurnError):
        t.play("0 fold")


def test_no_fold_in_the_three_player_game():
    """002 rule 8: "(not in a three-player game)"."""
    t = Table("argentine-3p").deal({0: STRONG, 1: WEAK, 2: ["4o", "5c", "11e"]})
    assert "fold" not in t.legal(0)
    t.play("0 truco")
    assert "fold" not in t.legal(1)


def test_fold_with_envido_open_extra_point_option():
    """Option ``fold_concedes_envido``: going to the mazo while envido is still possible
    concedes the envido point as well (marianogappa/truco); default off (TrucoAI)."""
    assert table().play("0 fold").scores == [0, 1]
    assert table(fold_concedes_envido=True).play("0 fold").scores == [0, 2]
    # Once the envido window is closed (second trick) there is no extra point.
    t = table(fold_concedes_envido=True).play("0 play 1e", "1 play 4e", "0 fold")
    assert t.scores == [0, 1]


# ------------------------------------------------------------------------ envido
@pytest.mark.parametrize(
    ("cards", "points"),
    [
        (["7o", "6o", "1e"], 33),  # 003: "7 + 6 + 20 = 33"
        (["5c", "10c", "7e"], 25),  # 003: "5 + 0 + 20 = 25"
        (["6e", "5e", "7b"], 31),  # 003: "6 + 5 + 20 = 31"
        (["7b", "3o", "1e"], 7),  # 003: "B's value is just the highest pip, a 7"
        (["12e", "11e", "3b"], 20),  # face cards count 0
        (["10e", "11b", "12c"], 0),
        (["4e", "5b", "10c"], 5),
    ],
)
def test_envido_points_twenty_plus_two_of_a_suit_else_best_card(cards, points):
    """002 rule 6: "Your envido is 20 plus your two best cards of one suit (face cards count
    0), or your best single card"."""
    assert envido_points(cards) == points


def test_three_of_a_suit_counts_the_two_best_without_flor():
    """Without flor, three cards of a suit count their two best for envido."""
    assert envido_points(["7o", "6o", "5o"]) == 33


CHAINS = [
    # chain, accepted, declined (003: "Envido ... worth 2 points if accepted, 1 point if
    # declined"; "Real Envido ... 3 ... 1"; "Calling Envido again on top of a pending Envido
    # adds 2 more ... adding a Real Envido on top adds 3 more"; "Decline any call and your
    # opponent — the caller — collects only the value the chain had already reached before
    # that last raise (minimum 1 point)")
    (["envido"], 2, 1),
    (["real_envido"], 3, 1),
    (["envido", "envido"], 4, 2),
    (["envido", "real_envido"], 5, 2),
    (["envido", "envido", "real_envido"], 7, 4),
]


def _call_chain(t: Table, chain: list[str]) -> int:
    """Seat 0 opens, the seats alternate; returns the seat that made the last call."""
    seat = 0
    for name in chain:
        t.play(f"{seat} {name}")
        seat = 1 - seat
    return 1 - seat


@pytest.mark.parametrize(("chain", "accepted", "declined"), CHAINS)
def test_envido_chain_accepted_value(chain, accepted, declined):
    t = table()
    last = _call_chain(t, chain)
    assert t.obs(1 - last).pending.value_if_accepted == accepted
    t.play(f"{1 - last} accept")
    won = t.of(EventKind.BET_WON)[-1]
    assert won == {"family": "envido", "winner_seat": 0, "winner_team": 0, "points": accepted}
    assert t.scores == [accepted, 0]


@pytest.mark.parametrize(("chain", "accepted", "declined"), CHAINS)
def test_envido_chain_declined_value(chain, accepted, declined):
    t = table()
    last = _call_chain(t, chain)
    assert t.obs(1 - last).pending.value_if_declined == declined
    t.play(f"{1 - last} decline")
    expected = [0, 0]
    expected[last] = declined
    assert t.scores == expected


@pytest.mark.parametrize(
    ("chain", "declined"),
    [
        (["falta_envido"], 1),
        (["envido", "falta_envido"], 2),
        (["real_envido", "falta_envido"], 3),
        (["envido", "envido", "falta_envido"], 4),
        (["envido", "real_envido", "falta_envido"], 5),
        (["envido", "envido", "real_envido", "falta_envido"], 7),
    ],
)
def test_falta_envido_chains_declined(chain, declined):
    """Declining a falta envido gives what the chain reached before it (minimum 1)."""
    t = table()
    last = _call_chain(t, chain)
    assert t.obs(1 - last).pending.value_if_declined == declined
    t.play(f"{1 - last} decline")
    assert t.scores[last] == declined


def test_envido_raise_order_no_envido_after_real_envido():
    """The chain only rises: envido (at most twice), real envido (once), falta envido."""
    t = table().play("0 real_envido")
    assert [a for a in t.legal(1) if "envido" in a] == ["falta_envido"]
    t2 = table().play("0 envido", "1 envido")
    assert "envido" not in t2.legal(0) and {"real_envido", "falta_envido"} <= set(t2.legal(0))


@pytest.mark.parametrize(
    ("preset", "convention", "scores", "value"),
    [
        ("argentine", "game", (0, 0), 15),
        ("argentine", "game", (5, 9), 6),
        ("argentine", "game", (14, 3), 1),
        ("argentine", "half", (3, 5), 2),
        ("argentine", "half", (8, 3), 7),
        ("argentine-30", "game", (3, 10), 20),
        ("argentine-30", "half", (3, 10), 5),
        ("argentine-30", "half", (12, 20), 10),
        ("argentine-30", "half", (0, 0), 15),
        ("argentine-30", "game", (0, 0), 30),
    ],
)
def test_falta_envido_value_at_scores_under_both_conventions(preset, convention, scores, value):
    """002 rule 6: "Falta envido whatever the leader still needs to win"; 003: "however many
    points the closer-to-15 player still needs". ``falta_envido="half"``: while the leader is
    in the first half (malas) the falta is what closes that half."""
    t = Table(preset, falta_envido=convention).set_scores(*scores).deal({0: STRONG, 1: WEAK})
    t.play("0 falta_envido")
    assert t.obs(1).pending.value_if_accepted == value
    t.play("1 accept")
    assert t.scores[0] == scores[0] + value


def test_falta_envido_can_end_the_match_mid_hand():
    """003: "it's possible to win the match on an Envido call alone — a big Falta Envido can
    end things before a single trick has even been decided"."""
    t = table().play("0 falta_envido", "1 accept")
    assert t.state.phase == "over" and t.state.winner == 0 and t.scores == [15, 0]
    assert t.of(EventKind.MATCH_ENDED)
    assert not t.of(EventKind.TRICK_ENDED)


def test_match_ends_mid_hand_on_envido_at_fifteen():
    """002 rule 8: "The first side to 15 points wins"; 003: "the moment either player reaches
    15, the match ends immediately — even mid-round"."""
    t = Table("argentine").set_scores(13, 0).deal({0: STRONG, 1: WEAK}).play("0 envido", "1 accept")
    assert t.state.phase == "over" and t.scores == [15, 0]


def test_fourteen_is_not_enough():
    t = Table("argentine").set_scores(13, 0).deal({0: STRONG, 1: WEAK}).play("0 envido", "1 decline")
    assert t.state.phase == "play" and t.scores == [14, 0]


def test_game_to_thirty():
    """argentine-30: "el truco se juega a 30 puntos divididos en ... dos chicos de 15"."""
    r = get_rules("argentine-30")
    assert r.target_points == 30 and r.halves
    t = Table("argentine-30").set_scores(27, 0).deal({0: STRONG, 1: WEAK}).play("0 envido", "1 accept")
    assert t.state.phase == "play" and t.scores == [29, 0]
    t.play("0 truco", "1 accept", "0 play 1e", "1 play 4e", "0 play 7o", "1 play 5b")
    assert t.state.phase == "over" and t.state.winner == 0


def test_envido_interrupts_a_pending_truco_then_the_truco_is_answered():
    """002 rule 7: "Envido can answer a Truco call that hasn't been accepted yet; the Truco
    waits until the envido is settled"; 003 "only now does W have to answer B's still-pending
    Truco call"."""
    t = Table("argentine").deal({0: ["7b", "3o", "1e"], 1: ["6e", "5e", "7c"]})
    t.play("0 truco", "1 envido")
    assert t.turn() == 0 and t.obs(0).pending.family == "envido"
    t.play("0 accept")
    assert t.of(EventKind.BET_WON)[-1] == {
        "family": "envido",
        "winner_seat": 1,
        "winner_team": 1,
        "points": 2,
    }
    assert t.turn() == 1 and t.obs(1).pending.family == "truco"
    assert "envido" not in t.legal(1)
    t.play("1 accept")
    assert t.hand.value == 2


def test_envido_gone_once_truco_accepted():
    """002 rule 7: "Once a Truco is accepted, envido is gone"."""
    t = table().play("0 truco", "1 accept")
    assert not any("envido" in a for a in t.legal(0))
    t.play("0 play 1e")
    assert not any("envido" in a for a in t.legal(1))


def test_envido_only_once_per_hand():
    t = table().play("0 envido", "1 decline")
    assert not any("envido" in a for a in t.legal(0))


def test_envido_window_first_trick_before_own_card():
    """002 rule 6: "During the first trick, before you play your card, you can call Envido";
    003: "once trick 1 is decided, the window closes"."""
    t = table()
    assert "envido" in t.legal(0)
    t.play("0 play 6o")
    assert "envido" in t.legal(1)  # seat 1 has not played yet
    t.play("1 play 4e")
    assert not any("envido" in a for a in t.legal(0))


def test_envido_window_closed_for_seat_that_played_four_players():
    t = Table("argentine-4p").deal({0: STRONG, 1: WEAK, 2: ["4o", "5c", "11e"], 3: ["6b", "2c", "12e"]})
    t.play("0 play 1e", "1 play 4e", "2 play 4o")
    assert "envido" in t.legal(3)
    t.play("3 envido")
    assert t.turn() == 0  # the next opponent of seat 3 answers


def test_declaration_from_the_mano_son_buenas():
    """Points are declared from the mano on; a seat that cannot win says "son buenas"
    (points not shown)."""
    t = table().play("0 envido", "1 accept")
    decl = t.of(EventKind.POINTS_DECLARED)
    assert decl == [
        {"seat": 0, "family": "envido", "points": 33},
        {"seat": 1, "family": "envido", "points": None},
    ]


def test_envido_tie_goes_to_the_mano():
    """002 rule 2: the mano "win[s] any tie for the hand or the envido"."""
    t = Table("argentine", first_dealer=0).deal({1: ["7o", "6o", "1e"], 0: ["7e", "6e", "1b"]})
    t.play("1 envido", "0 accept")
    assert t.of(EventKind.BET_WON)[-1]["winner_seat"] == 1


def test_envido_tie_goes_to_seat_nearest_the_mano_four_players():
    t = Table("argentine-4p").deal(
        {0: ["4e", "5b", "10c"], 1: ["7o", "3o", "1e"], 2: ["7b", "3b", "12c"], 3: ["4o", "6c", "11e"]}
    )
    t.play("0 envido", "1 accept")
    won = t.of(EventKind.BET_WON)[-1]
    assert won["winner_seat"] == 1 and won["winner_team"] == 1


def test_winning_envido_cards_shown_at_hand_end_only():
    t = table().play("0 envido", "1 accept")
    assert not t.of(EventKind.CARDS_REVEALED)
    t.play("0 fold")
    revealed = t.of(EventKind.CARDS_REVEALED)
    assert revealed == [{"seat": 0, "cards": STRONG, "count": 3, "reason": "envido", "public": True}]


def test_three_players_each_for_themselves_scores_per_player():
    """002 rule 1: "three play each for themselves": one score per player; a call is answered
    by the next player."""
    t = Table("argentine-3p").deal({0: STRONG, 1: WEAK, 2: ["4o", "5c", "11e"]})
    assert t.scores == [0, 0, 0]
    t.play("0 truco")
    assert t.turn() == 1
    t.play("1 accept", "0 play 1e", "1 play 4e", "2 play 4o", "0 play 7o", "1 play 5b", "2 play 5c")
    assert t.scores == [2, 0, 0]
