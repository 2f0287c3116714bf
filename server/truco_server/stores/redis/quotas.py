"""The Redis :class:`~truco_server.ports.quotas.QuotaCounters`: what every worker of a
deployment counts together. Each key is ``truco:{quota:<key>}`` (a slot of its own, so a
Redis Cluster spreads them) and each operation is one script on it, sent with the other
scripts of its event-loop turn (:mod:`.batch`). Time is the Redis server's (``TIME``), so
workers whose clocks differ count alike.

* a rate: a string holding its theoretical arrival time (the generic cell rate algorithm),
  expiring when the allowance is full again -- a quiet credential holds nothing;
* leases: a sorted set of holders by expiry (ms), expiring with its last holder.
"""

from __future__ import annotations

from collections.abc import Sequence

from truco_server.stores.redis.batch import ScriptBatcher, ScriptCall
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.replies import as_str
from truco_server.stores.redis.scripts import Script, spend_rate

__all__ = ["QUOTA_HOLD", "QUOTA_HOLDERS", "QUOTA_RELEASE", "QUOTA_RENEW", "QUOTA_TAKE", "RedisQuotaCounters"]

_NOW_MS = """
local now_t = redis.call('TIME')
local now_ms = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
"""

QUOTA_TAKE = Script(
    "quota_take",
    "-- KEYS: the rate; ARGV: per_second, burst, cost. Reply: '0' granted, else seconds to wait."
    + spend_rate("KEYS[1]", "ARGV[1]", "ARGV[2]", "ARGV[3]", "return string.format('%.6f', rate_wait)")
    + "return '0'\n",
)

_EXPIRE_WITH_LAST = """
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], last[2]) end
"""

QUOTA_HOLD = Script(
    "quota_hold",
    _NOW_MS
    + """
-- KEYS: the leases; ARGV: holder, limit, ttl_ms. Reply: 0 held, else how many hold it.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  local n = redis.call('ZCARD', KEYS[1])
  if n >= tonumber(ARGV[2]) then return n end
end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[3]), ARGV[1])
"""
    + _EXPIRE_WITH_LAST
    + "return 0\n",
)

QUOTA_RENEW = Script(
    "quota_renew",
    _NOW_MS
    + """
-- KEYS: the leases; ARGV: ttl_ms, holders...
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
local expiry = now_ms + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i]) end
"""
    + _EXPIRE_WITH_LAST
    + "return 0\n",
)

QUOTA_RELEASE = Script(
    "quota_release",
    """
-- KEYS: the leases; ARGV: holder
return redis.call('ZREM', KEYS[1], ARGV[1])
""",
)

QUOTA_HOLDERS = Script(
    "quota_holders",
    _NOW_MS
    + """
-- KEYS: the leases. Reply: the unexpired holders.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
return redis.call('ZRANGE', KEYS[1], 0, -1)
""",
)


class RedisQuotaCounters:
    """Rates and leases on Redis (see the module docstring)."""

    def __init__(self, keys: Keys, batcher: ScriptBatcher) -> None:
        self._keys = keys
        self._batcher = batcher

    async def take(self, key: str, per_second: float, burst: float, cost: float = 1.0) -> float:
        call = ScriptCall(
            QUOTA_TAKE, [self._keys.quota(key)], [repr(per_second), repr(burst), repr(cost)], "quota_take"
        )
        return float(as_str(await self._batcher.call(call)))

    async def hold(self, key: str, holder: str, limit: int, ttl_ms: int) -> int:
        call = ScriptCall(QUOTA_HOLD, [self._keys.quota(key)], [holder, limit, ttl_ms], "quota_hold")
        return int(await self._batcher.call(call))

    async def renew(self, key: str, holders: Sequence[str], ttl_ms: int) -> None:
        if holders:
            call = ScriptCall(QUOTA_RENEW, [self._keys.quota(key)], [ttl_ms, *holders], "quota_renew")
            await self._batcher.call(call)

    async def release(self, key: str, holder: str) -> None:
        await self._batcher.call(
            ScriptCall(QUOTA_RELEASE, [self._keys.quota(key)], [holder], "quota_release")
        )

    async def holders(self, key: str) -> list[str]:
        raw = await self._batcher.call(
            ScriptCall(QUOTA_HOLDERS, [self._keys.quota(key)], [], "quota_holders")
        )
        return sorted(as_str(h) for h in raw)
