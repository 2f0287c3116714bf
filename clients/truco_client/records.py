"""Match records as files: the export of ``get_match_record`` that ``truco replay`` and
``truco verify`` read (``docs/records.md``).

    record = client.get_match_record(match_id)
    write_record(record, "match.json")
    assert read_record("match.json") == record
"""

from __future__ import annotations

from pathlib import Path

from truco_contract.record_file import RecordFormatError, record_from_json, record_to_json
from truco_match.records import MatchRecord


def write_record(record: MatchRecord, path: str | Path) -> None:
    """Write ``record`` as its export file (the JSON of ``truco.v1.MatchRecord``)."""
    Path(path).write_text(record_to_json(record), encoding="utf-8")


def read_record(path: str | Path) -> MatchRecord:
    """Read an export file (also the body of ``GET /v1/matches/{id}/record``). Raises
    :class:`~truco_contract.record_file.RecordFormatError` when it is not a match record."""
    return record_from_json(Path(path).read_bytes())


__all__ = ["MatchRecord", "RecordFormatError", "read_record", "write_record"]
