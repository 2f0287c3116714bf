"""The leak oracle (``truco_tools.campaign.leaks``, docs/reliability.md) over WebSocket
frames: a random match of every preset at every table size, every seat and a spectator on
one WebSocket player connection (JSON text frames), the seats acting over it; each frame's
events are checked against the hidden fields of the events the server stored, and each
observation at the server's version against its state. Zero leaks."""

from __future__ import annotations

import pytest

from truco_contract.pb import observation_pb2
from truco_server.transports.grpc.server import Worker
from truco_tools.campaign.leaks import cases, run_leaks

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]


async def test_no_leak_in_websocket_frames_for_every_preset(worker: Worker, clean_redis_url: str) -> None:
    every = cases()
    result = await run_leaks(
        clean_redis_url,
        worker.grpc_address,
        len(every),
        max_actions=12,
        websocket=f"http://127.0.0.1:{worker.http_port}",
    )
    assert not result.errors, result.errors[:5]
    assert not result.leaks, result.leaks[:5]
    assert result.matches == len(every)
    assert result.presets == {name for name, _ in every}
    assert result.messages > 1000


async def test_the_oracle_sees_a_leak_in_websocket_frames(
    worker: Worker, clean_redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not blind: a server that shows every card of the deck in each observation's hand is
    caught on the WebSocket frames."""
    from truco_server.api import matches

    real = matches.observation

    def leaky(view, rules, viewer, at):  # type: ignore[no-untyped-def]
        obs = observation_pb2.Observation.FromString(real(view, rules, viewer, at))
        obs.hand.extend(c for c in rules.deck_cards if c not in obs.hand)
        return obs.SerializeToString()

    monkeypatch.setattr(matches, "observation", leaky)
    result = await run_leaks(
        clean_redis_url,
        worker.grpc_address,
        1,
        max_actions=3,
        websocket=f"http://127.0.0.1:{worker.http_port}",
    )
    assert result.leaks and not result.errors
