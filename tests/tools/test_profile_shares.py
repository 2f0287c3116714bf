"""The profile summary of docs/benchmarks.md: py-spy's raw lines grouped by the layer of the
innermost frame."""

from __future__ import annotations

from pathlib import Path

import pytest

from truco_tools import profile_shares

RAW = """\
m (b.py:1);commit (site/truco_server/stores/redis/matches.py:10);send (site/redis/connection.py:5) 30
m (b.py:1);decide (site/truco_engine/engine.py:20) 20
m (b.py:1);reply (site/truco_server/api/wire.py:3);SerializeToString (site/google/protobuf/message.py:9) 25
m (b.py:1);_run_once (lib/asyncio/base_events.py:1);EpollSelector.select (lib/selectors.py:468) 15
m (b.py:1);Handle._run (lib/asyncio/events.py:80) 5
m (b.py:1);_call (<frozen importlib._bootstrap>:1) 3
m (b.py:1);0x7f00 (libc.so.6) 2
"""


def test_self_time_is_grouped_by_the_layer_of_the_innermost_frame() -> None:
    layers, functions, total = profile_shares.shares(profile_shares.parse(RAW.splitlines()))
    assert total == 100
    assert layers == {
        "redis-py": 30,
        "engine": 20,
        "protobuf": 25,
        "python, other (stdlib, dataclasses, third party)": 18,
        "asyncio": 5,
        "native": 2,
    }
    assert functions["decide (site/truco_engine/engine.py)"] == 20


def test_the_store_is_its_own_layer_and_idle_frames_can_be_left_out() -> None:
    raw = RAW + "m (b.py:1);commit (site/truco_server/stores/redis/matches.py:12) 10\n"
    layers, _, total = profile_shares.shares(profile_shares.parse(raw.splitlines()), skip_idle=True)
    assert total == 95  # 110 less the 15 samples waiting in select
    assert layers["store"] == 10 and "server" not in layers


def test_the_command_prints_shares_and_rejects_what_is_not_a_raw_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "p.raw"
    good.write_text(RAW)
    assert profile_shares.main([str(good), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "samples: 100" in out and "redis-py: 30.0 %" in out
    assert "30.0 %  send (site/redis/connection.py)" in out
    bad = tmp_path / "bad.raw"
    bad.write_text("this is a flame graph svg\n")
    assert profile_shares.main([str(bad)]) == 2
    assert "line 1" in capsys.readouterr().err


def test_two_profiles_side_by_side_per_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Samples become microseconds per unit (samples / rate / units): a load whose moves cost
    more in the event loop shows that layer's difference first."""
    busy = tmp_path / "busy.raw"
    busy.write_text(RAW)  # 100 samples
    calm = tmp_path / "calm.raw"
    calm.write_text(RAW + "m (b.py:1);Handle._run (lib/asyncio/events.py:80) 100\n")  # 200 samples
    # 200 samples at 100 Hz over 1,000 moves: 2,000 us per move; 100 over 500 moves: 2,000
    assert (
        profile_shares.main(
            [str(calm), "--per", "1000", "--against", str(busy), "--against-per", "500", "--top", "1"]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("2000.0, " + f"{busy} 2000.0")
    first = out[2].split()
    assert first[:3] == ["1050.0", "100.0", "+950.0"] and first[3] == "asyncio"  # 105 of 1,000 vs 5 of 500
    assert out[-1].split()[:3] == ["1050.0", "100.0", "+950.0"] and "Handle._run" in out[-1]


def test_a_comparison_needs_both_unit_counts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = tmp_path / "p.raw"
    good.write_text(RAW)
    with pytest.raises(SystemExit):
        profile_shares.main([str(good), "--against", str(good)])
    assert "--per and --against-per" in capsys.readouterr().err
