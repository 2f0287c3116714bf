"""Operator events (``truco.v1.OperatorEvent``: a match's lifecycle for its operator), both
ways, and the body of a webhook delivery."""

from __future__ import annotations

import dataclasses
from typing import Any

from google.protobuf.json_format import MessageToDict

from truco_contract.codec.errors import DecodeError
from truco_contract.codec.matches import result_from_proto, result_to_proto
from truco_contract.codec.scalars import seconds_of, timestamp
from truco_contract.codec.views import event_from_proto, event_to_proto
from truco_contract.pb import operator_service_pb2
from truco_match.operator_events import OperatorEvent, OperatorEventType


def operator_event_to_proto(ev: OperatorEvent) -> operator_service_pb2.OperatorEvent:
    """A lifecycle event as ``truco.v1.OperatorEvent`` (its bytes are also its stored form)."""
    m = operator_service_pb2.OperatorEvent(
        id=ev.id,
        cursor=ev.cursor,
        match_id=ev.match_id,
        type=ev.type.value,
        time=timestamp(ev.time),
        labels=dict(ev.labels),
    )
    if ev.event is not None:
        m.event.CopyFrom(event_to_proto(ev.event))
    if ev.result is not None:
        m.result.CopyFrom(result_to_proto(ev.result))
    return m


def operator_event_from_proto(msg: operator_service_pb2.OperatorEvent, where: str = "event") -> OperatorEvent:
    """Inverse of :func:`operator_event_to_proto`."""
    try:
        kind = OperatorEventType(msg.type)
    except ValueError:
        raise DecodeError(f"{where}.type", f"unknown operator event type {msg.type!r}") from None
    return OperatorEvent(
        id=msg.id,
        match_id=msg.match_id,
        type=kind,
        time=seconds_of(msg.time),
        event=event_from_proto(msg.event, f"{where}.event") if msg.HasField("event") else None,
        labels=dict(msg.labels),
        result=result_from_proto(msg.result) if msg.HasField("result") else None,
        cursor=msg.cursor,
    )


def webhook_payload(ev: OperatorEvent) -> dict[str, Any]:
    """The body of a webhook delivery (Standard Webhooks: ``type``, ``timestamp``, ``data``;
    ``data`` is the event's proto3 JSON mapping)."""
    msg = operator_event_to_proto(dataclasses.replace(ev, cursor=""))
    return {
        "type": ev.type.value,
        "timestamp": msg.time.ToJsonString(),
        "data": MessageToDict(msg, preserving_proto_field_name=False),
    }
