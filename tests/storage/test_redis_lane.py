"""The batches' lane (truco_server/stores/redis/lane.py): one connection of redis-py's pool,
read by the lane itself, on a real ``redis-server``; and its reading of replies on a fake
transport (what a server rarely sends: out-of-band messages, replies nobody asked for,
bytes that are no reply)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import hiredis
import pytest
import pytest_asyncio
from prometheus_client import REGISTRY
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from tests.storage.support import new_match, step
from truco_server.ports.queues import CLOCK
from truco_server.ports.settings import StoreSettings
from truco_server.stores.redis import RedisStore, open_redis
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.lane import Lane
from truco_tools.redis_proc import free_port, start_redis


def packed(*commands: tuple[Any, ...]) -> tuple[bytes, int]:
    return b"".join(hiredis.pack_command(c) for c in commands), len(commands)


def ends(reason: str) -> float:
    """``truco_redis_lane_ends_total{reason}`` so far."""
    return REGISTRY.get_sample_value("truco_redis_lane_ends_total", {"reason": reason}) or 0.0


@pytest_asyncio.fixture
async def conn(clean_redis_url: str) -> AsyncIterator[RedisConnection]:
    conn = RedisConnection.from_url(clean_redis_url, StoreSettings(retry_seconds=2))
    yield conn
    await conn.close()


async def test_batches_in_flight_share_one_connection_and_each_gets_its_own_replies(
    conn: RedisConnection,
) -> None:
    lane = await conn.lane()

    async def batch(i: int) -> list[Any]:
        return await lane.exchange(*packed(("SET", f"k{i}", i), ("INCRBY", f"k{i}", i), ("GET", f"k{i}")))

    got = await asyncio.gather(*(batch(i) for i in range(200)))
    assert got == [[b"OK", 2 * i, str(2 * i).encode()] for i in range(200)]
    assert await conn.lane() is lane
    ids = await asyncio.gather(*(lane.exchange(*packed(("CLIENT", "ID"))) for _ in range(20)))
    assert len({tuple(i) for i in ids}) == 1  # one connection served them all


async def test_an_error_reply_is_its_exception_and_the_lane_goes_on(conn: RedisConnection) -> None:
    lane = await conn.lane()
    replies = await lane.exchange(
        *packed(("EVALSHA", "0" * 40, 0), ("INCR", "counter"), ("LPUSH", "counter", "x"), ("INCR", "counter"))
    )
    assert isinstance(replies[0], NoScriptError)
    assert replies[1] == 1 and replies[3] == 2
    assert isinstance(replies[2], ResponseError) and "WRONGTYPE" in str(replies[2])
    assert lane.serving and await conn.lane() is lane


async def test_a_caller_that_stops_waiting_leaves_the_next_batches_their_own_replies(
    conn: RedisConnection,
) -> None:
    lane = await conn.lane()
    slow = asyncio.ensure_future(lane.exchange(*packed(("BLPOP", "nothing", "0.3"), ("SET", "a", "slow"))))
    await asyncio.sleep(0.05)  # written: the connection waits on the empty list
    after = asyncio.ensure_future(lane.exchange(*packed(("SET", "b", "1"), ("GET", "a"))))
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert await after == [b"OK", b"slow"]  # the cancelled batch's replies were dropped
    assert await lane.exchange(*packed(("GET", "b"))) == [b"1"]
    assert lane.serving


async def test_a_lost_connection_fails_the_batches_waiting_and_the_next_lane_serves(
    conn: RedisConnection,
) -> None:
    lane = await conn.lane()
    lost = ends("lost")
    (me,) = await lane.exchange(*packed(("CLIENT", "ID")))
    waiting = asyncio.ensure_future(lane.exchange(*packed(("BLPOP", "nothing", "5"), ("PING",))))
    await asyncio.sleep(0.05)
    await conn.client.execute_command("CLIENT", "KILL", "ID", me)
    with pytest.raises(RedisConnectionError):
        await waiting
    assert not lane.serving and ends("lost") == lost + 1
    with pytest.raises(RedisConnectionError):
        await lane.exchange(*packed(("PING",)))
    again = await conn.lane()
    assert again is not lane and await again.exchange(*packed(("PING",))) == [b"PONG"]
    pool = conn.client.connection_pool
    assert pool._in_use_connections == {again._connection}  # the old one was given back


async def test_a_reply_that_the_server_is_no_longer_the_primary_ends_the_lane(conn: RedisConnection) -> None:
    lane = await conn.lane()
    before = ends("demoted")
    demoted = 'return redis.error_reply("READONLY You can\'t write against a read only replica.")'
    with pytest.raises(RedisConnectionError, match="no longer the primary"):
        await lane.exchange(*packed(("EVAL", demoted, 0)))
    assert not lane.serving and ends("demoted") == before + 1
    assert await (await conn.lane()).exchange(*packed(("PING",))) == [b"PONG"]


async def test_recover_after_a_fault_and_close_end_the_lane(conn: RedisConnection) -> None:
    lane = await conn.lane()
    dropped = ends("dropped")
    await conn.recover(RedisConnectionError("a fault"))
    assert not lane.serving and ends("dropped") == dropped + 1
    fresh = await conn.lane()
    assert fresh is not lane and fresh.serving
    await conn.recover(NoScriptError("not a connection fault"))
    assert fresh.serving  # only connection faults drop it
    await conn.close()
    assert not fresh.serving
    assert fresh._connection not in conn.client.connection_pool._in_use_connections


# --------------------------------------------------------------- replies on a fake transport
class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False
        self.protocol: Any = _Stream()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def get_protocol(self) -> Any:
        return self.protocol

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol


class _Stream(asyncio.Protocol):
    def __init__(self) -> None:
        self.lost: list[Exception | None] = []

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.append(exc)


def fake_lane() -> tuple[Lane, _Transport, _Stream]:
    transport = _Transport()
    stream = transport.protocol

    async def release(connection: Any) -> None:
        raise AssertionError("a fake lane's connection is never given back")

    lane = Lane(connection=None, transport=transport, release=release)
    transport.set_protocol(lane)
    return lane, transport, stream


async def test_replies_in_pieces_out_of_band_messages_and_the_end_of_the_connection() -> None:
    lane, transport, stream = fake_lane()
    first = asyncio.ensure_future(lane.exchange(*packed(("GET", "a"), ("GET", "b"))))
    second = asyncio.ensure_future(lane.exchange(*packed(("PING",))))
    await asyncio.sleep(0)
    assert transport.written == [packed(("GET", "a"), ("GET", "b"))[0], packed(("PING",))[0]]
    lane.data_received(b"$1\r\nx\r")
    lane.data_received(b"\n>2\r\n$7\r\nmessage\r\n$1\r\nm\r\n$-1\r\n+PO")  # a RESP3 push between
    assert not first.done() or await first == [b"x", None]
    lane.data_received(b"NG\r\n")
    assert await first == [b"x", None] and await second == [b"PONG"]
    lane.connection_lost(None)
    assert not lane.serving and stream.lost == [None]  # redis-py's protocol is told too


@pytest.mark.parametrize(
    ("data", "why"),
    [(b"+OK\r\n+OK\r\n", "no batch asked for"), (b"?what\r\n", "unreadable reply")],
)
async def test_a_reply_nobody_asked_for_or_no_reply_at_all_ends_the_lane(data: bytes, why: str) -> None:
    lane, transport, _ = fake_lane()
    reason = "unasked" if why == "no batch asked for" else "unreadable"
    before = ends(reason)
    waiting = asyncio.ensure_future(lane.exchange(*packed(("PING",))))
    await asyncio.sleep(0)
    lane.data_received(data)
    if why == "no batch asked for":
        assert await waiting == [b"OK"]
    else:
        with pytest.raises(RedisConnectionError, match=why):
            await waiting
    assert not lane.serving and transport.closed
    assert why in str(lane.lost) and ends(reason) == before + 1


# ------------------------------------------------------- over TLS and over a Unix socket
@pytest.fixture(scope="module")
def tls_and_unix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A ``redis-server`` that also listens with TLS (a certificate made for 127.0.0.1) and on
    a Unix socket: the URLs of both (``rediss://``, ``unix://``)."""
    work = tmp_path_factory.mktemp("tls")
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    tls_port, sock = free_port(), work / "redis.sock"
    server = start_redis(
        extra_args=(
            "--tls-port", str(tls_port), "--tls-cert-file", str(cert), "--tls-key-file", str(key),
            "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no",
            "--unixsocket", str(sock), "--unixsocketperm", "700",
        )
    )  # fmt: skip
    try:
        yield f"rediss://127.0.0.1:{tls_port}/0?ssl_ca_certs={cert}", f"unix://{sock}?db=0"
    finally:
        server.stop()


@pytest.mark.parametrize("which", ["tls", "unix"])
async def test_the_store_commits_through_its_lane_over_tls_and_a_unix_socket(
    tls_and_unix: tuple[str, str], which: str
) -> None:
    url = tls_and_unix[0] if which == "tls" else tls_and_unix[1]
    store = open_redis(url)
    try:
        version = await new_match(store, f"m-{which}")
        for i in range(20):
            res = await store.matches.commit(step(f"m-{which}", version + i))
            assert res.version == version + i + 1
        opened = store.connection._lanes.get("")  # by the commits
        assert opened is not None and opened.serving
        lane = await store.connection.lane()
        assert lane is opened
        got = await asyncio.gather(*(lane.exchange(*packed(("INCR", f"n-{which}"))) for _ in range(50)))
        assert sorted(r[0] for r in got) == list(range(1, 51))
    finally:
        await store.close()


# ------------------------------------------------------------------------ on a cluster
async def test_a_cluster_store_batches_through_one_lane_per_primary(
    redis_cluster: Any, redis_stores: Callable[..., RedisStore]
) -> None:
    store = redis_stores(redis_cluster.url)
    versions = {f"lane-{i}": 0 for i in range(30)}
    for mid in versions:
        versions[mid] = await new_match(store, mid)
    for mid, v in versions.items():
        assert (await store.matches.commit(step(mid, v))).version == v + 1
    conn = store.connection
    primaries = {node.name for node in conn.client.get_primaries()}
    assert set(conn._lanes) == primaries  # the matches' slots reach every primary
    lanes = list(conn._lanes.values())
    await conn.recover(RedisConnectionError("a fault"))
    assert conn._lanes == {} and not any(lane.serving for lane in lanes)
    for mid, v in versions.items():
        assert (await store.matches.commit(step(mid, v + 1))).version == v + 2
    assert set(conn._lanes) == primaries


# --------------------------------------------------------------- batches that wait for replicas
async def test_a_batch_that_waits_for_replicas_holds_up_no_batch_on_the_lane(
    clean_redis_url: str, redis_stores: Callable[..., RedisStore]
) -> None:
    """WAIT holds its connection until the replicas answer (here none: until its timeout). A
    batch that ends in WAIT takes a connection of the pool for itself, so the lane's batches
    go on meanwhile (on the lane they would be answered after the WAIT)."""
    version = await new_match(redis_stores(clean_redis_url), "m-wait")
    store = redis_stores(clean_redis_url, wait_replicas=1, wait_timeout_ms=2000)
    committing = asyncio.ensure_future(store.matches.commit(step("m-wait", version)))
    while store.stats.round_trips < 1:  # the commit's batch is written; WAIT holds it
        await asyncio.sleep(0.01)
    await store.queues.add(CLOCK, "meanwhile", 5)  # not durable: on the lane
    await asyncio.sleep(0.2)
    assert not committing.done()  # its WAIT still waits
    assert (await committing).version == version + 1
    assert store.stats.wait_short >= 1  # no replica answered
