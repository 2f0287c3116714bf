"""The coverage-guided fuzz targets (:mod:`tests.fuzz.targets`), each run by atheris for a
fixed number of inputs from the committed seeds, in a subprocess (``atheris.Fuzz`` exits the
process). A finding makes libFuzzer exit non-zero and write the input; the test shows its
report. The long form is ``scripts/fuzz.py --seconds N`` (docs/reliability.md).

Each target runs on the source of every module (atheris follows Python's execution only, so
that is where it sees the whole move path) and, when this checkout has the compiled build,
once more as built: the compiled modules the server runs get the same inputs and oracle."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import targets
from truco_server.core import build

ROOT = Path(__file__).resolve().parents[2]
RUNS = {"records": 1500, "rest": 4000, "connect": 1500}
"""Inputs per target (about 5 s each on an idle core: 300-450 records, 1,000-2,000 REST calls,
250-300 player connection conversations a second, plus the instrumentation at start)."""

pytestmark = pytest.mark.timeout(300)


BUILDS = ["source", *(["as-built"] if build.extensions() else [])]


def run_target(
    name: str, runs: int, workdir: Path, build_choice: str = "source"
) -> subprocess.CompletedProcess[str]:
    corpus = workdir / "corpus"
    corpus.mkdir()
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz.targets",
            name,
            f"-runs={runs}",
            "-seed=1",
            f"-artifact_prefix={workdir}/",
            str(corpus),
            str(targets.CORPUS / name),
        ],
        cwd=ROOT,
        env={**os.environ, targets.BUILD_ENV: build_choice},
        capture_output=True,
        text=True,
        timeout=280,
    )


@pytest.mark.parametrize("build_choice", BUILDS)
@pytest.mark.parametrize("name", sorted(targets.TARGETS))
def test_target_runs_its_inputs_without_a_finding(name: str, build_choice: str, tmp_path: Path) -> None:
    done = run_target(name, RUNS[name], tmp_path, build_choice)
    report = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, report
    assert not list(tmp_path.glob("crash-*")), report
    runs = re.search(r"Done (\d+) runs", done.stderr)
    assert runs is not None and int(runs.group(1)) >= RUNS[name], report
    seeds = re.search(r"INITED cov: (\d+)", done.stderr)
    cov = re.findall(r"cov: (\d+)", done.stderr)
    assert seeds is not None and cov, report
    assert int(cov[-1]) > int(seeds.group(1)), report  # the mutations reached code the seeds did not
    if build_choice == "source":
        # every module instrumented, the move path too: the seeds alone reach ~1,000-2,200 branches
        assert int(seeds.group(1)) > 800, report


def test_the_oracle_reports_a_finding(tmp_path: Path) -> None:
    """An input the oracle must refuse makes the run fail with the input written out (so a
    green run above means something): a match record that verifies but whose replay is made
    to fail."""
    script = (
        "import sys\n"
        "from tests.fuzz import targets\n"
        "import truco_cli.engine_commands as ec\n"
        "def broken(text):\n"
        "    raise ec.TrucoError('replay broken on purpose')\n"
        "ec.replay_any = broken\n"
        "targets.main(sys.argv)\n"
    )
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "records",
            "-runs=50",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
            str(targets.CORPUS / "records"),
        ],
        cwd=ROOT,
        env={**os.environ, targets.BUILD_ENV: "as-built"},  # (the script imports the project first)
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode != 0
    assert "a record that verifies does not replay" in done.stdout + done.stderr
    assert list(tmp_path.glob("crash-*"))


def test_the_seeds_are_real_calls_and_records() -> None:
    """Most seeds pass: the fuzzer starts from inputs that reach deep, not from refusals."""
    from truco_contract.record_file import verify_json

    matches = sorted((targets.CORPUS / "records").glob("match-*.json"))
    assert matches and all(verify_json(p.read_bytes()).ok for p in matches)
    env = targets.rest_env()
    accepted = 0
    seeds = sorted((targets.CORPUS / "rest").glob("*.json"))
    for path in seeds:
        before = sum(env.refused.values())
        targets.rest_target(path.read_bytes())
        accepted += sum(env.refused.values()) == before
    assert accepted >= len(seeds) - 3, env.refused


def test_the_connection_seeds_are_real_conversations() -> None:
    """The connect target's seeds play on the live match: most of their actions are applied."""
    env = targets.rest_env()
    seeds = sorted((targets.CORPUS / "connect").glob("*.json"))
    before = env.accepted
    for path in seeds:
        targets.connect_target(path.read_bytes())
    assert env.accepted - before >= 6, env.refused  # play, play-proto, two-seats (2), envido, retry


def test_the_connection_oracle_reports_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not blind: a connection whose refusals of actions carried INTERNAL is a finding."""
    from truco_server.api import connection
    from truco_server.api.status import INTERNAL, to_status

    monkeypatch.setattr(connection, "_status", lambda exc: to_status(INTERNAL))
    with pytest.raises(targets.Finding, match="a connection's error with code 13"):
        targets.connect_target((targets.CORPUS / "connect" / "unsubscribe.json").read_bytes())
