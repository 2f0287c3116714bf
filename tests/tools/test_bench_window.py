"""The measured window of the service's load generators opens after the load's first action
and a warm-up counted from it: a load that takes longer to start than the warm-up (the worker
creating its first matches on a busy machine) is measured, not charged as an empty window."""

from __future__ import annotations

import asyncio

from truco_tools.bench_load import Figures
from truco_tools.bench_service import measure_window


async def test_the_window_opens_after_the_first_action() -> None:
    fig = Figures()
    stop = asyncio.Event()
    started = asyncio.Event()

    async def slot(_: int) -> None:
        await started.wait()  # the first match takes longer to start than warm-up and window
        while not stop.is_set():
            fig.seen += 1
            if fig.measuring:
                fig.actions += 1
            await asyncio.sleep(0.001)

    async def start_late() -> None:
        await asyncio.sleep(0.3)
        started.set()

    late = asyncio.ensure_future(start_late())
    elapsed, _ = await measure_window(slot, 2, fig, stop, warmup=0.0, seconds=0.1)
    await late
    assert elapsed >= 0.1
    assert fig.actions > 0  # without waiting for the first action: the window closed at 0.1 s, empty
