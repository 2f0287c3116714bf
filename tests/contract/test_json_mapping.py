"""``json_mapping.message_to_dict`` writes exactly what protobuf's own printer writes (with
whole numbers as integers): the same object, fields in the same order (the keys of maps and
of a ``Struct`` sorted, where protobuf's order changes from process to process), for the
messages of random matches of every preset and for hostile random values in every field of
every message type the services send."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from google.protobuf import descriptor_pool, json_format
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
    printed = json_format.MessageToDict(msg, always_print_fields_with_no_presence=True)
    return _ordered(whole_numbers(printed), msg.DESCRIPTOR)


_STRUCTS = {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}


def _sorted_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_tree(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_tree(v) for v in value]
    return value


def _ordered(value: Any, desc: Descriptor) -> Any:
    """protobuf's printing of a message of type ``desc``, the keys of its maps and Structs
    sorted (in an ``Any``, those of the message it holds)."""
    if desc.full_name in _STRUCTS:
        return _sorted_tree(value)
    if desc.full_name == "google.protobuf.Any" and isinstance(value, dict) and "@type" in value:
        inner = descriptor_pool.Default().FindMessageTypeByName(value["@type"].rpartition("/")[2])
        if inner.full_name.startswith("google.protobuf."):
            return value
        return {"@type": value["@type"], **_ordered({k: v for k, v in value.items() if k != "@type"}, inner)}
    if desc.full_name.startswith("google.protobuf.") or not isinstance(value, dict):
        return value
    fields = {f.json_name: f for f in desc.fields}
    out: dict[str, Any] = {}
    for key, v in value.items():
        f, sub = fields[key], fields[key].message_type
        if sub is not None and sub.GetOptions().map_entry:
            inner = sub.fields_by_name["value"].message_type
            out[key] = {k: v[k] if inner is None else _ordered(v[k], inner) for k in sorted(v)}
        elif sub is not None and f.is_repeated:
            out[key] = [_ordered(x, sub) for x in v]
        elif sub is not None:
            out[key] = _ordered(v, sub)
        else:
            out[key] = v
    return out


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


_PRINT_IN_A_PROCESS = """
import json
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2, status_pb2
from truco_contract.json_mapping import message_to_dict
from truco_contract.pb import observation_pb2
keys = [f"k{i}" for i in range(12)]
rules = struct_pb2.Struct()
rules.update({k: {"inner": {j: 1 for j in keys}} for k in keys})
status = status_pb2.Status(code=3)
status.details.add().Pack(error_details_pb2.ErrorInfo(reason="R", metadata={k: "v" for k in keys}))
obs = observation_pb2.Observation()
for seat in (5, 3, 0, 4, 1, 2):
    obs.revealed[seat].cards.append("4C")
print(json.dumps([message_to_dict(m) for m in (rules, status, obs)]))
"""


def test_maps_and_structs_print_the_same_in_every_process() -> None:
    """protobuf iterates a map (a Struct is one) in an order of its own, which changes from
    process to process: two workers printing one match's rules, or an error's metadata, wrote
    them differently, and an exported record changed from one export to the next."""
    import subprocess
    import sys

    printed = {
        subprocess.run(
            [sys.executable, "-c", _PRINT_IN_A_PROCESS], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(4)
    }
    assert len(printed) == 1
    rules, status, obs = json.loads(printed.pop())
    assert list(rules) == sorted(rules) and list(rules["k0"]["inner"]) == sorted(rules["k0"]["inner"])
    assert list(status["details"][0]["metadata"]) == sorted(status["details"][0]["metadata"])
    assert status["details"][0]["@type"].endswith("google.rpc.ErrorInfo")
    assert list(obs["revealed"]) == ["0", "1", "2", "3", "4", "5"]


def test_structs_values_and_lists_are_written_as_protobuf_writes_them() -> None:
    """A ``Struct`` (a match's ``effective_rules``), a ``Value`` and a ``ListValue`` are read
    here rather than by protobuf's printer: the same JSON, keys sorted, whole numbers as
    integers, an unset value as null; infinities and NaN refused, as the printer does."""
    from google.protobuf import struct_pb2

    tree = struct_pb2.Struct()
    tree.update(
        {
            "z": 3.0, "a": -0.0, "half": 0.5, "big": float(2**53), "below": float(2**53 - 1),
            "s": "x", "t": True, "n": None, "list": [1.0, "two", [3.5, {"b": 1.0, "a": False}], None],
            "nested": {"y": {"x": 2.0}},
        }
    )  # fmt: skip
    _same(tree)
    assert list(message_to_dict(tree)) == sorted(message_to_dict(tree))
    assert message_to_dict(tree)["below"] == 2**53 - 1 and message_to_dict(tree)["big"] == float(2**53)
    for value in tree.fields.values():
        _same(value)
    _same(tree.fields["list"].list_value)
    unset = struct_pb2.Value()
    _same(unset)
    assert message_to_dict(unset) is None
    for bad in (math.inf, -math.inf, math.nan):
        refused = struct_pb2.Value(number_value=bad)
        _same(refused)  # both refuse it
        with pytest.raises(ValueError, match="Fail to serialize"):
            message_to_dict(refused)
