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


def _beyond_the_engine() -> list[type]:
    """The match's and the server's classes given the faster ``__init__``; some are compiled
    in the compiled build (mypyc's native classes), the rest slotted Python classes."""
    from truco_match.events import EventView
    from truco_match.operator_events import Committed, OperatorEvent, Turn
    from truco_match.records import RecordStep
    from truco_match.views import SeatView
    from truco_server.core.caller import MatchCredential
    from truco_server.core.requests import StreamUpdate, SubmitActionRequest, SubmitActionResponse
    from truco_server.ports.matches import Batch, Commit, CommitResult, FeedAppend
    from truco_server.ports.quotas import RateCharge
    from truco_server.services.relay import Outgoing
    from truco_server.stores.redis.keys import MatchKeys, OperatorKeys

    return [
        EventView, Committed, Turn, OperatorEvent, RecordStep, SeatView, MatchCredential, StreamUpdate,
        SubmitActionRequest, SubmitActionResponse, Batch, Commit, CommitResult, FeedAppend,
        RateCharge, Outgoing, MatchKeys, OperatorKeys,
    ]  # fmt: skip


@pytest.mark.parametrize("cls", _beyond_the_engine(), ids=lambda c: c.__name__)
def test_the_match_and_server_classes_keep_their_signature_and_stay_frozen(cls):
    fields = dataclasses.fields(cls)
    params = inspect.signature(cls.__init__).parameters
    assert list(params)[1:] == [f.name for f in fields]
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"  # fast_init's, not dataclasses'
    for f in fields:
        assert (params[f.name].kind is inspect.Parameter.KEYWORD_ONLY) == f.kw_only
        if f.default is not dataclasses.MISSING:
            assert params[f.name].default == f.default


def test_a_field_with_a_default_factory_gets_a_new_value_per_instance():
    """OperatorEvent's ``labels`` (``default_factory=dict``): as the dataclass constructor
    does, each instance left without one gets its own, and one given is kept."""
    from truco_match.operator_events import OperatorEvent, OperatorEventType

    def made(**more: object) -> OperatorEvent:
        return OperatorEvent(id="1-0", match_id="m", type=OperatorEventType.TURN, time=5.0, **more)  # type: ignore[arg-type]

    a, b = made(), made()
    assert a.labels == {} and a.labels is not b.labels and a == b
    given = {"table": "7"}
    assert made(labels=given).labels is given
    assert made(cursor="9-0") == dataclasses.replace(a, cursor="9-0")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.labels = {}  # type: ignore[misc]


def test_a_compiled_class_built_by_compiled_code_is_the_same_value():
    """SeatView is a native class in the compiled build, built by compiled code (``view``):
    the value equals the one given every field by name, and stays frozen."""
    from truco_engine import get_rules, new_match
    from truco_match.events import MatchStatus
    from truco_match.lifecycle import Life
    from truco_match.views import SeatView, view

    state = new_match(get_rules("paulista"))
    life = Life(joined=[True, False])
    for seat in (0, 1, None):
        got = view(state, seat, 7, MatchStatus.ACTIVE, life)
        again = SeatView(**{f.name: getattr(got, f.name) for f in dataclasses.fields(SeatView)})
        assert got == again and got.version == 7 and got.observation.seat == seat
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.version = 8  # type: ignore[misc]
        assert dataclasses.replace(got, version=9).version == 9


def test_a_class_without_slots_is_refused() -> None:
    """A frozen dataclass with an instance dict has no descriptor to store a field through."""
    from truco_engine._fast import fast_init

    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: int
        y: int = 0

    with pytest.raises(TypeError, match="slotted or compiled"):
        fast_init(Plain)
