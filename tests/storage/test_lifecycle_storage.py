"""The store's lifecycle contract on every backend (memory, Redis, Cluster, Sentinel): match
records, presence, the sharded queues, match outboxes, operator streams, webhooks."""

from __future__ import annotations

import asyncio

import pytest

from tests.storage.test_store_contract import StoreFactory, entry
from truco_server.ports.store import CLOCK, RELAY, WEBHOOK, RelayWake
from truco_server.stores import MatchStore

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def _match(store: MatchStore, match_id: str = "m1", **kw: object) -> int:
    return await store.create(match_id, b"meta", b"s0", [b"e1"], entry(match_id), **kw)  # type: ignore[arg-type]


async def _commit(store: MatchStore, match_id: str, version: int, **kw: object) -> int:
    res = await store.commit(
        match_id,
        expected_version=version,
        state=b"s",
        events=[b"e"],
        request_id=None,
        reply=b"",
        **kw,  # type: ignore[arg-type]
    )
    return res.version


async def test_record_steps_are_kept_in_order_beyond_the_event_log(make_store: StoreFactory) -> None:
    from truco_server.stores import StoreSettings

    store = await make_store(StoreSettings(max_events=2))
    v = await _match(store)
    for i in range(5):
        v = await _commit(store, "m1", v, record=f"step-{i}".encode())
    assert await store.read_record("m1") == [f"step-{i}".encode() for i in range(5)]
    assert await store.read_record("nope") is None


async def test_presence_remembers_each_seat(store: MatchStore) -> None:
    await _match(store)
    await store.touch("m1", 0, 1000)
    await store.touch("m1", 1, 2000)
    await store.touch("m1", 0, 3000)
    assert await store.presence("m1") == {0: 3000, 1: 2000}


async def _claim_all(
    store: MatchStore, queue: str, now: int, lease: int = 5000
) -> list[tuple[str, int, bytes]]:
    out = []
    for shard in await store.queue_due(queue, now):
        out += [(c.item, c.due, c.data) for c in await store.queue_claim(queue, shard, now, lease, 100)]
    return sorted(out)


async def test_a_queued_item_is_only_ever_made_earlier(store: MatchStore) -> None:
    await store.queue_add(CLOCK, "a", 5000)
    await store.queue_add(CLOCK, "a", 9000)  # later: ignored
    await store.queue_add(CLOCK, "b", 7000)
    assert await store.queue_due(CLOCK, 4999) == []
    assert await _claim_all(store, CLOCK, 6000) == [("a", 5000, b"")]
    await store.queue_add(CLOCK, "b", 6500)  # earlier: taken
    assert await _claim_all(store, CLOCK, 6600) == [("b", 6500, b"")]


async def test_a_claim_holds_until_its_lease_and_a_dead_reader_is_replaced(store: MatchStore) -> None:
    await store.queue_add(CLOCK, "m", 1000)
    first = await _claim_all(store, CLOCK, 2000, lease=3000)
    assert first == [("m", 1000, b"")]
    assert await _claim_all(store, CLOCK, 4999) == []  # leased until 5000
    again = await _claim_all(store, CLOCK, 5000)  # the first reader never finished
    assert [i for i, _, _ in again] == ["m"]


async def test_finishing_a_claim_sets_the_next_due_time_unless_lowered_meanwhile(store: MatchStore) -> None:
    await store.queue_add(CLOCK, "m", 1000)
    shard = (await store.queue_due(CLOCK, 2000))[0]
    (claim,) = await store.queue_claim(CLOCK, shard, 2000, 5000, 10)
    await store.queue_add(CLOCK, "m", 3000)  # a commit made it due earlier during the claim
    assert not await store.queue_finish(CLOCK, "m", claim.lease, 9000)
    assert await _claim_all(store, CLOCK, 3000) == [("m", 3000, b"")]
    shard = (await store.queue_due(CLOCK, 10**12))[0]
    (claim,) = await store.queue_claim(CLOCK, shard, 10**12, 5000, 10)
    assert await store.queue_finish(CLOCK, "m", claim.lease, None)
    assert await store.queue_due(CLOCK, 10**13) == []


async def test_an_item_with_data_is_queued_once_and_finished_only_by_its_claimer(store: MatchStore) -> None:
    assert await store.queue_add(WEBHOOK, "w1 e1", 1000, b"payload", only_new=True)
    assert not await store.queue_add(WEBHOOK, "w1 e1", 500, b"other", only_new=True)  # a repeated relay
    shard = (await store.queue_due(WEBHOOK, 1000))[0]
    (c1,) = await store.queue_claim(WEBHOOK, shard, 1000, 100, 10)
    assert c1.data == b"payload"
    (c2,) = await store.queue_claim(WEBHOOK, shard, 1100, 100, 10)  # c1's lease ran out
    assert not await store.queue_finish(WEBHOOK, "w1 e1", c1.lease, None, owned=True)  # no longer c1's
    assert await store.queue_finish(WEBHOOK, "w1 e1", c2.lease, 5000, b"attempt 2", owned=True)
    (c3,) = await store.queue_claim(WEBHOOK, shard, 5000, 100, 10)
    assert c3.data == b"attempt 2"
    assert await store.queue_finish(WEBHOOK, "w1 e1", c3.lease, None, owned=True)
    assert await store.queue_due(WEBHOOK, 10**12) == []
    assert await store.queue_add(WEBHOOK, "w1 e1", 1, b"x", only_new=True)  # gone with its data


async def test_commit_and_create_register_the_wakeup_and_fill_the_outbox(store: MatchStore) -> None:
    v = await _match(store, wake=10_000, outbox=[b"created"])
    v = await _commit(store, "m1", v, wake=8_000, outbox=[b"a", b"b"])
    assert await _claim_all(store, CLOCK, 9_000) == [("m1", 8_000, b"")]
    items = await store.outbox_take("m1", "tok", 10_000, 10)
    assert items == [b"created", b"a", b"b"]
    assert await store.outbox_take("m1", "other", 10_000, 10) is None  # locked
    await _commit(store, "m1", v, outbox=[b"c"])  # written while the relay works
    assert not await store.outbox_done("m1", "other", 3)
    assert await store.outbox_done("m1", "tok", 3)
    assert await store.outbox_take("m1", "tok2", 10_000, 10) == [b"c"]
    assert await store.outbox_done("m1", "tok2", 1)
    assert await store.outbox_take("m1", "tok3", 10_000, 10) == []


async def test_outboxes_of_several_matches_are_taken_trimmed_and_released_together(
    store: MatchStore, backend: str
) -> None:
    """The relay's batch: one take of several outboxes (each answering as its single take
    would: items, nothing, or locked), one trim, one release of their safety nets; on one
    server each of the three is one round trip whatever the number of matches."""
    for m in ("m1", "m2", "m3"):
        await _match(store, m, outbox=[f"{m} created".encode()], relay=RelayWake(5_000, m.encode()))
    assert await store.outbox_take("m2", "another relay", 10_000, 10) is not None
    await store.outbox_done("m3", "nobody", 0)  # not locked: no effect
    assert await store.outbox_take("m3", "first", 10_000, 10) == [b"m3 created"]
    assert await store.outbox_done("m3", "first", 1)  # m3's outbox is empty now
    assert not await store.queue_release(RELAY, "nope", b"")  # Redis has each script from here on
    stats = getattr(store, "stats", None)
    trips = stats.round_trips if stats is not None else 0
    taken = await store.outbox_take_many(["m1", "m2", "m3", "nope"], "tok", 10_000, 10)
    assert taken == [[b"m1 created"], None, [], []]
    assert await store.outbox_done_many([("m1", 1), ("m2", 1)], "tok") == [True, False]  # m2 not ours
    released = await store.queue_release_many(RELAY, [("m1", b"m1"), ("m2", b"stale"), ("m3", b"m3")])
    assert released == [True, False, True]
    if stats is not None and backend != "cluster":
        assert stats.round_trips - trips == 3
    assert await store.outbox_take("m1", "check", 10_000, 10) == []
    assert await store.outbox_take("m2", "check", 10_000, 10) is None  # still the other relay's
    assert [item for item, _, _ in await _claim_all(store, RELAY, 10**12)] == ["m2"]
    assert await store.outbox_take_many([], "tok", 10_000, 10) == []
    assert await store.outbox_done_many([], "tok") == []
    assert await store.queue_release_many(RELAY, []) == []


async def test_a_batch_of_scripts_loads_its_script_once_where_it_was_flushed(
    store: MatchStore, backend: str
) -> None:
    """Batched outbox takes on a server that lost its scripts (a restart): every call is
    refused with NOSCRIPT in one round trip, then SCRIPT LOAD and all of them again in one."""
    if backend not in ("redis", "sentinel"):
        pytest.skip("one round trip on one server only: a cluster runs each call as a single script")
    for m in ("m1", "m2", "m3"):
        await _match(store, m, outbox=[m.encode()])
    await store.client.script_flush()  # type: ignore[attr-defined]
    before = store.stats.round_trips  # type: ignore[attr-defined]
    assert await store.outbox_take_many(["m1", "m2", "m3"], "tok", 10_000, 10) == [[b"m1"], [b"m2"], [b"m3"]]
    assert store.stats.round_trips - before == 2  # type: ignore[attr-defined]


async def test_a_relay_safety_net_is_released_only_by_the_commit_that_queued_it_last(
    store: MatchStore,
) -> None:
    """A commit with an outbox queues the match in the relay queue with its own token; the
    relay after it releases it with that token, unless a later commit has queued it since
    (then only the later commit's release, or a reader, ends it)."""
    v = await _match(store, outbox=[b"created"], relay=RelayWake(5_000, b"t0"))
    assert await _claim_all(store, RELAY, 4_999) == []
    v = await _commit(store, "m1", v, outbox=[b"a"], relay=RelayWake(6_000, b"t1"))
    assert not await store.queue_release(RELAY, "m1", b"t0")  # the create's relay, too slow
    assert await _claim_all(store, RELAY, 5_000) == [("m1", 5_000, b"t1")]  # due: the lower time
    v = await _commit(store, "m1", v, outbox=[b"b"], relay=RelayWake(7_000, b"t2"))  # during the claim
    assert not await store.queue_release(RELAY, "m1", b"t1")
    assert await store.queue_release(RELAY, "m1", b"t2")
    assert await store.queue_due(RELAY, 10**13) == []
    assert not await store.queue_release(RELAY, "m1", b"t2")  # once
    # a commit without operator events leaves the relay queue alone; with a wake, the clock
    await _commit(store, "m1", v, wake=9_000)
    assert await store.queue_due(RELAY, 10**13) == []
    assert await _claim_all(store, CLOCK, 9_000) == [("m1", 9_000, b"")]


async def test_operator_stream_reads_from_a_cursor_and_waits(make_store: StoreFactory, backend: str) -> None:
    store = await make_store()
    other = store if backend == "memory" else await make_store()  # another worker's client
    assert await store.operator_last("op") == "0-0"
    cursors = await store.operator_append("op", [b"one", b"two"])
    assert await store.operator_read("op", "", 10) == [(cursors[0], b"one"), (cursors[1], b"two")]
    assert await store.operator_read("op", cursors[0], 10) == [(cursors[1], b"two")]
    assert await store.operator_last("op") == cursors[1]
    assert await store.operator_read("other-op", "", 10) == []
    waiting = asyncio.ensure_future(other.operator_read("op", cursors[1], 10, block=5.0))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    (third,) = await store.operator_append("op", [b"three"])
    assert await asyncio.wait_for(waiting, 5) == [(third, b"three")]
    assert await store.operator_read("op", third, 10, block=0.2) == []


async def test_webhooks_are_per_operator_and_limited(store: MatchStore) -> None:
    assert await store.webhook_put("op", "w1", b"one", limit=2)
    assert await store.webhook_put("op", "w2", b"two", limit=2)
    assert not await store.webhook_put("op", "w3", b"three", limit=2)
    assert await store.webhook_put("op", "w1", b"one again", limit=2)  # a replacement is no new one
    assert await store.webhook_list("op") == {"w1": b"one again", "w2": b"two"}
    assert await store.webhook_list("another") == {}
    assert await store.webhook_get("op", "w2") == b"two"
    assert await store.webhook_delete("op", "w2")
    assert not await store.webhook_delete("op", "w2")
    assert await store.webhook_get("op", "w2") is None


async def test_delivery_log_keeps_the_newest_per_webhook(store: MatchStore) -> None:
    for i in range(5):
        await store.delivery_log_put("op", "w1", f"d{i}", f"pending {i}".encode(), 1000 + i, keep=3)
    await store.delivery_log_put("op", "w1", "d3", b"delivered 3", 9999, keep=3)  # an update keeps its place
    assert await store.delivery_log("op", "w1", 10) == [b"pending 4", b"delivered 3", b"pending 2"]
    assert await store.delivery_log("op", "w1", 1) == [b"pending 4"]
    assert await store.webhook_put("op", "w1", b"hook", limit=5)
    await store.webhook_delete("op", "w1")
    assert await store.delivery_log("op", "w1", 10) == []
