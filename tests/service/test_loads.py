"""How the match service reads a match from the store: a fresh load of the version this
worker holds reuses its copy (nothing decoded again); ``fresh_within`` takes this worker's copy
when the store showed it current that recently, and callers of one moment share one read."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from tests.helpers.clock import FakeClock
from tests.helpers.proxy import Proxy
from tests.service.conftest import services
from tests.service.test_service import act, cred, play_out, view_of
from truco_server.app.wiring import Services
from truco_server.core import requests as T
from truco_server.core.caller import Operator

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


def _counted(svc: Services) -> list[str]:
    """The store's loads from now on, by match id: the service's log becomes a stand-in for
    the store's that counts them."""
    loads: list[str] = []
    log = svc.matches.log

    async def counted(match_id: str) -> Any:
        loads.append(match_id)
        return await log.load(match_id)

    svc.matches.log = Proxy(log, load=counted)  # type: ignore[assignment]
    return loads


@pytest.fixture(params=["memory", "redis"])
async def timed(request: pytest.FixtureRequest) -> Any:
    url = None if request.param == "memory" else request.getfixturevalue("clean_redis_url")
    clock = FakeClock()
    svc = services(url, clock=clock)
    try:
        yield svc, clock
    finally:
        await svc.relay.done()
        svc.streams.close()
        await svc.store.close()


async def _played(svc: Services) -> str:
    return (await _created(svc)).match.match_id


async def _created(svc: Services) -> T.CreateMatchResponse:
    created = await svc.steps.create_match(Operator("acme"), T.CreateMatchRequest(preset="paulista-2p"))
    await play_out(svc, created.match.match_id, created.seat_tokens, random.Random(1), limit=5)
    return created


async def test_a_fresh_load_of_the_version_this_worker_committed_reuses_its_copy(timed: Any) -> None:
    svc, _ = timed
    mid = await _played(svc)
    mine = svc.matches.cache.get(mid)
    assert mine is not None and mine.version >= 5
    loads = _counted(svc)
    again = await svc.matches.load(mid, fresh=True)
    assert loads == [mid]  # the store was read
    assert again is mine  # and its bytes were the ones this worker committed: nothing decoded


async def test_a_fresh_load_decodes_a_version_another_worker_committed(clean_redis_url: str) -> None:
    a, b = services(clean_redis_url), services(clean_redis_url)
    try:
        created = await _created(a)
        mid, tokens = created.match.match_id, created.seat_tokens
        mine = a.matches.cache.get(mid)
        assert mine is not None
        seat = (await view_of(b, mid, tokens[0])).observation.awaited[0]
        legal = (await view_of(b, mid, tokens[seat])).observation.legal_actions
        await act(b, mid, tokens[seat], legal[0])  # another worker's commit
        theirs = await a.matches.load(mid, fresh=True)
        assert theirs is not mine and theirs.version > mine.version
        assert theirs.meta is mine.meta  # the metadata's bytes were the same: not decoded again
        assert (await a.matches.load(mid, fresh=True)) is theirs
    finally:
        for svc in (a, b):
            await svc.relay.done()
            svc.streams.close()
            await svc.store.close()


async def test_fresh_within_takes_a_copy_the_store_showed_current_that_recently(timed: Any) -> None:
    svc, clock = timed
    mid = await _played(svc)  # its last commit showed the store at this version
    loads = _counted(svc)
    assert (await svc.matches.load(mid, fresh_within=2.0)) is svc.matches.cache.get(mid)
    assert loads == []
    clock.now += 3.0
    await svc.matches.load(mid, fresh_within=2.0)
    assert loads == [mid]
    await svc.matches.load(mid, fresh_within=2.0)  # that load showed it current
    assert loads == [mid]


async def test_callers_of_one_moment_share_one_read(timed: Any) -> None:
    svc, clock = timed
    mid = await _played(svc)
    loads = _counted(svc)
    clock.now += 10.0
    got = await asyncio.gather(*[svc.matches.load(mid, fresh_within=1.0) for _ in range(5)])
    assert loads == [mid] and all(m is got[0] for m in got)
    got = await asyncio.gather(*[svc.matches.load(mid, fresh=True) for _ in range(3)])
    assert loads == [mid] * 4  # fresh: each its own read, started after its call


async def test_the_heartbeats_of_a_match_s_streams_share_its_reads(timed: Any) -> None:
    """A heartbeat reads the store (to catch up on a lost notification) unless a read or a
    commit of this worker showed the match current within half a heartbeat interval: the
    seats' streams of a match, whose heartbeats fall due together, read it once."""
    svc, clock = timed
    created = await _created(svc)
    mid, tokens = created.match.match_id, created.seat_tokens
    beats = [0, 0]
    started = asyncio.Event()

    async def follow(seat: int) -> None:
        async for upd in svc.streams.stream(cred(tokens[seat]), T.StreamRequest(mid)):
            beats[seat] += upd.heartbeat
            started.set()

    async def beats_each(n: int) -> None:
        target = [b + n for b in beats]
        async with asyncio.timeout(20):
            while any(b < t for b, t in zip(beats, target, strict=True)):
                await asyncio.sleep(0.01)

    tasks = [asyncio.create_task(follow(seat)) for seat in (0, 1)]
    try:
        await started.wait()
        await beats_each(1)
        loads = _counted(svc)
        await beats_each(2)  # the service's clock stands still: the copy stays current
        assert loads == []
        clock.now += 10.0
        await beats_each(2)
        assert loads == [mid]  # one read for both streams' heartbeats
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
