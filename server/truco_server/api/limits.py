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


def _check_scalar(path: str, f: FieldDescriptor, value: Any, limit: Limit | None) -> None:
    if f.type == FieldDescriptor.TYPE_STRING:
        bound = (limit.chars if limit else None) or STRING_CHARS
        if len(value) > bound:
            raise _violation(path, f"at most {bound} characters (got {len(value)})")
    elif f.type == FieldDescriptor.TYPE_BYTES:
        bound = (limit.chars if limit else None) or BYTES_LEN
        if len(value) > bound:
            raise _violation(path, f"at most {bound} bytes (got {len(value)})")
    elif f.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT) and not math.isfinite(value):
        raise _violation(path, "must be a finite number")


def _walk(message: Message, prefix: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _violation(prefix or "request", f"nested more than {MAX_DEPTH} levels deep")
    for f, value in message.ListFields():
        path = f"{prefix}.{f.name}" if prefix else f.name
        limit = FIELD_LIMITS.get(f.name)
        entry = f.message_type
        if f.is_repeated:
            bound = (limit.entries if limit else None) or REPEATED_LEN
            if len(value) > bound:
                raise _violation(path, f"at most {bound} entries (got {len(value)})")
            if entry is not None and entry.GetOptions().map_entry:
                key_f = entry.fields_by_name["key"]
                value_f = entry.fields_by_name["value"]
                key_limit = Limit(chars=limit.key_chars) if limit and limit.key_chars else None
                for key in value:
                    _check_scalar(f"{path}.key", key_f, key, key_limit)
                    item = value[key]
                    label = f"{path}[{E.quote(key, 24)}]"
                    if value_f.message_type is not None:
                        _walk(item, label, depth + 1)
                    else:
                        _check_scalar(label, value_f, item, limit)
            elif f.message_type is not None:
                for i, item in enumerate(value):
                    _walk(item, f"{path}[{i}]", depth + 1)
            else:
                for i, item in enumerate(value):
                    _check_scalar(f"{path}[{i}]", f, item, limit)
        elif f.message_type is not None:
            _walk(value, path, depth + 1)
        else:
            _check_scalar(path, f, value, limit)


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
