"""``truco.v1.MatchmakingService`` in messages, shared by gRPC and REST.

Pools and ratings take the operator's API key; a ticket is read, followed and cancelled with
the operator's key or the ticket's own credential (``tk1...``, from CreateTicket).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from google.protobuf import timestamp_pb2

from truco_contract import codec
from truco_contract.pb import matchmaking_service_pb2
from truco_server.api.auth import Authenticator
from truco_server.api.matches import StreamTracker
from truco_server.core import errors as E
from truco_server.core.caller import Credentials
from truco_server.services.matchmaking import Matchmaking, StoredPool

pb = matchmaking_service_pb2


def _decode_error(exc: codec.DecodeError) -> E.InvalidArgument:
    return E.InvalidArgument(str(exc), field_violations=[E.FieldViolation(exc.field, exc.message)])


def _pool(p: StoredPool, waiting: int = 0) -> matchmaking_service_pb2.Pool:
    return codec.pool_to_proto(p.pool, p.created_at, waiting)


class MatchmakingApi:
    """``truco.v1.MatchmakingService`` over :class:`~truco_server.services.matchmaking.Matchmaking`."""

    def __init__(
        self, matchmaking: Matchmaking, auth: Authenticator, streams: StreamTracker | None = None
    ) -> None:
        self.matchmaking = matchmaking
        self.auth = auth
        self.streams = streams

    async def CreatePool(self, creds: Credentials, request: pb.CreatePoolRequest) -> pb.CreatePoolResponse:
        operator = self.auth.operator(creds)
        try:
            spec = codec.pool_spec_from_proto(request.pool)
        except codec.DecodeError as exc:
            raise _decode_error(exc) from None
        made = await self.matchmaking.pools.create(operator, spec)
        return pb.CreatePoolResponse(pool=_pool(made))

    async def GetPool(self, creds: Credentials, request: pb.GetPoolRequest) -> pb.GetPoolResponse:
        operator = self.auth.operator(creds)
        found = await self.matchmaking.pools.get(operator.name, request.pool_id)
        waiting = len(await self.matchmaking.tickets.waiting(found.key, 1000))
        return pb.GetPoolResponse(pool=_pool(found, waiting))

    async def ListPools(self, creds: Credentials, request: pb.ListPoolsRequest) -> pb.ListPoolsResponse:
        operator = self.auth.operator(creds)
        return pb.ListPoolsResponse(pools=[_pool(p) for p in await self.matchmaking.pools.list(operator)])

    async def CreateTicket(
        self, creds: Credentials, request: pb.CreateTicketRequest
    ) -> pb.CreateTicketResponse:
        operator = self.auth.operator(creds)
        ticket, token = await self.matchmaking.create_ticket(
            operator, request.pool_id, codec.ticket_spec_from_proto(request), request.request_id or None
        )
        return pb.CreateTicketResponse(ticket=codec.ticket_to_proto(ticket), ticket_token=token)

    async def GetTicket(self, creds: Credentials, request: pb.GetTicketRequest) -> pb.GetTicketResponse:
        caller = self.auth.ticket_holder(creds)
        ticket = await self.matchmaking.get_ticket(caller, request.pool_id, request.ticket_id)
        return pb.GetTicketResponse(ticket=codec.ticket_to_proto(ticket))

    async def CancelTicket(
        self, creds: Credentials, request: pb.CancelTicketRequest
    ) -> pb.CancelTicketResponse:
        caller = self.auth.ticket_holder(creds)
        ticket = await self.matchmaking.cancel_ticket(caller, request.pool_id, request.ticket_id)
        return pb.CancelTicketResponse(ticket=codec.ticket_to_proto(ticket))

    async def StreamTicket(
        self, creds: Credentials, request: pb.StreamTicketRequest
    ) -> AsyncGenerator[pb.StreamTicketResponse, None]:
        caller = self.auth.ticket_holder(creds)
        updates = self.matchmaking.follow(caller, request.pool_id, request.ticket_id)
        if self.streams is None:
            async for t in updates:
                yield _update(t)
            return
        async with self.streams.track():
            async for t in updates:
                yield _update(t)

    async def GetPlayerRating(
        self, creds: Credentials, request: pb.GetPlayerRatingRequest
    ) -> pb.GetPlayerRatingResponse:
        operator = self.auth.operator(creds)
        r = await self.matchmaking.player_rating(operator, request.player_id, request.family)
        return pb.GetPlayerRatingResponse(
            rating=pb.PlayerRating(
                player_id=request.player_id,
                family=request.family,
                mu=r.mu,
                sigma=r.sigma,
                ordinal=r.ordinal,
                games=r.games,
            )
        )


def _update(ticket: object) -> matchmaking_service_pb2.StreamTicketResponse:
    if ticket is None:
        beat = timestamp_pb2.Timestamp()
        beat.GetCurrentTime()
        return pb.StreamTicketResponse(heartbeat=beat)
    return pb.StreamTicketResponse(ticket=codec.ticket_to_proto(ticket))  # type: ignore[arg-type]
