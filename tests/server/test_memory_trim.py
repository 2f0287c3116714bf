"""The worker hands freed memory back after many streams closed (truco_server.app.memory);
what it gives back is measured by ``benchmarks/never_read_streams.py``."""

from __future__ import annotations

import asyncio

import pytest

from truco_server.app import memory
from truco_server.app.memory import MemoryTrim


class Streams:
    closed = 0


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_released_once_enough_streams_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    streams = Streams()
    monkeypatch.setattr(memory, "release", lambda: calls.append(streams.closed) or True)
    trim = MemoryTrim(streams, 100, every=0.01)
    await trim.start()
    try:
        streams.closed = 99
        streams.closed = 250
        while not calls:
            await asyncio.sleep(0.01)  # poll: the trimmer looks every 10 ms
        streams.closed = 300  # 50 more: not enough for another, whatever ticks pass
        for _ in range(3):
            await asyncio.sleep(0.01)
        streams.closed = 400
        while len(calls) < 2:
            await asyncio.sleep(0.01)
        assert calls == [250, 400] and trim.trims == 2
    finally:
        await trim.stop()


@pytest.mark.asyncio
async def test_zero_turns_it_off() -> None:
    trim = MemoryTrim(Streams(), 0, every=0.01)
    await trim.start()
    assert trim._task is None
    await trim.stop()
