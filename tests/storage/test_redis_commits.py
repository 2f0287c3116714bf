"""The Redis adapter's commit path on one server: round trips, the batch of an event-loop
turn, script reloads, lost connections, commit tokens, the key layout, what it counts, and
that no redis-py exception leaves it."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import hiredis
import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from tests.storage.support import new_match, play, step
from truco_server.ports.errors import StoreUnavailable, VersionConflict
from truco_server.ports.matches import Commit, CommitResult
from truco_server.ports.queues import CLOCK, RelayWake
from truco_server.ports.settings import StoreSettings
from truco_server.stores.redis import RedisStore, open_redis, pipelines
from truco_server.stores.redis.scripts import COMMIT
from truco_tools.redis_proc import start_redis

pytestmark = pytest.mark.timeout(60)  # async tests run by asyncio_mode = "auto"


# ------------------------------------------------------------------------------ one at a time


async def test_redis_commit_is_one_round_trip(redis_store: RedisStore) -> None:
    store = redis_store
    await new_match(store)
    await play(store, "m1", 2, 1)  # warm up: the script is loaded
    before = (store.stats.round_trips, store.stats.commands)
    await play(store, "m1", 3, 10)
    assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (10, 10)


async def test_a_create_with_its_index_and_queues_is_one_round_trip(redis_store: RedisStore) -> None:
    store = redis_store
    await new_match(store, "warm", wake=1)  # the script is loaded
    before = (store.stats.round_trips, store.stats.commands)
    await new_match(store, "m1", wake=5_000)
    assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (1, 3)


async def test_commit_reloads_the_script_after_a_script_flush(redis_store: RedisStore) -> None:
    version = await play(redis_store, "m1", await new_match(redis_store), 2)
    await redis_store.client.script_flush()  # as after a restart or a failover
    before = redis_store.stats.round_trips
    assert await play(redis_store, "m1", version, 1) == version + 1
    assert redis_store.stats.round_trips - before == 2  # NOSCRIPT, then SCRIPT LOAD + EVALSHA
    loaded = await redis_store.matches.load("m1")
    assert loaded is not None and loaded.version == version + 1


async def test_commit_recovers_when_its_connection_was_killed(
    redis_store: RedisStore, clean_redis_url: str
) -> None:
    version = await play(redis_store, "m1", await new_match(redis_store), 1)
    admin = aioredis.Redis.from_url(clean_redis_url)
    try:
        killed = await admin.client_kill_filter(_type="normal", skipme=True)
        assert killed >= 1  # the store's pooled connection is gone
    finally:
        await admin.aclose()
    assert await play(redis_store, "m1", version, 1) == version + 1
    events = await redis_store.matches.read_events("m1", 0, 100)
    assert isinstance(events, list)
    assert [v for v, _ in events] == list(range(1, version + 2))  # nothing lost, nothing doubled


@pytest.mark.parametrize("n_events", [0, 1, 5])
async def test_commit_with_any_number_of_events(redis_store: RedisStore, n_events: int) -> None:
    version = await new_match(redis_store)
    events = [b"e%d" % i for i in range(n_events)]
    res = await redis_store.matches.commit(Commit("m1", version, b"s", events, request_id="r", reply=b"ok"))
    assert res.version == version + n_events


async def test_concurrent_commits_share_few_connections_and_close_leaves_none(clean_redis_url: str) -> None:
    """Concurrent commits go out together, on few connections; closing the store closes
    them all."""
    store = open_redis(clean_redis_url)
    admin = aioredis.Redis.from_url(clean_redis_url)
    try:
        ids = [f"m{i}" for i in range(12)]
        versions = [await new_match(store, m) for m in ids]
        done = await asyncio.gather(*(play(store, m, v, 5) for m, v in zip(ids, versions, strict=True)))
        assert done == [v + 5 for v in versions]
        for m, v in zip(ids, done, strict=True):
            events = await store.matches.read_events(m, 0, 100)
            assert isinstance(events, list) and [x for x, _ in events] == list(range(1, v + 1))
        clients = await admin.client_list()
        assert 2 <= len(clients) <= 1 + 12 + 1  # the admin, the store's (at most one per flow + one)
        await store.close()
        me = [str(await admin.client_id())]
        for _ in range(100):  # the server sees the closes a moment later
            left = [c["id"] for c in await admin.client_list()]
            if left == me:
                break
            await asyncio.sleep(0.02)
        assert left == me
    finally:
        await admin.aclose()


async def test_more_operations_than_connections_wait_their_turn(clean_redis_url: str) -> None:
    """At most max_connections operations use the server at once; the others wait (none
    fails for want of a connection), and the pool never opens more than that."""
    store = open_redis(clean_redis_url, max_connections=3)
    admin = aioredis.Redis.from_url(clean_redis_url)
    try:
        await new_match(store, "m1")
        waits = [store.operators.read("op", "", 10, block=0.3) for _ in range(5)]  # each holds one
        loads = [store.matches.load("m1") for _ in range(100)]
        commits = [store.matches.commit(step(f"x{i}", 0)) for i in range(20)]
        got = await asyncio.gather(*waits, *loads, *commits, return_exceptions=True)
        assert got[:5] == [[]] * 5
        assert all(snap is not None and snap.version == 2 for snap in got[5:105])  # type: ignore[union-attr]
        assert all(type(r).__name__ == "MatchNotFound" for r in got[105:])
        assert len(await admin.client_list()) <= 1 + 3 + 1  # the admin, 3 slots, a pool's one spare at most
    finally:
        await store.close()
        await admin.aclose()


async def test_commit_tokens_are_kept_for_live_matches_only(
    redis_store: RedisStore, clean_redis_url: str
) -> None:
    """The store remembers the head (commit token) of each match it committed or loaded, to
    check the next commit against it; an ended match takes no more commits, so a worker that
    ends or loads an ended match forgets its token (memory follows the matches in play)."""
    matches = redis_store.matches
    version = await play(redis_store, "m1", await new_match(redis_store), 2)
    assert matches.knows_head("m1")
    done = await matches.commit(step("m1", version, status="finished"))
    assert done.version == version + 1 and not matches.knows_head("m1")
    other = open_redis(clean_redis_url)  # another worker, reading the ended match
    try:
        loaded = await other.matches.load("m1")
        assert loaded is not None and loaded.status == "finished" and not other.matches.knows_head("m1")
        await play(redis_store, "m2", await new_match(redis_store, "m2"), 1)
        assert (await other.matches.load("m2")) is not None and other.matches.knows_head("m2")
    finally:
        await other.close()


# ------------------------------------------------------------------------------ batches


async def test_commits_of_one_loop_turn_go_in_one_round_trip(redis_store: RedisStore) -> None:
    store = redis_store
    ids = [f"m{i}" for i in range(20)]
    for m in ids:
        await new_match(store, m)
    await play(store, "m0", 2, 1)  # the script is loaded
    before = (store.stats.round_trips, store.stats.commands)
    results = await asyncio.gather(*(store.matches.commit(step(m, 3 if m == "m0" else 2)) for m in ids))
    assert [r.version for r in results] == [4] + [3] * 19
    assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (1, 20)
    for m in ids:  # each applied once, as its own
        snap = await store.matches.load(m)
        assert snap is not None and snap.version == (4 if m == "m0" else 3)


async def test_a_lone_call_is_sent_in_its_own_turn(
    redis_store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing else ready to run, no other call could join the batch: the caller sends
    at once instead of yielding a turn of the loop first (and with other callbacks queued, it
    yields: the batch test above)."""
    store = redis_store
    await new_match(store)
    await play(store, "m1", 2, 1)
    loop = asyncio.get_running_loop()
    seen: list[bool] = []
    batcher = store._batcher
    real = batcher.others_ready

    def probe(lp: asyncio.AbstractEventLoop) -> bool:
        seen.append(real(lp))
        return seen[-1]

    monkeypatch.setattr(batcher, "others_ready", probe)
    done = loop.create_future()

    def lone() -> None:  # a callback of its own: the test's task is not queued behind it
        task = asyncio.ensure_future(store.matches.commit(step("m1", 3)))
        task.add_done_callback(lambda t: done.set_result(t.result()))

    loop.call_soon(lone)
    result = await done
    assert result.version == 4
    assert seen == [False]

    both = loop.create_future()

    def with_another() -> None:  # a callback queued behind the caller's first step
        asyncio.ensure_future(store.matches.commit(step("m1", 4))).add_done_callback(both.set_result)
        loop.call_soon(lambda: None)

    loop.call_soon(with_another)
    assert (await both).result().version == 5
    assert seen == [False, True]


async def test_a_conflict_in_a_batch_fails_alone(redis_store: RedisStore) -> None:
    store = redis_store
    for m in ("a", "b", "c"):
        await new_match(store, m)
    await play(store, "a", 2, 1)
    before = store.stats.round_trips
    outcomes = await asyncio.gather(
        store.matches.commit(step("a", 3)),
        store.matches.commit(step("b", 1)),  # stale
        store.matches.commit(step("c", 2)),
        return_exceptions=True,
    )
    assert store.stats.round_trips - before == 1
    assert outcomes[0] == CommitResult(4, b"reply-4")
    assert isinstance(outcomes[1], VersionConflict) and outcomes[1].current_version == 2
    assert outcomes[2] == CommitResult(3, b"reply-3")
    assert (await store.matches.load("b")) is not None
    assert await store.matches.read_events("b", 2, 10) == []


async def test_a_batch_that_meets_noscript_loads_once_and_reruns_only_the_refused(
    redis_store: RedisStore,
) -> None:
    """SCRIPT FLUSH between two batches (a restart, a failover): the whole next batch is
    refused; the script is loaded once and only the refused commits run again, without
    their queue commands (they ran) -- two round trips in all. A batch also holding a
    script the server still has runs that one once."""
    store = redis_store
    ids = [f"m{i}" for i in range(8)]
    for m in ids:
        await new_match(store, m)
    await store.queues.add(CLOCK, "warm", 1)  # QUEUE_ADD is loaded
    await store.client.script_flush()
    await store.client.script_load("return 1")  # unrelated
    await store.queues.add(CLOCK, "warm", 1)  # QUEUE_ADD is loaded again
    before = (store.stats.round_trips, store.stats.commands)
    results = await asyncio.gather(
        store.queues.add(CLOCK, "other", 7),
        *(store.matches.commit(step(m, 2, wake=1_000 + i)) for i, m in enumerate(ids)),
    )
    assert results[0] is True and [r.version for r in results[1:]] == [3] * 8
    # first: 1 script + 8 x (ZADD + EVALSHA); then SCRIPT LOAD + 8 EVALSHA
    assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (2, 17 + 9)
    scripts = await store.client.script_exists(COMMIT.sha)
    assert scripts == [True]
    claimed = []
    for k in await store.queues.due(CLOCK, 2_000):
        claimed += [c.item for c in await store.queues.claim(CLOCK, k, 2_000, 1_000, 100)]
    assert sorted(claimed) == sorted(["warm", "other", *ids])  # the queue commands ran once


async def test_a_batch_of_outbox_takes_loads_its_script_once_where_it_was_flushed(
    redis_store: RedisStore,
) -> None:
    """Batched outbox takes on a server that lost its scripts (a restart): every call is
    refused with NOSCRIPT in one round trip, then SCRIPT LOAD and all of them again in one."""
    for m in ("m1", "m2", "m3"):
        await new_match(redis_store, m, outbox=[m.encode()])
    await redis_store.client.script_flush()
    before = redis_store.stats.round_trips
    taken = await redis_store.operators.outbox_take(["m1", "m2", "m3"], "tok", 10_000, 10)
    assert taken == [[b"m1"], [b"m2"], [b"m3"]]
    assert redis_store.stats.round_trips - before == 2


async def test_script_flushes_during_a_run_of_batches_cost_no_commit(
    redis_stores: Callable[..., RedisStore], clean_redis_url: str
) -> None:
    """Commits keep going in batches while another client flushes the script cache again
    and again: every commit is applied once, in order, none fails."""
    store = redis_stores(clean_redis_url)  # its log keeps every event
    ids = [f"m{i}" for i in range(8)]
    for m in ids:
        await new_match(store, m)
    admin = aioredis.Redis.from_url(clean_redis_url)
    flushes = 0

    async def flusher() -> None:
        nonlocal flushes
        while flushes < 20:
            await admin.script_flush()
            flushes += 1
            await asyncio.sleep(0.002)

    async def drive(m: str) -> int:
        version = 2
        while flushes < 20 or version < 42:
            version = (await store.matches.commit(step(m, version))).version
        return version

    try:
        _, *done = await asyncio.gather(flusher(), *(drive(m) for m in ids))
        stats = await admin.info("commandstats")
    finally:
        await admin.aclose()
    assert stats["cmdstat_script|load"]["calls"] >= 2  # the batches met NOSCRIPT and loaded again
    for m, version in zip(ids, done, strict=True):
        events = await store.matches.read_events(m, 0, 10_000)
        assert isinstance(events, list) and [e for _, e in events][2:] == [
            b"ev-%d" % v for v in range(3, version + 1)
        ]


async def test_a_sender_cancelled_mid_batch_leaves_the_others_answered(redis_store: RedisStore) -> None:
    """The first caller of a turn sends the batch; cancelled while it waits for the replies
    (or before it sent), it hands the other calls to a task that sends them again: each
    gets its answer, and each commit is applied once."""
    store = redis_store
    ids = [f"m{i}" for i in range(5)]
    for m in ids:
        await new_match(store, m)
    await play(store, "m0", 2, 1)  # the script is loaded, a connection is open
    tasks = [asyncio.ensure_future(store.matches.commit(step(m, 3 if m == "m0" else 2))) for m in ids]
    await asyncio.sleep(0)  # the first caller yields, the others queue their calls
    await asyncio.sleep(0)  # the first caller has sent the batch and waits for its replies
    tasks[0].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError)
    assert all(isinstance(r, CommitResult) and r.version == 3 for r in results[1:]), results
    for m in ids[1:]:
        assert await store.matches.read_events(m, 2, 10) == [(3, b"ev-3")]


async def test_scripts_of_the_other_ports_share_the_batch(redis_store: RedisStore) -> None:
    store = redis_store
    await new_match(store)
    await store.queues.add(CLOCK, "warm", 1)
    await store.documents.put("league", "warm", 0, b"")
    await play(store, "m1", 2, 1)
    before = store.stats.round_trips
    await asyncio.gather(
        store.matches.commit(step("m1", 3)),
        store.queues.add(CLOCK, "x", 5),
        store.documents.put("league", "l1", 0, b"doc"),
    )
    assert store.stats.round_trips - before == 1


async def test_with_wait_a_batch_ends_with_one_wait_and_counts_each_short_commit(
    clean_redis_url: str,
) -> None:
    """WAIT on a server without replicas: every commit is applied and answered after the
    timeout, and counted as short; a batch of them waits once."""
    store = open_redis(clean_redis_url, StoreSettings(wait_replicas=1, wait_timeout_ms=20))
    try:
        version = await new_match(store, "m1")
        assert store.stats.wait_short == 1  # the create waited too
        res = await store.matches.commit(step("m1", version))
        assert res.version == version + 1 and store.stats.wait_short == 2
        await new_match(store, "m2")
        await new_match(store, "m3")
        before = (store.stats.round_trips, store.stats.commands)
        t0 = time.monotonic()
        await asyncio.gather(store.matches.commit(step("m2", 2)), store.matches.commit(step("m3", 2)))
        assert time.monotonic() - t0 < 1
        assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (1, 3)
        assert store.stats.wait_short == 6
    finally:
        await store.close()


# ------------------------------------------------------------------------------ layout, counts


async def test_hiredis_packs_the_adapters_commands_as_redis_py_does(
    redis_store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch packs its commands with hiredis's pack_command: for every command a create,
    commits (binary, non-ASCII, empty, negative arguments), queue and document calls send,
    the bytes are redis-py's own packer's."""
    sent: list[tuple[Any, ...]] = []
    exchange = pipelines._exchange

    async def recording(conn: Any, commands: list[tuple[Any, ...]], **how: Any) -> list[Any]:
        sent.extend(commands)
        return await exchange(conn, commands, **how)

    monkeypatch.setattr(pipelines, "_exchange", recording)
    blob = bytes(range(256)) + "ümlaut €".encode()
    await new_match(redis_store, "m-ü", wake=-5, relay=RelayWake(7, blob))
    await redis_store.client.script_flush()  # the next batch loads its script again
    await redis_store.matches.commit(
        Commit("m-ü", 2, blob, [blob, b""], request_id="r ü", reply=blob, status="x")
    )
    await redis_store.queues.add(CLOCK, "ü", -1, blob)
    await redis_store.documents.put("league", "ü", 0, blob)
    assert {c[0] for c in sent} == {"EVALSHA", "ZADD", "HSET", "SCRIPT"}
    packer = Connection()
    for command in sent:
        assert hiredis.pack_command(command) == b"".join(packer.pack_command(*command)), command


async def test_redis_keys_share_one_hash_tag(redis_store: RedisStore) -> None:
    keys = redis_store.keys.match("abc")
    for key in [*keys.script_keys(), keys.presence, keys.relay, keys.live]:
        assert key.split("{", 1)[1].split("}", 1)[0] == "abc"
    assert keys.match == "truco:{abc}:match" and keys.requests == "truco:{abc}:req"
    r = redis_store.client
    await new_match(redis_store, "abc")
    assert await r.type(keys.events) == b"stream"
    assert [eid for eid, _ in await r.xrange(keys.events)] == [b"1-0", b"2-0"]
    assert await r.hget(keys.match, "version") == b"2"


async def test_a_match_written_in_the_layout_of_old_is_read_and_committed(redis_store: RedisStore) -> None:
    """Data in the key layout the store of 0.2 wrote (its hash, its stream, no head) loads,
    lists and takes commits: the layout is unchanged."""
    r = redis_store.client
    await r.hset(
        "truco:{old}:match",
        mapping={
            "version": 1, "state": b"s1", "meta": b"meta", "status": "playing", "owner": "tenant-a",
            "created_at": "100.0", "updated_at": "100.0", "sort_key": "000000000100000:old",
            "summary": b"sum",
        },
    )  # fmt: skip
    await r.xadd("truco:{old}:events", {"e": b"first"}, id="1-0")
    await r.zadd("truco:owner:{tenant-a}:matches", {"000000000100000:old": 0})  # shard 0: the one-set layout
    snap = await redis_store.matches.load("old")
    assert snap is not None and (snap.version, snap.state, snap.status) == (1, b"s1", "playing")
    page, _ = await redis_store.matches.list_matches("tenant-a", None, 10, None)
    assert [(e.match_id, e.version) for e in page] == [("old", 1)]
    assert (await redis_store.matches.commit(step("old", 1))).version == 2
    assert await redis_store.matches.read_events("old", 0, 10) == [(1, b"first"), (2, b"ev-2")]


async def test_the_redis_store_records_its_latency_per_operation(clean_redis_url: str) -> None:
    from prometheus_client import REGISTRY

    def count(op: str) -> float:
        return REGISTRY.get_sample_value("truco_redis_seconds_count", {"operation": op}) or 0.0

    before = {op: count(op) for op in ("create", "load", "commit", "read_events")}
    store = open_redis(clean_redis_url)
    try:
        await new_match(store, "m1", n_events=1)
        await store.matches.load("m1")
        await store.matches.commit(Commit("m1", 1, b"s1", [b"e2"]))
        await store.matches.read_events("m1", 0, 10)
    finally:
        await store.close()
    assert all(count(op) == before[op] + 1 for op in before)


async def test_redis_counts_each_script_call_once(redis_store: RedisStore) -> None:
    """Every call below is one script: one round trip, one command (a call that also counted
    itself showed two)."""
    store = redis_store
    shard = store.keys.queue(CLOCK).all_shards()[0]

    async def calls(item: str) -> None:
        await store.queues.add(CLOCK, item, 5000)
        await store.queues.claim(CLOCK, shard, 10_000, 1000, 10)
        await store.queues.release(CLOCK, [(item, b"")])
        await store.queues.due(CLOCK, 10_000)

    await calls("warm")  # the scripts are loaded (a first call also sends SCRIPT LOAD)
    before = (store.stats.round_trips, store.stats.commands)
    await calls("m1")
    assert (store.stats.round_trips - before[0], store.stats.commands - before[1]) == (4, 4)


# ------------------------------------------------------------------------------ faults


async def test_an_error_reply_is_store_unavailable_at_once_never_a_redis_exception(
    redis_store: RedisStore,
) -> None:
    r = redis_store.client
    await r.set("truco:{m1}:match", b"not a hash")  # WRONGTYPE for every read and script
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable, match="load") as info:
        await redis_store.matches.load("m1")
    assert "WRONGTYPE" in str(info.value) and time.monotonic() - t0 < 1  # not retried
    with pytest.raises(StoreUnavailable, match="commit"):
        await redis_store.matches.commit(step("m1", 0))
    assert redis_store.stats.retries == 0


async def test_a_paused_server_fails_each_attempt_by_the_socket_timeout_then_is_unavailable() -> None:
    """A server that stops answering (SIGSTOP) fails each attempt after the URL's
    socket_timeout (a timeout around the attempt: redis-py has none of its own on the
    adapter's connections) and the operation after retry_seconds."""
    proc = start_redis(host="127.0.0.1")
    store = open_redis(f"{proc.url}?socket_timeout=0.2", StoreSettings(retry_seconds=0.6))
    try:
        await new_match(store)
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises(StoreUnavailable, match="commit"):
                await store.matches.commit(step("m1", 2))
            assert 0.6 <= time.monotonic() - t0 < 2.5
            assert store.stats.retries >= 1
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        res = await store.matches.commit(step("m1", 2))  # the server is back: at most once
        assert res.version == 3
    finally:
        await store.close()
        proc.stop()


def test_the_redis_py_api_the_adapter_relies_on_is_there() -> None:
    """The adapter uses redis-py's public classes below the clients (a pool's connections,
    a cluster node's connections, the slot map) and hiredis's packer. On a cluster an
    AttributeError is retried as redis-py's topology race, so a release that drops one of
    these would show as StoreUnavailable after retry_seconds: this fails at once instead."""
    import inspect

    from redis.asyncio import BlockingConnectionPool, ConnectionPool
    from redis.asyncio.cluster import ClusterNode, NodesManager, RedisCluster
    from redis.asyncio.sentinel import SentinelConnectionPool

    wanted = {
        Connection: ["send_packed_command", "read_response", "disconnect", "is_connected"],
        ConnectionPool: ["get_connection", "release", "disconnect"],
        BlockingConnectionPool: ["get_connection", "release"],
        ClusterNode: ["acquire_connection", "release", "disconnect_if_needed"],
        RedisCluster: ["get_node_from_key", "initialize", "execute_command", "keyslot"],
        NodesManager: ["initialize"],
    }
    for cls, names in wanted.items():
        for name in names:
            assert hasattr(cls, name), f"redis-py's {cls.__name__} has no {name} any more"
    assert "check_health" in inspect.signature(Connection.send_packed_command).parameters
    pool = SentinelConnectionPool("m", sentinel_manager=object())
    assert (pool.service_name, pool.connection_kwargs.get("socket_timeout", None)) == ("m", None)
    assert hiredis.pack_command(("PING",)) == b"*1\r\n$4\r\nPING\r\n"


async def test_calls_resent_in_a_task_fail_when_the_store_closes_before_it_starts(
    redis_store: RedisStore,
) -> None:
    """A cancelled sender hands its batch's other calls to a task; when the store closes
    before that task has run, each call still gets its outcome (StoreUnavailable) instead
    of leaving its caller waiting."""
    batcher = redis_store._batcher
    call = pipelines.ScriptCall(COMMIT, ["k"], [], "commit")
    call.future = asyncio.get_running_loop().create_future()
    batcher._in_task([call])
    await batcher.close()
    assert isinstance(call.future.exception(), StoreUnavailable)
