"""One contract, two stores: every test runs on the memory store and on a real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
import redis.asyncio as aioredis

from tests.helpers.clock import FakeClock
from truco_server.stores import (
    CommitResult,
    EventSubscription,
    InvalidPageToken,
    LogTrimmed,
    MatchExists,
    MatchIndexEntry,
    MatchNotFound,
    MatchStore,
    RedisMatchStore,
    StoreSettings,
    VersionConflict,
)

StoreFactory = Callable[..., Awaitable[MatchStore]]
"""The ``make_store`` fixture (tests/storage/conftest.py)."""

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

OWNER = "tenant-a"


def entry(match_id: str, created_at: float = 1_700_000_000.0, **kw: object) -> MatchIndexEntry:
    fields: dict[str, object] = {"owner": OWNER, "status": "waiting", "summary": b"sum"}
    fields.update(kw)
    return MatchIndexEntry(match_id=match_id, created_at=created_at, **fields)  # type: ignore[arg-type]


async def new_match(store: MatchStore, match_id: str = "m1", n_events: int = 2, **kw: object) -> int:
    events = [f"init-{i + 1}".encode() for i in range(n_events)]
    return await store.create(match_id, b"meta", b"state-0", events, entry(match_id, **kw))


async def play(store: MatchStore, match_id: str, start: int, n: int) -> int:
    """Commit ``n`` single-event actions starting at version ``start``."""
    version = start
    for _ in range(n):
        res = await store.commit(
            match_id,
            expected_version=version,
            state=f"state-{version + 1}".encode(),
            events=[f"ev-{version + 1}".encode()],
            request_id=f"req-{version + 1}",
            reply=f"reply-{version + 1}".encode(),
        )
        version = res.version
    return version


# --------------------------------------------------------------------------- create / load


async def test_create_and_load(store: MatchStore) -> None:
    assert await new_match(store, n_events=3) == 3
    snap = await store.load("m1")
    assert snap is not None
    assert (snap.version, snap.state, snap.meta, snap.status) == (3, b"state-0", b"meta", "waiting")
    assert await store.read_events("m1", 0, 10) == [(1, b"init-1"), (2, b"init-2"), (3, b"init-3")]


async def test_create_without_events_is_version_zero(store: MatchStore) -> None:
    assert await new_match(store, n_events=0) == 0
    assert await store.read_events("m1", 0, 10) == []
    assert (await play(store, "m1", 0, 2)) == 2
    assert [v for v, _ in await store.read_events("m1", 0, 10)] == [1, 2]  # type: ignore[union-attr]


async def test_load_missing_returns_none(store: MatchStore) -> None:
    assert await store.load("nope") is None


async def test_create_twice_fails_and_changes_nothing(store: MatchStore) -> None:
    await new_match(store)
    with pytest.raises(MatchExists):
        await store.create("m1", b"other", b"other", [b"x"], entry("m1", created_at=5.0))
    snap = await store.load("m1")
    assert snap is not None and (snap.meta, snap.version) == (b"meta", 2)
    page, _ = await store.list_matches(OWNER, None, 10, None)
    assert [e.match_id for e in page] == ["m1"]


async def test_create_rejects_mismatched_index(store: MatchStore) -> None:
    with pytest.raises(ValueError):
        await store.create("m1", b"", b"", [], entry("m2"))


# --------------------------------------------------------------------------- commit


async def test_commit_increments_version_and_appends_events(store: MatchStore) -> None:
    await new_match(store)
    res = await store.commit(
        "m1",
        expected_version=2,
        state=b"s3",
        events=[b"a", b"b", b"c"],
        request_id="r1",
        reply=b"ok",
    )
    assert res == CommitResult(version=5, reply=b"ok", duplicate=False)
    snap = await store.load("m1")
    assert snap is not None and (snap.version, snap.state) == (5, b"s3")
    assert await store.read_events("m1", 2, 10) == [(3, b"a"), (4, b"b"), (5, b"c")]


async def test_commit_binary_payloads_roundtrip(store: MatchStore) -> None:
    await new_match(store)
    blob = bytes(range(256)) + b":\x00:"
    res = await store.commit("m1", expected_version=2, state=blob, events=[blob], request_id="r", reply=blob)
    assert res.reply == blob
    dup = await store.commit("m1", expected_version=3, state=b"", events=[], request_id="r", reply=b"")
    assert dup.duplicate and dup.reply == blob and dup.version == 3
    snap = await store.load("m1")
    assert snap is not None and snap.state == blob
    assert await store.read_events("m1", 2, 1) == [(3, blob)]


async def test_idempotent_retry_returns_first_reply_and_writes_nothing(store: MatchStore) -> None:
    await new_match(store)
    first = await store.commit(
        "m1", expected_version=2, state=b"s3", events=[b"e3"], request_id="r1", reply=b"first"
    )
    await play(store, "m1", 3, 2)  # the match moves on to version 5
    retry = await store.commit(
        "m1", expected_version=2, state=b"XX", events=[b"XX"], request_id="r1", reply=b"second"
    )
    assert retry == CommitResult(version=first.version, reply=b"first", duplicate=True)
    snap = await store.load("m1")
    assert snap is not None and (snap.version, snap.state) == (5, b"state-5")
    events = await store.read_events("m1", 0, 100)
    assert isinstance(events, list) and [v for v, _ in events] == [1, 2, 3, 4, 5]
    assert b"XX" not in [e for _, e in events]


async def test_lookup_request_returns_recorded_reply_only(store: MatchStore) -> None:
    await new_match(store)
    assert await store.lookup_request("m1", "r1") is None
    await store.commit("m1", expected_version=2, state=b"s3", events=[b"e3"], request_id="r1", reply=b"first")
    await play(store, "m1", 3, 2)
    found = await store.lookup_request("m1", "r1")
    assert found == CommitResult(version=3, reply=b"first", duplicate=True)
    assert await store.lookup_request("m1", "other") is None


async def test_request_ids_are_per_match(store: MatchStore) -> None:
    await new_match(store, "m1")
    await new_match(store, "m2")
    a = await store.commit("m1", expected_version=2, state=b"", events=[b"x"], request_id="same", reply=b"a")
    b = await store.commit("m2", expected_version=2, state=b"", events=[b"x"], request_id="same", reply=b"b")
    assert not a.duplicate and not b.duplicate and b.reply == b"b"


async def test_commit_without_request_id_is_not_deduplicated(store: MatchStore) -> None:
    await new_match(store)
    await store.commit("m1", expected_version=2, state=b"", events=[b"x"], request_id=None, reply=b"r")
    with pytest.raises(VersionConflict):
        await store.commit("m1", expected_version=2, state=b"", events=[b"x"], request_id=None, reply=b"r")


async def test_stale_expected_version_conflicts_without_change(store: MatchStore) -> None:
    await new_match(store)
    await play(store, "m1", 2, 1)
    with pytest.raises(VersionConflict) as info:
        await store.commit(
            "m1", expected_version=2, state=b"bad", events=[b"bad"], request_id="new", reply=b"r"
        )
    assert info.value.current_version == 3 and info.value.expected_version == 2
    snap = await store.load("m1")
    assert snap is not None and (snap.version, snap.state) == (3, b"state-3")
    assert await store.read_events("m1", 3, 10) == []
    # the failed request id was not recorded: it can still be used
    res = await store.commit(
        "m1", expected_version=3, state=b"s4", events=[b"e4"], request_id="new", reply=b"r4"
    )
    assert not res.duplicate and res.version == 4


async def test_commit_missing_match(store: MatchStore) -> None:
    with pytest.raises(MatchNotFound):
        await store.commit("nope", expected_version=0, state=b"", events=[], request_id=None, reply=b"")


async def test_concurrent_commits_exactly_one_wins(make_store: StoreFactory) -> None:
    stores = [await make_store() for _ in range(2)]
    main = stores[0]
    await new_match(main)
    # with Redis the second store is a second worker; with memory both names hit one store
    targets = [stores[i % 2] if isinstance(main, RedisMatchStore) else main for i in range(20)]

    async def attempt(i: int, s: MatchStore) -> CommitResult | VersionConflict:
        try:
            return await s.commit(
                "m1",
                expected_version=2,
                state=f"s-{i}".encode(),
                events=[f"e-{i}".encode()],
                request_id=f"r-{i}",
                reply=f"reply-{i}".encode(),
            )
        except VersionConflict as exc:
            return exc

    results = await asyncio.gather(*(attempt(i, s) for i, s in enumerate(targets)))
    wins = [r for r in results if isinstance(r, CommitResult)]
    assert len(wins) == 1 and wins[0].version == 3
    assert all(r.current_version == 3 for r in results if isinstance(r, VersionConflict))
    winner = wins[0].reply.decode().split("-")[1]
    snap = await main.load("m1")
    assert snap is not None and snap.state == f"s-{winner}".encode()
    assert await main.read_events("m1", 2, 10) == [(3, f"e-{winner}".encode())]


# --------------------------------------------------------------------------- event log


async def test_read_events_after_any_version(store: MatchStore) -> None:
    await new_match(store)
    await play(store, "m1", 2, 6)
    for after in range(0, 9):
        got = await store.read_events("m1", after, 100)
        assert isinstance(got, list)
        assert [v for v, _ in got] == list(range(after + 1, 9))
    got = await store.read_events("m1", 3, 2)
    assert got == [(4, b"ev-4"), (5, b"ev-5")]
    assert await store.read_events("m1", 20, 5) == []
    with pytest.raises(MatchNotFound):
        await store.read_events("nope", 0, 5)
    with pytest.raises(ValueError):
        await store.read_events("m1", -1, 5)


async def test_log_trimmed(make_store: StoreFactory) -> None:
    store = await make_store(StoreSettings(max_events=5))
    await new_match(store)  # versions 1, 2
    await play(store, "m1", 2, 6)  # up to 8: the log holds 4..8
    assert isinstance(await store.read_events("m1", 0, 10), LogTrimmed)
    trimmed = await store.read_events("m1", 2, 10)
    assert isinstance(trimmed, LogTrimmed) and trimmed.first_version == 4
    got = await store.read_events("m1", 3, 10)
    assert isinstance(got, list) and [v for v, _ in got] == [4, 5, 6, 7, 8]
    assert await store.read_events("m1", 8, 10) == []
    assert isinstance(await store.wait_events("m1", 1, 0.05), LogTrimmed)


# --------------------------------------------------------------------------- waiting


async def test_wait_events_returns_at_once_when_events_exist(store: MatchStore) -> None:
    await new_match(store)
    assert await store.wait_events("m1", 1, 5.0) == [(2, b"init-2")]


async def test_wait_events_times_out_empty(store: MatchStore) -> None:
    await new_match(store)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await store.wait_events("m1", 2, 0.2) == []
    assert loop.time() - t0 >= 0.15


async def test_wait_events_wakes_on_commit_from_another_task(store: MatchStore) -> None:
    await new_match(store)
    waiter = asyncio.create_task(store.wait_events("m1", 2, 10.0))
    await asyncio.sleep(0.1)
    assert not waiter.done()
    await play(store, "m1", 2, 1)
    assert await asyncio.wait_for(waiter, 5) == [(3, b"ev-3")]


async def test_wait_events_wakes_across_workers(clean_redis_url: str) -> None:
    a = RedisMatchStore.from_url(clean_redis_url)
    b = RedisMatchStore.from_url(clean_redis_url)
    await new_match(a)
    waiter = asyncio.create_task(b.wait_events("m1", 2, 10.0))
    await asyncio.sleep(0.1)
    await play(a, "m1", 2, 1)
    assert await asyncio.wait_for(waiter, 5) == [(3, b"ev-3")]
    await a.close()
    await b.close()


# --------------------------------------------------------------------------- subscriptions


async def collect(sub: EventSubscription, until: int, timeout: float = 5.0) -> list[int]:
    versions: list[int] = []

    async def run() -> None:
        async for batch in sub:
            assert isinstance(batch, list)
            versions.extend(v for v, _ in batch)
            if sub.last_version >= until:
                return

    await asyncio.wait_for(run(), timeout)
    return versions


async def test_subscription_catches_up_then_follows(make_store: StoreFactory) -> None:
    writer, reader = await make_store(), await make_store()
    if not isinstance(writer, RedisMatchStore):
        reader = writer
    await new_match(writer)
    await play(writer, "m1", 2, 3)  # 5 events exist
    sub = reader.subscribe("m1", 1)
    assert isinstance(sub, EventSubscription)
    got = asyncio.create_task(collect(sub, 10))
    await asyncio.sleep(0.05)
    await play(writer, "m1", 5, 5)
    assert await got == list(range(2, 11))
    await sub.aclose()


async def test_many_subscriptions_share_one_feed(make_store: StoreFactory) -> None:
    writer, reader = await make_store(), await make_store()
    if not isinstance(writer, RedisMatchStore):
        reader = writer
    for i in range(5):
        await new_match(writer, f"m{i}")
    subs = [reader.subscribe(f"m{i}", 2) for i in range(5)]
    tasks = [asyncio.create_task(collect(s, 5)) for s in subs]
    await asyncio.sleep(0.05)
    for i in range(5):
        await play(writer, f"m{i}", 2, 3)
    assert await asyncio.gather(*tasks) == [[3, 4, 5]] * 5
    for s in subs:
        await s.aclose()


async def test_subscription_repairs_overflow(store: MatchStore) -> None:
    await new_match(store)
    sub = store.subscribe("m1", 2, queue_size=1)
    task = asyncio.create_task(collect(sub, 32))
    await asyncio.sleep(0.05)
    await play(store, "m1", 2, 30)  # the subscriber cannot keep up with a queue of 1
    assert await task == list(range(3, 33))
    await sub.aclose()


async def test_subscription_reports_log_trimmed(make_store: StoreFactory) -> None:
    store = await make_store(StoreSettings(max_events=3))
    await new_match(store)
    await play(store, "m1", 2, 5)  # holds 5..7
    sub = store.subscribe("m1", 1)
    it = sub.__aiter__()
    marker = await asyncio.wait_for(it.__anext__(), 5)
    assert isinstance(marker, LogTrimmed)
    snap = await store.load("m1")
    assert snap is not None
    sub.resume_from(snap.version)
    task = asyncio.create_task(collect(sub, 9))
    await asyncio.sleep(0.05)
    await play(store, "m1", 7, 2)
    assert await task == [8, 9]
    await sub.aclose()


# --------------------------------------------------------------------------- listing


async def test_list_matches_pagination_and_filter(store: MatchStore) -> None:
    for i in range(7):
        await store.create(f"m{i}", b"", b"", [], entry(f"m{i}", created_at=100.0 + i))
    await store.create("other", b"", b"", [], entry("other", owner="tenant-b"))
    # same creation time: ties ordered by match id
    await store.create("tie-a", b"", b"", [], entry("tie-a", created_at=50.0))
    await store.create("tie-b", b"", b"", [], entry("tie-b", created_at=50.0))

    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page, token = await store.list_matches(OWNER, None, 3, token)
        pages += 1
        seen.extend(e.match_id for e in page)
        if token is None:
            break
    assert seen == ["m6", "m5", "m4", "m3", "m2", "m1", "m0", "tie-b", "tie-a"]
    assert pages == 3

    first, _ = await store.list_matches(OWNER, None, 1, None)
    assert first[0] == entry("m6", created_at=106.0, updated_at=106.0)

    for i in (1, 4, 5):
        await store.commit(
            f"m{i}",
            expected_version=0,
            state=b"",
            events=[b"go"],
            request_id=None,
            reply=b"",
            status="playing",
        )
    page, token = await store.list_matches(OWNER, "playing", 2, None)
    assert [e.match_id for e in page] == ["m5", "m4"] and token is not None
    assert [e.version for e in page] == [1, 1]
    assert all(e.status == "playing" for e in page)
    page, token = await store.list_matches(OWNER, "playing", 2, token)
    assert [e.match_id for e in page] == ["m1"] and token is None
    page, token = await store.list_matches(OWNER, "finished", 5, None)
    assert page == [] and token is None

    page, _ = await store.list_matches("tenant-b", None, 10, None)
    assert [e.match_id for e in page] == ["other"]
    assert await store.list_matches("nobody", None, 10, None) == ([], None)


async def test_commit_records_its_time_and_may_replace_the_listing_summary(store: MatchStore) -> None:
    await store.create("m1", b"meta", b"s0", [b"e1"], entry("m1", created_at=100.0))
    snap = await store.load("m1")
    assert snap is not None and snap.updated_at == 100.0
    await store.commit(
        "m1", expected_version=1, state=b"s1", events=[b"e2"], request_id=None, reply=b"", updated_at=150.5
    )
    snap = await store.load("m1")
    assert snap is not None and snap.updated_at == 150.5
    (listed,), _ = await store.list_matches(OWNER, None, 5, None)
    assert (listed.version, listed.updated_at, listed.summary) == (2, 150.5, b"sum")
    await store.commit(
        "m1",
        expected_version=2,
        state=b"s2",
        events=[b"e3"],
        request_id=None,
        reply=b"",
        status="finished",
        updated_at=160.0,
        summary=b"final",
    )
    (listed,), _ = await store.list_matches(OWNER, None, 5, None)
    assert (listed.version, listed.updated_at, listed.summary, listed.status) == (
        3,
        160.0,
        b"final",
        "finished",
    )


async def test_list_matches_rejects_foreign_tokens(store: MatchStore) -> None:
    for i in range(3):
        await store.create(f"m{i}", b"", b"", [], entry(f"m{i}", created_at=float(i)))
    _, token = await store.list_matches(OWNER, None, 1, None)
    assert token is not None
    with pytest.raises(InvalidPageToken):
        await store.list_matches("tenant-b", None, 1, token)
    with pytest.raises(InvalidPageToken):
        await store.list_matches(OWNER, None, 1, "%%%not-a-token")
    with pytest.raises(ValueError):
        await store.list_matches(OWNER, None, 0, None)


# --------------------------------------------------------------------------- retention


async def test_finished_match_gets_retention_ttl(make_store: StoreFactory, clock: FakeClock) -> None:
    settings = StoreSettings(retention_seconds=3600, request_ttl_seconds=600)
    store = await make_store(settings)
    await new_match(store, "done")
    await new_match(store, "live")
    await store.commit(
        "done",
        expected_version=2,
        state=b"end",
        events=[b"over"],
        request_id="last",
        reply=b"r",
        status="finished",
    )
    snap = await store.load("done")
    assert snap is not None and snap.status == "finished"

    if isinstance(store, RedisMatchStore):
        r = store.client
        keys = store.keys_for("done")
        for key in (keys.match, keys.events, keys.request("last")):
            ttl = await r.ttl(key)
            assert 0 < ttl <= 3600, (key, ttl)
        live = store.keys_for("live")
        assert await r.ttl(live.match) == -1 and await r.ttl(live.events) == -1
        # an expired match disappears from load and from the listing
        await r.delete(keys.match, keys.events)
    else:
        clock.advance(3599)
        assert await store.load("done") is not None
        clock.advance(2)
    assert await store.load("done") is None
    with pytest.raises(MatchNotFound):
        await store.read_events("done", 0, 10)
    page, _ = await store.list_matches(OWNER, None, 10, None)
    assert [e.match_id for e in page] == ["live"]
    assert await store.load("live") is not None


async def test_request_id_expires(make_store: StoreFactory, clock: FakeClock) -> None:
    store = await make_store(StoreSettings(request_ttl_seconds=10))
    await new_match(store)
    await store.commit("m1", expected_version=2, state=b"", events=[b"x"], request_id="r", reply=b"first")
    if isinstance(store, RedisMatchStore):
        ttl = await store.client.ttl(store.keys_for("m1").request("r"))
        assert 0 < ttl <= 10
        await store.client.delete(store.keys_for("m1").request("r"))
    else:
        clock.advance(11)
    with pytest.raises(VersionConflict):  # no longer a duplicate: a stale new request
        await store.commit(
            "m1", expected_version=2, state=b"", events=[b"x"], request_id="r", reply=b"second"
        )


# --------------------------------------------------------------------------- Redis only


async def test_redis_commit_is_one_round_trip(redis_store: RedisMatchStore) -> None:
    store = redis_store
    await new_match(store)
    await play(store, "m1", 2, 1)  # warm up: the script is loaded
    before = (store.stats.round_trips, store.stats.commands)
    await play(store, "m1", 3, 10)
    assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (10, 10)


async def test_redis_script_reloaded_after_flush(redis_store: RedisMatchStore) -> None:
    store = redis_store
    await new_match(store)
    await store.client.script_flush()
    assert await play(store, "m1", 2, 1) == 3


async def test_redis_keys_share_one_hash_tag(redis_store: RedisMatchStore) -> None:
    store = redis_store
    keys = store.keys_for("abc")
    for key in (keys.match, keys.events, keys.request("r1")):
        assert key.split("{", 1)[1].split("}", 1)[0] == "abc"
    r: aioredis.Redis = store.client
    await new_match(store, "abc")
    assert await r.type(keys.events) == b"stream"
    assert [eid for eid, _ in await r.xrange(keys.events)] == [b"1-0", b"2-0"]


async def test_redis_hub_picks_up_new_subscription_at_once(clean_redis_url: str) -> None:
    """A new subscription interrupts the hub's blocked XREAD (CLIENT UNBLOCK)."""
    writer = RedisMatchStore.from_url(clean_redis_url)
    reader = RedisMatchStore.from_url(clean_redis_url, hub_block_ms=30_000)
    try:
        await new_match(writer, "m1")
        await new_match(writer, "m2")
        sub1 = reader.subscribe("m1", 2)
        t1 = asyncio.create_task(collect(sub1, 3, timeout=20))
        await asyncio.sleep(0.2)  # the hub is now blocked on m1 only
        sub2 = reader.subscribe("m2", 2)
        t2 = asyncio.create_task(collect(sub2, 3, timeout=20))
        await asyncio.sleep(0.1)
        await play(writer, "m2", 2, 1)
        assert await asyncio.wait_for(t2, 3) == [3]
        await play(writer, "m1", 2, 1)
        assert await asyncio.wait_for(t1, 3) == [3]
        await sub1.aclose()
        await sub2.aclose()
    finally:
        await reader.close()
        await writer.close()


async def test_the_redis_store_records_its_latency_per_operation(clean_redis_url: str) -> None:
    from prometheus_client import REGISTRY

    def count(op: str) -> float:
        return REGISTRY.get_sample_value("truco_redis_seconds_count", {"operation": op}) or 0.0

    before = {op: count(op) for op in ("create", "load", "commit", "read_events")}
    store = RedisMatchStore.from_url(clean_redis_url)
    try:
        await store.create("m1", b"meta", b"s0", [b"e1"], entry("m1"))
        await store.load("m1")
        await store.commit("m1", expected_version=1, state=b"s1", events=[b"e2"], request_id=None, reply=b"")
        await store.read_events("m1", 0, 10)
    finally:
        await store.close()
    assert all(count(op) == before[op] + 1 for op in before)


async def test_redis_counts_each_script_call_once(redis_store: RedisMatchStore) -> None:
    """Every call below is one script on one connection: one round trip, one command (a
    call that also counted itself showed two)."""
    store = redis_store
    shard = store.queue("clock").all_shards()[0]

    async def calls(item: str) -> None:
        await store.queue_add("clock", item, 5000)
        await store.queue_claim("clock", shard, 10_000, 1000, 10)
        await store.queue_release("clock", item, b"")
        await store.queue_due("clock", 10_000)

    await calls("warm")  # the scripts are loaded (a first call also sends SCRIPT LOAD)
    before = (store.stats.round_trips, store.stats.commands)
    await calls("m1")
    assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (4, 4)
