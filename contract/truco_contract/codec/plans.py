"""Field plans: how a dataclass converts to and from a message of the same field names.

A plan is built once per dataclass from its fields and type hints and the message's
descriptor; a field on one side only fails when the plan is built (at import), not on the
wire. Conventions: ``None`` is an unset ``optional`` field, an empty string, or an enum's
``*_UNSPECIFIED``; a tuple is a ``repeated`` field; a nested dataclass is a nested message;
an engine action is a ``truco.v1.Action``; a ``float`` held in a ``Timestamp`` is seconds
since the epoch, an ``int`` held in a ``Duration`` whole milliseconds.

A plan also writes a value's message bytes directly (:meth:`Plan.to_bytes`, with
:mod:`truco_contract.codec.wire`): the same bytes as ``encode(value).SerializeToString()``,
without building the message (``tests/contract/test_codec.py`` compares them for every
payload kind).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

import truco_engine as te
from truco_contract.codec import wire
from truco_contract.codec.actions import action_bytes, action_from_proto, action_to_proto
from truco_contract.codec.errors import DecodeError
from truco_contract.codec.scalars import (
    duration,
    enum_map,
    ms_of,
    seconds_of,
    split_ms,
    split_time,
    timestamp,
)

Encode = Callable[[Any], Any]
Decode = Callable[[Message, str], Any]
Write = Callable[[Any, list[bytes]], None]
"""Appends one field of a value (the dataclass) to a message's parts, as :mod:`.wire` writes."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How to convert one dataclass to and from one message, field by field."""

    cls: type
    message: type[Message]
    fields: tuple[tuple[str, Encode, Decode], ...]
    writers: tuple[Write, ...]
    """One per field, in field-number order (the order protobuf writes them)."""

    def encode(self, value: Any) -> Message:
        return self.message(**{name: enc(getattr(value, name)) for name, enc, _ in self.fields})

    def to_bytes(self, value: Any) -> bytes:
        """``encode(value).SerializeToString()``, written directly."""
        parts: list[bytes] = []
        for write in self.writers:
            write(value, parts)
        return b"".join(parts)

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
            return duration(value)

        def dec_ms(msg: Message, where: str) -> Any:
            if not msg.HasField(name):
                return None if optional else 0
            return ms_of(getattr(msg, name))

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
    writers: list[tuple[int, Write]] = []
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
        writers.append((fd.number, _field_writer(name, hints[name], fd, enc, desc)))
    plan = Plan(cls, message, tuple(fields), tuple(w for _, w in sorted(writers, key=lambda nw: nw[0])))
    _PLANS[cls] = plan
    return plan


# ------------------------------------------------------------------------ direct writers
def time_bytes(seconds: float) -> bytes:
    """A ``google.protobuf.Timestamp`` of ``seconds`` since the epoch, serialized (as
    :func:`~truco_contract.codec.scalars.set_time` fills one). The last few are kept: a
    commit's events, its operator events and the deadline it sets share a handful."""
    made = _TIMES.get(seconds)
    if made is None:
        made = _seconds_nanos_bytes(*split_time(seconds))
        if len(_TIMES) >= 64:
            _TIMES.clear()
        _TIMES[seconds] = made
    return made


_TIMES: dict[float, bytes] = {}


def ms_bytes(ms: int) -> bytes:
    """A ``google.protobuf.Duration`` of ``ms`` milliseconds, serialized."""
    return _seconds_nanos_bytes(*split_ms(ms))


def _seconds_nanos_bytes(seconds: int, nanos: int) -> bytes:
    """A ``Timestamp``'s or a ``Duration``'s bytes: both are ``seconds = 1; nanos = 2``."""
    parts: list[bytes] = []
    wire.put_int(parts, _T_SECONDS, seconds)
    wire.put_int(parts, _T_NANOS, nanos)
    return b"".join(parts)


_T_SECONDS = b"\x08"  # field 1, varint
_T_NANOS = b"\x10"  # field 2, varint


def _field_writer(name: str, hint: Any, fd: FieldDescriptor, enc: Encode, desc: Descriptor) -> Write:
    """What :meth:`Plan.to_bytes` writes for one field: what ``message(name=enc(value))``
    serializes to (``None`` leaves a field unset; a field with presence is written when set,
    zero too; one without is left out when it holds its default)."""
    t = wire.tag(desc, name)  # refuses a wire type the writer does not write
    args = typing.get_args(hint)
    base = next((a for a in args if a is not type(None)), hint) if type(None) in args else hint
    if fd.is_repeated:
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            sub = plan_for(typing.get_args(base)[0], message_class(fd))

            def write_messages(value: Any, parts: list[bytes]) -> None:
                for item in getattr(value, name):
                    wire.put_bytes(parts, t, sub.to_bytes(item))

            return write_messages
        if fd.type in wire.VARINT_TYPES:

            def write_packed(value: Any, parts: list[bytes]) -> None:
                wire.put_packed(parts, t, tuple(int(v) for v in getattr(value, name)))

            return write_packed
        if fd.type == FieldDescriptor.TYPE_STRING:

            def write_strs(value: Any, parts: list[bytes]) -> None:
                wire.put_strs(parts, t, getattr(value, name))

            return write_strs

        def write_blobs(value: Any, parts: list[bytes]) -> None:
            for item in getattr(value, name):
                wire.put_bytes(parts, t, item)

        return write_blobs
    presence = fd.has_presence
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        full_name = fd.message_type.full_name if fd.message_type is not None else ""
        if base is te.Action:
            to_bytes: Callable[[Any], bytes] = action_bytes
        elif full_name == "google.protobuf.Timestamp":
            to_bytes = time_bytes
        elif full_name == "google.protobuf.Duration":
            to_bytes = ms_bytes
        else:
            to_bytes = plan_for(base, message_class(fd)).to_bytes

        def write_message(value: Any, parts: list[bytes]) -> None:
            v = getattr(value, name)
            if v is not None:
                wire.put_bytes(parts, t, to_bytes(v))

        return write_message
    if fd.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        text = fd.type == FieldDescriptor.TYPE_STRING

        def write_blob(value: Any, parts: list[bytes]) -> None:
            v = getattr(value, name)
            if v is None or (not v and not presence):
                return
            wire.put_bytes(parts, t, v.encode() if text else v)

        return write_blob

    def write_number(value: Any, parts: list[bytes]) -> None:
        v = enc(getattr(value, name))
        if v is None or (not v and not presence):
            return
        parts.append(t)
        parts.append(wire.varint(int(v)))

    return write_number
