"""The match log's contract (truco_server.ports.matches): every test runs on every adapter --
memory, one Redis server, a Redis Cluster and a Sentinel group."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.clock import FakeClock
from tests.storage.conftest import StoreFactory
from tests.storage.support import OWNER, collect, entry, new_match, play, step
from truco_server.ports import Store
from truco_server.ports.documents import DocRef
from truco_server.ports.errors import (
    InvalidPageToken,
    MatchExists,
    MatchNotFound,
    ParentMissing,
    VersionConflict,
)
from truco_server.ports.matches import Batch, Commit, CommitResult, LogTrimmed, NewMatch, SubscriptionClosed
from truco_server.ports.queues import CLOCK, RELAY, RelayWake
from truco_server.ports.settings import StoreSettings
from truco_server.stores.redis import RedisStore

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


# --------------------------------------------------------------------------- create / load


async def test_create_and_load(store: Store) -> None:
    assert await new_match(store, n_events=3) == 3
    snap = await store.matches.load("m1")
    assert snap is not None
    assert (snap.version, snap.state, snap.meta, snap.status) == (3, b"state-0", b"meta", "waiting")
    assert await store.matches.read_events("m1", 0, 10) == [(1, b"init-1"), (2, b"init-2"), (3, b"init-3")]


async def test_create_without_events_is_version_zero(store: Store) -> None:
    assert await new_match(store, n_events=0) == 0
    assert await store.matches.read_events("m1", 0, 10) == []
    assert (await play(store, "m1", 0, 2)) == 2
    assert [v for v, _ in await store.matches.read_events("m1", 0, 10)] == [1, 2]  # type: ignore[union-attr]


async def test_load_missing_returns_none(store: Store) -> None:
    assert await store.matches.load("nope") is None


async def test_create_twice_fails_and_changes_nothing(store: Store) -> None:
    await new_match(store)
    with pytest.raises(MatchExists):
        await store.matches.create(NewMatch(entry("m1", created_at=5.0), b"other", b"other", [b"x"]))
    snap = await store.matches.load("m1")
    assert snap is not None and (snap.meta, snap.version) == (b"meta", 2)
    page, _ = await store.matches.list_matches(OWNER, None, 10, None)
    assert [e.match_id for e in page] == ["m1"]


# --------------------------------------------------------------------------- commit


async def test_commit_increments_version_and_appends_events(store: Store) -> None:
    await new_match(store)
    res = await store.matches.commit(Commit("m1", 2, b"s3", [b"a", b"b", b"c"], request_id="r1", reply=b"ok"))
    assert res == CommitResult(version=5, reply=b"ok", duplicate=False)
    snap = await store.matches.load("m1")
    assert snap is not None and (snap.version, snap.state) == (5, b"s3")
    assert await store.matches.read_events("m1", 2, 10) == [(3, b"a"), (4, b"b"), (5, b"c")]


async def test_commit_binary_payloads_roundtrip(store: Store) -> None:
    await new_match(store)
    blob = bytes(range(256)) + b":\x00:"
    res = await store.matches.commit(Commit("m1", 2, blob, [blob], request_id="r", reply=blob))
    assert res.reply == blob
    dup = await store.matches.commit(Commit("m1", 3, b"", [], request_id="r", reply=b""))
    assert dup.duplicate and dup.reply == blob and dup.version == 3
    snap = await store.matches.load("m1")
    assert snap is not None and snap.state == blob
    assert await store.matches.read_events("m1", 2, 1) == [(3, blob)]


async def test_idempotent_retry_returns_first_reply_and_writes_nothing(store: Store) -> None:
    await new_match(store)
    first = await store.matches.commit(Commit("m1", 2, b"s3", [b"e3"], request_id="r1", reply=b"first"))
    await play(store, "m1", 3, 2)  # the match moves on to version 5
    retry = await store.matches.commit(Commit("m1", 2, b"XX", [b"XX"], request_id="r1", reply=b"second"))
    assert retry == CommitResult(version=first.version, reply=b"first", duplicate=True)
    snap = await store.matches.load("m1")
    assert snap is not None and (snap.version, snap.state) == (5, b"state-5")
    events = await store.matches.read_events("m1", 0, 100)
    assert isinstance(events, list) and [v for v, _ in events] == [1, 2, 3, 4, 5]
    assert b"XX" not in [e for _, e in events]


async def test_lookup_request_returns_recorded_reply_only(store: Store) -> None:
    await new_match(store)
    assert await store.matches.lookup_request("m1", "r1") is None
    await store.matches.commit(Commit("m1", 2, b"s3", [b"e3"], request_id="r1", reply=b"first"))
    await play(store, "m1", 3, 2)
    found = await store.matches.lookup_request("m1", "r1")
    assert found == CommitResult(version=3, reply=b"first", duplicate=True)
    assert await store.matches.lookup_request("m1", "other") is None
    with pytest.raises(MatchNotFound):
        await store.matches.lookup_request("nope", "r1")


async def test_request_ids_are_per_match(store: Store) -> None:
    await new_match(store, "m1")
    await new_match(store, "m2")
    a = await store.matches.commit(Commit("m1", 2, b"", [b"x"], request_id="same", reply=b"a"))
    b = await store.matches.commit(Commit("m2", 2, b"", [b"x"], request_id="same", reply=b"b"))
    assert not a.duplicate and not b.duplicate and b.reply == b"b"


async def test_commit_without_request_id_is_not_deduplicated(store: Store) -> None:
    await new_match(store)
    await store.matches.commit(Commit("m1", 2, b"", [b"x"], reply=b"r"))
    with pytest.raises(VersionConflict):
        await store.matches.commit(Commit("m1", 2, b"", [b"x"], reply=b"r"))


async def test_stale_expected_version_conflicts_without_change(store: Store) -> None:
    await new_match(store)
    await play(store, "m1", 2, 1)
    with pytest.raises(VersionConflict) as info:
        await store.matches.commit(Commit("m1", 2, b"bad", [b"bad"], request_id="new", reply=b"r"))
    assert info.value.current_version == 3 and info.value.expected_version == 2
    snap = await store.matches.load("m1")
    assert snap is not None and (snap.version, snap.state) == (3, b"state-3")
    assert await store.matches.read_events("m1", 3, 10) == []
    # the failed request id was not recorded: it can still be used
    res = await store.matches.commit(Commit("m1", 3, b"s4", [b"e4"], request_id="new", reply=b"r4"))
    assert not res.duplicate and res.version == 4


async def test_commit_missing_match(store: Store) -> None:
    with pytest.raises(MatchNotFound):
        await store.matches.commit(Commit("nope", 0, b"", []))


async def test_concurrent_commits_exactly_one_wins(two_workers: tuple[Store, Store]) -> None:
    main = two_workers[0]
    await new_match(main)
    # with Redis the second store is a second worker; with memory both are one store

    async def attempt(i: int) -> CommitResult | VersionConflict:
        c = Commit(
            "m1", 2, f"s-{i}".encode(), [f"e-{i}".encode()], request_id=f"r-{i}", reply=f"reply-{i}".encode()
        )
        try:
            return await two_workers[i % 2].matches.commit(c)
        except VersionConflict as exc:
            return exc

    results = await asyncio.gather(*(attempt(i) for i in range(20)))
    wins = [r for r in results if isinstance(r, CommitResult)]
    assert len(wins) == 1 and wins[0].version == 3
    assert all(r.current_version == 3 for r in results if isinstance(r, VersionConflict))
    winner = wins[0].reply.decode().split("-")[1]
    snap = await main.matches.load("m1")
    assert snap is not None and snap.state == f"s-{winner}".encode()
    assert await main.matches.read_events("m1", 2, 10) == [(3, f"e-{winner}".encode())]


async def test_commits_of_many_matches_at_once_each_get_their_own_outcome(store: Store) -> None:
    """Commits issued together (on Redis: one batch) answer each for itself: a conflict, a
    duplicate, a missing match and successes side by side."""
    for m in ("a", "b", "c"):
        await new_match(store, m)
    await store.matches.commit(step("b", 2, request_id="dup"))
    outcomes = await asyncio.gather(
        store.matches.commit(step("a", 2)),
        store.matches.commit(step("b", 2, request_id="dup")),  # a retry: its first reply
        store.matches.commit(step("b", 2, request_id="fresh")),  # the match moved on
        store.matches.commit(step("nope", 0)),
        store.matches.commit(step("c", 2)),
        return_exceptions=True,
    )
    assert outcomes[0] == CommitResult(3, b"reply-3")
    assert outcomes[1] == CommitResult(3, b"reply-3", duplicate=True)
    assert isinstance(outcomes[2], VersionConflict) and outcomes[2].current_version == 3
    assert isinstance(outcomes[3], MatchNotFound)
    assert outcomes[4] == CommitResult(3, b"reply-3")


# --------------------------------------------------------------------------- event log, record


async def test_read_events_after_any_version(store: Store) -> None:
    await new_match(store)
    await play(store, "m1", 2, 6)
    for after in range(0, 9):
        got = await store.matches.read_events("m1", after, 100)
        assert isinstance(got, list)
        assert [v for v, _ in got] == list(range(after + 1, 9))
    got = await store.matches.read_events("m1", 3, 2)
    assert got == [(4, b"ev-4"), (5, b"ev-5")]
    assert await store.matches.read_events("m1", 20, 5) == []
    with pytest.raises(MatchNotFound):
        await store.matches.read_events("nope", 0, 5)
    with pytest.raises(ValueError):
        await store.matches.read_events("m1", -1, 5)


async def test_log_trimmed(make_store: StoreFactory) -> None:
    store = await make_store(StoreSettings(max_events=5))
    await new_match(store)  # versions 1, 2
    await play(store, "m1", 2, 6)  # up to 8: the log holds 4..8
    assert isinstance(await store.matches.read_events("m1", 0, 10), LogTrimmed)
    trimmed = await store.matches.read_events("m1", 2, 10)
    assert isinstance(trimmed, LogTrimmed) and trimmed.first_version == 4
    got = await store.matches.read_events("m1", 3, 10)
    assert isinstance(got, list) and [v for v, _ in got] == [4, 5, 6, 7, 8]
    assert await store.matches.read_events("m1", 8, 10) == []


async def test_record_steps_are_kept_in_order_beyond_the_event_log(make_store: StoreFactory) -> None:
    store = await make_store(StoreSettings(max_events=2))
    v = await new_match(store, n_events=1)
    for i in range(5):
        v = (await store.matches.commit(Commit("m1", v, b"s", [b"e"], record=f"step-{i}".encode()))).version
    assert await store.matches.read_record("m1") == [f"step-{i}".encode() for i in range(5)]
    assert await store.matches.read_record("nope") is None


async def test_presence_remembers_each_seat(store: Store) -> None:
    await new_match(store)
    await store.matches.touch("m1", 0, 1000)
    await store.matches.touch("m1", 1, 2000)
    await store.matches.touch("m1", 0, 3000)
    assert await store.matches.presence("m1") == {0: 3000, 1: 2000}


# --------------------------------------------------------------------------- subscriptions


async def test_subscription_catches_up_then_follows(two_workers: tuple[Store, Store]) -> None:
    writer, reader = two_workers
    await new_match(writer)
    await play(writer, "m1", 2, 3)  # 5 events exist
    sub = reader.matches.subscribe("m1", 1)
    got = asyncio.create_task(collect(sub, 10))
    await asyncio.sleep(0.05)
    await play(writer, "m1", 5, 5)
    assert await got == list(range(2, 11))
    sub.close()


async def test_many_subscriptions_share_one_feed(two_workers: tuple[Store, Store]) -> None:
    writer, reader = two_workers
    for i in range(5):
        await new_match(writer, f"m{i}")
    subs = [reader.matches.subscribe(f"m{i}", 2) for i in range(5)]
    tasks = [asyncio.create_task(collect(s, 5)) for s in subs]
    await asyncio.sleep(0.05)
    for i in range(5):
        await play(writer, f"m{i}", 2, 3)
    assert await asyncio.gather(*tasks) == [[3, 4, 5]] * 5
    for s in subs:
        s.close()


async def test_subscription_repairs_overflow(store: Store) -> None:
    await new_match(store)
    sub = store.matches.subscribe("m1", 2, queue_size=1)
    task = asyncio.create_task(collect(sub, 32))
    await asyncio.sleep(0.05)
    await play(store, "m1", 2, 30)  # the subscriber cannot keep up with a queue of 1
    assert await task == list(range(3, 33))
    sub.close()


async def test_subscription_reports_log_trimmed(make_store: StoreFactory) -> None:
    store = await make_store(StoreSettings(max_events=3))
    await new_match(store)
    await play(store, "m1", 2, 5)  # holds 5..7
    sub = store.matches.subscribe("m1", 1)
    marker = await sub.next(5)
    assert isinstance(marker, LogTrimmed)
    with pytest.raises(RuntimeError, match="resume_from"):
        await sub.next(5)
    snap = await store.matches.load("m1")
    assert snap is not None
    sub.resume_from(snap.version)
    task = asyncio.create_task(collect(sub, 9))
    await asyncio.sleep(0.05)
    await play(store, "m1", 7, 2)
    assert await task == [8, 9]
    sub.close()


async def test_next_answers_none_on_silence_and_close_wakes_a_waiting_next(store: Store) -> None:
    await new_match(store)
    sub = store.matches.subscribe("m1", 0)
    first = await sub.next(5)
    assert isinstance(first, Batch) and [v for v, _ in first.events] == [1, 2]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await sub.next(0.2) is None  # nothing committed: silence
    assert loop.time() - t0 >= 0.15
    assert await sub.next(0) is None  # only what is ready
    waiting = asyncio.ensure_future(sub.next(30))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    sub.close()
    with pytest.raises(SubscriptionClosed):
        await asyncio.wait_for(waiting, 1)  # woken at once, not after 30 s
    with pytest.raises(SubscriptionClosed):
        await sub.next(1)
    sub.close()  # twice is fine


async def test_a_local_commit_hands_its_note_to_a_local_subscriber(
    two_workers: tuple[Store, Store], backend: str
) -> None:
    """Batch.note is the note of the local commit that wrote exactly those events; another
    worker's commit (the same events read back from Redis) carries none."""
    writer, other = two_workers
    await new_match(writer)
    sub = writer.matches.subscribe("m1", 2)
    assert await sub.next(0.2) is None  # caught up (and attached to its feed)
    note = object()
    await writer.matches.commit(step("m1", 2, note=note))
    got = await sub.next(5)
    assert isinstance(got, Batch) and [v for v, _ in got.events] == [3] and got.note is note
    await writer.matches.commit(step("m1", 3))  # no note: none delivered
    got = await sub.next(5)
    assert isinstance(got, Batch) and [v for v, _ in got.events] == [4] and got.note is None
    if backend != "memory":  # one process has no other worker
        await other.matches.commit(step("m1", 4, note="other worker's"))
        got = await sub.next(5)
        assert isinstance(got, Batch) and [v for v, _ in got.events] == [5] and got.note is None
    sub.close()


# --------------------------------------------------------------------------- listing


async def test_list_matches_pagination_and_filter(store: Store) -> None:
    for i in range(7):
        await store.matches.create(NewMatch(entry(f"m{i}", created_at=100.0 + i), b"", b""))
    await store.matches.create(NewMatch(entry("other", owner="tenant-b"), b"", b""))
    # same creation time: ties ordered by match id
    await store.matches.create(NewMatch(entry("tie-a", created_at=50.0), b"", b""))
    await store.matches.create(NewMatch(entry("tie-b", created_at=50.0), b"", b""))

    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page, token = await store.matches.list_matches(OWNER, None, 3, token)
        pages += 1
        seen.extend(e.match_id for e in page)
        if token is None:
            break
    assert seen == ["m6", "m5", "m4", "m3", "m2", "m1", "m0", "tie-b", "tie-a"]
    assert pages == 3

    first, _ = await store.matches.list_matches(OWNER, None, 1, None)
    assert first[0] == entry("m6", created_at=106.0, updated_at=106.0)

    for i in (1, 4, 5):
        await store.matches.commit(Commit(f"m{i}", 0, b"", [b"go"], status="playing"))
    page, token = await store.matches.list_matches(OWNER, "playing", 2, None)
    assert [e.match_id for e in page] == ["m5", "m4"] and token is not None
    assert [e.version for e in page] == [1, 1]
    assert all(e.status == "playing" for e in page)
    page, token = await store.matches.list_matches(OWNER, "playing", 2, token)
    assert [e.match_id for e in page] == ["m1"] and token is None
    page, token = await store.matches.list_matches(OWNER, "finished", 5, None)
    assert page == [] and token is None

    page, _ = await store.matches.list_matches("tenant-b", None, 10, None)
    assert [e.match_id for e in page] == ["other"]
    assert await store.matches.list_matches("nobody", None, 10, None) == ([], None)


async def test_commit_records_its_time_and_may_replace_the_listing_summary(store: Store) -> None:
    await store.matches.create(NewMatch(entry("m1", created_at=100.0), b"meta", b"s0", [b"e1"]))
    snap = await store.matches.load("m1")
    assert snap is not None and snap.updated_at == 100.0
    await store.matches.commit(Commit("m1", 1, b"s1", [b"e2"], updated_at=150.5))
    snap = await store.matches.load("m1")
    assert snap is not None and snap.updated_at == 150.5
    (listed,), _ = await store.matches.list_matches(OWNER, None, 5, None)
    assert (listed.version, listed.updated_at, listed.summary) == (2, 150.5, b"sum")
    await store.matches.commit(
        Commit("m1", 2, b"s2", [b"e3"], status="finished", updated_at=160.0, summary=b"final")
    )
    (listed,), _ = await store.matches.list_matches(OWNER, None, 5, None)
    assert (listed.version, listed.updated_at, listed.summary, listed.status) == (
        3,
        160.0,
        b"final",
        "finished",
    )


async def test_list_matches_rejects_foreign_tokens(store: Store) -> None:
    for i in range(3):
        await store.matches.create(NewMatch(entry(f"m{i}", created_at=float(i)), b"", b""))
    _, token = await store.matches.list_matches(OWNER, None, 1, None)
    assert token is not None
    with pytest.raises(InvalidPageToken):
        await store.matches.list_matches("tenant-b", None, 1, token)
    with pytest.raises(InvalidPageToken):
        await store.matches.list_matches(OWNER, None, 1, "%%%not-a-token")
    with pytest.raises(ValueError):
        await store.matches.list_matches(OWNER, None, 0, None)


# --------------------------------------------------------------------------- retention


async def test_finished_match_gets_retention_ttl(make_store: StoreFactory, clock: FakeClock) -> None:
    store = await make_store(StoreSettings(retention_seconds=3600, request_ttl_seconds=600))
    await new_match(store, "done")
    await new_match(store, "live")
    await store.matches.commit(
        Commit("done", 2, b"end", [b"over"], request_id="last", reply=b"r", status="finished")
    )
    snap = await store.matches.load("done")
    assert snap is not None and snap.status == "finished"
    if isinstance(store, RedisStore):
        r = store.client
        keys = store.keys.match("done")
        for key in (keys.match, keys.events, keys.requests):
            ttl = await r.ttl(key)
            assert 0 < ttl <= 3600, (key, ttl)
        live = store.keys.match("live")
        assert await r.ttl(live.match) == -1 and await r.ttl(live.events) == -1
        await r.delete(keys.match, keys.events)  # as when it expires
    else:
        clock.advance(3599)
        assert await store.matches.load("done") is not None
        clock.advance(2)
    assert await store.matches.load("done") is None
    with pytest.raises(MatchNotFound):
        await store.matches.read_events("done", 0, 10)
    page, _ = await store.matches.list_matches(OWNER, None, 10, None)
    assert [e.match_id for e in page] == ["live"]
    assert await store.matches.load("live") is not None


async def test_request_id_expires(make_store: StoreFactory, clock: FakeClock) -> None:
    store = await make_store(StoreSettings(request_ttl_seconds=10))
    await new_match(store)
    await store.matches.commit(Commit("m1", 2, b"", [b"x"], request_id="r", reply=b"first"))
    if isinstance(store, RedisStore):
        key = store.keys.match("m1").requests
        ttl = await store.client.ttl(key)
        assert 0 < ttl <= 10
        await store.client.delete(key)  # as when it expires
    else:
        clock.advance(11)
    with pytest.raises(VersionConflict):  # no longer a duplicate: a stale new request
        await store.matches.commit(Commit("m1", 2, b"", [b"x"], request_id="r", reply=b"second"))


async def test_a_match_that_requires_a_missing_document_is_not_created(store: Store) -> None:
    """A league's match requires its league: with the league gone nothing of the match is
    written -- not its keys, not its listing row, not its wakeup or relay safety net."""
    league = DocRef("league", "l1")
    wake, relay = 5000, RelayWake(6000, b"token")
    with pytest.raises(ParentMissing) as refused:
        await store.matches.create(
            NewMatch(
                entry("m1"), b"meta", b"s", [b"e1"], wake=wake, outbox=[b"o"], relay=relay, requires=[league]
            )
        )
    assert refused.value.ref == league
    assert await store.matches.load("m1") is None
    assert (await store.matches.list_matches(OWNER, None, 10, None))[0] == []
    assert await store.queues.due(CLOCK, 10**13) == [] and await store.queues.due(RELAY, 10**13) == []
    assert await store.documents.put("league", "l1", 0, b"league")
    created = NewMatch(
        entry("m1"), b"meta", b"s", [b"e1"], wake=wake, outbox=[b"o"], relay=relay, requires=[league]
    )
    assert await store.matches.create(created) == 1
    assert (await store.matches.list_matches(OWNER, None, 10, None))[0][0].match_id == "m1"
    assert await store.queues.due(CLOCK, 10**13) != [] and await store.queues.due(RELAY, 10**13) != []
    with pytest.raises(MatchExists):  # an existing match is still refused as such
        await store.matches.create(created)
