"""JSON onto protobuf messages, strictly: the one place JSON text from outside (a REST body,
an exported match record) becomes a message.

protobuf's ``json_format.ParseDict`` reads a ``bytes`` field with Python's lenient base64
decoder, which drops every character outside the alphabet: ``"!!!!"`` becomes no bytes at
all, so an invalid ``seed`` would be taken as "no seed". :func:`parse_dict` first checks every
``bytes`` value against what the proto3 JSON mapping allows (standard or URL-safe base64,
with or without padding; protobuf's decoder reads either alphabet) and names the first one
that is not, then lets ``ParseDict`` do the rest.

The other way, :func:`message_to_dict` writes a message as the REST face sends it: the proto3
JSON mapping of ``json_format.MessageToDict(message, always_print_fields_with_no_presence=True)``,
whole numbers as integers. It gives the same object, fields in the same order, but walks each
message type's fields from a plan made once per type instead of protobuf's pure-Python
printer, which was a seventh of a REST worker's time (docs/benchmarks.md, "REST's JSON, an idle
worker's polling, and what did not help"). The keys of a map and of a ``Struct`` come sorted:
protobuf's runtime iterates them in an order that changes from process to process, and the
same message should print the same text on every worker (an exported match record, a match's
``effectiveRules``).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable
from typing import Any, cast

from google.protobuf import descriptor, descriptor_pool, json_format
from google.protobuf.internal import type_checkers
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

FD = descriptor.FieldDescriptor

_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_BYTES_WRAPPER = "google.protobuf.BytesValue"


class Base64FieldError(ValueError):
    """A ``bytes`` field whose JSON value is not base64; ``path`` names it (proto names,
    ``a.b[2]``, ``labels['k']``)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: not base64 (standard or URL-safe, padding optional)")
        self.path = path


def is_base64(text: str) -> bool:
    """Whether ``text`` is base64 as the proto3 JSON mapping accepts it."""
    if _BASE64.fullmatch(text) is None:
        return False
    data = text.rstrip("=")
    padding = len(text) - len(data)
    if len(data) % 4 == 1:
        return False  # no whole byte in the last group
    return padding == 0 or (len(data) + padding) % 4 == 0


_INTEGERS = frozenset({FD.CPPTYPE_INT32, FD.CPPTYPE_INT64, FD.CPPTYPE_UINT32, FD.CPPTYPE_UINT64})
_INT_WRAPPERS = frozenset(f"google.protobuf.{n}Value" for n in ("Int32", "Int64", "UInt32", "UInt64"))
_DIGITS = re.compile(r"-?[0-9]+")


class IntegerFieldError(json_format.ParseError):
    """An integer field whose JSON value is not an integer written in ASCII digits; ``path``
    names it."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: an integer in ASCII digits (no fraction, no exponent)")
        self.path = path


def _check_integer(path: str, value: Any) -> None:
    """protobuf reads ``3.0``, ``1e3`` and ``"\u0663"`` (an Arabic-Indic three) into an integer
    field; the API reads ``3`` or ``"3"`` only."""
    if isinstance(value, (bool, float)):
        raise IntegerFieldError(path)
    if isinstance(value, str) and (not value.isascii() or _DIGITS.fullmatch(value) is None):
        raise IntegerFieldError(path)


def _check_value(path: str, f: descriptor.FieldDescriptor, value: Any) -> None:
    if f.cpp_type in _INTEGERS and f.type != FD.TYPE_ENUM:
        _check_integer(path, value)
    elif f.type == FD.TYPE_BYTES:
        if isinstance(value, str) and not is_base64(value):
            raise Base64FieldError(path)
    elif f.type == FD.TYPE_MESSAGE and f.message_type is not None:
        if f.message_type.full_name == _BYTES_WRAPPER:
            if isinstance(value, str) and not is_base64(value):
                raise Base64FieldError(path)
        elif f.message_type.full_name in _INT_WRAPPERS:
            _check_integer(path, value)
        elif isinstance(value, dict):
            check_bytes(value, f.message_type, path)


def check_bytes(data: dict[str, Any], desc: descriptor.Descriptor, prefix: str = "") -> None:
    """Raise :class:`Base64FieldError` for the first ``bytes`` value of ``data`` (the JSON
    object of a ``desc`` message) that is not base64, :class:`IntegerFieldError` for an
    integer that is not one in ASCII digits. Values of other shapes are left to
    ``ParseDict``, which refuses them."""
    for key, value in data.items():
        f = desc.fields_by_name.get(key) or _by_json_name(desc).get(key)
        if f is None:
            continue
        path = f"{prefix}.{f.name}" if prefix else f.name
        entry = f.message_type
        if entry is not None and entry.GetOptions().map_entry:
            if isinstance(value, dict):
                value_f = entry.fields_by_name["value"]
                for k, item in value.items():
                    _check_value(f"{path}[{k!r:.24}]", value_f, item)
        elif f.is_repeated:
            if isinstance(value, list):
                for i, item in enumerate(value):
                    _check_value(f"{path}[{i}]", f, item)
        else:
            _check_value(path, f, value)


def _by_json_name(desc: descriptor.Descriptor) -> dict[str, descriptor.FieldDescriptor]:
    return {f.json_name: f for f in desc.fields}


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_text(value: Any, path: str) -> None:
    """Refuse a name or string that is not Unicode text (JSON's ``"\\udcff"`` escapes decode to
    lone surrogates, which upb's field lookup turns into a ``SystemError``)."""
    if isinstance(value, str):
        if not _unicode(value):
            raise json_format.ParseError(f"{path or 'the body'}: a string that is not Unicode text")
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and not _unicode(k):
                raise json_format.ParseError(f"{path or 'the body'}: a name that is not Unicode text")
            _check_text(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_text(v, f"{path}[{i}]")


def parse_dict(data: dict[str, Any], message: Message) -> None:
    """``json_format.ParseDict(data, message)`` after :func:`check_bytes` and a check that every
    string is Unicode text; raises
    :class:`Base64FieldError` or what ``ParseDict`` raises (an integer too large for a
    ``Struct``'s double, which ``ParseDict`` lets out as ``OverflowError``, is a ``ParseError``
    too)."""
    _check_text(data, "")
    check_bytes(data, cast(descriptor.Descriptor, message.DESCRIPTOR))
    try:
        json_format.ParseDict(data, message)
    except OverflowError as exc:
        raise json_format.ParseError(f"a number out of range: {exc}") from None


# ------------------------------------------------------------------------ message -> JSON
_Convert = Callable[[Any], Any]
_INT64 = frozenset({FD.CPPTYPE_INT64, FD.CPPTYPE_UINT64})
_TEXT_WKT = frozenset({"google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask"})
_ANY = "google.protobuf.Any"


class _Plan:
    """How one message type is written: a converter per field (for ``ListFields``), and the
    JSON of every field without presence left unset (its default)."""

    __slots__ = ("defaults", "fields")

    def __init__(self) -> None:
        self.fields: dict[descriptor.FieldDescriptor, tuple[str, _Convert | None]] = {}
        """By field: its JSON name and converter (``None``: the value as it is)."""
        self.defaults: list[tuple[str, Callable[[], Any]]] = []


_PLANS: dict[descriptor.Descriptor, _Plan | None] = {}
"""By message type (its descriptor: the fields of ``ListFields`` are that descriptor's own)."""


def message_to_dict(message: Message) -> Any:
    """``message`` in the proto3 JSON mapping, fields without presence printed with their
    defaults, JSON field names, enums by name, 64-bit integers as strings, bytes as base64,
    and every whole number (of a ``double``, a ``float`` or a ``Struct``) as an integer
    (``3``, not ``3.0``, as the other protobuf runtimes print ``Struct`` numbers). The same
    object as ``json_format.MessageToDict(message, always_print_fields_with_no_presence=True)``
    with those whole numbers, fields in the same order, the keys of maps and of a ``Struct``
    sorted; ``tests/contract/test_json_mapping.py`` compares the two on every message the
    service sends."""
    desc = cast(descriptor.Descriptor, message.DESCRIPTOR)
    plan = _PLANS[desc] if desc in _PLANS else _plan_of(desc)
    if plan is None:
        if desc.full_name in _TEXT_WKT:
            return cast(Any, message).ToJsonString()
        if desc.full_name == _ANY:
            inner = _unpacked(message)
            if inner is not None:
                return {"@type": cast(Any, message).type_url, **message_to_dict(inner)}
        write = _STRUCT_WRITERS.get(desc.full_name)
        if write is not None:
            return write(message)
        return whole_numbers(json_format.MessageToDict(message, always_print_fields_with_no_presence=True))
    out: dict[str, Any] = {}
    fields = plan.fields
    for f, value in message.ListFields():
        key, convert = fields[f]
        out[key] = value if convert is None else convert(value)
    for key, default in plan.defaults:
        if key not in out:
            out[key] = default()
    return out


def _struct(message: Any) -> dict[str, Any]:
    """A ``Struct`` as protobuf's printer writes it, its keys sorted (its map's order
    changes from process to process), whole numbers as integers: read here, not by the
    printer, which takes a match's rule set twice as long (72-77 against 34 us)."""
    fields = message.fields
    return {key: _value(fields[key]) for key in sorted(fields)}


def _value(message: Any) -> Any:
    """A ``Value`` (:func:`_struct`'s rules): ``None`` when unset, as protobuf prints it."""
    kind = message.WhichOneof("kind")
    if kind == "number_value":
        number = message.number_value
        if math.isinf(number) or math.isnan(number):  # as protobuf's printer refuses them
            name = "NaN" if math.isnan(number) else "Infinity"
            raise ValueError(
                f"Fail to serialize {name} for Value.number_value, which would parse as string_value"
            )
        return whole_numbers(number)
    if kind == "string_value":
        return message.string_value
    if kind == "bool_value":
        return message.bool_value
    if kind == "struct_value":
        return _struct(message.struct_value)
    if kind == "list_value":
        return _list(message.list_value)
    return None


def _list(message: Any) -> list[Any]:
    return [_value(value) for value in message.values]


_STRUCT_WRITERS: dict[str, Callable[[Any], Any]] = {
    "google.protobuf.Struct": _struct,
    "google.protobuf.Value": _value,
    "google.protobuf.ListValue": _list,
}
"""The well-known types whose JSON is a tree of objects keyed by the message's data, and the
function that writes each."""


def whole_numbers(value: Any) -> Any:
    """``value`` (a JSON tree) with every whole float below 2**53 as an int."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def _unpacked(packed: Message) -> Message | None:
    """The message an ``Any`` holds, when its type is known here and is not a well-known type
    (whose JSON inside an ``Any`` is ``{"@type": ..., "value": ...}``: protobuf's printer
    writes those)."""
    name = cast(Any, packed).TypeName()
    if name.startswith("google.protobuf."):
        return None
    try:
        desc = descriptor_pool.Default().FindMessageTypeByName(name)
    except KeyError:
        return None
    inner = GetMessageClass(desc)()
    return inner if cast(Any, packed).Unpack(inner) else None


def _plan_of(desc: descriptor.Descriptor) -> _Plan | None:
    """The plan of a message type; ``None`` for the well-known types (and their wrappers),
    which the JSON mapping writes in forms of their own."""
    plan: _Plan | None = None
    if not desc.full_name.startswith("google.protobuf."):
        plan = _Plan()
        for f in desc.fields:
            entry = f.message_type
            if entry is not None and entry.GetOptions().map_entry:
                convert = _map_converter(entry)
                if not f.has_presence:
                    plan.defaults.append((f.json_name, dict))
            elif f.is_repeated:
                convert = _list_converter(_value_converter(f))
                if not f.has_presence:
                    plan.defaults.append((f.json_name, list))
            else:
                convert = _value_converter(f)
                if not f.has_presence:
                    plan.defaults.append((f.json_name, _constant(convert(f.default_value))))
            plan.fields[f] = (f.json_name, None if convert is _same else convert)
    _PLANS[desc] = plan
    return plan


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _list_converter(one: _Convert) -> _Convert:
    if one is _same:
        return list
    return lambda values: [one(v) for v in values]


def _map_converter(entry: descriptor.Descriptor) -> _Convert:
    one = _value_converter(entry.fields_by_name["value"])

    def key(k: Any) -> str:
        return ("true" if k else "false") if isinstance(k, bool) else str(k)

    return lambda values: dict(sorted(((key(k), one(v)) for k, v in values.items()), key=_first))


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


def _same(value: Any) -> Any:
    return value


def _value_converter(f: descriptor.FieldDescriptor) -> _Convert:
    """The converter of one value of field ``f`` (what ``json_format`` does for its type)."""
    cpp = f.cpp_type
    if cpp == FD.CPPTYPE_MESSAGE:
        return message_to_dict
    if cpp == FD.CPPTYPE_ENUM:
        enum = f.enum_type
        assert enum is not None
        if enum.full_name == "google.protobuf.NullValue":
            return lambda _v: None
        names = {v.number: v.name for v in enum.values}
        return lambda v: names.get(v, v)
    if cpp == FD.CPPTYPE_STRING:
        if f.type == FD.TYPE_BYTES:
            return lambda v: base64.b64encode(v).decode("ascii")
        return _same
    if cpp == FD.CPPTYPE_BOOL:
        return bool
    if cpp in _INT64:
        return str
    if cpp == FD.CPPTYPE_DOUBLE:
        return _number
    if cpp == FD.CPPTYPE_FLOAT:
        return lambda v: _number(type_checkers.ToShortestFloat(v)) if math.isfinite(v) else _number(v)
    return _same  # 32-bit integers


def _number(value: float) -> Any:
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    if math.isnan(value):
        return "NaN"
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value
