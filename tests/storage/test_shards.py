"""The sharded-queue key layout (truco_server.stores.redis.keys): S fixed shard tags, one slot per shard,
items mapped stably to shards, every shard listed for its readers, and a claim script on
one shard's keys running on a real Redis Cluster."""

from __future__ import annotations

import zlib
from collections import Counter

import pytest
from redis.crc import key_slot
from redis.exceptions import RedisClusterException, ResponseError

from truco_server.stores.redis import ShardedQueue
from truco_tools.redis_cluster import LocalRedisCluster

#: Moves the earliest due entry of one shard to its claimed set, atomically (the shape of
#: the claims the clock, webhook and league queues are to make).
CLAIM = """
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, 1)
if #due == 0 then return false end
redis.call('ZREM', KEYS[1], due[1])
redis.call('HSET', KEYS[2], due[1], ARGV[2])
return due[1]
"""


def test_keys_of_a_shard_share_one_slot_and_shards_differ() -> None:
    q = ShardedQueue("clock", 16)
    assert q.key(3, ":due") == "truco:{q:clock:3}:due"
    for k in q.all_shards():
        assert key_slot(q.key(k, ":due").encode()) == key_slot(q.key(k, ":claimed").encode())
    assert len({q.key(k) for k in q.all_shards()}) == 16
    assert len({key_slot(q.key(k).encode()) for k in q.all_shards()}) == 16
    assert q.all_shards() == list(range(16))


def test_items_map_stably_and_evenly_to_shards() -> None:
    q = ShardedQueue("webhook", 16)
    assert q.shard_of("m0123456789abcdef0123") == zlib.crc32(b"m0123456789abcdef0123") % 16
    assert q.key_for("m1", ":due") == q.key(q.shard_of("m1"), ":due")
    counts = Counter(q.shard_of(f"m{i:020x}") for i in range(16_000))
    assert set(counts) == set(range(16))
    assert max(counts.values()) < 1.15 * 1000 and min(counts.values()) > 0.85 * 1000


def test_readers_share_out_every_shard_exactly_once() -> None:
    q = ShardedQueue("league", 10)
    shares = [q.shards_for(r, 3) for r in range(3)]
    assert sorted(k for share in shares for k in share) == q.all_shards()
    assert shares[0] == [0, 3, 6, 9]
    with pytest.raises(ValueError):
        q.shards_for(3, 3)
    with pytest.raises(ValueError):
        ShardedQueue("a:b", 4)
    with pytest.raises(ValueError):
        ShardedQueue("clock", 0)
    with pytest.raises(ValueError):
        q.tag(10)


def test_a_claim_script_runs_on_one_shard_of_a_real_cluster(redis_cluster: LocalRedisCluster) -> None:
    q = ShardedQueue("clock", 16)
    with redis_cluster.client() as rc:
        primaries = {redis_cluster.primary_for_key(q.key(k)).node_id for k in q.all_shards()}
        assert len(primaries) == 3  # the shards spread over every primary
        claim = rc.register_script(CLAIM)
        for item in ("m1", "m2", "m3"):
            rc.zadd(q.key_for(item, ":due"), {item: 100})
        claimed = [
            claim(keys=[q.key_for(i, ":due"), q.key_for(i, ":claimed")], args=[150, "w1"])
            for i in ("m1", "m2", "m3")
        ]
        assert claimed == [b"m1", b"m2", b"m3"]
        assert claim(keys=[q.key_for("m1", ":due"), q.key_for("m1", ":claimed")], args=[150, "w1"]) is None
        a, b = next(
            (x, y)
            for x in range(16)
            for y in range(16)
            if key_slot(q.key(x).encode()) != key_slot(q.key(y).encode())
        )
        with pytest.raises((RedisClusterException, ResponseError)):
            claim(keys=[q.key(a, ":due"), q.key(b, ":claimed")], args=[150, "w1"])
