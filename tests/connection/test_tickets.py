"""A matchmaking ticket on the player connection (``subscribe_ticket``), over gRPC Connect and
over the WebSocket, against a real worker on Redis: an app holding one connection follows its
ticket, learns its match is formed (the seat credential in the matched ticket) and plays that
seat on the same connection. A ticket subscription cannot act, a wrong ticket token ends that
subscription only, and unsubscribe ends it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import grpc
import pytest
import pytest_asyncio

from tests.connection.ws import JSON, PROTO, RawWs, ws_url
from tests.e2e.conftest import WorkerFactory
from truco_client.connection import PlayerConnection
from truco_contract.pb import match_service_pb2, matchmaking_service_pb2, matchmaking_service_pb2_grpc
from truco_kit.actions import Action
from truco_server.core.config import parse_api_keys
from truco_server.transports.grpc.server import Worker

pb = match_service_pb2
mm = matchmaking_service_pb2
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]
KEY = "ops-secret"
OPERATOR = (("authorization", f"Bearer {KEY}"),)


@pytest_asyncio.fixture
async def keyed(make_worker: WorkerFactory) -> AsyncIterator[Worker]:
    async with make_worker(api_keys=parse_api_keys(f"ops={KEY}")) as w:
        yield w


async def _queue(worker: Worker, *players: str) -> list[mm.CreateTicketResponse]:
    """A two-seat pool ``quick`` (made once: the same definition again is the same pool) and
    one ticket per player."""
    async with grpc.aio.insecure_channel(worker.grpc_address) as channel:
        stub = matchmaking_service_pb2_grpc.MatchmakingServiceStub(channel)
        await stub.CreatePool(
            mm.CreatePoolRequest(pool=mm.Pool(pool_id="quick", players=2)), metadata=OPERATOR
        )
        return [
            await stub.CreateTicket(
                mm.CreateTicketRequest(pool_id="quick", players=[mm.TicketPlayer(player_id=p)]),
                metadata=OPERATOR,
            )
            for p in players
        ]


@pytest.mark.parametrize("transport", ["grpc", "websocket"])
async def test_a_ticket_followed_on_the_connection_is_matched_and_its_seat_plays_there(
    keyed: Worker, transport: str
) -> None:
    (ana,) = await _queue(keyed, "ana")
    target = keyed.grpc_address if transport == "grpc" else ws_url(keyed)
    async with PlayerConnection(target) as conn:
        followed = await conn.ticket("quick", ana.ticket.ticket_id, ana.ticket_token)
        states = aiter(followed)
        first = await asyncio.wait_for(anext(states), 30)
        assert first.state == mm.TICKET_STATE_WAITING and first.ticket_id == ana.ticket.ticket_id
        await _queue(keyed, "bia")  # the second player: the table forms on a worker's pass
        matched = await asyncio.wait_for(anext(states), 30)
        assert matched.state == mm.TICKET_STATE_MATCHED and matched.match_id
        (mine,) = matched.seats
        assert mine.player_id == "ana" and mine.token
        with pytest.raises(StopAsyncIteration):  # the subscription ended after the last state
            await asyncio.wait_for(anext(states), 30)
        # the seat credential the ticket carried plays on the same connection
        seat = await conn.seat(matched.match_id, mine.token)
        update = await asyncio.wait_for(anext(aiter(seat)), 30)
        assert update.observation.seat == mine.seat
        done = await seat.submit(Action("resign"), expected_version=update.version)
        assert done.observation.is_over


@pytest.mark.parametrize("protocol", [PROTO, JSON])
async def test_ticket_subscriptions_on_the_wire(keyed: Worker, protocol: str) -> None:
    (ana,) = await _queue(keyed, "ana")
    tid = ana.ticket.ticket_id
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        raw = await RawWs.open(http, keyed, protocol)
        sub = pb.ConnectSubscribeTicket(
            subscription_id=1, token=ana.ticket_token, pool_id="quick", ticket_id=tid
        )
        await raw.send(pb.ConnectRequest(subscribe_ticket=sub))
        got = (await raw.next("ticket")).ticket
        assert got.subscription_id == 1 and got.message.ticket.state == mm.TICKET_STATE_WAITING
        # a ticket subscription cannot act
        await raw.act(1, 7, pb.SubmitActionRequest(request_id="r1"))
        err = (await raw.next("error")).error
        assert err.action_id == 7 and err.status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        # a wrong token ends that subscription only
        bad = pb.ConnectSubscribeTicket(subscription_id=2, token="tk1.bad", pool_id="quick", ticket_id=tid)
        await raw.send(pb.ConnectRequest(subscribe_ticket=bad))
        ended = (await raw.next("ended")).ended
        assert ended.subscription_id == 2 and ended.status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
        # unsubscribe: ended OK; the connection goes on
        await raw.send(pb.ConnectRequest(unsubscribe=pb.ConnectUnsubscribe(subscription_id=1)))
        ended = (await raw.next("ended")).ended
        assert ended.subscription_id == 1 and ended.status.code == 0
        if protocol == JSON:
            frame = next(f for f in raw.frames if "ticket" in f)
            assert frame["ticket"]["message"]["ticket"]["ticketId"] == tid
        await raw.ws.close()
