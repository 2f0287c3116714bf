"""``pending_call`` is the ``pending`` of every observation, without building one."""

from __future__ import annotations

import random

import pytest

from truco_engine import Match, get_rules, legal_actions, observe, pending_call, to_act


@pytest.mark.parametrize(
    "preset", ["paulista-2p", "mineiro-4p", "argentine-2p", "uruguayan-2p", "valencian-2p"]
)
def test_pending_call_is_what_every_viewer_sees_pending(preset: str) -> None:
    rules = get_rules(preset)
    seen = {"none": 0, "call": 0}
    for seed in range(6):
        m = Match(rules)
        rng = random.Random(seed)
        deck = list(rules.deck_cards)
        while m.state.phase != "over" and m.state.actions < 400:
            if m.state.phase == "deal":
                rng.shuffle(deck)
                m.deal(deck)
                continue
            got = pending_call(m.state)
            for seat in (*range(rules.players), None):
                assert observe(m.state, seat).pending == got
            seen["none" if got is None else "call"] += 1
            seat = to_act(m.state)[0]
            m.act(seat, rng.choice(legal_actions(m.state, seat)))
    assert seen["none"] and seen["call"]  # both kinds of moment were checked
