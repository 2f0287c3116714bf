"""How the service benchmarks' bots choose their actions (truco_tools.bench_policy)."""

from __future__ import annotations

import random

import pytest

import truco_engine as te
from truco_contract import codec
from truco_contract.json_mapping import message_to_dict
from truco_match import table
from truco_match.lifecycle import Lifecycle
from truco_tools.bench_policy import choose, is_card_json, is_card_proto, match_lengths


def _legal() -> list[te.Action]:
    """A paulista seat's legal actions where it may play a card or call truco."""
    rules = te.get_rules("paulista", players=2)
    setup = table.Setup(rules=rules, seed=bytes(32), lifecycle=Lifecycle())
    started = table.start(setup, table.seats_of(rules, []), b"", 0)
    seat = started.life.awaited
    assert seat is not None
    legal = list(te.observe(started.state, seat).legal_actions)
    assert {a.kind for a in legal} >= {"play", "truco"}, legal
    return legal


def test_random_draws_as_a_plain_choice_and_cards_keeps_to_the_cards() -> None:
    legal = [codec.action_to_proto(a) for a in _legal()]
    for seed in range(20):
        assert choose(random.Random(seed), legal, "random") is random.Random(seed).choice(legal)
    picked = {choose(random.Random(seed), legal, "cards").SerializeToString() for seed in range(40)}
    cards = {a.SerializeToString() for a in legal if a.WhichOneof("action") == "play_card"}
    assert picked == cards  # every card, and nothing but cards


def test_cards_falls_back_to_any_action_without_a_card_and_reads_the_json_mapping() -> None:
    calls = [codec.action_to_proto(a) for a in _legal() if a.kind != "play"]
    assert not any(is_card_proto(a) for a in calls)
    assert choose(random.Random(1), calls, "cards") in calls
    as_json = [message_to_dict(codec.action_to_proto(a)) for a in _legal()]
    picked = choose(random.Random(2), as_json, "cards", is_card_json)
    assert "playCard" in picked and sum(map(is_card_json, as_json)) == 3


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown policy 'first'"):
        choose(random.Random(0), [1, 2], "first")


def test_playing_cards_makes_longer_matches_than_random_play() -> None:
    """Random calls raise hands' values, so random play reaches the target in fewer hands: a
    paulista match played card-first lasts longer (docs/benchmarks.md quotes both with the
    module's command)."""
    cards = match_lengths("paulista", "cards", 20)
    anything = match_lengths("paulista", "random", 20)
    assert min(cards) > 12  # twelve points, a hand without a call worth one
    assert sum(cards) > 1.5 * sum(anything), (cards, anything)
