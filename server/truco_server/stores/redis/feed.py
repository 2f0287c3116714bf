"""The stream hub of one Redis server or a Sentinel group's primary: one ``XREAD BLOCK``
reader task serving every subscription of a worker (the ordering argument and the failover
check are in :mod:`.hub`).

* Local fan-out: after each of its own commits the adapter hands the hub the events it just
  wrote (:meth:`RedisStreamHub.committed`), delivered at once with the commit's note.
* Every followed stream is polled (a non-blocking ``XREAD``) every ``poll_ms``. A match starts
  *local*: only polled, as a stream only this worker writes needs nothing more. An ``XREAD``
  that finds events this worker did not commit, a local commit that finds the cursor behind,
  or a lost version check makes it *remote*: one background task also runs ``XREAD BLOCK``
  over the remote streams on one dedicated connection, so another worker's commits arrive
  at once; a match turning remote interrupts that blocked read with ``CLIENT UNBLOCK``
  (``block_ms`` bounds the delay if that wake-up races with the read). A match whose last
  ``local_after`` commits were all this worker's, contiguous, is local again. A new
  subscription's first events from another worker therefore wait for a poll (at most
  ``poll_ms``); every later one arrives at once.
* Both reads are kept in the Redis protocol, a piece per stream (:class:`_XRead`): a commit
  moves one stream's cursor, and a read joins the pieces instead of encoding every stream
  again.
* After a read fails (Redis restarted or failed over), every followed stream is checked
  before anything more is delivered (:meth:`.hub.HubCore._check`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from truco_server.stores.redis.hub import HubCore
from truco_server.stores.redis.replies import EVENT_FIELD, parse_raw_xread, version_of

__all__ = ["RedisStreamHub"]

log = logging.getLogger("truco_server.stores.redis.feed")

_FAULTS = (RedisError, OSError, TimeoutError)


def _bulk(value: bytes) -> bytes:
    """One argument of a command in the Redis protocol."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


class _XRead:
    """An ``XREAD`` of a set of streams from their cursors, in the Redis protocol, kept up to
    date a stream at a time (a cursor moves with every commit, and the hub reads the set
    again after every change): a read joins the pieces instead of encoding a thousand
    arguments."""

    def __init__(self, count: int) -> None:
        self._count = b"%d" % count
        self._at: dict[str, int] = {}
        self._keys: list[bytes] = []
        self._ids: list[bytes] = []
        self._mids: list[str] = []

    def __contains__(self, mid: object) -> bool:
        return mid in self._at

    def __len__(self) -> int:
        return len(self._mids)

    def add(self, mid: str, key: bytes, cursor: int) -> None:
        if mid in self._at:
            return
        self._at[mid] = len(self._mids)
        self._mids.append(mid)
        self._keys.append(_bulk(key))
        self._ids.append(_bulk(b"%d-0" % cursor))

    def remove(self, mid: str) -> None:
        i = self._at.pop(mid, None)
        if i is None:
            return
        last = len(self._mids) - 1
        if i != last:  # the last stream takes its place
            moved = self._mids[i] = self._mids[last]
            self._keys[i], self._ids[i] = self._keys[last], self._ids[last]
            self._at[moved] = i
        del self._mids[last], self._keys[last], self._ids[last]

    def move(self, mid: str, cursor: int) -> None:
        i = self._at.get(mid)
        if i is not None:
            self._ids[i] = _bulk(b"%d-0" % cursor)

    def packed(self, block: int | None = None) -> bytes:
        """``XREAD COUNT <count> [BLOCK <block>] STREAMS <keys> <ids>``."""
        head = [b"XREAD", b"COUNT", self._count]
        if block is not None:
            head += [b"BLOCK", b"%d" % block]
        head.append(b"STREAMS")
        return b"".join(
            (
                b"*%d\r\n" % (len(head) + 2 * len(self._mids)),
                b"".join(map(_bulk, head)),
                b"".join(self._keys),
                b"".join(self._ids),
            )
        )


class RedisStreamHub(HubCore):
    """One ``XREAD BLOCK`` reader task for every subscription of a worker (module docstring).

    ``reader`` is a client with one dedicated connection (blocked most of the time);
    ``waker`` is the adapter's client, for ``CLIENT UNBLOCK`` and the checks. After a read
    that returned events the next one waits ``coalesce_ms`` so that several commits share
    one read (at the cost of at most that much delivery delay)."""

    def __init__(
        self,
        reader: aioredis.Redis,
        waker: aioredis.Redis,
        stream_key: Callable[[str], str],
        *,
        block_ms: int = 1000,
        count: int = 500,
        coalesce_ms: float = 2.0,
        poll_ms: float = 50.0,
        local_after: int = 3,
        timeout: float = 5.0,
        on_round_trip: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(stream_key, count=count, timeout=timeout, on_round_trip=on_round_trip)
        self._reader = reader
        self._waker = waker
        self._block_ms = block_ms
        self._streak: dict[str, int] = {}
        """Per remote stream: this worker's commits on it in a row (``local_after``: local)."""
        self._coalesce = coalesce_ms / 1000
        self._poll_every = poll_ms / 1000
        self._local_after = max(1, local_after)
        self._next_poll = 0.0
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._reader_id: int | None = None
        self._blocking = False
        self._block_until = 0.0
        """When the blocking read in flight returns at the latest (loop time)."""
        self._generation = 0
        self._wakers: set[asyncio.Task[None]] = set()
        self._poll = _XRead(count)
        """Every followed stream."""
        self._remote = _XRead(count)
        """The remote streams: those of the blocking read."""
        self._unread: set[str] = set()
        """Remote streams added since the blocking read in flight went out (not in it)."""
        self._backoff = 0.05
        self.reads = 0
        """``XREAD`` calls issued (for tests and benchmarks)."""

    @property
    def reader_id(self) -> int | None:
        """The Redis client id of the reader's connection, once it has one."""
        return self._reader_id

    def is_local(self, match_id: str) -> bool:
        """Whether ``match_id`` is followed and local (read only every ``poll_ms``)."""
        return match_id in self._cursors and match_id not in self._remote

    def _followed(self, mid: str) -> None:
        self._poll.add(mid, self._keys[mid], self._cursors[mid])  # local: only polled
        self._poll_in_time()

    def _unfollowed(self, mid: str) -> None:
        self._poll.remove(mid)
        self._leave_blocking(mid)
        self._changed.set()  # a read planned meanwhile may have no stream left to read

    def _leave_blocking(self, mid: str) -> None:
        """``mid`` is out of the blocking reads from the next one (local, or not followed)."""
        self._remote.remove(mid)
        self._unread.discard(mid)
        self._streak.pop(mid, None)

    def _moved(self, mid: str) -> None:
        cursor = self._cursors[mid]
        self._poll.move(mid, cursor)
        self._remote.move(mid, cursor)

    def committed(self, match_id: str, base_version: int, events: list[bytes], note: object = None) -> None:
        """This worker committed ``events`` as versions ``base_version + 1 ..``: deliver them
        to this worker's subscriptions now, with ``note``."""
        cursor = self._cursors.get(match_id)
        if cursor is None or not events or match_id in self._unverified:
            return
        if cursor == base_version:
            self._deliver(match_id, [(base_version + i, e) for i, e in enumerate(events, 1)], note)
            self.local_batches += 1
        elif cursor < base_version:
            self._read_soon(match_id)  # commits from elsewhere are waiting: read them now
            return
        # else an XREAD raced ahead of this reply and already delivered these events
        if match_id not in self._remote:
            return
        streak = self._streak[match_id] = self._streak.get(match_id, 0) + 1
        if streak >= self._local_after:
            self._leave_blocking(match_id)
            self._poll_in_time()

    def conflicted(self, match_id: str) -> None:
        if match_id in self._cursors:
            self._make_remote(match_id)

    def _read_soon(self, mid: str) -> None:
        self._make_remote(mid)

    def _make_remote(self, mid: str) -> None:
        """Put ``mid`` in every blocking read from now on (interrupting the current one)."""
        self._streak[mid] = 0
        if mid in self._remote:
            if self._blocking and mid not in self._unread:
                return  # in the read in flight
        else:
            self._remote.add(mid, self._keys[mid], self._cursors[mid])
            if self._blocking:
                self._unread.add(mid)
        self._changed.set()
        self._start_or_wake()

    def _poll_in_time(self) -> None:
        """A stream is local now: the next poll must come within ``poll_ms``, even when the
        blocking read in flight was planned for longer (no stream was local then)."""
        self._changed.set()
        late = self._blocking and self._block_until > asyncio.get_running_loop().time() + self._poll_every
        if late or self._task is None:
            self._start_or_wake()

    def _start_or_wake(self) -> None:
        """Start the reader task, or interrupt its blocked read (the plan changed)."""
        self._generation += 1
        if self._task is None:
            self._task = asyncio.create_task(
                self._supervised(self._run, "reader"), name="truco-stream-hub", context=contextvars.Context()
            )
        elif self._blocking:
            self._spawn(self._wake(self._generation))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._wakers.add(task)
        task.add_done_callback(self._wakers.discard)

    async def _wake(self, generation: int) -> None:
        """Interrupt the blocked XREAD so it restarts with the new set of streams."""
        for _ in range(5):
            reader_id = self._reader_id
            if reader_id is None or generation != self._generation or not self._blocking:
                return
            try:
                self._on_round_trip(1)
                async with asyncio.timeout(self._timeout):
                    if await self._waker.client_unblock(reader_id):
                        return
            except _FAULTS:
                return
            await asyncio.sleep(0.002)  # read not yet on the server: try again

    async def _run(self) -> None:
        while not self._closed:
            if not self._cursors:
                self._changed.clear()
                await self._changed.wait()
                continue
            if self._unverified and not await self._verify():
                continue
            self._changed.clear()
            block = await self._plan()
            if block is None:
                continue
            try:
                resp = await self._xread(block)
            except _FAULTS as exc:
                self._reader_id = None
                self._unverified.update(self._cursors)
                log.warning("stream hub read failed: %s; retrying", exc)
            else:
                self._backoff = 0.05
                if resp and block and self._coalesce > 0:
                    await asyncio.sleep(self._coalesce)  # see the class docstring
                self._take(resp)
                continue
            await self._pause()  # out of the handler (docs/engine.md, "Compiled build")

    async def _verify(self) -> bool:
        """After a failed read (Redis restarted or failed over): what was delivered may be
        gone from the log, so check every followed stream before reading on."""
        try:
            await self._check(self._waker, list(self._unverified))
            return not self._unverified
        except _FAULTS as exc:
            log.warning("stream hub check failed: %s; retrying", exc)
        await self._pause()  # out of the handler (docs/engine.md, "Compiled build")
        return False

    async def _pause(self) -> None:
        await asyncio.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, 2.0)

    async def _plan(self) -> int | None:
        """The next read: the block (ms) of the blocking read of the remote streams, ``0``
        for the poll of every followed stream, or None when there is nothing to read now
        (after waiting for a change or the next poll)."""
        now = asyncio.get_running_loop().time()
        any_local = len(self._poll) > len(self._remote)
        if any_local and now >= self._next_poll:
            self._next_poll = now + self._poll_every
            return 0
        wait = self._next_poll - now if any_local else self._block_ms / 1000
        if len(self._remote) == 0:  # a compiled class (setup.py move-path) has no truth by __len__
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()
            return None
        return max(1, min(self._block_ms, int(wait * 1000) + 1))

    async def _xread(self, block: int) -> Any:
        """A read planned by :meth:`_plan` (``block`` 0: the poll)."""
        try:
            async with asyncio.timeout(self._timeout + block / 1000):
                if self._reader_id is None:
                    self._on_round_trip(1)
                    self._reader_id = int(await self._reader.client_id())
                    if self._changed.is_set():
                        return None  # the set of streams changed meanwhile
                self._on_round_trip(1)
                self.reads += 1
                if not block:  # the poll of every followed stream
                    return await self._send(self._poll.packed())
                self._blocking = True
                self._unread.clear()
                self._block_until = asyncio.get_running_loop().time() + block / 1000
                return await self._send(self._remote.packed(block))
        finally:
            self._blocking = False

    async def _send(self, packed: bytes) -> Any:
        """The raw reply of a ``packed`` command on the reader's connection (the one ``CLIENT
        ID`` named). A connection left mid-reply (a fault, a timeout) is closed; the next
        command reconnects it (under a new client id: a fault makes the reader ask again)."""
        reader = self._reader
        if reader.connection is None:
            await reader.initialize()
        conn = reader.connection
        assert conn is not None  # a single-connection client has it once initialized
        try:
            await conn.send_packed_command(packed, check_health=False)
            return await conn.read_response()
        except BaseException as exc:
            failure = exc
        await conn.disconnect()  # out of the handler (docs/engine.md, "Compiled build")
        try:  # its traceback holds this frame: no local may hold it
            raise failure
        finally:
            del failure

    def _take(self, resp: Any) -> None:
        """Deliver what an XREAD returned beyond each cursor."""
        for key, entries in parse_raw_xread(resp):
            mid = self._key_to_match.get(key if isinstance(key, bytes) else key.encode())
            if mid is None or not entries:
                continue
            cursor = self._cursors.get(mid)
            if cursor is None:
                continue
            batch = [(v, fields[EVENT_FIELD]) for eid, fields in entries if (v := version_of(eid)) > cursor]
            if not batch:
                continue  # already delivered by local fan-out
            if mid not in self._inflight and (mid not in self._remote or self._streak.get(mid)):
                # events this worker did not commit (with a local commit in flight they are
                # most likely that commit's, read before its reply arrived)
                self._make_remote(mid)
            self._deliver_read(mid, batch)

    async def close(self) -> None:
        self._closed = True
        self._changed.set()
        for task in [self._task, *self._wakers]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, *_FAULTS):
                    await task
        self._task = None
        await self._reader.aclose()
