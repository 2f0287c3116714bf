"""Start and stop a real ``redis-server`` on a free loopback port (for the tests).

The implementation lives in :mod:`truco_tools.redis_proc` (``truco bench service`` needs
it too, and production code never imports from ``tests``); this module re-exports it.
"""

from __future__ import annotations

from truco_tools.redis_proc import (
    MISSING_MESSAGE,
    RedisProcess,
    RedisServerMissing,
    free_port,
    redis_server_path,
    start_redis,
)

__all__ = [
    "MISSING_MESSAGE",
    "RedisProcess",
    "RedisServerMissing",
    "free_port",
    "redis_server_path",
    "start_redis",
]
