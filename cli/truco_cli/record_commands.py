"""Match-record commands of ``truco``: ``record`` (export a match's record from a server) and
``verify`` (check a record end to end). ``truco replay`` (engine_commands) reads these
records too (:func:`replay_match_record`).

Exit status: 0 when it worked (the record verified); 1 when verification found a fault, the
file is not a match record, or the server refused; 2 when a file cannot be read or written.
Every error is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import truco_engine as te
from truco_cli.match_commands import DEFAULT_SERVER
from truco_contract import record_file
from truco_contract.record_file import verify_json
from truco_match import records


class ReadError(Exception):
    """A file (or standard input) that cannot be read."""


def read_text(path: str) -> str:
    """The text of ``path`` (``-``: standard input); :class:`ReadError` in one line."""
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReadError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReadError(f"{path}: is a directory") from None
    except UnicodeDecodeError:
        raise ReadError(f"{path}: not a text file") from None
    except OSError as exc:
        raise ReadError(f"{path}: {exc.strerror or exc}") from None


def replay_match_record(text: str | bytes) -> te.MatchState:
    """The final state of an exported match record, replayed step by step through the rules.
    Raises :class:`truco_engine.RecordError` (the format, or the step that does not replay)."""
    record = record_file.record_from_json(text)
    *_, last = records.replay_record(record)
    return last.state


def _verify(args: argparse.Namespace) -> int:
    try:
        text = read_text(args.record)
    except ReadError as exc:
        print(f"truco verify: {exc}", file=sys.stderr)
        return 2
    report = verify_json(text)
    if not args.quiet:
        for p in report.passed:
            print(f"ok    {p}")
    if report.fault is not None:
        print(f"truco verify: FAILED {report.fault}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


def _record(args: argparse.Namespace) -> int:
    from truco_client.client import TrucoClient

    token = args.token or os.environ.get("TRUCO_TOKEN")
    api_key = args.api_key or os.environ.get("TRUCO_API_KEY")
    if not token and not api_key:
        print("truco record: give --token (a seat or spectator token) or --api-key", file=sys.stderr)
        return 2
    servers = args.server.split(",")
    with TrucoClient(servers, token=token, api_key=api_key, timeout=args.timeout) as client:
        record = client.get_match_record(args.match)
    text = record_file.record_to_json(record)
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"truco record: {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    m = record.match
    over = (
        "with its seed and every deal" if record.reveal is not None else "as this credential sees it so far"
    )
    where = "" if args.output in (None, "-") else f" to {args.output}"
    size = f"{len(record.steps)} steps, {len(record.hands)} hands"
    print(f"match {m.match_id} ({m.state}): {size}, {over}{where}", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    """Add ``record`` and ``verify`` to the ``truco`` parser."""
    r = sub.add_parser("record", help="export a match's record (the file truco replay and truco verify read)")
    r.add_argument("match", help="match id")
    r.add_argument("--server", default=DEFAULT_SERVER, help="HOST:PORT (comma-separated for several workers)")
    r.add_argument("--token", help="a seat or spectator token of the match (or TRUCO_TOKEN)")
    r.add_argument("--api-key", help="the owning operator's API key (or TRUCO_API_KEY)")
    r.add_argument("-o", "--output", help="file to write (default: standard output)")
    r.add_argument("--timeout", type=float, default=10.0, help="seconds per call (default 10)")
    r.set_defaults(func=_record)

    v = sub.add_parser(
        "verify", help="check a match record: seeds, commitments, every deal and step, the result"
    )
    v.add_argument("record", help="a match record file (truco record), or - for standard input")
    v.add_argument("-q", "--quiet", action="store_true", help="print only the summary (or the fault)")
    v.set_defaults(func=_verify)
