"""The Redis adapter of the four ports, in small modules over redis-py's public API:

* :mod:`.connection` -- the clients from the URL, retries through faults, ``StoreUnavailable``;
* :mod:`.scripts` -- the Lua; :mod:`.keys` -- the key layout; :mod:`.batch` -- script calls
  sent together per event-loop turn, :mod:`.pipelines` -- how a batch reaches Redis;
* :mod:`.matches` and :mod:`.listing` -- the match log; :mod:`.hub`, :mod:`.feed` and
  :mod:`.cluster_feed` -- following matches' streams;
* :mod:`.queues`, :mod:`.operators`, :mod:`.documents` -- the other three ports;
  :mod:`.guards` -- writes made only while the documents they belong to exist;
* :mod:`.persistence` -- whether each primary keeps its data across a restart;
* :mod:`.store` -- :class:`RedisStore`, the four together, and :func:`open_redis`.
"""

from __future__ import annotations

from truco_server.stores.redis.connection import RedisConnection, RedisStats
from truco_server.stores.redis.keys import Keys, MatchKeys, OperatorKeys, ShardedQueue
from truco_server.stores.redis.store import RedisStore, open_redis

__all__ = [
    "Keys",
    "MatchKeys",
    "OperatorKeys",
    "RedisConnection",
    "RedisStats",
    "RedisStore",
    "ShardedQueue",
    "open_redis",
]
