"""The Redis adapter on a Redis Cluster and a Sentinel group, beyond the shared contract:
routing, script reloads, the cluster stream hub following slot moves and failovers, the
check of every followed stream after a reconnect (lost or rewritten events reported as a
gap), the commit token that keeps a worker from writing on a lost state, WAIT, and the
retries that carry a commit across a failover, then give up as StoreUnavailable.

Real processes on loopback (the session's cluster and Sentinel group, tests/helpers); a
failover takes a few seconds (1 s failure detection in the fixtures).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from redis.crc import key_slot
from redis.exceptions import ResponseError

from tests.helpers.proxy import Proxy
from tests.storage.support import Follower, entry, new_match, play
from truco_server.ports.errors import StoreUnavailable, VersionConflict
from truco_server.ports.matches import Commit, NewMatch
from truco_server.stores.redis import RedisStore, open_redis
from truco_server.stores.redis.cluster_feed import ClusterStreamHub
from truco_server.stores.redis.feed import RedisStreamHub
from truco_tools.redis_cluster import ClusterNode, LocalRedisCluster, LocalSentinelGroup
from truco_tools.redis_proc import free_port

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]


# ------------------------------------------------------------------------------ helpers
async def dump_match(r: Any, store: RedisStore, match_id: str) -> dict[str, bytes]:
    keys = store.keys.match(match_id)
    return {k: await r.dump(k) for k in (keys.match, keys.events, keys.requests) if await r.exists(k)}


async def restore_match(r: Any, store: RedisStore, match_id: str, dumps: dict[str, bytes]) -> None:
    """Put a match back as it was when dumped: what a replica promoted before it received
    the later commits holds."""
    keys = store.keys.match(match_id)
    await r.delete(keys.match, keys.events, keys.requests)
    for key, raw in dumps.items():
        await r.restore(key, 0, raw, replace=True)


def settle_cluster(cluster: LocalRedisCluster) -> None:
    for primary in cluster.primaries():
        cluster.wait_replicated(primary)


def match_ids_on(cluster: LocalRedisCluster, primary: ClusterNode, count: int, prefix: str) -> list[str]:
    ranges = next(v.slots for v in cluster.topology() if v.node_id == primary.node_id)
    found: list[str] = []
    i = 0
    while len(found) < count:
        mid = f"{prefix}{i}"
        slot = key_slot(mid.encode())
        if any(a <= slot <= b for a, b in ranges):
            found.append(mid)
        i += 1
    return found


# ------------------------------------------------------------------------------ cluster routing
async def test_cluster_commits_go_to_each_slots_primary_in_one_round_trip(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    store = redis_stores(redis_cluster.url)
    assert store.kind == "cluster"
    mids = [f"m{i}" for i in range(12)]
    for mid in mids:
        await play(store, mid, await new_match(store, mid), 1)  # warm up: scripts loaded
    owners = {redis_cluster.primary_for_key(store.keys.match(mid).match).node_id for mid in mids}
    assert len(owners) == 3  # the matches spread over every primary
    before = store.stats.round_trips
    for mid in mids:
        await play(store, mid, 3, 2)
    assert store.stats.round_trips - before == 2 * len(mids)


async def test_a_multi_stream_xread_across_slots_is_refused_even_on_one_node(
    redis_cluster: LocalRedisCluster,
) -> None:
    """Why the cluster hub uses doorbells: every match is its own slot, and XREAD over two
    slots fails with CROSSSLOT even when one node serves both."""
    primary = redis_cluster.primaries()[0]
    a, b = match_ids_on(redis_cluster, primary, 2, "x")
    assert key_slot(a.encode()) != key_slot(b.encode())
    with primary.client() as c:
        c.xadd(f"truco:{{{a}}}:events", {"e": "1"}, id="1-0")
        with pytest.raises(ResponseError, match="same slot"):  # CROSSSLOT
            c.xread({f"truco:{{{a}}}:events": "0-0", f"truco:{{{b}}}:events": "0-0"})


async def test_cluster_commit_loads_the_script_again_where_it_was_flushed(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    store = redis_stores(redis_cluster.url)
    version = await play(store, "m1", await new_match(store, "m1"), 1)
    await store.client.script_flush()  # on every primary, as after a restart
    before = store.stats.round_trips
    assert await play(store, "m1", version, 1) == version + 1
    assert store.stats.round_trips - before == 2  # NOSCRIPT, then SCRIPT LOAD + EVALSHA
    assert await play(store, "m1", version + 1, 1) == version + 2


async def test_redis_py_cluster_register_script_reloads_after_a_flush(
    redis_cluster: LocalRedisCluster,
) -> None:
    """redis-py's own AsyncScript on the async cluster client survives SCRIPT FLUSH on
    every primary (the intermittent NoScriptError reported against 7.2 does not show on
    the installed version); the adapter does not depend on it (a node that answers NOSCRIPT
    gets SCRIPT LOAD in the next pipeline the adapter sends it)."""
    store = open_redis(redis_cluster.url)
    try:
        rc = store.client
        script = rc.register_script("return redis.call('INCR', KEYS[1])")
        keys = [f"k{{{i}}}" for i in range(20)]
        assert [await script(keys=[k]) for k in keys] == [1] * 20
        await rc.script_flush()
        assert [await script(keys=[k]) for k in keys] == [2] * 20
    finally:
        await store.close()


async def test_cluster_stream_follows_a_slot_moved_to_another_node(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    writer, reader = redis_stores(redis_cluster.url), redis_stores(redis_cluster.url)
    version = await new_match(writer, "m1")
    follower = Follower(reader, reader.matches.subscribe("m1", version))
    slot = key_slot(b"m1")
    source = redis_cluster.primary_for_slot(slot)
    target = next(p for p in redis_cluster.primaries() if p.node_id != source.node_id)
    await follower.wait_for(version)
    version = await play(writer, "m1", version, 3)
    move = asyncio.ensure_future(asyncio.to_thread(redis_cluster.move_slot, slot, target))
    while not move.done():  # commits during the migration: served by ASK, then MOVED
        version = await play(writer, "m1", version, 1)
    await move
    version = await play(writer, "m1", version, 5)
    await follower.wait_for(version)
    follower.assert_contiguous_or_reported(2)
    assert follower.gaps == [] and follower.versions == list(range(3, version + 1))
    hub = reader.matches.hub
    assert isinstance(hub, ClusterStreamHub) and hub.node_of("m1") == f"127.0.0.1:{target.port}"
    await follower.close()
    redis_cluster.move_slot(slot, source)  # as the other tests expect it


# ------------------------------------------------------------------------------ failovers
async def run_through_failover(
    writer: RedisStore,
    reader: RedisStore,
    mids: list[str],
    failover: Callable[[], Any],
    settle: Callable[[], Any],
) -> tuple[dict[str, Follower], dict[str, list[tuple[int, bytes]]]]:
    """Commit on every match without pause while ``failover`` runs (in a thread), then a
    bit more; return the followers and each match's acknowledged (version, event)."""
    versions = {mid: await new_match(writer, mid) for mid in mids}
    await asyncio.to_thread(settle)  # the matches themselves exist on the replicas
    followers = {mid: Follower(reader, reader.matches.subscribe(mid, versions[mid])) for mid in mids}
    for mid in mids:
        await followers[mid].wait_for(versions[mid])
    acked: dict[str, list[tuple[int, bytes]]] = {mid: [] for mid in mids}
    done = asyncio.Event()

    async def drive(mid: str) -> None:
        n = 0
        while not done.is_set():
            event = f"{mid}-ev-{n}".encode()
            try:
                res = await writer.matches.commit(
                    Commit(mid, versions[mid], b"s", [event], request_id=f"{mid}-r{n}", reply=b"ok")
                )
            except VersionConflict as exc:  # the state this writer knew was lost: go on from the store's
                versions[mid] = exc.current_version
                continue
            if not res.duplicate:
                acked[mid].append((res.version, event))
            versions[mid] = res.version
            n += 1
            await asyncio.sleep(0.005)

    drivers = [asyncio.ensure_future(drive(mid)) for mid in mids]
    await asyncio.sleep(0.3)
    await asyncio.to_thread(failover)
    await asyncio.sleep(0.5)
    done.set()
    await asyncio.gather(*drivers)
    for mid in mids:
        await followers[mid].wait_for(versions[mid])
    return followers, acked


async def check_streams(
    writer: RedisStore, followers: dict[str, Follower], acked: dict[str, list[tuple[int, bytes]]]
) -> tuple[int, int]:
    """Every stream contiguous between reported gaps and at the stored end, and a stream
    that reported no gap got exactly the stored events; returns (gaps reported,
    acknowledged commits missing from the surviving logs). A lost commit need not show as a
    gap: a reader that had not received it yet sees the surviving history only."""
    gaps = lost = 0
    for mid, follower in followers.items():
        follower.assert_contiguous_or_reported(2)
        log = await writer.matches.read_events(mid, 0, 10_000)
        assert isinstance(log, list)
        stored = dict(log)
        assert follower.sub.last_version == max(stored)
        gaps += len(follower.gaps)
        lost += sum(1 for v, e in acked[mid] if stored.get(v) != e)
        if not follower.gaps:  # nothing reported: what it got is exactly the stored log
            assert {v: follower.payloads[v] for v in follower.versions} == {
                v: stored[v] for v in follower.versions
            }
    return gaps, lost


async def test_cluster_primary_killed_mid_run_streams_and_commits_carry_on(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    writer = redis_stores(redis_cluster.url, retry_seconds=20)
    reader = redis_stores(redis_cluster.url)
    victim = redis_cluster.primaries()[0]
    mids = [*match_ids_on(redis_cluster, victim, 4, "fo"), "other1", "other2"]
    followers, acked = await run_through_failover(
        writer,
        reader,
        mids,
        lambda: redis_cluster.kill_primary(victim),
        lambda: settle_cluster(redis_cluster),
    )
    gaps, lost = await check_streams(writer, followers, acked)
    print(f"cluster failover: {sum(map(len, acked.values()))} commits, {gaps} gaps reported, {lost} lost")
    assert writer.stats.retries > 0  # commits to the dead primary's slots waited for its replica
    for follower in followers.values():
        await follower.close()


async def test_sentinel_failover_streams_and_commits_carry_on(
    redis_sentinel: LocalSentinelGroup, redis_stores: Callable[..., RedisStore]
) -> None:
    writer = redis_stores(redis_sentinel.url, retry_seconds=20)
    reader = redis_stores(redis_sentinel.url)
    assert writer.kind == "sentinel"
    followers, acked = await run_through_failover(
        writer, reader, ["s1", "s2", "s3"], redis_sentinel.kill_primary, redis_sentinel.wait_replicated
    )
    gaps, lost = await check_streams(writer, followers, acked)
    print(f"sentinel failover: {sum(map(len, acked.values()))} commits, {gaps} gaps reported, {lost} lost")
    assert writer.stats.retries > 0
    assert isinstance(reader.matches.hub, RedisStreamHub)
    for follower in followers.values():
        await follower.close()


async def test_with_wait_every_acknowledged_commit_survives_a_primary_kill(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    """WAIT 1: a commit is answered once the (only) replica has it, and the replica is what
    gets promoted, so nothing answered is lost to this failover (the guarantee stops there:
    docs/operations.md, "Durability")."""
    writer = redis_stores(redis_cluster.url, retry_seconds=20, wait_replicas=1, wait_timeout_ms=500)
    reader = redis_stores(redis_cluster.url)
    victim = redis_cluster.primaries()[0]
    mids = match_ids_on(redis_cluster, victim, 3, "w")
    followers, acked = await run_through_failover(
        writer,
        reader,
        mids,
        lambda: redis_cluster.kill_primary(victim),
        lambda: settle_cluster(redis_cluster),
    )
    gaps, lost = await check_streams(writer, followers, acked)
    assert lost == 0 and gaps == 0
    # after the promotion the new primary has no replica until the killed node returns:
    # those commits are applied and answered after the timeout, and counted
    print(f"WAIT 1: {sum(map(len, acked.values()))} commits, {writer.stats.wait_short} answered short")
    for follower in followers.values():
        await follower.close()


async def test_cluster_commit_in_flight_when_its_primary_dies_lands_exactly_once(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    """The primary stops with the commit unread in its socket, its replica takes over, then
    it is killed: the store sends the commit again to the new primary, where it lands once;
    a client retry with the same request id gets that first result."""
    store = redis_stores(redis_cluster.url, retry_seconds=20)
    victim = redis_cluster.primaries()[0]
    (mid,) = match_ids_on(redis_cluster, victim, 1, "inflight")
    version = await play(store, mid, await new_match(store, mid), 2)
    replica = redis_cluster.replicas_of(victim)[0]
    redis_cluster.wait_replicated(victim)  # the match itself must survive the failover
    os.kill(victim.pid, signal.SIGSTOP)
    try:
        pending = asyncio.ensure_future(
            store.matches.commit(Commit(mid, version, b"x", [b"the-one"], request_id="once", reply=b"r"))
        )
        await asyncio.sleep(0.2)
        assert not pending.done()
        deadline = time.monotonic() + 20
        while replica.role() != "master":
            assert time.monotonic() < deadline, "the replica was not promoted"
            await asyncio.sleep(0.1)
    finally:
        victim.process.kill()  # SIGKILL works on a stopped process
    res = await asyncio.wait_for(pending, 20)
    assert (res.version, res.duplicate) == (version + 1, False)
    again = await store.matches.commit(
        Commit(mid, version, b"x", [b"the-one"], request_id="once", reply=b"r")
    )
    assert (again.version, again.duplicate, again.reply) == (version + 1, True, b"r")
    log = await store.matches.read_events(mid, 0, 100)
    assert isinstance(log, list) and [e for _, e in log].count(b"the-one") == 1


# ------------------------------------------------------------------------------ lost writes
async def kill_hub_connections(store: RedisStore, match_id: str) -> None:
    """Drop the hub's reader connection(s), as a failover does."""
    hub = store.matches.hub
    if isinstance(hub, ClusterStreamHub):
        client = hub.subscriber_client(match_id)
        assert client is not None
        await client.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
    else:
        assert isinstance(hub, RedisStreamHub) and hub.reader_id is not None
        await store.client.client_kill_filter(_id=hub.reader_id)


async def test_events_lost_by_a_failover_are_reported_as_a_gap(
    topology_url: str, redis_stores: Callable[..., RedisStore]
) -> None:
    """A reader delivered versions 5 and 6; then the match is what a replica promoted
    before receiving them holds (version 4), the reader's connection drops, and other
    events take versions 5.. : the reader's subscription reports a gap (LogTrimmed, so the
    service sends a snapshot) and then follows the surviving history."""
    writer, reader = redis_stores(topology_url), redis_stores(topology_url)
    version = await play(writer, "m1", await new_match(writer, "m1"), 2)  # 4
    dumps = await dump_match(writer.client, writer, "m1")
    follower = Follower(reader, reader.matches.subscribe("m1", version))
    await follower.wait_for(version)
    await asyncio.sleep(0.1)
    await play(writer, "m1", version, 2)  # 5, 6: delivered, then lost
    await follower.wait_for(6)
    await restore_match(writer.client, writer, "m1", dumps)
    await kill_hub_connections(reader, "m1")
    other = redis_stores(topology_url)  # another worker, which never saw 5 and 6
    await other.matches.commit(Commit("m1", 4, b"s", [b"new-5"], request_id="n5"))
    await other.matches.commit(Commit("m1", 5, b"s", [b"new-6"], request_id="n6"))
    await other.matches.commit(Commit("m1", 6, b"s", [b"new-7"], request_id="n7"))
    await follower.wait_for(7)
    assert len(follower.gaps) == 1 and follower.gaps[0][0] == 6  # reported at the lost version 6
    await other.matches.commit(Commit("m1", 7, b"s", [b"new-8"], request_id="n8"))
    await follower.wait_for(8)
    follower.assert_contiguous_or_reported(4)
    assert follower.payloads[8] == b"new-8"  # the surviving history from the snapshot on
    assert reader.matches.hub is not None and reader.matches.hub.gaps == 1
    await follower.close()


class HeldReads:
    """What :func:`hold_hub_reads` did: how many reads it held (a test checks that the hub
    was held, not just slow), and how to put the hub's own client back."""

    def __init__(self, restore: Callable[[], None]) -> None:
        self.count = 0
        self.restore = restore


async def hold_hub_reads(hub: RedisStreamHub | ClusterStreamHub, gate: asyncio.Event) -> HeldReads:
    """Keep the hub from reading the streams until ``gate`` is set (as a busy worker's
    hub may lag behind its subscriptions' own catch-up reads)."""
    if isinstance(hub, ClusterStreamHub):
        # the hub reads the streams in pipelines of its cluster client: its own client is a
        # stand-in whose pipelines are sent once the gate is open
        cluster = hub._rc

        def held_pipeline(*args: Any, **kwargs: Any) -> Proxy:
            pipe = cluster.pipeline(*args, **kwargs)

            async def held_execute(*args: Any, **kwargs: Any) -> Any:
                if not gate.is_set():
                    held.count += 1
                await gate.wait()
                return await pipe.execute(*args, **kwargs)

            return Proxy(pipe, execute=held_execute)

        def restore_cluster() -> None:
            hub._rc = cluster

        held = HeldReads(restore_cluster)
        hub._rc = Proxy(cluster, pipeline=held_pipeline)  # type: ignore[assignment]
        return held
    # the hub sends its reads (XREAD, packed once) straight on its reader's one connection
    # (RedisStreamHub._send): that connection is a stand-in whose sends wait for the gate.
    # The reader's own commands (CLIENT ID) go through the connection itself, unheld.
    reader = hub._reader
    await reader.initialize()
    connection = reader.connection
    assert connection is not None

    async def held_send(*args: Any, **kwargs: Any) -> Any:
        if not gate.is_set():
            held.count += 1
        await gate.wait()
        return await connection.send_packed_command(*args, **kwargs)

    def restore_connection() -> None:  # the pool takes back only the connection it gave
        reader.connection = connection

    held = HeldReads(restore_connection)
    reader.connection = Proxy(connection, send_packed_command=held_send)  # type: ignore[assignment]
    return held


async def test_a_gap_is_reported_for_events_a_subscription_read_from_the_log_itself(
    topology_url: str, redis_stores: Callable[..., RedisStore]
) -> None:
    """A subscription resumes at version 4 while 5 and 6 are in the log: its own catch-up
    reads them, before its worker's hub has read the stream. A failover then loses 5 and
    6, the hub's connection drops, and other events take versions 5..7: the subscription
    reports the gap, because what it read moved the hub's cursor too, and the hub's check
    compares the stream with that. (Were the cursor left at 4, the check would find the
    stream continuing it, and version 7 of the new history would follow the lost 6.)"""
    writer, reader = redis_stores(topology_url), redis_stores(topology_url)
    version = await play(writer, "m1", await new_match(writer, "m1"), 2)  # 4
    dumps = await dump_match(writer.client, writer, "m1")
    await play(writer, "m1", version, 2)  # 5, 6: read by the subscription, then lost
    sub = reader.matches.subscribe("m1", version)
    hub = reader.matches.hub
    assert hub is not None
    gate = asyncio.Event()
    held = await hold_hub_reads(hub, gate)
    follower = Follower(reader, sub)
    await follower.wait_for(6)
    deadline = time.monotonic() + 20
    connected = hub.node_of if isinstance(hub, ClusterStreamHub) else lambda mid: hub.reader_id
    while connected("m1") is None or not held.count:  # its connection, to drop; held
        assert time.monotonic() < deadline, "the hub never connected, or never tried to read"
        await asyncio.sleep(0.02)
    assert hub.cursor("m1") == 6  # the subscription's read moved the hub's cursor
    await restore_match(writer.client, writer, "m1", dumps)
    await kill_hub_connections(reader, "m1")
    gate.set()
    other = redis_stores(topology_url)
    for v in (5, 6, 7):
        ev = [b"new-%d" % v]
        await other.matches.commit(Commit("m1", v - 1, b"s", ev, request_id=f"n{v}"))
    await follower.wait_for(7)
    assert [gap[0] for gap in follower.gaps] == [6]  # reported at the lost version 6
    await other.matches.commit(Commit("m1", 7, b"s", [b"new-8"], request_id="n8"))
    await follower.wait_for(8)
    follower.assert_contiguous_or_reported(4)
    assert follower.payloads[8] == b"new-8"  # the surviving history from the snapshot on
    await follower.close()
    held.restore()


async def test_a_worker_holding_a_lost_state_cannot_commit_on_top_of_its_replacement(
    topology_url: str, redis_stores: Callable[..., RedisStore]
) -> None:
    """The commit token: worker A committed version 3, which a failover lost; worker B
    committed another version 3. A, still holding its own version 3, commits expecting
    version 3 -- the version matches, the token does not: a conflict, not a corrupt write."""
    a, b = redis_stores(topology_url), redis_stores(topology_url)
    version = await new_match(a, "m1")  # 2
    dumps = await dump_match(a.client, a, "m1")
    await a.matches.commit(Commit("m1", version, b"a3", [b"a3"], request_id="a3"))
    await restore_match(a.client, a, "m1", dumps)  # the failover lost it
    await b.matches.commit(Commit("m1", version, b"b3", [b"b3"], request_id="b3"))
    with pytest.raises(VersionConflict) as info:
        await a.matches.commit(Commit("m1", 3, b"a4", [b"a4"], request_id="a4"))
    assert info.value.current_version == 3
    snap = await a.matches.load("m1")  # A reloads (the service does on a conflict) and goes on from B's
    assert snap is not None and snap.state == b"b3"
    assert (await a.matches.commit(Commit("m1", 3, b"a4", [b"a4"], request_id="a4"))).version == 4


# ------------------------------------------------------------------------------ giving up
async def test_an_unreachable_redis_answers_store_unavailable_after_the_retry_time(
    redis_stores: Callable[..., RedisStore],
) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    store = redis_stores(dead, retry_seconds=0.3)
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable, match="commit"):
        await store.matches.commit(Commit("m1", 0, b"", [], request_id="r"))
    assert 0.3 <= time.monotonic() - t0 < 3
    assert store.stats.retries >= 2
    cluster = redis_stores(f"redis+cluster://127.0.0.1:{free_port()}", retry_seconds=0.3)
    with pytest.raises(StoreUnavailable):
        await cluster.matches.load("m1")


async def test_owner_index_spreads_over_shards_and_lists_in_order(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    store = redis_stores(redis_cluster.url, owner_index_shards=8)
    for i in range(40):
        await store.matches.create(NewMatch(entry(f"m{i}", created_at=100.0 + i), b"", b""))
    sizes = [await store.client.zcard(k) for k in store.keys.owner_indexes("tenant-a")]
    assert sum(sizes) == 40 and sum(1 for n in sizes if n) >= 6
    slots = {key_slot(k.encode()) for k in store.keys.owner_indexes("tenant-a")}
    assert len(slots) == 8
    seen: list[str] = []
    token = None
    while True:
        page, token = await store.matches.list_matches("tenant-a", None, 7, token)
        seen += [e.match_id for e in page]
        if token is None:
            break
    assert seen == [f"m{i}" for i in range(39, -1, -1)]
    # raising the shard count later keeps every match listed
    wider = redis_stores(redis_cluster.url, owner_index_shards=16)
    page, _ = await wider.matches.list_matches("tenant-a", None, 100, None)
    assert [e.match_id for e in page] == seen


async def test_a_manual_cluster_failover_is_followed_without_a_gap(
    redis_cluster: LocalRedisCluster, redis_stores: Callable[..., RedisStore]
) -> None:
    """CLUSTER FAILOVER on a replica (how a primary is upgraded without downtime): commits
    follow the MOVED redirection, the stream moves its subscription to the new primary, and
    every event arrives once, in order."""
    writer, reader = redis_stores(redis_cluster.url), redis_stores(redis_cluster.url)
    version = await new_match(writer, "m1")
    follower = Follower(reader, reader.matches.subscribe("m1", version))
    await follower.wait_for(version)
    owner = redis_cluster.primary_for_key(writer.keys.match("m1").match)
    replica = redis_cluster.replicas_of(owner)[0]
    with replica.client() as c:
        assert c.execute_command("CLUSTER", "FAILOVER") in ("OK", b"OK", True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        version = await play(writer, "m1", version, 1)
        if replica.role() == "master" and owner.role() == "slave":
            break
        await asyncio.sleep(0.02)
    version = await play(writer, "m1", version, 5)
    await follower.wait_for(version)
    assert follower.gaps == [] and follower.versions == list(range(3, version + 1))
    await follower.close()
