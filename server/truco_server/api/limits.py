"""Size limits of every request, checked once for both transports before anything is decoded,
stored or logged.

:func:`check` walks any request message by its descriptor: every string, bytes and repeated
(or map) field has a bound -- :data:`FIELD_LIMITS` by field name, else the defaults -- and
messages may nest at most :data:`MAX_DEPTH` deep (``google.protobuf.Struct`` rule overrides
included). Doubles must be finite (a ``NaN`` or ``Infinity`` rule override is malformed). A
violation is :class:`~truco_server.core.errors.InvalidArgument` with a ``FieldViolation`` naming
the field and the limit, never quoting the value. The gRPC servicers call it through
:mod:`truco_server.transports.grpc.servicers`, the REST face after decoding the JSON
body, so every RPC of every service is covered without a list of RPCs.

The whole message is bounded first by the transports: gRPC's
``grpc.max_receive_message_length`` (:data:`MAX_MESSAGE_BYTES`) and the REST body limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from truco_server.core import errors as E

MAX_MESSAGE_BYTES = 256 * 1024
"""Largest request message a worker reads (gRPC; REST bodies have the same bound)."""
MAX_DEPTH = 12
"""Deepest nesting of messages in a request (a Struct value counts two levels)."""
STRING_CHARS = 256
"""Default bound of a string field, in characters."""
BYTES_LEN = 256
"""Default bound of a bytes field."""
REPEATED_LEN = 256
"""Default bound of a repeated or map field, in entries."""


@dataclass(frozen=True, slots=True)
class Limit:
    """Bounds of the fields of one name (``None``: the default)."""

    chars: int | None = None
    """Characters of a string (or of each string of a repeated field or a map's values)."""
    entries: int | None = None
    """Entries of a repeated or map field."""
    key_chars: int | None = None
    """Characters of a map's keys."""


FIELD_LIMITS: dict[str, Limit] = {
    "request_id": Limit(chars=128),
    "match_id": Limit(chars=128),
    "display_name": Limit(chars=64),
    "labels": Limit(entries=32, key_chars=64, chars=256),
    "reason": Limit(chars=512),
    "page_token": Limit(chars=512),
    "url": Limit(chars=2048),
    "deck_orders": Limit(entries=512),
    "cards": Limit(entries=64, chars=8),
    "card": Limit(chars=8),
    "seats": Limit(entries=16),
    "preset": Limit(chars=64),
    "fields": Limit(entries=64, key_chars=64),  # google.protobuf.Struct: rule overrides
    "values": Limit(entries=256),  # google.protobuf.ListValue
}
"""Bounds by field name, the same wherever the name occurs."""


def _violation(path: str, what: str) -> E.InvalidArgument:
    return E.InvalidArgument(f"{path}: {what}", field_violations=[E.FieldViolation(path, what)])


def _scalar_problem(kind: int, value: Any, limit: Limit | None) -> str | None:
    """What is wrong with a scalar of field type ``kind`` (``None``: nothing)."""
    if kind == FieldDescriptor.TYPE_STRING:
        bound = (limit.chars if limit else None) or STRING_CHARS
        if len(value) > bound:
            return f"at most {bound} characters (got {len(value)})"
    elif kind == FieldDescriptor.TYPE_BYTES:
        bound = (limit.chars if limit else None) or BYTES_LEN
        if len(value) > bound:
            return f"at most {bound} bytes (got {len(value)})"
    elif kind in _FLOATS and not math.isfinite(value):
        return "must be a finite number"
    return None


_FLOATS = (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT)
_CHECKED = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES, *_FLOATS)
"""The scalar types with something to check."""


@dataclass(frozen=True, slots=True)
class _Field:
    """What :func:`_walk` needs of a field, worked out once per field descriptor."""

    name: str
    kind: int
    limit: Limit | None
    message: bool
    """A message field (or a repeated one)."""
    repeated: bool
    entries: int
    """The bound of a repeated field."""
    checked: bool
    """A scalar (or repeated scalar) with a bound or a finiteness to check."""
    map_key: int = 0
    """A map's key type (0: not a map)."""
    key_limit: Limit | None = None
    value_kind: int = 0
    value_message: bool = False


_FIELDS: dict[FieldDescriptor, _Field] = {}


def _field(f: FieldDescriptor) -> _Field:
    """``f``'s :class:`_Field`, made on first use."""
    limit = FIELD_LIMITS.get(f.name)
    entry = f.message_type
    mapped: dict[str, Any] = {}
    if f.is_repeated and entry is not None and entry.GetOptions().map_entry:
        key_f, value_f = entry.fields_by_name["key"], entry.fields_by_name["value"]
        mapped = {
            "map_key": key_f.type,
            "key_limit": Limit(chars=limit.key_chars) if limit and limit.key_chars else None,
            "value_kind": value_f.type,
            "value_message": value_f.message_type is not None,
        }
    info = _FIELDS[f] = _Field(
        name=f.name,
        kind=f.type,
        limit=limit,
        message=entry is not None,
        repeated=f.is_repeated,
        entries=(limit.entries if limit else None) or REPEATED_LEN,
        checked=f.type in _CHECKED,
        **mapped,
    )
    return info


def _walk(message: Message, prefix: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _violation(prefix or "request", f"nested more than {MAX_DEPTH} levels deep")
    for f, value in message.ListFields():
        info = _FIELDS.get(f) or _field(f)
        if info.repeated:
            if len(value) > info.entries:
                raise _violation(_path(prefix, info), f"at most {info.entries} entries (got {len(value)})")
            if info.map_key:
                path = _path(prefix, info)
                for key in value:
                    if problem := _scalar_problem(info.map_key, key, info.key_limit):
                        raise _violation(f"{path}.key", problem)
                    item = value[key]
                    if info.value_message:
                        _walk(item, f"{path}[{E.quote(key, 24)}]", depth + 1)
                    elif problem := _scalar_problem(info.value_kind, item, info.limit):
                        raise _violation(f"{path}[{E.quote(key, 24)}]", problem)
            elif info.message:
                path = _path(prefix, info)
                for i, item in enumerate(value):
                    _walk(item, f"{path}[{i}]", depth + 1)
            elif info.checked:
                for i, item in enumerate(value):
                    if problem := _scalar_problem(info.kind, item, info.limit):
                        raise _violation(f"{_path(prefix, info)}[{i}]", problem)
        elif info.message:
            _walk(value, _path(prefix, info), depth + 1)
        elif info.checked and (problem := _scalar_problem(info.kind, value, info.limit)):
            raise _violation(_path(prefix, info), problem)


def _path(prefix: str, info: _Field) -> str:
    return f"{prefix}.{info.name}" if prefix else info.name


def check(message: Message) -> None:
    """Raise :class:`~truco_server.core.errors.InvalidArgument` when any field of ``message`` is
    over its bound (see the module docstring)."""
    _walk(message, "", 0)


class MalformedRequest:
    """What :func:`tolerant` hands a servicer instead of a message whose bytes do not parse;
    :func:`require` turns it into INVALID_ARGUMENT (gRPC itself would answer UNKNOWN)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


def tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """``deserializer`` (a message class's ``FromString``) that returns a
    :class:`MalformedRequest` instead of raising."""
    if deserializer is None:
        return None
    parse = deserializer

    def read(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception:  # DecodeError, or a recursion limit in the C parser
            return MalformedRequest(len(data))

    return read


def require(request: object) -> None:
    """Refuse a malformed or oversized request (both transports call this first)."""
    if isinstance(request, MalformedRequest):
        raise _violation("request", f"the request is not a valid protobuf message ({request.size} bytes)")
    if isinstance(request, Message):
        check(request)
