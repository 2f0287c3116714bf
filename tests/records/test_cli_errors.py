"""``truco replay`` and ``truco verify`` on user mistakes: one line on stderr, no traceback,
exit 2 when the file cannot be read, 1 when ``verify`` finds it is not a match record. Also
``truco replay`` of both kinds of record, told apart by their format."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import truco_engine as te
from tests.records.local import play_record
from truco_cli.main import main
from truco_contract import record_file
from truco_engine.record import Match
from truco_match import records

pytestmark = pytest.mark.timeout(60)


def _files(tmp: Path) -> dict[str, Path]:
    (tmp / "not.json").write_text("{not json")
    (tmp / "other.json").write_text(json.dumps({"format": "something-else/1"}))
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "binary.json").write_bytes(b"\xff\xfe\x00\x81")
    (tmp / "bad-field.json").write_text(json.dumps({"format": records.FORMAT, "steps": "many"}))
    (tmp / "a-dir").mkdir()
    return {
        "missing": tmp / "missing.json",
        "directory": tmp / "a-dir",
        "binary": tmp / "binary.json",
        "not JSON": tmp / "not.json",
        "another format": tmp / "other.json",
        "not an object": tmp / "list.json",
        "a malformed field": tmp / "bad-field.json",
    }


UNREADABLE = {"missing", "directory", "binary"}


@pytest.mark.parametrize("command", ["replay", "verify"])
def test_user_mistakes_are_one_line(tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    for what, path in _files(tmp_path).items():
        status = main([command, str(path)])
        out = capsys.readouterr()
        expected = 2 if what in UNREADABLE or command == "replay" else 1
        assert status == expected, (what, out.err)
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"truco {command}: "), (what, out.err)
        assert "Traceback" not in out.err and out.out == ""


def test_the_installed_command_prints_no_traceback(tmp_path: Path) -> None:
    files = _files(tmp_path)
    for command in ("replay", "verify"):
        for path in (files["missing"], files["another format"]):
            done = subprocess.run(
                [sys.executable, "-m", "truco_cli.main", command, str(path)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode in (1, 2) and done.stdout == ""
            assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_replay_reads_both_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = te.get_rules("argentine", players=2)
    record = play_record(rules, random.Random(4))
    exported = tmp_path / "match.json"
    exported.write_text(record_file.record_to_json(record))
    # The same match as an engine record: its deals from the reveal, its actions.
    m = Match(rules)
    reveal = record.reveal
    assert reveal is not None
    deals = iter(reveal.deals)
    for step in record.steps:
        if te.needs_deal(m.state):
            d = next(deals)
            m.deal(d.cards, d.salt)
        assert step.action is not None and step.seat is not None
        m.act(step.seat, step.action)
    engine = tmp_path / "engine.json"
    engine.write_text(m.record.to_json())
    outputs = []
    for path in (exported, engine):
        assert main(["replay", str(path)]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    result = record.match.result
    assert result is not None
    assert (outputs[0]["winner"], outputs[0]["scores"]) == (result.winner_team, list(result.scores))
    # a REST body ({"record": {...}}) replays and verifies too
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"record": json.loads(exported.read_text())}))
    assert main(["replay", str(body)]) == 0
    assert json.loads(capsys.readouterr().out) == outputs[0]
    assert main(["verify", "-q", str(body)]) == 0
