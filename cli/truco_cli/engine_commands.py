"""Engine commands of ``truco``: ``truco replay`` (a match record to its final state)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from truco_engine.errors import TrucoError
from truco_engine.record import MatchRecord, canonical_json, replay


def _replay(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.record == "-" else Path(args.record).read_text()
        state = replay(MatchRecord.from_json(text))
    except (OSError, TrucoError) as exc:
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
    p = sub.add_parser("replay", help="replay a match record and print scores and final state as JSON")
    p.add_argument("record", help="path of a record JSON file, or - for standard input")
    p.add_argument("--pretty", action="store_true", help="indent the JSON output")
    p.set_defaults(func=_replay)
