"""A step is recorded at the time it was decided at, however long its commit took.

A step's states are computed with the time it is decided at: an expiry or a move starts the
next decision's clock there. Its record step and events once carried the time of the commit
instead, which a busy worker (a store round trip, a bot thinking) reaches later: a replay of
the record then timed the next decision from later than the server had, and an expiry the
server rightly applied at its deadline replayed as "the recorded timeout was not due" (seen
once under heavy load in tests/e2e/test_lifecycle.py)."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.clock import FakeClock
from tests.helpers.proxy import Proxy
from tests.service.conftest import SETTINGS
from truco_match.create import SeatSpec
from truco_match.events import MatchStatus
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.verify import verify
from truco_server.app.wiring import build_services, store_settings
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.stores import open_store

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


@pytest.mark.parametrize("store", ["memory", "redis"])
async def test_expiries_replay_when_a_commit_comes_later_than_its_decision(
    operator: Operator, store: str, request: pytest.FixtureRequest
) -> None:
    clock = FakeClock(1_800_000_000.0)
    url = None if store == "memory" else request.getfixturevalue("clean_redis_url")
    svc = build_services(SETTINGS, asyncio.Event(), open_store(url, store_settings(SETTINGS)), clock=clock)
    real_commit = svc.matches.commit
    delays = [0.4]  # the first commit is slow, the later ones are not

    async def slow_commit(*args: object, **kwargs: object) -> object:
        clock.advance(delays.pop() if delays else 0.0)
        return await real_commit(*args, **kwargs)  # type: ignore[arg-type]

    # the clock's steps (the expiries here) commit through a match service whose commit is slow
    svc.steps.matches = Proxy(svc.matches, commit=slow_commit)  # type: ignore[assignment]
    try:
        tc = TimeControl(per_decision=1000, forfeit_after=3)
        created = await svc.steps.create_match(
            operator,
            T.CreateMatchRequest(
                preset="paulista-2p", seats=(SeatSpec(), SeatSpec()), lifecycle=Lifecycle(time_control=tc)
            ),
        )
        mid = created.match.match_id
        wake = await svc.steps.wake_match(mid)
        while wake is not None:  # each expiry decided right at its deadline
            clock.now = wake / 1000
            wake = await svc.steps.wake_match(mid)
        assert delays == []  # the first expiry's commit was the slow one
        match = await svc.matches.load(mid, fresh=True)
        assert match.status is MatchStatus.FINISHED  # forfeited after three expiries
        record = await svc.reads.get_match_record(operator, T.GetMatchRecordRequest(mid))
        report = verify(record.record)
        assert report.ok, report
    finally:
        await svc.relay.done()
        svc.streams.close()
        await svc.store.close()
