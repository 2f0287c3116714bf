"""A match's record (``truco.v1.MatchRecord``; its JSON mapping is the export file), both
ways. A step's action is decoded with ``hidden``: a face-down play or a discard may come
without its card (a record seen during the match by another seat)."""

from __future__ import annotations

import typing
from typing import Any

from google.protobuf.message import Message

from truco_contract.codec.actions import action_from_proto
from truco_contract.codec.errors import DecodeError
from truco_contract.codec.matches import match_from_proto, match_to_proto
from truco_contract.codec.plans import Decode, Encode, Plan, plan_for
from truco_contract.codec.views import PAYLOAD_PLANS, payload_to_proto
from truco_contract.pb import event_pb2, match_service_pb2
from truco_match.records import FORMAT as RECORD_FORMAT
from truco_match.records import MatchRecord, RecordedHand, RecordStep

_STEP_ACTION = "action"


def _step_plan() -> Plan:
    plan = plan_for(RecordStep, match_service_pb2.RecordStep)
    fields: list[tuple[str, Encode, Decode]] = []
    for name, enc, dec in plan.fields:
        if name == _STEP_ACTION:

            def dec_hidden(msg: Message, where: str) -> Any:
                field_msg = getattr(msg, _STEP_ACTION)
                return (
                    action_from_proto(field_msg, where, hidden=True) if msg.HasField(_STEP_ACTION) else None
                )

            fields.append((name, enc, dec_hidden))
        else:
            fields.append((name, enc, dec))
    return Plan(plan.cls, plan.message, tuple(fields), plan.writers)


_STEP = _step_plan()
_HAND = plan_for(RecordedHand, match_service_pb2.RecordedHand)


def record_to_proto(record: MatchRecord) -> match_service_pb2.MatchRecord:
    """A match's record as ``truco.v1.MatchRecord`` (its JSON mapping is the export file)."""
    m = match_service_pb2.MatchRecord(
        format=record.format,
        match=match_to_proto(record.match),
        hands=[typing.cast(match_service_pb2.RecordedHand, _HAND.encode(h)) for h in record.hands],
        steps=[typing.cast(match_service_pb2.RecordStep, _STEP.encode(st)) for st in record.steps],
    )
    if record.reveal is not None:
        m.reveal.CopyFrom(typing.cast(event_pb2.MatchRevealed, payload_to_proto(record.reveal)))
    return m


def record_from_proto(msg: match_service_pb2.MatchRecord, where: str = "record") -> MatchRecord:
    """Inverse of :func:`record_to_proto` (strict)."""
    if msg.format != RECORD_FORMAT:
        raise DecodeError(f"{where}.format", f"not a match record of format {RECORD_FORMAT!r}")
    reveal = None
    if msg.HasField("reveal"):
        reveal = PAYLOAD_PLANS["match_revealed"].decode(msg.reveal, f"{where}.reveal")
    return MatchRecord(
        match=match_from_proto(msg.match, f"{where}.match"),
        hands=tuple(_HAND.decode(h, f"{where}.hands[{i}]") for i, h in enumerate(msg.hands)),
        steps=tuple(_STEP.decode(st, f"{where}.steps[{i}]") for i, st in enumerate(msg.steps)),
        reveal=reveal,
        format=msg.format,
    )
