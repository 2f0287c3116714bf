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
