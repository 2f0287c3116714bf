"""A match record's export file: the proto3 JSON mapping of ``truco.v1.MatchRecord`` (what
``truco replay`` and ``truco verify`` read, and ``GET /v1/matches/{id}/record`` returns under
``record``), to and from :class:`truco_match.records.MatchRecord`, and the verifier run on a
file's text."""

from __future__ import annotations

import json

from google.protobuf import json_format

import truco_engine as te
from truco_contract import codec, json_mapping
from truco_contract.pb import match_service_pb2
from truco_match.records import FORMAT, MatchRecord
from truco_match.verify import FORMAT_CHECK, Fault, Report, verify


class RecordFormatError(te.RecordError):
    """Text that is not a readable match record: not JSON, another format, a malformed field."""


def record_to_json(record: MatchRecord) -> str:
    """The export file of a record: the proto3 JSON mapping of ``truco.v1.MatchRecord``
    (lowerCamelCase names, bytes in base64, 64-bit integers as strings, fields without
    presence printed with their defaults), the same object ``GET /v1/matches/{id}/record``
    returns under ``record``."""
    data = json_mapping.message_to_dict(codec.record_to_proto(record))
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def record_from_json(text: str | bytes) -> MatchRecord:
    """Inverse of :func:`record_to_json`; also reads a ``GetMatchRecordResponse`` (the REST
    body, ``{"record": {...}}``). Raises :class:`RecordFormatError` saying what is wrong."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RecordFormatError(f"not JSON: {exc}") from None
    if isinstance(data, dict) and "format" not in data and isinstance(data.get("record"), dict):
        data = data["record"]
    if not isinstance(data, dict):
        raise RecordFormatError("not a match record: the file is not a JSON object")
    found = data.get("format")
    if found != FORMAT:
        raise RecordFormatError(f"not a match record: format is {found!r}, expected {FORMAT!r}")
    msg = match_service_pb2.MatchRecord()
    try:
        json_mapping.parse_dict(data, msg)
    except json_mapping.Base64FieldError as exc:
        raise RecordFormatError(f"not a match record: {exc}") from None
    except json_format.ParseError as exc:
        raise RecordFormatError(f"not a match record: {exc}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise RecordFormatError(f"not a match record: {exc}") from None
    try:
        return codec.record_from_proto(msg)
    except (ValueError, TypeError) as exc:  # codec.DecodeError names the field
        raise RecordFormatError(f"not a valid match record: {exc}") from None


def verify_json(text: str | bytes) -> Report:
    """:func:`verify` of an export file's text; a file that is not a readable match record
    fails the format check."""
    try:
        record = record_from_json(text)
    except RecordFormatError as exc:
        return Report((), Fault(check=FORMAT_CHECK, message=str(exc)))
    return verify(record)
