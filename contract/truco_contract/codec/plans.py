"""Field plans: how a dataclass converts to and from a message of the same field names.

A plan is built once per dataclass from its fields and type hints and the message's
descriptor; a field on one side only fails when the plan is built (at import), not on the
wire. Conventions: ``None`` is an unset ``optional`` field, an empty string, or an enum's
``*_UNSPECIFIED``; a tuple is a ``repeated`` field; a nested dataclass is a nested message;
an engine action is a ``truco.v1.Action``; a ``float`` held in a ``Timestamp`` is seconds
since the epoch, an ``int`` held in a ``Duration`` whole milliseconds.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import duration_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

import truco_engine as te
from truco_contract.codec.actions import action_from_proto, action_to_proto
from truco_contract.codec.errors import DecodeError
from truco_contract.codec.scalars import enum_map, seconds_of, timestamp

Encode = Callable[[Any], Any]
Decode = Callable[[Message, str], Any]


@dataclass(frozen=True, slots=True)
class Plan:
    """How to convert one dataclass to and from one message, field by field."""

    cls: type
    message: type[Message]
    fields: tuple[tuple[str, Encode, Decode], ...]

    def encode(self, value: Any) -> Message:
        return self.message(**{name: enc(getattr(value, name)) for name, enc, _ in self.fields})

    def decode(self, msg: Message, where: str) -> Any:
        return self.cls(**{name: dec(msg, f"{where}.{name}") for name, _, dec in self.fields})


def _same(value: Any) -> Any:
    return value


def _field_plan(name: str, hint: Any, fd: FieldDescriptor, owner: str) -> tuple[Encode, Decode]:
    args = typing.get_args(hint)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), hint) if optional else hint
    repeated = fd.is_repeated
    if repeated:
        item = typing.get_args(base)[0] if typing.get_args(base) else Any
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            sub = plan_for(item, message_class(fd))

            def enc_list(value: Any) -> Any:
                return [sub.encode(v) for v in value]

            def dec_list(msg: Message, where: str) -> Any:
                return tuple(sub.decode(v, f"{where}[{i}]") for i, v in enumerate(getattr(msg, name)))

            return enc_list, dec_list
        return _same, lambda msg, where: tuple(getattr(msg, name))
    if fd.type == FieldDescriptor.TYPE_ENUM:
        em = enum_map(base, typing.cast(EnumDescriptor, fd.enum_type))
        return em.encode, lambda msg, where: em.decode(getattr(msg, name), where, optional)
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return _message_field_plan(name, base, optional, fd, owner)
    if optional:
        if fd.has_presence:
            return _same, lambda msg, where: getattr(msg, name) if msg.HasField(name) else None
        if fd.type == FieldDescriptor.TYPE_STRING:
            return _same, lambda msg, where: getattr(msg, name) or None
        raise TypeError(f"{owner}.{name}: None needs an optional or string field")
    return _same, lambda msg, where: getattr(msg, name)


def _message_field_plan(
    name: str, base: Any, optional: bool, fd: FieldDescriptor, owner: str
) -> tuple[Encode, Decode]:
    """A singular message field: a nested dataclass, an engine action, or a ``Duration`` held
    as whole milliseconds."""
    full_name = fd.message_type.full_name if fd.message_type is not None else ""
    if base is te.Action:
        enc: Encode = lambda value: None if value is None else action_to_proto(value)  # noqa: E731

        def dec_action(msg: Message, where: str) -> Any:
            return action_from_proto(getattr(msg, name), where) if msg.HasField(name) else None

        return enc, dec_action
    if full_name == "google.protobuf.Timestamp" and base is float:

        def enc_time(value: Any) -> Any:
            return None if value is None else timestamp(value)

        def dec_time(msg: Message, where: str) -> Any:
            if not msg.HasField(name):
                return None if optional else 0.0
            return seconds_of(getattr(msg, name))

        return enc_time, dec_time
    if full_name == "google.protobuf.Duration" and base is int:

        def enc_ms(value: Any) -> Any:
            if value is None:
                return None
            return duration_pb2.Duration(seconds=value // 1000, nanos=(value % 1000) * 1_000_000)

        def dec_ms(msg: Message, where: str) -> Any:
            if not msg.HasField(name):
                return None if optional else 0
            d = getattr(msg, name)
            return d.seconds * 1000 + d.nanos // 1_000_000

        return enc_ms, dec_ms
    if isinstance(base, type) and dataclasses.is_dataclass(base):
        sub = plan_for(base, message_class(fd))

        def enc_sub(value: Any) -> Any:
            return None if value is None else sub.encode(value)

        def dec_sub(msg: Message, where: str) -> Any:
            if not msg.HasField(name):
                if optional:
                    return None
                raise DecodeError(where, "required")
            return sub.decode(getattr(msg, name), where)

        return enc_sub, dec_sub
    raise TypeError(f"{owner}.{name}: no plan for a {full_name} field held as {base!r}")


_PLANS: dict[type, Plan] = {}


def message_class(fd: FieldDescriptor) -> type[Message]:
    """The generated class of a message-typed field."""
    cls: type[Message] = fd.message_type._concrete_class  # type: ignore[union-attr]
    return cls


def plan_for(cls: Any, message: type[Message]) -> Plan:
    """The plan of ``cls`` and ``message`` (built once per class, then shared)."""
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    desc = typing.cast(Descriptor, message.DESCRIPTOR)
    hints = typing.get_type_hints(cls)
    fields = []
    names = [f.name for f in dataclasses.fields(cls)]
    missing = sorted(set(desc.fields_by_name) - set(names))
    if missing:
        raise TypeError(f"{desc.full_name} has fields {missing} that {cls.__name__} lacks")
    for name in names:
        fd = desc.fields_by_name.get(name)
        if fd is None:
            raise TypeError(f"{cls.__name__}.{name} has no field in {desc.full_name}")
        enc, dec = _field_plan(name, hints[name], fd, cls.__name__)
        fields.append((name, enc, dec))
    plan = Plan(cls, message, tuple(fields))
    _PLANS[cls] = plan
    return plan
