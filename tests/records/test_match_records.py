"""Records of whole matches played on a real worker (real Redis, a 16-event log): complete
beyond the log's retention, replayed by ``truco replay`` to the match's result, verified by
``truco verify``, and failed — naming the fault — on tampered copies, on which the docs
verifier (run with nothing but the standard library) agrees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.records.conftest import API_KEY, LOG_RETENTION, Played
from tests.records.tamper import TAMPERINGS, Expected
from truco_cli.main import main
from truco_client import TrucoClient, read_record
from truco_contract import record_file
from truco_match import records
from truco_match.events import MatchStatus
from truco_match.verify import CHECKS
from truco_server.app.embedded import EmbeddedServer

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(180)


def test_the_record_is_complete_beyond_the_logs_retention(played: Played, redis_url: str) -> None:
    record = played.record
    m = record.match
    assert m.state is MatchStatus.FINISHED and m.result is not None
    assert m.version > 4 * LOG_RETENTION
    # The stream's log in Redis holds only the last 16 events.
    with redis.Redis.from_url(redis_url) as r:
        kept = [int(eid.split(b"-")[0]) for eid, _ in r.xrange(f"truco:{{{m.match_id}}}:events")]
    assert kept == list(range(m.version - LOG_RETENTION + 1, m.version + 1))
    # Every version 1..N is produced by exactly one step (or the creation), in order.
    versions: list[int] = []
    for r in records.replay_record(record):
        versions.extend(range(r.first_version, r.first_version + len(r.entries)))
        assert versions[-1] == r.step.version
    assert versions == list(range(1, m.version + 1))
    assert [s.version for s in record.steps] == sorted({s.version for s in record.steps})
    # Each seat joined with the seed its runner gave (32 random bytes where none was given).
    joins = {s.join.seat: s.join.client_seed for s in record.steps if s.join is not None}
    assert sorted(joins) == [0, 1, 2, 3]
    for seat, given in enumerate(played.seat_seeds):
        assert joins[seat] == given if given is not None else len(joins[seat]) == 32
    assert m.fairness is not None
    creator = m.fairness.client_seeds[0]
    assert (creator.seat, creator.seed) == (None, b"the creator's seed")
    assert {c.seat for c in m.fairness.client_seeds} == {None, 0, 1, 2}  # seat 3 gave none


def test_truco_replay_reproduces_the_result(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(played.path)]) == 0
    out = json.loads(capsys.readouterr().out)
    result = played.record.match.result
    assert result is not None
    assert (out["winner"], out["scores"], out["games"], out["phase"]) == (
        result.winner_team,
        list(result.scores),
        list(result.games_won),
        "over",
    )


def test_truco_verify_passes(played: Played, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(played.path)]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == [f"ok    {c}" for c in CHECKS]
    assert lines[-1].startswith(f"match {played.created.match_id}: verified")
    assert out.err == ""


def docs_verifier(path: Path) -> subprocess.CompletedProcess[str]:
    """The docs verifier in an isolated interpreter without site-packages (``-I -S``): it
    runs on the standard library alone."""
    return subprocess.run(
        [sys.executable, "-I", "-S", str(ROOT / "docs" / "verify_deals.py"), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


FILES = ["untouched", *sorted(TAMPERINGS)]


@pytest.mark.parametrize("name", FILES)
def test_truco_verify_names_the_fault_and_the_docs_verifier_agrees(
    played: Played, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(played.path.read_text())
    expected: Expected | None = None
    if name != "untouched":
        data, expected = TAMPERINGS[name](data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    status = main(["verify", str(path)])
    out = capsys.readouterr()
    docs = docs_verifier(path)
    if expected is None:
        assert status == 0, out.err
        assert docs.returncode == 0 and docs.stdout.splitlines()[-1] == "OK: every deal checks out", docs
        return
    assert status == 1
    fault = out.err.strip()
    assert "\n" not in fault and "Traceback" not in fault
    where = [
        f"hand {expected.hand}" if expected.hand is not None else None,
        f"version {expected.version}" if expected.version is not None else None,
        f"seat {expected.seat}" if expected.seat is not None else None,
    ]
    where_text = ", ".join(w for w in where if w is not None)
    assert fault.startswith(f"truco verify: FAILED {expected.check}: {where_text}"), fault
    assert docs.returncode == 1 and docs.stdout.splitlines()[-1].startswith("FAIL: "), docs


def test_the_sdk_exports_and_reads_the_same_record(
    played: Played, client: TrucoClient, tmp_path: Path
) -> None:
    m = played.created
    as_owner = client.get_match_record(m.match_id)  # the owner's API key
    as_spectator = client.get_match_record(m.match_id, token=m.spectator_token)
    assert record_file.record_to_json(as_owner) == record_file.record_to_json(played.record)
    assert record_file.record_to_json(as_spectator) == record_file.record_to_json(played.record)
    assert record_file.record_to_json(read_record(played.path)) == played.path.read_text()


def test_truco_record_exports_the_file(
    played: Played, server: EmbeddedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    m = played.created
    out = tmp_path / "exported.json"
    args = ["record", m.match_id, "--server", server.address, "-o", str(out)]
    assert main([*args, "--token", m.seat_tokens[2]]) == 0
    assert out.read_text() == played.path.read_text()
    assert f"match {m.match_id} (finished)" in capsys.readouterr().err
    out.unlink()
    assert main([*args, "--api-key", API_KEY]) == 0
    assert out.read_text() == played.path.read_text()
    assert main(["verify", "-q", str(out)]) == 0
    capsys.readouterr()
    # one-line errors: no credential, an unknown match, a credential of another match
    assert main(["record", m.match_id, "--server", server.address]) == 2
    assert main(["record", "m-no-such-match", "--server", server.address, "--api-key", API_KEY]) == 1
    assert main(["record", "m-no-such-match", "--server", server.address, "--token", m.seat_tokens[0]]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("truco record: ") for line in err), err
    assert "Traceback" not in "".join(err)
