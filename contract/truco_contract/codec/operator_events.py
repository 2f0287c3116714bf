"""Operator events (``truco.v1.OperatorEvent``: a match's lifecycle for its operator), both
ways, and the body of a webhook delivery."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from google.protobuf.descriptor import Descriptor
from google.protobuf.json_format import MessageToDict

from truco_contract.codec import wire
from truco_contract.codec.errors import DecodeError
from truco_contract.codec.matches import result_from_proto, result_to_proto
from truco_contract.codec.plans import time_bytes
from truco_contract.codec.scalars import seconds_of, set_time
from truco_contract.codec.views import event_bytes, event_from_proto, event_to_proto
from truco_contract.pb import operator_service_pb2
from truco_match.operator_events import (
    Awaiting,
    OperatorEvent,
    OperatorEventType,
    TicketMatch,
    TicketSeat,
    Turn,
)

pb = operator_service_pb2


def turn_to_proto(t: Turn) -> operator_service_pb2.TurnAwaited:
    m = pb.TurnAwaited()
    _fill_turn(m, t)
    return m


def _fill_turn(m: operator_service_pb2.TurnAwaited, t: Turn) -> None:
    m.seat = t.seat
    m.player_id = t.player_id
    m.decision = t.decision
    m.awaiting = t.awaiting.value
    m.call = t.call
    m.hand_number = t.hand_number
    if t.deadline is not None:
        set_time(m.deadline, t.deadline)


def turn_from_proto(m: operator_service_pb2.TurnAwaited, where: str = "turn") -> Turn:
    try:
        awaiting = Awaiting(m.awaiting)
    except ValueError:
        raise DecodeError(f"{where}.awaiting", f"unknown value {m.awaiting!r}") from None
    return Turn(
        seat=m.seat,
        player_id=m.player_id,
        decision=m.decision,
        awaiting=awaiting,
        call=m.call,
        hand_number=m.hand_number,
        deadline=seconds_of(m.deadline) if m.HasField("deadline") else None,
    )


def ticket_match_to_proto(t: TicketMatch) -> operator_service_pb2.TicketMatch:
    return pb.TicketMatch(
        ticket_id=t.ticket_id,
        pool_id=t.pool_id,
        seats=[pb.TicketSeat(player_id=s.player_id, seat=s.seat, token=s.token) for s in t.seats],
    )


def ticket_match_from_proto(m: operator_service_pb2.TicketMatch) -> TicketMatch:
    return TicketMatch(
        ticket_id=m.ticket_id,
        pool_id=m.pool_id,
        seats=tuple(TicketSeat(player_id=s.player_id, seat=s.seat, token=s.token) for s in m.seats),
    )


def operator_event_to_proto(ev: OperatorEvent) -> operator_service_pb2.OperatorEvent:
    """A lifecycle event as ``truco.v1.OperatorEvent`` (its bytes are also its stored form)."""
    m = pb.OperatorEvent(id=ev.id, cursor=ev.cursor, match_id=ev.match_id, type=ev.type.value)
    set_time(m.time, ev.time)  # each field filled in place: a nested message passed is copied
    if ev.labels:
        m.labels.update(ev.labels)
    if ev.event is not None:
        m.event.CopyFrom(event_to_proto(ev.event))
    if ev.result is not None:
        m.result.CopyFrom(result_to_proto(ev.result))
    if ev.turn is not None:
        _fill_turn(m.turn, ev.turn)
    if ev.ticket is not None:
        m.ticket.CopyFrom(ticket_match_to_proto(ev.ticket))
    return m


_OP = pb.OperatorEvent.DESCRIPTOR
_T_ID, _T_CURSOR, _T_MATCH_ID, _T_TYPE, _T_TIME, _T_EVENT, _T_LABELS, _T_RESULT, _T_TURN, _T_TICKET = (
    wire.tag(_OP, name)
    for name in ("id", "cursor", "match_id", "type", "time", "event", "labels", "result", "turn", "ticket")
)
_LABEL = typing.cast(Descriptor, _OP.fields_by_name["labels"].message_type)  # a map's entry
_T_LABEL_KEY = wire.tag(_LABEL, "key")
_T_LABEL_VALUE = wire.tag(_LABEL, "value")
_TURN = pb.TurnAwaited.DESCRIPTOR
_T_TURN_FIELDS = tuple(
    wire.tag(_TURN, name) for name in ("seat", "player_id", "decision", "awaiting", "call", "hand_number")
)
_T_TURN_DEADLINE = wire.tag(_TURN, "deadline")


def _turn_bytes(t: Turn) -> bytes:
    seat, player_id, decision, awaiting, call, hand_number = _T_TURN_FIELDS
    parts: list[bytes] = []
    wire.put_int(parts, seat, t.seat)
    wire.put_str(parts, player_id, t.player_id)
    wire.put_int(parts, decision, t.decision)
    wire.put_str(parts, awaiting, t.awaiting.value)
    wire.put_str(parts, call, t.call)
    wire.put_int(parts, hand_number, t.hand_number)
    if t.deadline is not None:
        wire.put_bytes(parts, _T_TURN_DEADLINE, time_bytes(t.deadline))
    return b"".join(parts)


def operator_event_bytes(ev: OperatorEvent) -> bytes:
    """:func:`operator_event_to_proto` serialized, written directly: the same message, and
    the same bytes but for the order of several labels (written in the order of their keys;
    protobuf leaves a map's order open)."""
    parts: list[bytes] = []
    wire.put_str(parts, _T_ID, ev.id)
    wire.put_str(parts, _T_CURSOR, ev.cursor)
    wire.put_str(parts, _T_MATCH_ID, ev.match_id)
    wire.put_str(parts, _T_TYPE, ev.type.value)
    wire.put_bytes(parts, _T_TIME, time_bytes(ev.time))
    if ev.event is not None:
        wire.put_bytes(parts, _T_EVENT, event_bytes(ev.event))
    for key in sorted(ev.labels):
        entry: list[bytes] = []
        wire.put_bytes(entry, _T_LABEL_KEY, key.encode())
        wire.put_bytes(entry, _T_LABEL_VALUE, ev.labels[key].encode())
        wire.put_bytes(parts, _T_LABELS, b"".join(entry))
    if ev.result is not None:
        wire.put_bytes(parts, _T_RESULT, result_to_proto(ev.result).SerializeToString())
    if ev.turn is not None:
        wire.put_bytes(parts, _T_TURN, _turn_bytes(ev.turn))
    if ev.ticket is not None:
        wire.put_bytes(parts, _T_TICKET, ticket_match_to_proto(ev.ticket).SerializeToString())
    return b"".join(parts)


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
        turn=turn_from_proto(msg.turn, f"{where}.turn") if msg.HasField("turn") else None,
        ticket=ticket_match_from_proto(msg.ticket) if msg.HasField("ticket") else None,
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
