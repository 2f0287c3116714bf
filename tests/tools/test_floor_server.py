"""The no-work floor server speaks the player connection over WebSocket as the worker does:
the same bots play its canned matches to their end (every action answered by a result that
stands for the actor's update, every other seat updated), so its CPU per action is the
WebSocket transport's floor."""

from __future__ import annotations

import asyncio
import sys

import aiohttp
import pytest

from truco_tools.bench_connection import WebSocketBots
from truco_tools.bench_load import Figures
from truco_tools.bench_processes import HOST, child
from truco_tools.floor_server import ACTIONS_PER_MATCH
from truco_tools.redis_proc import free_port

pytestmark = pytest.mark.timeout(120)


async def test_websocket_bots_play_the_floor_servers_canned_matches_to_their_end() -> None:
    port, http_port = free_port(HOST), free_port(HOST)
    cmd = [sys.executable, "-m", "truco_tools.floor_server", "--grpc-port", str(port)]
    with child([*cmd, "--http-port", str(http_port)], "floor listening"):
        fig, stop = Figures(measuring=True), asyncio.Event()
        async with aiohttp.ClientSession() as session:
            bots = WebSocketBots(session, f"http://{HOST}:{http_port}", 1, "paulista", 2, 0, 0, fig, stop)
            await bots.start()
            slots = [asyncio.ensure_future(bots.run_slot(i)) for i in range(2)]
            try:
                async with asyncio.timeout(60):
                    # each slot plays a second match after its first; a match ends with its
                    # last result, and the other seat's update of that action may come after it
                    while fig.matches_finished < 4 or len(fig.observed_ms) < 4 * ACTIONS_PER_MATCH:
                        await asyncio.sleep(0.02)
            finally:
                stop.set()
                for slot in slots:
                    slot.cancel()
                await asyncio.gather(*slots, return_exceptions=True)
                await bots.close()
    assert fig.errors == 0
    assert fig.actions >= 4 * ACTIONS_PER_MATCH
    assert len(fig.observed_ms) >= 4 * ACTIONS_PER_MATCH  # both seats saw every action
