"""The queue reader claims what falls due while earlier items are still being handled, never
more than its concurrency at a time, and gives up what it holds when stopped."""

from __future__ import annotations

import asyncio
import time

import pytest

from truco_server.ports.queues import Claim
from truco_server.services.scheduler import QueueReader
from truco_server.stores.memory.documents import MemoryDocuments
from truco_server.stores.memory.queues import MemoryQueues

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

Q = "test-queue"


def now_ms() -> int:
    return round(time.time() * 1000)


class Handler:
    """Items named ``slow*`` wait for :attr:`release`; the others are done at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started: list[str] = []
        self.done: list[str] = []
        self.running = 0
        self.most = 0
        self.changed = asyncio.Event()

    async def __call__(self, claim: Claim) -> tuple[int | None, bytes]:
        self.started.append(claim.item)
        self.running += 1
        self.most = max(self.most, self.running)
        self.changed.set()
        try:
            if claim.item.startswith("slow"):
                await self.release.wait()
            self.done.append(claim.item)
            self.changed.set()
            return None, b""
        finally:
            self.running -= 1

    async def until(self, check: object, timeout: float = 30) -> None:
        async def wait() -> None:
            while not check():  # type: ignore[operator]
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), timeout)


@pytest.fixture
def queues() -> MemoryQueues:
    return MemoryQueues(MemoryDocuments())


async def test_an_item_due_while_a_slow_one_is_handled_is_not_held_back(queues: MemoryQueues) -> None:
    handler = Handler()
    reader = QueueReader(queues, Q, handler, owned=False, tick=0.02)
    await queues.add(Q, "slow-1", now_ms())
    await reader.start()
    try:
        await handler.until(lambda: "slow-1" in handler.started)
        await queues.add(Q, "quick-1", now_ms())
        await handler.until(lambda: "quick-1" in handler.done)
        assert "slow-1" not in handler.done  # handled while the slow one still ran
        handler.release.set()
        await handler.until(lambda: "slow-1" in handler.done)
    finally:
        await reader.stop()
    assert await queues.due(Q, now_ms() + 10**9) == []  # both finished: nothing left queued


async def test_no_more_than_its_concurrency_is_handled_at_once(queues: MemoryQueues) -> None:
    handler = Handler()
    reader = QueueReader(queues, Q, handler, owned=False, tick=0.02, concurrency=3)
    for i in range(8):
        await queues.add(Q, f"slow-{i}", now_ms())
    await reader.start()
    try:
        await handler.until(lambda: len(handler.started) == 3)
        assert len(await queues.claim(Q, 0, now_ms(), 5_000, 100)) == 5  # the rest stays unclaimed
    finally:
        await reader.stop()
    assert handler.most == 3 and handler.done == []


async def test_a_full_reader_claims_again_as_soon_as_a_slot_frees(queues: MemoryQueues) -> None:
    """With every slot taken it waits for one to free, not for the next tick."""
    handler = Handler()
    reader = QueueReader(queues, Q, handler, owned=False, tick=3_600, concurrency=1)
    await queues.add(Q, "quick-0", now_ms())
    await queues.add(Q, "quick-1", now_ms())
    await reader.start()
    try:
        await handler.until(lambda: len(handler.done) == 2)
    finally:
        await reader.stop()


async def test_stop_cancels_what_is_being_handled_and_leaves_it_to_its_lease(queues: MemoryQueues) -> None:
    handler = Handler()
    reader = QueueReader(queues, Q, handler, owned=False, tick=0.02, lease_ms=50)
    await queues.add(Q, "slow-1", now_ms())
    await reader.start()
    await handler.until(lambda: handler.running == 1)
    await reader.stop()
    assert handler.running == 0 and handler.done == []
    await asyncio.sleep(0.06)  # the lease of 50 ms is over: the item is due again
    assert [c.item for c in await queues.claim(Q, 0, now_ms(), 5_000, 10)] == ["slow-1"]


async def test_run_once_returns_when_what_it_claimed_is_handled(queues: MemoryQueues) -> None:
    handler = Handler()
    reader = QueueReader(queues, Q, handler, owned=False)
    for i in range(3):
        await queues.add(Q, f"quick-{i}", now_ms())
    assert await reader.run_once() == 3
    assert sorted(handler.done) == ["quick-0", "quick-1", "quick-2"]
    assert await reader.run_once() == 0


async def test_an_item_due_again_while_handled_waits_for_its_handling_to_end(queues: MemoryQueues) -> None:
    """A league queued again during its own pass: the second pass starts after the first."""
    handler = Handler()
    reader = QueueReader(queues, Q, handler, owned=False, tick=0.02, lease_ms=30)
    await queues.add(Q, "slow-1", now_ms())
    await reader.start()
    try:
        await handler.until(lambda: handler.running == 1)
        await asyncio.sleep(0.1)  # its lease is over: due again, and claimed again meanwhile
        assert handler.started == ["slow-1"] and handler.running == 1
        handler.release.set()
        await handler.until(lambda: len(handler.done) >= 2)
    finally:
        await reader.stop()
    assert handler.most == 1
