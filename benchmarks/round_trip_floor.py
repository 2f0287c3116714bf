"""What one Redis round trip costs the worker's process in CPU, under the store's work.

A worker at moderate load makes most of its Redis calls one at a time (one commit per
action, the stream hub's reads), where a saturated one sends many in one write: this prints
the client's CPU time per call (this process, ``time.process_time``; the Redis server's own
time is not in it) against a real ``redis-server`` on a free loopback port, one call after
another:

- ``asyncio``: a bare ``asyncio.Protocol`` writing ``GET`` and awaiting its reply (the
  syscalls and the event loop's turn: the floor under any client);
- ``redis-py GET`` and ``redis-py EVALSHA`` (a one-line script): the client library
  (``redis.asyncio``, with hiredis) on top of it;
- ``redis-py pool, one exchange``: the ``EVALSHA`` packed, written and read on a connection
  taken from redis-py's pool and given back (``get_connection``, ``send_packed_command``,
  ``read_response``, ``release``: how the store sent a batch before its lane);
- ``store lane EVALSHA``: the same on the store's lane (``truco_server.stores.redis.lane``:
  how the store sends a batch of script calls now);
- ``redis-py EVALSHA, 10 a pipeline``: the same calls, ten in one write, per call.

    python benchmarks/round_trip_floor.py                  # 5,000 calls each, 3 rounds
    python benchmarks/round_trip_floor.py --calls 20000 --rounds 5

Rounds alternate the cases (A B C D A B C D ...); medians are printed. The store's own
commit at one committer (its script, the adapter) is ``benchmarks/store_commit.py
--committers 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

SCRIPT = "return redis.call('GET', KEYS[1])"
GET = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"


class _Reply(asyncio.Protocol):
    """One reply at a time: the next ``data_received`` completes ``waiting``."""

    def __init__(self) -> None:
        self.waiting: asyncio.Future[bytes] | None = None

    def data_received(self, data: bytes) -> None:
        waiting, self.waiting = self.waiting, None
        if waiting is not None and not waiting.done():
            waiting.set_result(data)


async def _per_call(call: Callable[[], Awaitable[object]], calls: int, batch: int = 1) -> float:
    """Microseconds of this process's CPU per call, ``batch`` calls per awaited step."""
    for _ in range(max(1, 200 // batch)):
        await call()
    began = time.process_time()
    for _ in range(calls // batch):
        await call()
    return (time.process_time() - began) / calls * 1e6


async def _measure(port: int, calls: int, rounds: int) -> dict[str, list[float]]:
    import redis.asyncio as aioredis
    from hiredis import pack_command

    from truco_server.ports.settings import StoreSettings
    from truco_server.stores.redis.connection import RedisConnection

    loop = asyncio.get_running_loop()
    transport, raw = await loop.create_connection(_Reply, "127.0.0.1", port)
    client = aioredis.Redis(host="127.0.0.1", port=port)
    await client.set("k", "v")
    sha = await client.script_load(SCRIPT)

    async def bare() -> bytes:
        raw.waiting = loop.create_future()
        transport.write(GET)
        return await raw.waiting

    conn = RedisConnection.from_url(f"redis://127.0.0.1:{port}", StoreSettings())
    pool = conn.client.connection_pool
    payload = pack_command(("EVALSHA", sha, 1, "k"))

    async def through_pool() -> object:
        connection = await pool.get_connection()
        try:
            await connection.send_packed_command(payload, check_health=False)
            return await connection.read_response()
        finally:
            await pool.release(connection)

    async def on_lane() -> object:
        return await (await conn.lane()).exchange(payload, 1)

    async def pipelined() -> list[object]:
        async with client.pipeline(transaction=False) as pipe:
            for _ in range(10):
                pipe.evalsha(sha, 1, "k")
            return await pipe.execute()

    cases: dict[str, tuple[Callable[[], Awaitable[object]], int]] = {
        "asyncio": (bare, 1),
        "redis-py GET": (lambda: client.get("k"), 1),
        "redis-py EVALSHA": (lambda: client.evalsha(sha, 1, "k"), 1),
        "redis-py pool, one exchange": (through_pool, 1),
        "store lane EVALSHA": (on_lane, 1),
        "redis-py EVALSHA, 10 a pipeline": (pipelined, 10),
    }
    got: dict[str, list[float]] = {name: [] for name in cases}
    try:
        for _ in range(rounds):
            for name, (call, batch) in cases.items():
                got[name].append(await _per_call(call, calls, batch))
    finally:
        transport.close()
        await client.aclose()
        await conn.close()
    return got


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000, help="calls per case and round (default 5000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    args = parser.parse_args(argv)

    from truco_tools.redis_proc import start_redis

    redis = start_redis(host="127.0.0.1")
    try:
        got = asyncio.run(_measure(redis.port, args.calls, args.rounds))
    finally:
        redis.stop()
    floor = statistics.median(got["asyncio"])
    for name, values in got.items():
        med = statistics.median(values)
        print(
            f"{name:<32} {med:6.1f} us CPU per call (range {min(values):.1f}-{max(values):.1f}), "
            f"{med / floor:.2f}x the bare round trip"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
