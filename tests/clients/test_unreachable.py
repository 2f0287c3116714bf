"""A wrong address fails fast and says so: the SDK's first call raises ServerUnreachable within
its connect timeout (2 s by default, configurable), naming the address and how to start a
server; the ``truco`` commands print that one line and exit 1. Before, the first call went
through every retry of the RetryPolicy (7 s in the SDK, 14 s in ``truco match create``) and
ended with gRPC's "failed to connect to all addresses"."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from truco_client import AsyncTrucoClient, ServerUnreachable, TrucoClient, Unavailable
from truco_client._core import CONNECT_TIMEOUT
from truco_client.leagues import LeagueClient
from truco_client.matchmaking import MatchmakingClient
from truco_server.app.embedded import EmbeddedServer

pytestmark = pytest.mark.timeout(300)  # a hang guard: the commands start slowly on a loaded machine

TRUCO = str(Path(sys.executable).with_name("truco"))
SLACK = 2.0
"""Seconds allowed beyond the connect timeout (start-up of a call, a loaded machine); the
retries this replaces took 7 s and more."""


def dead_address() -> str:
    """A loopback address where nothing listens (a port just bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def live() -> Iterator[str]:
    srv = EmbeddedServer().start()
    try:
        yield srv.address
    finally:
        srv.stop()


def check(exc: ServerUnreachable, *addresses: str) -> None:
    text = str(exc)
    assert "\n" not in text
    for address in addresses:
        assert address in text, text
    assert "truco serve" in text and "make serve" in text, text
    assert isinstance(exc, Unavailable) and exc.reason == "SERVER_UNREACHABLE"
    assert exc.targets == addresses


def test_the_default_connect_timeout_is_a_couple_of_seconds() -> None:
    assert 1.0 <= CONNECT_TIMEOUT <= 3.0


@pytest.mark.parametrize("call", ["create_match", "get_match", "stream"])
def test_the_sync_client_fails_fast_on_a_wrong_address(call: str) -> None:
    address = dead_address()
    start = time.monotonic()
    with TrucoClient(address, api_key="k") as client, pytest.raises(ServerUnreachable) as caught:
        if call == "create_match":
            client.create_match("paulista")
        elif call == "get_match":
            client.get_match("m123", token="t")
        else:
            next(iter(client.stream("m123", token="t")))
    assert time.monotonic() - start < CONNECT_TIMEOUT + SLACK
    check(caught.value, address)


def test_the_connect_timeout_is_configurable() -> None:
    address = dead_address()
    start = time.monotonic()
    with TrucoClient(address, connect_timeout=0.3) as client, pytest.raises(ServerUnreachable) as caught:
        client.create_match("paulista")
    assert time.monotonic() - start < 0.3 + SLACK
    assert "waited 0.3 s" in str(caught.value)


def test_several_addresses_are_each_tried_and_named() -> None:
    dead = [dead_address(), dead_address()]
    with TrucoClient(dead, connect_timeout=0.3) as client, pytest.raises(ServerUnreachable) as caught:
        client.create_match("paulista")
    check(caught.value, *dead)


def test_a_dead_first_address_moves_on_to_a_live_one(live: str) -> None:
    with TrucoClient([dead_address(), live], connect_timeout=0.5) as client:
        assert client.create_match("paulista").match_id


def test_wait_ready_raises_the_same_error() -> None:
    address = dead_address()
    with TrucoClient(address) as client, pytest.raises(ServerUnreachable) as caught:
        client.wait_ready(timeout=0.3)
    check(caught.value, address)


def test_the_asyncio_client_fails_fast_on_a_wrong_address() -> None:
    address = dead_address()

    async def first_call() -> None:
        async with AsyncTrucoClient(address) as client:
            await client.create_match("paulista")

    start = time.monotonic()
    with pytest.raises(ServerUnreachable) as caught:
        asyncio.run(first_call())
    assert time.monotonic() - start < CONNECT_TIMEOUT + SLACK
    check(caught.value, address)


def test_the_asyncio_client_reaches_a_live_server_after_a_dead_one(live: str) -> None:
    async def first_call() -> str:
        async with AsyncTrucoClient([dead_address(), live], connect_timeout=0.5) as client:
            return (await client.create_match("paulista")).match_id

    assert asyncio.run(first_call())


def test_the_league_client_fails_fast_on_a_wrong_address() -> None:
    address = dead_address()
    start = time.monotonic()
    with LeagueClient(address, api_key="k") as leagues, pytest.raises(ServerUnreachable) as caught:
        leagues.list_bots()
    assert time.monotonic() - start < CONNECT_TIMEOUT + SLACK
    check(caught.value, address)


def test_the_matchmaking_client_fails_fast_on_a_wrong_address() -> None:
    address = dead_address()
    start = time.monotonic()
    with MatchmakingClient(address, api_key="k") as queues, pytest.raises(ServerUnreachable) as caught:
        queues.list_pools()
    assert time.monotonic() - start < CONNECT_TIMEOUT + SLACK
    check(caught.value, address)


def startup_seconds() -> float:
    """What starting the command's modules takes on this machine now (a loaded machine takes
    many times its idle second): the yardstick the command's own time is held to."""
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", "import truco_cli.main, truco_cli.match_commands, truco_client, grpc"],
        check=True,
        timeout=120,
    )
    return time.monotonic() - start


@pytest.mark.parametrize(
    "argv",
    [
        ["match", "create"],
        ["bot", "rules", "--token", "tc1.m123.0.x"],
        ["watch", "m123", "--token", "tc1.m123.s.x"],
        ["league", "bots", "list"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_the_command_prints_one_line_and_exits_1(argv: list[str]) -> None:
    address = dead_address()
    startup = startup_seconds()
    start = time.monotonic()
    done = subprocess.run(
        [TRUCO, *argv, "--server", address],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    elapsed = time.monotonic() - start
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("truco "), lines
    assert f"no Truco server answers at {address}" in lines[0] and "truco serve" in lines[0], lines
    assert elapsed < CONNECT_TIMEOUT + SLACK + 2 * startup  # plus the command's own start-up


def test_the_lobby_fails_fast_on_a_wrong_address(tmp_path: Path) -> None:
    from truco_bots import RandomBot
    from truco_client.leagues import run_lobby

    address = dead_address()
    start = time.monotonic()
    with pytest.raises(ServerUnreachable) as caught:
        run_lobby(address, "bot_x", "tb1.x", RandomBot)
    assert time.monotonic() - start < CONNECT_TIMEOUT + SLACK
    check(caught.value, address)
    bots = tmp_path / "bots.json"
    bots.write_text('[{"bot_id": "bot_x", "token": "tb1.x"}]')
    done = subprocess.run(
        [TRUCO, "league", "lobby", str(bots), "--server", address],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines() == [f"truco league: {caught.value}"], done.stderr
