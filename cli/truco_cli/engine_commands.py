"""Engine commands of ``truco``: ``truco replay`` (a record to its final state).

It reads both kinds of record, told apart by their ``format``: the engine's own
(``truco-record/1``, :mod:`truco_engine.record`) and a match's export
(``truco-match-record/1``, written by ``truco record``; :mod:`truco_cli.record_commands`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from truco_cli.record_commands import ReadError, read_text, replay_match_record
from truco_engine.errors import TrucoError
from truco_engine.record import RECORD_FORMAT, MatchRecord, canonical_json, replay
from truco_engine.state import MatchState
from truco_match.records import FORMAT as MATCH_RECORD_FORMAT


def replay_any(text: str) -> MatchState:
    """The final state of either kind of record (raises :class:`TrucoError` in one line)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TrucoError(f"not JSON: {exc}") from None
    found = data.get("format") if isinstance(data, dict) else None
    if found == MATCH_RECORD_FORMAT or (isinstance(data, dict) and found is None and "record" in data):
        return replay_match_record(text)
    if found != RECORD_FORMAT:
        raise TrucoError(
            f"not a record: format is {found!r}; expected {RECORD_FORMAT!r} (an engine record) "
            f"or {MATCH_RECORD_FORMAT!r} (a match's export, truco record)"
        )
    return replay(MatchRecord.from_dict(data))


def _replay(args: argparse.Namespace) -> int:
    try:
        state = replay_any(read_text(args.record))
    except (ReadError, TrucoError) as exc:
        print(f"truco replay: {exc}", file=sys.stderr)
        return 2
    out: dict[str, Any] = {
        "scores": state.scores,
        "games": state.games,
        "winner": state.winner,
        "phase": state.phase,
        "state": state.to_dict(),
    }
    print(json.dumps(out, indent=2, sort_keys=True) if args.pretty else canonical_json(out))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("replay", help="replay a record and print scores and final state as JSON")
    p.add_argument(
        "record", help="an engine record or a match's export (truco record), or - for standard input"
    )
    p.add_argument("--pretty", action="store_true", help="indent the JSON output")
    p.set_defaults(func=_replay)
