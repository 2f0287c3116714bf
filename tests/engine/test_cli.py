"""`truco replay RECORD.json` and `truco bench engine` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from truco_cli.main import main
from truco_engine import MatchRecord, replay

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def test_replay_prints_scores_and_final_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = json.loads((GOLDEN / "argentine-2p-1.json").read_text())["record"]
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    assert main(["replay", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    state = replay(MatchRecord.from_dict(record))
    assert out["scores"] == state.scores and out["winner"] == state.winner
    assert out["state"] == state.to_dict()


def test_replay_of_a_broken_record_says_which_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = json.loads((GOLDEN / "paulista-2p-1.json").read_text())["record"]
    first_action = next(i for i, s in enumerate(record["steps"]) if "action" in s)
    record["steps"][first_action]["seat"] = 1 - record["steps"][first_action]["seat"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(record))
    assert main(["replay", str(path)]) == 2
    assert f"step {first_action}:" in capsys.readouterr().err


def test_bench_engine_prints_one_line_per_case() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "truco_cli.main",
            "bench",
            "engine",
            "--case",
            "paulista-2p",
            "--case",
            "argentine-2p",
            "--seconds",
            "0.2",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    lines = [line for line in out if not line.startswith("#")]
    assert [line.split(":")[0] for line in lines] == ["paulista 2p", "argentine 2p"]
    assert all("hands/s" in line and "actions/s" in line for line in lines)
