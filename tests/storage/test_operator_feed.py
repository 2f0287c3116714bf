"""The operator feed's contract (truco_server.ports.operators): outboxes, operator streams,
webhooks and their delivery log; every test runs on every adapter -- memory, one Redis
server, a Redis Cluster and a Sentinel group."""

from __future__ import annotations

import asyncio

import pytest

from tests.storage.conftest import StoreFactory
from tests.storage.support import entry, new_match, step
from truco_server.ports import Store
from truco_server.ports.documents import DocRef
from truco_server.ports.errors import MatchExists, ParentMissing, VersionConflict
from truco_server.ports.matches import FeedAppend, NewMatch
from truco_server.ports.queues import RELAY, RelayWake
from truco_server.ports.settings import StoreSettings
from truco_server.stores.redis import RedisStore

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def test_commits_fill_the_outbox_and_a_relay_takes_it_under_a_lock(store: Store) -> None:
    v = await new_match(store, n_events=1, outbox=[b"created"])
    v = (await store.matches.commit(step("m1", v, outbox=[b"a", b"b"]))).version
    assert await store.operators.outbox_take(["m1"], "tok", 10_000, 10) == [[b"created", b"a", b"b"]]
    assert await store.operators.outbox_take(["m1"], "other", 10_000, 10) == [None]  # locked
    await store.matches.commit(step("m1", v, outbox=[b"c"]))  # written while the relay works
    assert await store.operators.outbox_done([("m1", 3)], "other") == [False]
    assert await store.operators.outbox_done([("m1", 3)], "tok") == [True]
    assert await store.operators.outbox_take(["m1"], "tok2", 10_000, 1) == [[b"c"]]
    assert await store.operators.outbox_done([("m1", 1)], "tok2") == [True]
    assert await store.operators.outbox_take(["m1"], "tok3", 10_000, 10) == [[]]


async def _stream(store: Store, owner: str) -> list[bytes]:
    return [raw for _, raw in await store.operators.read(owner, "", 100)]


async def test_a_create_or_commit_appends_its_feed_to_the_owners_stream_with_it(store: Store) -> None:
    """Where the store can (not a Redis Cluster), a create and a commit append their operator
    events to the owner's stream in their own atomic step, after what it holds: a refused
    create or commit (the id taken, a stale version, a missing league, a duplicate request)
    appends nothing. A Redis Cluster, where the owner's stream is in another slot, refuses a
    feed before it writes anything."""
    if not store.matches.appends_feed:
        v = await new_match(store)
        with pytest.raises(ValueError, match="Cluster"):
            await store.matches.commit(step("m1", v, feed=FeedAppend("acme", [b"a"])))
        assert (await store.matches.load("m1")).version == v  # type: ignore[union-attr]
        return
    league = DocRef("league", "l1")
    with pytest.raises(ParentMissing):
        await store.matches.create(
            NewMatch(entry("m1"), b"meta", b"s", [b"e1"], feed=FeedAppend("acme", [b"x"]), requires=[league])
        )
    assert await _stream(store, "acme") == []
    assert await store.documents.put("league", "l1", 0, b"league")
    created = NewMatch(
        entry("m1"), b"meta", b"s", [b"e1"], feed=FeedAppend("acme", [b"created"]), requires=[league]
    )
    v = await store.matches.create(created)
    with pytest.raises(MatchExists):
        await store.matches.create(created)
    assert await _stream(store, "acme") == [b"created"]
    v = (await store.matches.commit(step("m1", v, feed=FeedAppend("acme", [b"a", b"b"])))).version
    with pytest.raises(VersionConflict):
        await store.matches.commit(step("m1", v - 2, request_id="new", feed=FeedAppend("acme", [b"stale"])))
    dup = await store.matches.commit(step("m1", v - 1, feed=FeedAppend("acme", [b"again"])))
    assert dup.duplicate  # the same request id: its first answer, nothing written
    await store.matches.commit(step("m1", v, feed=FeedAppend("acme", [b"c"]), outbox=[b"o"]))
    assert await _stream(store, "acme") == [b"created", b"a", b"b", b"c"]
    assert await _stream(store, "other") == []
    assert await store.operators.outbox_take(["m1"], "tok", 10_000, 10) == [[b"o"]]


async def test_outboxes_of_several_matches_are_taken_trimmed_and_released_together(
    store: Store, backend: str
) -> None:
    """The relay's batch: one take of several outboxes (each answering as its single take
    would: items, nothing, or locked), one trim, one release of their safety nets; on one
    server each of the three is one round trip whatever the number of matches."""
    for m in ("m1", "m2", "m3"):
        await new_match(
            store, m, n_events=1, outbox=[f"{m} created".encode()], relay=RelayWake(5_000, m.encode())
        )
    assert await store.operators.outbox_take(["m2"], "another relay", 10_000, 10) != [None]
    assert await store.operators.outbox_done([("m3", 0)], "nobody") == [False]  # not locked: no effect
    assert await store.operators.outbox_take(["m3"], "first", 10_000, 10) == [[b"m3 created"]]
    assert await store.operators.outbox_done([("m3", 1)], "first") == [True]  # m3's outbox is empty now
    assert await store.queues.release(RELAY, [("nope", b"")]) == [False]  # Redis has each script from here on
    stats = store.stats if isinstance(store, RedisStore) else None
    trips = stats.round_trips if stats is not None else 0
    taken = await store.operators.outbox_take(["m1", "m2", "m3", "nope"], "tok", 10_000, 10)
    assert taken == [[b"m1 created"], None, [], []]
    assert await store.operators.outbox_done([("m1", 1), ("m2", 1)], "tok") == [True, False]  # m2 not ours
    released = await store.queues.release(RELAY, [("m1", b"m1"), ("m2", b"stale"), ("m3", b"m3")])
    assert released == [True, False, True]
    if stats is not None and backend != "cluster":
        assert stats.round_trips - trips == 3
    assert await store.operators.outbox_take(["m1"], "check", 10_000, 10) == [[]]
    assert await store.operators.outbox_take(["m2"], "check", 10_000, 10) == [None]  # still the other relay's
    assert await store.operators.outbox_take([], "tok", 10_000, 10) == []
    assert await store.operators.outbox_done([], "tok") == []


async def test_operator_stream_reads_from_a_cursor_and_waits(two_workers: tuple[Store, Store]) -> None:
    store, other = two_workers  # another worker's client
    assert await store.operators.last("op") == "0-0"
    cursors = await store.operators.append("op", [b"one", b"two"])
    assert await store.operators.read("op", "", 10) == [(cursors[0], b"one"), (cursors[1], b"two")]
    assert await store.operators.read("op", cursors[0], 10) == [(cursors[1], b"two")]
    assert await store.operators.read("op", "", 1) == [(cursors[0], b"one")]
    assert await store.operators.last("op") == cursors[1]
    assert await store.operators.read("other-op", "", 10) == []
    waiting = asyncio.ensure_future(other.operators.read("op", cursors[1], 10, block=5.0))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    (third,) = await store.operators.append("op", [b"three"])
    assert await asyncio.wait_for(waiting, 5) == [(third, b"three")]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await store.operators.read("op", third, 10, block=0.2) == []
    assert loop.time() - t0 >= 0.15
    assert await store.operators.append("op", []) == []


async def test_an_operator_stream_keeps_its_newest_events(make_store: StoreFactory) -> None:
    store = await make_store(StoreSettings(operator_events_max_len=3))
    cursors = await store.operators.append("op", [b"e%d" % i for i in range(500)])
    got = await store.operators.read("op", "", 1000)
    # Redis trims approximately (whole stream nodes): the newest are always kept
    assert got[-3:] == [(cursors[i], b"e%d" % i) for i in (497, 498, 499)]
    assert len(got) < 500


async def test_webhooks_are_per_operator_and_limited(store: Store) -> None:
    assert await store.operators.webhook_put("op", "w1", b"one", limit=2)
    assert await store.operators.webhook_put("op", "w2", b"two", limit=2)
    assert not await store.operators.webhook_put("op", "w3", b"three", limit=2)
    assert await store.operators.webhook_put("op", "w1", b"one again", limit=2)  # a replacement is no new one
    assert await store.operators.webhook_list("op") == {"w1": b"one again", "w2": b"two"}
    assert await store.operators.webhook_list("another") == {}
    assert await store.operators.webhook_get("op", "w2") == b"two"
    assert await store.operators.webhook_delete("op", "w2")
    assert not await store.operators.webhook_delete("op", "w2")
    assert await store.operators.webhook_get("op", "w2") is None


async def test_delivery_log_keeps_the_newest_per_webhook(store: Store) -> None:
    assert await store.operators.webhook_put("op", "w1", b"hook", limit=5)
    for i in range(5):
        assert await store.operators.delivery_log_put(
            "op", "w1", f"d{i}", f"pending {i}".encode(), 1000 + i, keep=3
        )
    # a delivery logged again keeps its place
    assert await store.operators.delivery_log_put("op", "w1", "d3", b"delivered 3", 9999, keep=3)
    assert await store.operators.delivery_log("op", "w1", 10) == [b"pending 4", b"delivered 3", b"pending 2"]
    assert await store.operators.delivery_log("op", "w1", 1) == [b"pending 4"]
    await store.operators.webhook_delete("op", "w1")
    assert await store.operators.delivery_log("op", "w1", 10) == []


async def test_a_delivery_of_a_webhook_that_is_gone_is_not_recorded(store: Store) -> None:
    """A delivery answered after its webhook was deleted (or lost with a Redis restarted
    without persistence) records nothing: no delivery log comes back for it."""
    assert not await store.operators.delivery_log_put("op", "never", "d1", b"pending", 1000, keep=3)
    assert await store.operators.delivery_log("op", "never", 10) == []
    assert await store.operators.webhook_put("op", "w1", b"hook", limit=5)
    assert await store.operators.delivery_log_put("op", "w1", "d1", b"pending", 1000, keep=3)
    assert await store.operators.webhook_delete("op", "w1")
    assert not await store.operators.delivery_log_put("op", "w1", "d1", b"delivered", 1000, keep=3)
    assert await store.operators.delivery_log("op", "w1", 10) == []
