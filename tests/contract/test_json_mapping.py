"""``json_mapping.message_to_dict`` writes exactly what protobuf's own printer writes (with
whole numbers as integers): the same object, keys in the same order, for the messages of
random matches of every preset and for hostile random values in every field of every message
type the services send."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

import truco_engine as te
from truco_contract import codec
from truco_contract.json_mapping import message_to_dict, whole_numbers
from truco_contract.pb import (
    league_service_pb2,
    match_service_pb2,
    observation_pb2,
    operator_service_pb2,
)
from truco_match import table
from truco_match.events import EventView, MatchStatus, SeatKind, redact
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.views import clock_view, view
from truco_tools.campaign.fuzz import Gen


def _reference(msg: Message) -> Any:
    return whole_numbers(json_format.MessageToDict(msg, always_print_fields_with_no_presence=True))


def _same(msg: Message) -> None:
    try:
        want = _reference(msg)
    except (ValueError, TypeError, json_format.SerializeToJsonError):
        with pytest.raises((ValueError, TypeError)):  # e.g. a Duration out of range: both refuse it
            message_to_dict(msg)
        return
    got = message_to_dict(msg)
    assert got == want
    assert json.dumps(got) == json.dumps(want), "same object, other key order"


def _message_types() -> list[Descriptor]:
    """Every message type reachable from the services' requests and responses."""
    seen: dict[str, Descriptor] = {}

    def walk(d: Descriptor) -> None:
        if d.full_name in seen:
            return
        seen[d.full_name] = d
        for f in d.fields:
            if f.message_type is not None:
                walk(f.message_type)

    for module in (match_service_pb2, operator_service_pb2, league_service_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                walk(method.input_type)
                walk(method.output_type)
    # the well-known types are written by protobuf's printer itself (inside the others too)
    return [seen[name] for name in sorted(seen) if not name.startswith("google.protobuf.")]


TYPES = _message_types()


@pytest.mark.parametrize("desc", TYPES, ids=[d.full_name for d in TYPES])
def test_random_values_in_every_field_are_written_as_protobuf_writes_them(desc: Descriptor) -> None:
    rng = random.Random(desc.full_name)
    gen = Gen(rng, "m-1", ["tc1.m-1.0." + "0" * 40], ["r1"])
    cls = GetMessageClass(desc)
    _same(cls())  # every default
    for _ in range(40):
        _same(gen.fill(cls()))


@pytest.mark.parametrize("case", ["paulista-2p", "argentine-6p", "uruguayan-4p", "valencian-2p", "gaucho-4p"])
def test_the_messages_of_a_random_match_are_written_as_protobuf_writes_them(case: str) -> None:
    rules = te.get_rules(case)
    rng = random.Random(case)
    clock = TimeControl(per_decision=10_000, bank=60_000, increment=1_000, forfeit_after=3)
    setup = table.Setup(rules=rules, seed=rng.randbytes(32), lifecycle=Lifecycle(time_control=clock))
    step = table.start(setup, table.seats_of(rules, [("ana", SeatKind.BOT)]), b"entropy", 0)
    state, life, entries = step.state, step.life, step.entries
    version, now, checked = 0, 0, 0
    for _ in range(300):
        first = version + 1
        version += len(entries)
        status = MatchStatus.FINISHED if te.is_over(state) else MatchStatus.ACTIVE
        for seat in [*range(rules.players), None]:
            events = [
                codec.event_to_proto(EventView(v, redact(e, seat), time=1700000000.25 + v))
                for v, e in enumerate(entries, first)
            ]
            sv = view(state, seat, version, status, life, 1700000000.0, 1700000000.0 + now / 1000)
            obs = codec.observation_to_proto(sv, rules)
            update = match_service_pb2.StreamObservationsResponse()
            update.update.version = version
            update.update.events.extend(events)
            update.update.observation.CopyFrom(obs)
            _same(update)
            _same(match_service_pb2.SubmitActionResponse(version=version, events=events, observation=obs))
            checked += 1
        beat = match_service_pb2.StreamObservationsResponse()
        beat.heartbeat.server_time.FromMilliseconds(1700000000123 + now)
        beat.heartbeat.version = version
        tick = clock_view(life, 1700000000.0, 1700000000.0 + now / 1000)
        if tick is not None:
            beat.heartbeat.clock.CopyFrom(codec.clock_to_proto(tick))
        _same(beat)
        if te.is_over(state):
            break
        seat_to_act = te.to_act(state)[0]
        now += rng.randrange(0, 3_000)
        action = rng.choice(te.legal_actions(state, seat_to_act))
        step = table.act(setup, state, life, seat_to_act, action, now)
        state, life, entries = step.state, step.life, step.entries
    assert checked > 20


def test_numbers_and_bytes_follow_the_json_mapping() -> None:
    obs = observation_pb2.Observation()
    _same(obs)
    out = message_to_dict(match_service_pb2.SubmitActionResponse(version=7))
    assert out["version"] == "7" and out["events"] == []  # an int64: a string
    assert "observation" not in out  # a message field has presence: not printed when unset
