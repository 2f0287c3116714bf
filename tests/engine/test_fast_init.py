"""The faster ``__init__`` of the frozen dataclasses (truco_engine._fast) keeps their
behaviour: the same signature, frozen, equal, hashable, replaceable."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from truco_engine import PAYLOADS, Action, Event, Observation, PendingCall, PlayView, TrickView
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
