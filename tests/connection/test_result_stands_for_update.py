"""An action's result stands for its seat's update (``api/connection.py``): the player
connection tells the seat's stream what its results delivered, and the stream does not even
build those updates (``MatchStreams.stream``'s ``delivered``). Over a whole match on a real
worker: every update the streams build is one a client receives, the actor's own commits
build none, and the commit that ends the match still ends both subscriptions."""

from __future__ import annotations

import random
from typing import Any

import grpc
import pytest

from tests.connection.test_connection import Raw, _create
from truco_contract.pb import match_service_pb2
from truco_server.services.streams import MatchStreams
from truco_server.transports.grpc.server import Worker

pb = match_service_pb2
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]


async def test_the_actors_stream_builds_no_update_for_its_result_and_ends_with_the_match(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tuple[int, int]] = []  # (viewer, version) of every update a stream built
    real = MatchStreams._update

    async def counting(self: MatchStreams, sub: Any, batch: Any, match: Any, *args: Any) -> Any:
        update = await real(self, sub, batch, match, *args)
        built.append((args[1], update.version))  # args: caller, viewer, generation
        return update

    monkeypatch.setattr(MatchStreams, "_update", counting)
    mid, tokens = await _create(worker)
    rng = random.Random(5)
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        raw = Raw(ch)
        for seat in (0, 1):
            raw.subscribe(seat + 1, tokens[seat], mid)  # subscription id = seat + 1
        seen: dict[int, Any] = {}
        for _ in range(2):
            upd = (await raw.next("update")).update
            seen[upd.subscription_id - 1] = upd.message.update.observation
        results: list[tuple[int, int]] = []  # (actor, version) of every accepted action
        received: list[tuple[int, int]] = []  # (seat, version) of every update a client got
        ended: dict[int, int] = {}
        n = 0
        while len(ended) < 2:
            current = max(seen.values(), key=lambda o: o.version)
            if current.awaited and not ended and len(results) == n:
                actor = current.awaited[0]
                obs = seen[actor]
                if obs.version == current.version:  # the actor's view is the latest: act on it
                    request = pb.SubmitActionRequest(
                        request_id=f"a{n}", expected_version=obs.version, action=rng.choice(obs.legal_actions)
                    )
                    raw.act(actor + 1, n, request)
                    n += 1
            msg = await raw.next()
            kind = msg.WhichOneof("message")
            if kind == "result":
                res = msg.result
                results.append((res.subscription_id - 1, res.response.version))
                seen[res.subscription_id - 1] = res.response.observation
            elif kind == "update":
                body = msg.update.message.update
                received.append((msg.update.subscription_id - 1, body.version))
                seen[msg.update.subscription_id - 1] = body.observation
            elif kind == "ended":
                ended[msg.ended.subscription_id - 1] = msg.ended.status.code
            else:
                raise AssertionError(f"unexpected {msg}")
    assert ended == {0: 0, 1: 0}  # both subscriptions ended OK with the match
    assert len(results) >= 10
    final = results[-1]
    # the actor's own commits built no update, except the one that ended the match
    assert [(seat, v) for seat, v in results if (seat, v) in built] == [final]
    # every other update built was received (the snapshots are not built by _update)
    assert sorted(b for b in built if b != final) == sorted(r for r in received if r != final)
    assert all((1 - seat, v) in received for seat, v in results)  # the other seat got each
