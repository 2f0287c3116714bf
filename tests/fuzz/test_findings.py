"""Regressions for what the coverage-guided fuzzer found in the record parsers and the JSON
mapping, each reduced to a small input: only the documented error types come out (the
records' :class:`truco_engine.RecordError`, a failed check of ``truco verify``), and the
commands say it in one line instead of a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

import truco_engine as te
from truco_cli.engine_commands import replay_any
from truco_contract import json_mapping
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.record_file import RecordFormatError, record_from_json, verify_json
from truco_match.verify import FORMAT_CHECK

ROOT = Path(__file__).resolve().parents[2]
RECORDS = Path(__file__).parent / "corpus" / "records"
"""Real records of both formats (the fuzzer's seeds)."""


def engine_record() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDS / "engine-paulista-2p.json").read_text())
    return data


def match_record() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDS / "match-paulista-2p.json").read_text())
    return data


# ----------------------------------------------------------------- the engine's record
def _broken(change: str) -> dict[str, Any]:
    data = engine_record()
    steps = data["steps"]
    if change == "rules missing":
        del data["rules"]
    elif change == "rules a number":
        data["rules"] = 3
    elif change == "a list rule a number":
        data["rules"]["truco_call_names"] = 3
    elif change == "first dealer a string":
        data["first_dealer"] = "0"
    elif change == "a step not an object":
        steps[1] = 7
    elif change == "seat a float text":
        steps[1]["seat"] = "1e999"
    elif change == "seat true":
        steps[1]["seat"] = True
    elif change == "deal a number":
        steps[0]["deal"] = 40
    elif change == "salt a list":
        steps[0]["salt"] = []
    elif change == "action a list":
        steps[1]["action"] = [1]
    elif change == "an unplayed rule's number an object":  # the rule set was built, then hashed
        data["rules"]["hand_of_eleven_at"] = None  # the hand of eleven off: its values unchecked
        data["rules"]["hand_of_eleven_refusal"] = {}
    return data


CHANGES = (
    "rules missing", "rules a number", "a list rule a number", "first dealer a string",
    "a step not an object", "seat a float text", "seat true", "deal a number", "salt a list",
    "action a list", "an unplayed rule's number an object",
)  # fmt: skip


@pytest.mark.parametrize("change", CHANGES)
def test_a_malformed_engine_record_is_a_record_error(change: str) -> None:
    text = json.dumps(_broken(change))
    with pytest.raises(te.TrucoError):
        replay_any(text)


def test_the_engine_record_seed_still_replays() -> None:
    state = replay_any(json.dumps(engine_record()))
    assert te.is_over(state)


def test_truco_replay_reports_a_malformed_record_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken("rules missing")))
    done = subprocess.run(
        [sys.executable, "-m", "truco_cli.main", "replay", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("truco replay: ") and len(done.stderr.splitlines()) == 1, done.stderr


# ------------------------------------------------------------------- a match's export
def test_a_huge_integer_in_the_rules_is_a_format_fault() -> None:
    data = match_record()
    data["match"]["rules"]["overrides"] = {"target_points": 10**400}
    text = json.dumps(data)
    with pytest.raises(RecordFormatError):
        record_from_json(text)
    report = verify_json(text)
    assert report.fault is not None and report.fault.check == FORMAT_CHECK


@pytest.mark.parametrize("where", ["a key", "a value"])
def test_text_that_is_not_unicode_is_a_format_fault(where: str) -> None:
    text = json.dumps(match_record())
    bad = (
        text.replace('"format"', '"\\udcff": 1, "format"', 1)
        if where == "a key"
        else text.replace('"matchId": "', '"matchId": "\\ud800', 1)
    )
    assert bad != text
    with pytest.raises(RecordFormatError, match="Unicode"):
        record_from_json(bad)
    assert verify_json(bad).fault is not None


def test_an_invalid_base64_seed_in_a_record_is_a_format_fault() -> None:
    data = match_record()
    data["reveal"]["seed"] = "!!!!"
    with pytest.raises(RecordFormatError, match=r"reveal\.seed: not base64"):
        record_from_json(json.dumps(data))


# ------------------------------------------------------------------ the JSON mapping
@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("", True), ("YQ==", True), ("YQ", True), ("YWI=", True), ("YWJj", True), ("-_8", True),
        ("+/8=", True), ("a", False), ("YQ=", False), ("====", False), ("!!!!", False),
        ("YW Jj", False), ("YWJj\n", False), ("é", False),
    ],
)  # fmt: skip
def test_base64_as_the_json_mapping_allows(text: str, ok: bool) -> None:
    assert json_mapping.is_base64(text) is ok


def test_parse_dict_names_the_bytes_field_at_any_depth() -> None:
    with pytest.raises(json_mapping.Base64FieldError) as caught:
        json_mapping.parse_dict({"reveal": {"deals": [{"salt": "s"}], "mixedSeed": "@"}}, MS.MatchRecord())
    assert caught.value.path == "reveal.mixed_seed"
    msg = MS.CreateMatchRequest()
    json_mapping.parse_dict({"seed": "c2VlZA", "clientSeed": "-_8="}, msg)
    assert msg.seed == b"seed" and msg.client_seed == b"\xfb\xff"
    with pytest.raises(json_format.ParseError):
        json_mapping.parse_dict({"rules": {"overrides": {"x": 10**400}}}, MS.CreateMatchRequest())
