"""The conversions of scalar wire types that every part of the codec uses: ``Timestamp`` as
seconds since the epoch, ``Duration`` as whole milliseconds, and a ``StrEnum`` as its proto
enum (member ``X`` is the value ``<ENUM_NAME>_X``; ``None`` is ``*_UNSPECIFIED``)."""

from __future__ import annotations

import math
import re
from enum import StrEnum
from typing import Any

from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.descriptor import EnumDescriptor

from truco_contract.codec.errors import DecodeError


# --------------------------------------------------------------------------- time
def timestamp(seconds: float) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    set_time(ts, seconds)
    return ts


def set_time(ts: timestamp_pb2.Timestamp, seconds: float) -> None:
    """Write ``seconds`` since the epoch into ``ts`` (a message's own field: no copy)."""
    ts.seconds, ts.nanos = split_time(seconds)


def split_time(seconds: float) -> tuple[int, int]:
    """``seconds`` since the epoch as a ``Timestamp``'s whole seconds and nanoseconds."""
    whole = math.floor(seconds)
    nanos = round((seconds - whole) * 1e9)
    if nanos >= 1_000_000_000:
        return whole + 1, nanos - 1_000_000_000
    return whole, nanos


def seconds_of(ts: timestamp_pb2.Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def duration(ms: int) -> duration_pb2.Duration:
    seconds, nanos = split_ms(ms)
    return duration_pb2.Duration(seconds=seconds, nanos=nanos)


def split_ms(ms: int) -> tuple[int, int]:
    """``ms`` milliseconds as a ``Duration``'s whole seconds and nanoseconds."""
    return ms // 1000, (ms % 1000) * 1_000_000


def ms_of(d: duration_pb2.Duration) -> int:
    return d.seconds * 1000 + d.nanos // 1_000_000


# ----------------------------------------------------------------------------- enums
def _upper_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


class EnumMap:
    """A ``StrEnum`` and a proto enum whose values are ``<PROTO_ENUM>_<MEMBER>``."""

    def __init__(self, py: type[StrEnum], proto: EnumDescriptor) -> None:
        prefix = _upper_snake(proto.name) + "_"
        self.to_proto: dict[Any, int] = {}
        for member in py:
            value = proto.values_by_name.get(prefix + member.name)
            if value is None:
                raise TypeError(f"{proto.full_name} has no value {prefix + member.name} for {member!r}")
            self.to_proto[member] = value.number
        self.from_proto = {v: k for k, v in self.to_proto.items()}
        self.name = proto.full_name

    def encode(self, value: Any) -> Any:  # a proto enum value (mypy-protobuf's ValueType)
        return 0 if value is None else self.to_proto[value]

    def decode(self, number: int, where: str, optional: bool) -> Any:
        if number == 0 and optional:
            return None
        try:
            return self.from_proto[number]
        except KeyError:
            raise DecodeError(where, f"unknown {self.name} value {number}") from None


_ENUMS: dict[tuple[type, str], EnumMap] = {}


def enum_map(py: type[StrEnum], proto: EnumDescriptor) -> EnumMap:
    """The map of ``py`` and ``proto`` (one per pair: made once, then shared)."""
    key = (py, proto.full_name)
    if key not in _ENUMS:
        _ENUMS[key] = EnumMap(py, proto)
    return _ENUMS[key]
