"""The faster ``__init__`` of the frozen dataclasses (truco_engine._fast) keeps their
behaviour: the same signature, frozen, equal, hashable, replaceable."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from truco_engine import PAYLOADS, Action, Event, Observation, PendingCall, PlayView, TrickView, observe
from truco_engine.events import CallFamily, CallMade, CardPlayed

CLASSES = [*PAYLOADS.values(), Event, Observation, PendingCall, PlayView, TrickView, Action]


@pytest.mark.parametrize("cls", CLASSES)
def test_signature_is_the_dataclass_one(cls):
    params = inspect.signature(cls).parameters
    fields = dataclasses.fields(cls)
    assert list(params) == [f.name for f in fields]
    for f in fields:
        p = params[f.name]
        assert (p.kind is inspect.Parameter.KEYWORD_ONLY) == f.kw_only
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default


def test_instances_stay_frozen_equal_hashable_and_replaceable():
    a = CardPlayed(seat=1, card="4C", face_down=False, trick_index=0)
    b = CardPlayed(seat=1, card="4C", face_down=False, trick_index=0)
    assert a == b and hash(a) == hash(b) and repr(a).startswith("CardPlayed(seat=1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.seat = 2  # type: ignore[misc]
    assert dataclasses.replace(a, card=None).card is None
    c = CallMade(
        seat=0, family=CallFamily.TRUCO, name="truco", value_if_accepted=3, value_if_declined=1, responder=1
    )
    assert c.cancels is None  # the default
    with pytest.raises(TypeError):
        CardPlayed(1, "4C", False, 0)  # type: ignore[misc]  # keyword-only, as declared
    assert Action("play", "4C") == Action(kind="play", card="4C", face_down=False, slot=None)
    assert Event(a).private_to is None and Event(a).hidden == ()


def test_observations_built_positionally_equal_the_keyword_built_ones():
    """observe() builds its Observation through positional_new (fields in declared order):
    the same value as the dataclass constructor given each field by name."""
    import random

    from truco_engine import Match, get_rules, legal_actions, to_act

    for preset in ("paulista-4p", "argentine-4p", "uruguayan-2p", "carancho-3p", "pica-pica-6p"):
        rules = get_rules(preset)
        m = Match(rules)
        rng = random.Random(7)
        deck = list(rules.deck_cards)
        for _ in range(60):
            if m.state.phase == "over":
                break
            if m.state.phase == "deal":
                rng.shuffle(deck)
                m.deal(deck)
                continue
            for seat in (*range(rules.players), None):
                o = observe(m.state, seat)
                again = Observation(**{f.name: getattr(o, f.name) for f in dataclasses.fields(Observation)})
                assert again == o and again.to_dict() == o.to_dict()
                assert o.seat == seat and o.players == rules.players and o.preset == rules.name
                assert o.decision == m.state.actions and o.awaited == to_act(m.state)
            seat = to_act(m.state)[0]
            m.act(seat, rng.choice(legal_actions(m.state, seat)))
