"""Golden playthroughs: replay each ``tests/golden/*.json`` record and compare the per-viewer
event transcript and the final state exactly (see ``tests/golden/make_golden.py`` for how the
files are made and when to regenerate them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden.make_golden import CASES, play_match, transcript
from truco_engine import MatchRecord, RuleSet, replay

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
FILES = sorted(GOLDEN.glob("*.json"))


def test_every_case_has_its_files():
    names = {p.name for p in FILES}
    for case, spec in CASES.items():
        for n in spec.runs:
            assert f"{case}-{n}.json" in names


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_transcript(path):
    data = json.loads(path.read_text())
    record = MatchRecord.from_dict(data["record"])
    got, final = transcript(record)
    assert len(got) == len(data["transcript"])
    for i, (g, want) in enumerate(zip(got, data["transcript"], strict=True)):
        assert g == want, f"{path.name}: step {i} ({want['step']}) differs"
    # Rule fields added later take their defaults: compare the rule sets, then the rest.
    want_final = dict(data["final"])
    assert RuleSet.from_dict(want_final.pop("rules")) == final.rules
    got_final = final.to_dict()
    got_final.pop("rules")
    assert got_final == want_final
    assert replay(record) == final
    assert final.phase == "over"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_driver_is_deterministic(path):
    """The seeded driver reproduces the recorded steps (no randomness in the engine)."""
    data = json.loads(path.read_text())
    case, _, n = path.stem.rpartition("-")
    assert play_match(case, int(n)).to_dict()["steps"] == data["record"]["steps"]
