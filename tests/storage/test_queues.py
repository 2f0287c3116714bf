"""The sharded queues' contract (truco_server.ports.queues): every test runs on every adapter
-- memory, one Redis server, a Redis Cluster and a Sentinel group."""

from __future__ import annotations

import pytest

from tests.storage.support import new_match, step
from truco_server.ports import Store
from truco_server.ports.documents import DocRef
from truco_server.ports.errors import ParentMissing
from truco_server.ports.queues import CLOCK, LEAGUE, RELAY, WEBHOOK, RelayWake

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def claim_all(store: Store, queue: str, now: int, lease: int = 5000) -> list[tuple[str, int, bytes]]:
    out = []
    for shard in await store.queues.due(queue, now):
        out += [(c.item, c.due, c.data) for c in await store.queues.claim(queue, shard, now, lease, 100)]
    return sorted(out)


async def test_every_queue_has_its_shards(store: Store, backend: str) -> None:
    expected = 1 if backend == "memory" else store.matches.settings.queue_shards
    assert [store.queues.shards(q) for q in (CLOCK, RELAY, WEBHOOK)] == [expected] * 3
    await store.queues.add(CLOCK, "m", 1)
    assert all(0 <= k < expected for k in await store.queues.due(CLOCK, 10))


async def test_a_queued_item_is_only_ever_made_earlier(store: Store) -> None:
    await store.queues.add(CLOCK, "a", 5000)
    await store.queues.add(CLOCK, "a", 9000)  # later: ignored
    await store.queues.add(CLOCK, "b", 7000)
    assert await store.queues.due(CLOCK, 4999) == []
    assert await claim_all(store, CLOCK, 6000) == [("a", 5000, b"")]
    await store.queues.add(CLOCK, "b", 6500)  # earlier: taken
    assert await claim_all(store, CLOCK, 6600) == [("b", 6500, b"")]


async def test_a_claim_holds_until_its_lease_and_a_dead_reader_is_replaced(store: Store) -> None:
    await store.queues.add(CLOCK, "m", 1000)
    first = await claim_all(store, CLOCK, 2000, lease=3000)
    assert first == [("m", 1000, b"")]
    assert await claim_all(store, CLOCK, 4999) == []  # leased until 5000
    again = await claim_all(store, CLOCK, 5000)  # the first reader never finished
    assert [i for i, _, _ in again] == ["m"]


async def test_finishing_a_claim_sets_the_next_due_time_unless_lowered_meanwhile(store: Store) -> None:
    await store.queues.add(CLOCK, "m", 1000)
    shard = (await store.queues.due(CLOCK, 2000))[0]
    (claim,) = await store.queues.claim(CLOCK, shard, 2000, 5000, 10)
    assert claim.lease == 7000 and claim.due == 1000
    await store.queues.add(CLOCK, "m", 3000)  # a commit made it due earlier during the claim
    assert not await store.queues.finish(CLOCK, "m", claim.lease, 9000)
    assert await claim_all(store, CLOCK, 3000) == [("m", 3000, b"")]
    shard = (await store.queues.due(CLOCK, 10**12))[0]
    (claim,) = await store.queues.claim(CLOCK, shard, 10**12, 5000, 10)
    assert await store.queues.finish(CLOCK, "m", claim.lease, None)
    assert await store.queues.due(CLOCK, 10**13) == []


async def test_an_unfinished_claim_whose_item_is_gone_is_queued_again_unless_owned(store: Store) -> None:
    assert not await store.queues.finish(CLOCK, "gone", 1234, 5000)  # not held: queued again
    assert await claim_all(store, CLOCK, 5000) == [("gone", 5000, b"")]
    assert not await store.queues.finish(WEBHOOK, "gone too", 1234, 5000, owned=True)
    assert await store.queues.due(WEBHOOK, 10**12) == []


async def test_an_item_with_data_is_queued_once_and_finished_only_by_its_claimer(store: Store) -> None:
    assert await store.queues.add(WEBHOOK, "w1 e1", 1000, b"payload", only_new=True)
    assert not await store.queues.add(WEBHOOK, "w1 e1", 500, b"other", only_new=True)  # a repeated relay
    shard = (await store.queues.due(WEBHOOK, 1000))[0]
    (c1,) = await store.queues.claim(WEBHOOK, shard, 1000, 100, 10)
    assert c1.data == b"payload"
    (c2,) = await store.queues.claim(WEBHOOK, shard, 1100, 100, 10)  # c1's lease ran out
    assert not await store.queues.finish(WEBHOOK, "w1 e1", c1.lease, None, owned=True)  # no longer c1's
    assert await store.queues.finish(WEBHOOK, "w1 e1", c2.lease, 5000, b"attempt 2", owned=True)
    (c3,) = await store.queues.claim(WEBHOOK, shard, 5000, 100, 10)
    assert c3.data == b"attempt 2"
    assert await store.queues.finish(WEBHOOK, "w1 e1", c3.lease, None, owned=True)
    assert await store.queues.due(WEBHOOK, 10**12) == []
    assert await store.queues.add(WEBHOOK, "w1 e1", 1, b"x", only_new=True)  # gone with its data


async def test_release_drops_only_items_whose_data_is_unchanged(store: Store) -> None:
    await store.queues.add(RELAY, "a", 1000, b"ta")
    await store.queues.add(RELAY, "b", 1000, b"tb")
    await store.queues.add(RELAY, "b", 2000, b"tb2")  # queued again since: new data
    assert await store.queues.release(RELAY, [("a", b"ta"), ("b", b"tb"), ("c", b"")]) == [True, False, False]
    assert await claim_all(store, RELAY, 10**12) == [("b", 1000, b"tb2")]
    assert await store.queues.release(RELAY, []) == []


async def test_a_relay_safety_net_is_released_only_by_the_commit_that_queued_it_last(store: Store) -> None:
    """A commit with an outbox queues the match in the relay queue with its own token; the
    relay after it releases it with that token, unless a later commit has queued it since
    (then only the later commit's release, or a reader, ends it)."""
    v = await new_match(store, n_events=1, outbox=[b"created"], relay=RelayWake(5_000, b"t0"))
    assert await claim_all(store, RELAY, 4_999) == []
    v = (await store.matches.commit(step("m1", v, outbox=[b"a"], relay=RelayWake(6_000, b"t1")))).version
    assert await store.queues.release(RELAY, [("m1", b"t0")]) == [False]  # the create's relay, too slow
    assert await claim_all(store, RELAY, 5_000) == [("m1", 5_000, b"t1")]  # due: the lower time
    v = (await store.matches.commit(step("m1", v, outbox=[b"b"], relay=RelayWake(7_000, b"t2")))).version
    assert await store.queues.release(RELAY, [("m1", b"t1")]) == [False]  # during the claim
    assert await store.queues.release(RELAY, [("m1", b"t2")]) == [True]
    assert await store.queues.due(RELAY, 10**13) == []
    assert await store.queues.release(RELAY, [("m1", b"t2")]) == [False]  # once
    # a commit without operator events leaves the relay queue alone; with a wake, the clock
    await store.matches.commit(step("m1", v, wake=9_000))
    assert await store.queues.due(RELAY, 10**13) == []
    assert await claim_all(store, CLOCK, 9_000) == [("m1", 9_000, b"")]


async def test_commit_and_create_register_the_wakeup_first(store: Store) -> None:
    v = await new_match(store, n_events=1, wake=10_000)
    assert await claim_all(store, CLOCK, 9_999) == []
    await store.matches.commit(step("m1", v, wake=8_000))
    assert await claim_all(store, CLOCK, 9_000) == [("m1", 8_000, b"")]


async def test_work_that_requires_a_missing_document_is_not_queued(store: Store) -> None:
    """A league's wakeup requires its league: with the league gone nothing is queued."""
    league = DocRef("league", "l1")
    with pytest.raises(ParentMissing) as refused:
        await store.queues.add(LEAGUE, "l1", 1000, requires=[league])
    assert refused.value.ref == league
    assert await store.queues.due(LEAGUE, 10**13) == []
    assert await store.documents.put("league", "l1", 0, b"league")
    assert await store.queues.add(LEAGUE, "l1", 1000, requires=[league])
    assert await claim_all(store, LEAGUE, 2000) == [("l1", 1000, b"")]
