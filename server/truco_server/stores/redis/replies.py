"""Small conversions of what redis-py hands back (bytes by default, a RESP3 map for XREAD)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["EVENT_FIELD", "as_bytes", "as_str", "parse_raw_xread", "parse_xread", "version_of"]

EVENT_FIELD = b"e"
"""The stream entry field holding an event's bytes (match streams, operator streams)."""

StreamEntries = list[tuple[bytes, Mapping[bytes, bytes]]]


def as_bytes(value: bytes | str | None) -> bytes:
    if value is None:
        return b""
    return value.encode() if isinstance(value, str) else value


def as_str(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else value


def version_of(entry_id: bytes | str) -> int:
    """A match stream's entry ids are ``<version>-0``."""
    raw = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(raw.split("-", 1)[0])


def parse_xread(resp: Any) -> list[tuple[bytes, StreamEntries]]:
    """An ``XREAD`` reply (a RESP2 list or a RESP3 map) as ``[(key, entries)]``."""
    if not resp:
        return []
    if isinstance(resp, dict):
        out = []
        for key, val in resp.items():
            entries = val[0] if val and isinstance(val[0], list) else val
            out.append((key, entries))
        return out
    return [(key, entries) for key, entries in resp]


def parse_raw_xread(resp: Any) -> list[tuple[bytes, StreamEntries]]:
    """An ``XREAD`` reply as the connection reads it, before redis-py's conversions (entries
    as ``[id, [field, value, ...]]``; a RESP2 list or a RESP3 map of streams), in the shape
    of :func:`parse_xread`."""
    if not resp:
        return []
    streams = resp.items() if isinstance(resp, dict) else resp
    return [
        (key, [(eid, dict(zip(flat[::2], flat[1::2], strict=True))) for eid, flat in entries])
        for key, entries in streams
    ]
