"""The quota counters' contract (truco_server.ports.quotas): every test runs on every adapter
-- memory, one Redis server, a Redis Cluster and a Sentinel group -- and, on Redis, through
two stores on the same data, as two workers would."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.helpers.clock import FakeClock
from tests.storage.support import new_match, step
from truco_server.ports import Store
from truco_server.ports.errors import RateExceeded, VersionConflict
from truco_server.ports.quotas import RateCharge

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def later(backend: str, clock: FakeClock, seconds: float) -> None:
    """Let ``seconds`` pass: the memory store's clock is the test's, Redis counts real time."""
    if backend == "memory":
        clock.advance(seconds)
    else:
        await asyncio.sleep(seconds)  # the server's own clock must move: this is the behaviour


async def test_a_rate_is_shared_by_every_worker(two_workers: tuple[Store, Store]) -> None:
    a, b = two_workers
    # 3 saved up, one more every 1000 s: three takes anywhere, then none
    assert [await s.quotas.take("r", 0.001, 3) for s in (a, b, a)] == [0.0, 0.0, 0.0]
    wait = await b.quotas.take("r", 0.001, 3)
    assert 990 < wait <= 1000
    assert 990 < await a.quotas.take("r", 0.001, 3) <= 1000  # a refusal spends nothing
    assert await a.quotas.take("other", 0.001, 3) == 0.0  # keys apart


async def test_a_cost_spends_that_much(store: Store) -> None:
    assert await store.quotas.take("bytes", 1.0, 1000, cost=600) == 0.0
    wait = await store.quotas.take("bytes", 1.0, 1000, cost=600)
    assert 190 < wait <= 200  # 200 more must come back
    assert await store.quotas.take("bytes", 1.0, 1000, cost=400) == 0.0


async def test_an_allowance_comes_back_with_time(store: Store, backend: str, clock: FakeClock) -> None:
    assert await store.quotas.take("r", 20.0, 1) == 0.0
    wait = await store.quotas.take("r", 20.0, 1)
    assert 0 < wait <= 0.051
    await later(backend, clock, wait + 0.01)
    assert await store.quotas.take("r", 20.0, 1) == 0.0


async def test_holders_are_bounded_and_shared(two_workers: tuple[Store, Store]) -> None:
    a, b = two_workers
    assert await a.quotas.hold("s", "w1:x", 2, 60_000) == 0
    assert await b.quotas.hold("s", "w2:y", 2, 60_000) == 0
    assert await a.quotas.hold("s", "w1:z", 2, 60_000) == 2  # full: how many hold it
    assert await b.quotas.hold("s", "w1:x", 2, 60_000) == 0  # a holder already there renews
    assert await a.quotas.holders("s") == ["w1:x", "w2:y"]
    await b.quotas.release("s", "w1:x")
    await b.quotas.release("s", "nobody")
    assert await a.quotas.hold("s", "w1:z", 2, 60_000) == 0
    assert await b.quotas.holders("s") == ["w1:z", "w2:y"]


async def test_a_holder_not_renewed_expires(store: Store, backend: str, clock: FakeClock) -> None:
    """The slots of a worker that died free themselves; a renewed one stays."""
    q = store.quotas
    assert await q.hold("s", "dead", 2, 300) == 0
    assert await q.hold("s", "alive", 2, 300) == 0
    assert await q.hold("s", "third", 2, 300) == 2
    deadline = time.monotonic() + 10
    while await q.holders("s") != ["alive"]:
        assert time.monotonic() < deadline, await q.holders("s")
        await q.renew("s", ["alive", "gone-already"], 300)
        await later(backend, clock, 0.1)
    assert await q.hold("s", "third", 2, 300) == 0
    assert await q.holders("s") == ["alive", "third"]


async def test_a_commit_spends_its_charge_only_when_it_writes(store: Store) -> None:
    """Where the store can (one Redis server, a Sentinel group), a commit spends its
    ``RateCharge`` in its own step, on the same rate as ``take``: a stale or duplicate commit
    spends nothing, and one over the rate writes nothing (``RateExceeded``). Elsewhere a
    charge is refused before anything is written."""
    v = await new_match(store)
    charge = RateCharge("actions_per_second:c", 0.001, 2)  # two saved up, one more every 1000 s
    if not store.matches.charges:
        with pytest.raises(ValueError):
            await store.matches.commit(step("m1", v, charge=charge))
        assert (await store.matches.load("m1")).version == v  # type: ignore[union-attr]
        return
    with pytest.raises(VersionConflict):
        await store.matches.commit(step("m1", v + 5, request_id="stale", charge=charge))
    v = (await store.matches.commit(step("m1", v, charge=charge))).version
    assert (await store.matches.commit(step("m1", v - 1, charge=charge))).duplicate
    assert await store.quotas.take(charge.key, 0.001, 2) == 0.0  # the second of two: shared
    with pytest.raises(RateExceeded) as refused:
        await store.matches.commit(step("m1", v, charge=charge))
    assert refused.value.wait > 100
    assert (await store.matches.load("m1")).version == v  # type: ignore[union-attr]
    assert await store.quotas.take(charge.key, 0.001, 2) > 100  # still spent, nothing more
