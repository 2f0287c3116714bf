"""The service on the local Redis Cluster (3 primaries, 3 replicas), as deployed: `truco
serve` worker processes pointed at the cluster URL, bots over the public gRPC API.

* Many concurrent matches played to the end across three workers while a primary is
  SIGKILLed (its replica promoted) and a worker is SIGKILLed and started again: every match
  finishes, its stored log is whole, every client's stream is contiguous or reports its
  gap (counted and printed), no event is doubled. The CI form plays 40 matches
  (`make test`); the long form plays 200 (`pytest -m cluster tests/e2e/test_cluster.py -s`).
* What a client sees when the primary dies in the middle of its action (docs/operations.md,
  "Failover"): the call fails or is slow; a retry with the same request id lands exactly
  once.
* Clocked matches nobody plays, running through the same failover and worker restart: every
  expiry applied exactly once (each stored log equals the pure table's).

Real processes on loopback only; the failover takes a few seconds (1 s failure detection in
the test cluster).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.crc import key_slot

from tests.e2e.client import Created, Player, Stub, Tracker, act, create, get, server_state
from tests.e2e.stalled import any_expiry, check_stalled, clocked, wait_over
from truco_tools.cluster_load import ClusterBots, LoadStats, WorkerProcess, start_workers
from truco_tools.redis_cluster import LocalRedisCluster

WORKER_SETTINGS = {
    "TRUCO_EVENT_LOG_MAX_LEN": "100000",  # a resumed stream gets events, never a trimmed log
    "TRUCO_REDIS_RETRY_SECONDS": "20",  # longer than a failover of the test cluster
    "TRUCO_HEARTBEAT_INTERVAL_SECONDS": "2",
    "TRUCO_SCHEDULER_TICK_SECONDS": "0.05",
}


@pytest.fixture
def workers(redis_cluster: LocalRedisCluster, tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    started = start_workers(3, redis_cluster.url, tmp_path, settings=WORKER_SETTINGS)
    try:
        yield started
    finally:
        for w in started:
            w.stop()


async def until(
    condition: Callable[[], bool], timeout: float, what: str, explain: Callable[[], str] = str
) -> None:
    """Wait for ``condition``; on timeout fail with ``what`` and what ``explain()`` says."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}; {explain()}"
        await asyncio.sleep(0.05)


def log_tail(worker: WorkerProcess, lines: int = 30) -> str:
    text = worker.log_path.read_text(errors="replace") if worker.log_path.exists() else ""
    return f"worker {worker.index}'s log ends:\n" + "\n".join(text.splitlines()[-lines:])


STALLED = 6
"""Clocked matches nobody plays, created just before the failover: their expiries run on
through the failover and the worker's restart."""


async def campaign(
    cluster: LocalRedisCluster, workers: list[WorkerProcess], matches: int
) -> tuple[LoadStats, list[Created]]:
    """``matches`` matches, half of them at a time; once 15 % are done, ``STALLED`` clocked
    matches nobody plays and, as soon as their first expiry is applied, a primary killed;
    worker 2 killed and started again once 40 % are done. (With all of them at once, 40
    matches could all end during the failover's 2-3 s, and the worker's kill then broke no
    stream: seen once on a loaded machine.)"""
    stats = LoadStats()
    t0 = time.monotonic()
    async with (
        ClusterBots([w.address for w in workers], seed=matches, stats=stats) as bots,
        grpc.aio.insecure_channel(workers[0].address) as ch,
    ):
        play = asyncio.ensure_future(bots.run(matches, concurrency=max(1, matches // 2)))
        budget = 60 + matches

        def done(share: float) -> Callable[[], bool]:
            return lambda: play.done() or stats.matches_finished >= share * matches

        await until(done(0.15), budget, "15 % of the matches")
        stub = Stub(ch)
        stalled = [await create(stub, "paulista", 2, settings=clocked()) for _ in range(STALLED)]
        rc = aioredis_cluster(cluster)
        try:
            deadline = time.monotonic() + 20
            while not await any_expiry(rc, stalled):
                assert time.monotonic() < deadline, "no expiry applied before the failover"
                await asyncio.sleep(0.05)
        finally:
            await rc.aclose()
        failover = await asyncio.to_thread(cluster.kill_primary)
        killed, promoted = failover.killed.index, failover.promoted.index
        print(f"\nprimary node {killed} killed, node {promoted} primary after {failover.seconds:.1f} s")
        await until(done(0.4), budget, "40 % of the matches")
        victim = workers[1]
        victim.kill()
        print(f"worker {victim.index} SIGKILLed at {stats.matches_finished} matches finished")
        await asyncio.sleep(1.0)
        victim.start()
        await asyncio.to_thread(victim.wait_ready)
        print(f"worker {victim.index} started again")
        assert not play.done() or play.exception() is None
        await asyncio.wait_for(play, budget)
    print(f"{matches} matches in {time.monotonic() - t0:.1f} s: {stats.summary()}")
    return stats, stalled


async def check_clocks(
    cluster: LocalRedisCluster, workers: list[WorkerProcess], stalled: list[Created]
) -> None:
    """The stalled matches ended by forfeit with every expiry applied exactly once, across the
    failover and the worker's restart."""
    rc = aioredis_cluster(cluster)
    try:
        async with grpc.aio.insecure_channel(workers[2].address) as ch:
            stub = Stub(ch)
            await wait_over(stub, stalled, 60, rc)
            total = await check_stalled(stub, rc, stalled)
    finally:
        await rc.aclose()
    print(f"{len(stalled)} clocked matches: {total} expiries, each applied once")


def aioredis_cluster(cluster: LocalRedisCluster) -> AsyncRedisCluster:
    return AsyncRedisCluster(startup_nodes=[AsyncClusterNode(h, p) for h, p in cluster.startup_nodes])


def check_store(cluster: LocalRedisCluster, stats: LoadStats) -> None:
    """Every match finished at the version its clients saw last, its log whole 1..version."""
    with cluster.client() as rc:
        for mid, version in stats.final_versions.items():
            status, stored = rc.hmget(f"truco:{{{mid}}}:match", ["status", "version"])
            assert (status, int(stored)) == (b"finished", version), mid
            ids = [eid for eid, _ in rc.xrange(f"truco:{{{mid}}}:events")]
            assert ids == [f"{v}-0".encode() for v in range(1, version + 1)], mid


def check_streams(stats: LoadStats, matches: int) -> None:
    assert stats.matches_finished == matches
    assert stats.unreported_gaps == [], stats.unreported_gaps[:5]
    assert stats.duplicates == [], stats.duplicates[:5]
    assert stats.stream_breaks, "the worker kill broke no stream: the test did not test it"
    # the failover is absorbed by the store's retries: no call failed with a store fault
    assert not {k for k in [*stats.retries, *stats.stream_breaks] if "INTERNAL" in k}, stats.summary()


@pytest.mark.timeout(240)
async def test_40_matches_across_three_workers_through_a_failover_and_a_worker_restart(
    redis_cluster: LocalRedisCluster, workers: list[WorkerProcess]
) -> None:
    stats, stalled = await campaign(redis_cluster, workers, 40)
    check_streams(stats, 40)
    check_store(redis_cluster, stats)
    await check_clocks(redis_cluster, workers, stalled)


@pytest.mark.cluster
@pytest.mark.timeout(900)
async def test_200_matches_across_three_workers_through_a_failover_and_a_worker_restart(
    redis_cluster: LocalRedisCluster, workers: list[WorkerProcess]
) -> None:
    stats, stalled = await campaign(redis_cluster, workers, 200)
    check_streams(stats, 200)
    check_store(redis_cluster, stats)
    await check_clocks(redis_cluster, workers, stalled)


@pytest.mark.timeout(120)
async def test_primary_dies_mid_action_and_the_retry_lands_exactly_once(
    redis_cluster: LocalRedisCluster, workers: list[WorkerProcess]
) -> None:
    """The primary of the match's slot stops with the action's commit unread; the client's
    deadline passes (DEADLINE_EXCEEDED: it does not know whether the action happened); the
    replica is promoted; the stopped primary is killed. The client sends the same action
    with the same request id: it lands once, and sending it again answers the same."""
    async with grpc.aio.insecure_channel(workers[0].address) as ch:
        stub = Stub(ch)
        m = await create(stub, "paulista", 2)
        view = await get(stub, m.match_id, m.tokens[0])
        seat = view.observation.awaited[0]
        mine = await get(stub, m.match_id, m.tokens[seat])
        action = mine.observation.legal_actions[0]
        before = mine.observation.version
        victim = redis_cluster.primary_for_slot(key_slot(m.match_id.encode()))
        replica = redis_cluster.replicas_of(victim)[0]
        redis_cluster.wait_replicated(victim)  # the match itself must survive the failover
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            with pytest.raises(grpc.aio.AioRpcError) as first:
                await act(
                    stub,
                    m.match_id,
                    m.tokens[seat],
                    action,
                    rid="the-action",
                    expected_version=before,
                    timeout=1.5,
                )
            assert first.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            deadline = time.monotonic() + 30
            while replica.role() != "master":
                assert time.monotonic() < deadline, "the replica was not promoted"
                await asyncio.sleep(0.1)
        finally:
            victim.process.kill()
        retried = await act(
            stub, m.match_id, m.tokens[seat], action, rid="the-action", expected_version=before, timeout=30
        )
        assert retried.version > before
        assert [e.version for e in retried.events] == list(range(before + 1, retried.version + 1))
        again = await act(
            stub, m.match_id, m.tokens[seat], action, rid="the-action", expected_version=before, timeout=30
        )
        assert again.version == retried.version  # the first result, not a second action
        now = await get(stub, m.match_id, m.tokens[seat])
        assert now.observation.version == retried.version
    # and another worker agrees: the history holds that action once
    async with grpc.aio.insecure_channel(workers[2].address) as ch:
        other = await get(Stub(ch), m.match_id, m.tokens[seat])
        assert other.match.version == retried.version


def plays(legal: list[Any]) -> list[Any]:
    return [a for a in legal if a.HasField("play_card")]


@pytest.mark.timeout(120)
async def test_events_a_failover_lost_reach_the_client_as_a_snapshot_and_play_goes_on(
    redis_cluster: LocalRedisCluster, workers: list[WorkerProcess]
) -> None:
    """Seat 0's stream (on worker 3) saw seat 0 play a card, which the promoted replica never
    got: the match is put back as the replica held it, and the workers' subscriber
    connections drop (as when the primary dies). The stream then reports the gap -- a
    snapshot at the surviving version, lower than the one it saw -- and play continues from
    there, seat 0 playing another card this time, with views that match the stored state
    (no view made for the lost history is shown for the new one)."""
    rc = redis_cluster.client()
    r = aioredis_cluster(redis_cluster)
    c1 = grpc.aio.insecure_channel(workers[0].address)
    c3 = grpc.aio.insecure_channel(workers[2].address)
    try:
        s1, s3 = Stub(c1), Stub(c3)
        m = await create(s1, "paulista", 2)
        player = Player(s1, m, random.Random(3))
        while True:  # until seat 0 is to play, with two cards to choose from
            view = await get(s1, m.match_id, m.tokens[0])
            if view.observation.awaited[0] == 0 and len(plays(list(view.observation.legal_actions))) >= 2:
                break
            await player.step()
        kept = view.observation.version
        first, second = plays(list(view.observation.legal_actions))[:2]
        # every key of the match: a failover loses them together (one slot)
        keys = [f"truco:{{{m.match_id}}}:{k}" for k in ("match", "events", "req", "record", "outbox")]
        dumps = {k: rc.dump(k) for k in keys if rc.exists(k)}
        tracker = Tracker(s3, m.match_id, m.tokens[0], kept).start()
        lost = (await act(s1, m.match_id, m.tokens[0], first, rid="lost", expected_version=kept)).version
        await tracker.wait_version(lost)
        assert first.play_card.card not in tracker.obs.hand
        # put back at once, as a promotion does: a reader never sees the match missing
        with rc.get_redis_connection(rc.get_node_from_key(keys[0])).pipeline(transaction=True) as tx:
            if extra := [k for k in keys if k not in dumps]:
                tx.delete(*extra)
            for k, raw in dumps.items():
                tx.restore(k, 0, raw, replace=True)
            tx.execute()
        for primary in redis_cluster.primaries():
            with primary.client() as c:
                c.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        await until(
            lambda: tracker.snapshots >= 1,
            20,
            "the stream's gap report",
            lambda: (
                f"stream done={tracker.done} error={tracker.error!r} at version {tracker.version}; "
                + log_tail(workers[2])
            ),
        )
        snap = next(msg.update for msg in tracker.messages if msg.update.snapshot)
        assert snap.version == kept < lost  # the client learns it is ahead of the store
        assert first.play_card.card in snap.observation.hand  # and sees the surviving state
        # the same version number again, another history: seat 0 plays the other card
        done = await act(s1, m.match_id, m.tokens[0], second, rid="new", expected_version=kept)
        assert done.version == lost
        await tracker.wait_version(done.version)
        version, state = await server_state(r, m.match_id)
        assert version == done.version == tracker.version and state.hand is not None
        assert sorted(tracker.obs.hand) == sorted(state.hand.cards[0])
        assert first.play_card.card in tracker.obs.hand and second.play_card.card not in tracker.obs.hand
        for _ in range(3):  # and on
            step = await player.step()
            if step is None:
                break
            await tracker.wait_version(step.version)
        assert tracker.gaps == []
        at = next(i for i, msg in enumerate(tracker.messages) if msg.update.snapshot)
        after = [e.version for msg in tracker.messages[at + 1 :] for e in msg.update.events]
        assert after == list(range(kept + 1, tracker.version + 1))  # the new history, each once
        await tracker.close()
    finally:
        await c1.close()
        await c3.close()
        await r.aclose()
        rc.close()
