"""The short campaign (``truco campaign --short``, docs/reliability.md): load, soak, chaos
(worker SIGKILLs, a Redis restart on its append-only file, a Redis pause) and fuzz over gRPC
and REST, on loopback, bounded in time; every invariant must hold."""

from __future__ import annotations

import pytest

from truco_tools.campaign import SHORT
from truco_tools.campaign.run import campaign

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]


async def test_the_short_campaign_holds_every_invariant() -> None:
    report = await campaign(SHORT)
    text = report.markdown()
    assert report.ok, text
    _soak, chaos = report.loads
    assert chaos.faults == {
        "kill": SHORT.worker_kills,
        "restart": SHORT.redis_restarts,
        "pause": SHORT.redis_pauses,
    }
    for load in report.loads:
        assert load.stats.matches_finished > 0 and load.checked_actions == load.stats.actions > 0
    assert [f.inputs for f in report.fuzz] == [SHORT.fuzz_inputs, SHORT.fuzz_inputs]
    # the fuzz reached past validation too: some inputs were accepted, many refused
    for f in report.fuzz:
        assert sum(n for code, n in f.codes.items() if code in ("OK", "200")) > 0
        assert sum(f.codes.values()) == f.inputs
