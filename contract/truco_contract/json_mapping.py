"""JSON onto protobuf messages, strictly: the one place JSON text from outside (a REST body,
an exported match record) becomes a message.

protobuf's ``json_format.ParseDict`` reads a ``bytes`` field with Python's lenient base64
decoder, which drops every character outside the alphabet: ``"!!!!"`` becomes no bytes at
all, so an invalid ``seed`` would be taken as "no seed". :func:`parse_dict` first checks every
``bytes`` value against what the proto3 JSON mapping allows (standard or URL-safe base64,
with or without padding; protobuf's decoder reads either alphabet) and names the first one
that is not, then lets ``ParseDict`` do the rest.
"""

from __future__ import annotations

import re
from typing import Any, cast

from google.protobuf import descriptor, json_format
from google.protobuf.message import Message

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


def _check_value(path: str, f: descriptor.FieldDescriptor, value: Any) -> None:
    if f.type == FD.TYPE_BYTES:
        if isinstance(value, str) and not is_base64(value):
            raise Base64FieldError(path)
    elif f.type == FD.TYPE_MESSAGE and f.message_type is not None:
        if f.message_type.full_name == _BYTES_WRAPPER:
            if isinstance(value, str) and not is_base64(value):
                raise Base64FieldError(path)
        elif isinstance(value, dict):
            check_bytes(value, f.message_type, path)


def check_bytes(data: dict[str, Any], desc: descriptor.Descriptor, prefix: str = "") -> None:
    """Raise :class:`Base64FieldError` for the first ``bytes`` value of ``data`` (the JSON
    object of a ``desc`` message) that is not base64. Values of other shapes are left to
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
