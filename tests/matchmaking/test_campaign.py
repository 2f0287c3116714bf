"""The matchmaking campaign in a short form (``python -m truco_tools.matchmaking_campaign``;
the full run of 10,000 tickets is in docs/benchmarks.md): two ``truco serve`` workers on a real
Redis, a 2-seat and a 4-seat pool with parties, one worker SIGKILLed and started again while
tickets arrive. Nothing lost, nothing doubled, no player in two matches, every party together."""

from __future__ import annotations

from pathlib import Path

import pytest

from truco_tools.matchmaking_campaign import run

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(600)]


async def test_tickets_across_two_workers_and_a_kill_are_each_seated_once(
    clean_redis_url: str, tmp_path: Path
) -> None:
    report = await run(400, redis_url=clean_redis_url, log_dir=tmp_path, settle_seconds=120.0)
    assert report.kills == 1 and report.sent == 400 and report.parties > 0
    assert report.failures() == {}, report.summary()
    assert report.matched == 400 and report.matches == len(report.formations)
    assert len(report.waits) == 400
