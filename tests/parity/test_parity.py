"""One match, three paths, the same objects: random matches of every preset and player count,
played by the same seeded players from the same seed, observed for every seat at every version
through the SDK's local runner (the engine in-process), over gRPC and over REST/NDJSON, give
equal SDK ``Observation`` and ``Event`` objects (hand history included).

The remote paths go through the real worker (Redis store, API layer, codec, transports) and
through the SDK's own stream handling (``truco_client._core.StreamState``); the local path is
``truco_client.local.play_local_match``. Matches are played one action at a time (every seat
receives an update before the next action), so each commit is one update on every path."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import grpc
import pytest
from google.protobuf import json_format

import truco_engine as te
from tests.rest.conftest import ACME_KEY, worker_settings
from truco_client import Bot
from truco_client._core import StreamState
from truco_client.actions import Action
from truco_client.local import play_local_match
from truco_client.observation import Event, Observation
from truco_contract import codec
from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc
from truco_server.app.wiring import service_factory
from truco_server.transports.grpc.server import Worker

pytestmark = pytest.mark.timeout(600)

Updates = dict[int, list[tuple[int, tuple[Event, ...], Observation]]]
"""Per seat: every update it received (version, new events, observation)."""


def _cases() -> list[tuple[str, int]]:
    out = []
    for name in te.preset_names():
        for n in range(2, 13):
            try:
                te.get_rules(name, players=n)
            except te.InvalidRulesError:
                continue
            out.append((name, n))
    return out


CASES = _cases()
FULL = {name: min(n for m, n in CASES if m == name) for name, _ in CASES}
"""The smallest table of each preset is played to the end (reveal included)."""
PREFIX = 40
"""Actions played of the other tables (several hands, and every first observation)."""


class Seeded(Bot):
    """Picks a legal action with its own seeded generator: equal observations, equal choices."""

    def choose(self, observation: Observation) -> Action:
        return self.rng.choice(observation.legal_actions)


def _limit(name: str, players: int) -> int:
    return 20_000 if FULL[name] == players else PREFIX


def _seed(name: str, players: int) -> bytes:
    return random.Random(f"parity {name} {players}").randbytes(32)


def _local(name: str, players: int) -> Updates:
    rules = te.get_rules(name, players=players)
    bots = [Seeded(seed=seat) for seat in range(players)]
    got: Updates = {seat: [] for seat in range(players)}

    def record(seat: int, obs: Observation, events: tuple[Event, ...]) -> None:
        got[seat].append((obs.version, events, obs))

    play_local_match(
        bots,
        rules,
        random.Random(0),
        seed=_seed(name, players),
        on_update=record,
        max_actions=_limit(name, players),
    )
    return got


async def _drive(
    name: str,
    players: int,
    create: Callable[[], Awaitable[match_service_pb2.CreateMatchResponse]],
    open_stream: Callable[[str, str], AsyncIterator[match_service_pb2.StreamObservationsResponse]],
    submit: Callable[[str, str, match_service_pb2.SubmitActionRequest], Awaitable[None]],
) -> Updates:
    """Play the match on a server through one transport, the same way the local runner does."""
    created = await create()
    match_id = created.match.match_id
    tokens = [c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)]
    rules = codec.match_from_proto(created.match).rules
    states = [StreamState(match_id, 0, rules) for _ in range(players)]
    streams = [open_stream(match_id, t).__aiter__() for t in tokens]
    bots = [Seeded(seed=seat) for seat in range(players)]
    got: Updates = {seat: [] for seat in range(players)}

    async def next_update(seat: int) -> Observation:
        while True:
            upd = states[seat].accept(await anext(streams[seat]))
            if upd is not None:
                got[seat].append((upd.version, upd.events, upd.observation))
                return upd.observation

    views = [await next_update(seat) for seat in range(players)]
    for _ in range(_limit(name, players)):
        if views[0].is_over:
            break
        seat = views[0].whose_turn
        assert seat is not None
        action = bots[seat].choose(views[seat])
        request = match_service_pb2.SubmitActionRequest(
            match_id=match_id, request_id=f"p{views[0].version}", expected_version=views[0].version
        )
        request.action.CopyFrom(codec.action_to_proto(action))
        await submit(match_id, tokens[seat], request)
        views = [await next_update(s) for s in range(players)]
    for s in streams:
        await s.aclose()  # type: ignore[attr-defined]
    return got


def _create_request(name: str, players: int) -> match_service_pb2.CreateMatchRequest:
    return match_service_pb2.CreateMatchRequest(
        rules=match_pb2.RuleSet(preset=name), players=players, seed=_seed(name, players)
    )


async def _grpc(worker: Worker, name: str, players: int) -> Updates:
    key = (("authorization", f"Bearer {ACME_KEY}"),)
    async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
        stub = match_service_pb2_grpc.MatchServiceStub(channel)

        async def create() -> match_service_pb2.CreateMatchResponse:
            return await stub.CreateMatch(_create_request(name, players), metadata=key)

        async def open_stream(
            match_id: str, token: str
        ) -> AsyncIterator[match_service_pb2.StreamObservationsResponse]:
            request = match_service_pb2.StreamObservationsRequest(match_id=match_id, from_version=0)
            async for msg in stub.StreamObservations(
                request, metadata=(("authorization", f"Bearer {token}"),)
            ):
                yield msg

        async def submit(match_id: str, token: str, request: match_service_pb2.SubmitActionRequest) -> None:
            await stub.SubmitAction(request, metadata=(("authorization", f"Bearer {token}"),))

        return await _drive(name, players, create, open_stream, submit)


async def _rest(worker: Worker, name: str, players: int) -> Updates:
    base = f"http://127.0.0.1:{worker.http_port}"
    timeout = aiohttp.ClientTimeout(total=None, sock_read=30)
    async with aiohttp.ClientSession(timeout=timeout) as http:

        async def create() -> match_service_pb2.CreateMatchResponse:
            body = json_format.MessageToDict(_create_request(name, players))
            headers = {"Authorization": f"Bearer {ACME_KEY}"}
            async with http.post(f"{base}/v1/matches", json=body, headers=headers) as resp:
                assert resp.status == 200, await resp.text()
                return json_format.ParseDict(await resp.json(), match_service_pb2.CreateMatchResponse())

        async def open_stream(
            match_id: str, token: str
        ) -> AsyncIterator[match_service_pb2.StreamObservationsResponse]:
            url = f"{base}/v1/matches/{match_id}:streamObservations?from_version=0"
            async with http.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
                assert resp.status == 200, await resp.text()
                async for line in resp.content:
                    if line.strip():
                        yield json_format.Parse(line, match_service_pb2.StreamObservationsResponse())

        async def submit(match_id: str, token: str, request: match_service_pb2.SubmitActionRequest) -> None:
            body: dict[str, Any] = json_format.MessageToDict(request)
            url = f"{base}/v1/matches/{match_id}/actions"
            async with http.post(url, json=body, headers={"Authorization": f"Bearer {token}"}) as resp:
                assert resp.status == 200, await resp.text()

        return await _drive(name, players, create, open_stream, submit)


@pytest.mark.parametrize(("name", "players"), CASES, ids=[f"{n}-{p}p" for n, p in CASES])
async def test_local_grpc_and_rest_give_the_same_observations_and_events(
    clean_redis_url: str, name: str, players: int
) -> None:
    local = _local(name, players)
    worker = Worker(worker_settings(clean_redis_url), service_factory)
    await worker.start()
    try:
        remote = {"grpc": await _grpc(worker, name, players), "rest": await _rest(worker, name, players)}
    finally:
        await worker.stop()
    for transport, got in remote.items():
        for seat in range(players):
            assert len(got[seat]) == len(local[seat]), (transport, seat)
            for (v1, e1, o1), (v2, e2, o2) in zip(local[seat], got[seat], strict=True):
                assert (v1, e1) == (v2, e2), (transport, seat, v1)
                assert o1 == o2, (transport, seat, v1)
    if FULL[name] == players:
        assert local[0][-1][2].is_over and local[0][-1][1][-1].kind == "match_revealed"
