"""The gRPC adapters: ``truco.v1.MatchService`` over :class:`truco_server.api.matches.MatchApi`,
``truco.v1.OperatorService`` over :class:`truco_server.api.operators.OperatorApi`,
``truco.v1.LeagueService`` over :class:`truco_server.api.leagues.LeagueApi`.

Each method passes the call's metadata (credentials) and the request to the API method of
the same name and returns what it returns; :func:`truco_server.transports.grpc.errors.map_service_errors`
turns a typed service error into its ``google.rpc.Status``. Nothing else happens here: auth,
decoding, the service call and the codec are the API layer's, shared with REST.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from truco_contract.pb import (
    league_service_pb2,
    league_service_pb2_grpc,
    match_service_pb2,
    match_service_pb2_grpc,
    operator_service_pb2,
    operator_service_pb2_grpc,
)
from truco_server.api.connection import PlayerConnection
from truco_server.api.leagues import LeagueApi
from truco_server.api.matches import MatchApi
from truco_server.api.operators import OperatorApi
from truco_server.core.caller import Credentials
from truco_server.transports.grpc.errors import map_service_errors

pb = match_service_pb2
opb = operator_service_pb2
lpb = league_service_pb2
Context = grpc.aio.ServicerContext[Any, Any]


def _creds(context: Context) -> Credentials:
    return Credentials.from_pairs(context.invocation_metadata())


class GrpcMatchService(match_service_pb2_grpc.MatchServiceServicer):
    """Thin adapter; see the module docstring."""

    def __init__(self, api: MatchApi) -> None:
        self.api = api

    @map_service_errors
    async def CreateMatch(self, request: pb.CreateMatchRequest, context: Context) -> pb.CreateMatchResponse:
        return await self.api.CreateMatch(_creds(context), request)

    @map_service_errors
    async def SubmitAction(
        self, request: pb.SubmitActionRequest, context: Context
    ) -> pb.SubmitActionResponse:
        return await self.api.SubmitAction(_creds(context), request)

    @map_service_errors
    async def StreamObservations(
        self, request: pb.StreamObservationsRequest, context: Context
    ) -> AsyncIterator[pb.StreamObservationsResponse]:
        async for message in self.api.StreamObservations(_creds(context), request):
            yield message

    @map_service_errors
    async def GetMatch(self, request: pb.GetMatchRequest, context: Context) -> pb.GetMatchResponse:
        return await self.api.GetMatch(_creds(context), request)

    @map_service_errors
    async def ListMatches(self, request: pb.ListMatchesRequest, context: Context) -> pb.ListMatchesResponse:
        return await self.api.ListMatches(_creds(context), request)

    @map_service_errors
    async def CancelMatch(self, request: pb.CancelMatchRequest, context: Context) -> pb.CancelMatchResponse:
        return await self.api.CancelMatch(_creds(context), request)

    @map_service_errors
    async def JoinMatch(self, request: pb.JoinMatchRequest, context: Context) -> pb.JoinMatchResponse:
        return await self.api.JoinMatch(_creds(context), request)

    @map_service_errors
    async def GetMatchRecord(
        self, request: pb.GetMatchRecordRequest, context: Context
    ) -> pb.GetMatchRecordResponse:
        return await self.api.GetMatchRecord(_creds(context), request)

    @map_service_errors
    async def AddTime(self, request: pb.AddTimeRequest, context: Context) -> pb.AddTimeResponse:
        return await self.api.AddTime(_creds(context), request)

    @map_service_errors
    async def AdjudicateMatch(
        self, request: pb.AdjudicateMatchRequest, context: Context
    ) -> pb.AdjudicateMatchResponse:
        return await self.api.AdjudicateMatch(_creds(context), request)

    @map_service_errors
    async def ReissueCredential(
        self, request: pb.ReissueCredentialRequest, context: Context
    ) -> pb.ReissueCredentialResponse:
        return await self.api.ReissueCredential(_creds(context), request)

    @map_service_errors
    async def Connect(
        self, request_iterator: AsyncIterator[pb.ConnectRequest], context: Context
    ) -> AsyncIterator[pb.ConnectResponse]:
        async for message in PlayerConnection(self.api).run(request_iterator):
            yield message


class GrpcOperatorService(operator_service_pb2_grpc.OperatorServiceServicer):
    """``truco.v1.OperatorService`` over :class:`truco_server.api.operators.OperatorApi`
    (thin, like :class:`GrpcMatchService`)."""

    def __init__(self, api: OperatorApi) -> None:
        self.api = api

    @map_service_errors
    async def StreamOperatorEvents(
        self, request: opb.StreamOperatorEventsRequest, context: Context
    ) -> AsyncIterator[opb.StreamOperatorEventsResponse]:
        async for message in self.api.StreamOperatorEvents(_creds(context), request):
            yield message

    @map_service_errors
    async def CreateWebhook(
        self, request: opb.CreateWebhookRequest, context: Context
    ) -> opb.CreateWebhookResponse:
        return await self.api.CreateWebhook(_creds(context), request)

    @map_service_errors
    async def ListWebhooks(
        self, request: opb.ListWebhooksRequest, context: Context
    ) -> opb.ListWebhooksResponse:
        return await self.api.ListWebhooks(_creds(context), request)

    @map_service_errors
    async def DeleteWebhook(
        self, request: opb.DeleteWebhookRequest, context: Context
    ) -> opb.DeleteWebhookResponse:
        return await self.api.DeleteWebhook(_creds(context), request)

    @map_service_errors
    async def ListWebhookDeliveries(
        self, request: opb.ListWebhookDeliveriesRequest, context: Context
    ) -> opb.ListWebhookDeliveriesResponse:
        return await self.api.ListWebhookDeliveries(_creds(context), request)


class GrpcLeagueService(league_service_pb2_grpc.LeagueServiceServicer):
    """``truco.v1.LeagueService`` over :class:`truco_server.api.leagues.LeagueApi` (thin)."""

    def __init__(self, api: LeagueApi) -> None:
        self.api = api

    @map_service_errors
    async def StreamAssignments(
        self, request: lpb.StreamAssignmentsRequest, context: Context
    ) -> AsyncIterator[lpb.StreamAssignmentsResponse]:
        async for message in self.api.StreamAssignments(_creds(context), request):
            yield message

    @map_service_errors
    async def CreateLeague(
        self, request: lpb.CreateLeagueRequest, context: Context
    ) -> lpb.CreateLeagueResponse:
        return await self.api.CreateLeague(_creds(context), request)

    @map_service_errors
    async def GetLeague(self, request: lpb.GetLeagueRequest, context: Context) -> lpb.GetLeagueResponse:
        return await self.api.GetLeague(_creds(context), request)

    @map_service_errors
    async def ListLeagues(self, request: lpb.ListLeaguesRequest, context: Context) -> lpb.ListLeaguesResponse:
        return await self.api.ListLeagues(_creds(context), request)

    @map_service_errors
    async def RegisterEntrant(
        self, request: lpb.RegisterEntrantRequest, context: Context
    ) -> lpb.RegisterEntrantResponse:
        return await self.api.RegisterEntrant(_creds(context), request)

    @map_service_errors
    async def WithdrawEntrant(
        self, request: lpb.WithdrawEntrantRequest, context: Context
    ) -> lpb.WithdrawEntrantResponse:
        return await self.api.WithdrawEntrant(_creds(context), request)

    @map_service_errors
    async def StartLeague(self, request: lpb.StartLeagueRequest, context: Context) -> lpb.StartLeagueResponse:
        return await self.api.StartLeague(_creds(context), request)

    @map_service_errors
    async def PauseLeague(self, request: lpb.PauseLeagueRequest, context: Context) -> lpb.PauseLeagueResponse:
        return await self.api.PauseLeague(_creds(context), request)

    @map_service_errors
    async def ResumeLeague(
        self, request: lpb.ResumeLeagueRequest, context: Context
    ) -> lpb.ResumeLeagueResponse:
        return await self.api.ResumeLeague(_creds(context), request)

    @map_service_errors
    async def GetStandings(
        self, request: lpb.GetStandingsRequest, context: Context
    ) -> lpb.GetStandingsResponse:
        return await self.api.GetStandings(_creds(context), request)

    @map_service_errors
    async def ListPairings(
        self, request: lpb.ListPairingsRequest, context: Context
    ) -> lpb.ListPairingsResponse:
        return await self.api.ListPairings(_creds(context), request)

    @map_service_errors
    async def CreateBotAccount(
        self, request: lpb.CreateBotAccountRequest, context: Context
    ) -> lpb.CreateBotAccountResponse:
        return await self.api.CreateBotAccount(_creds(context), request)

    @map_service_errors
    async def ListBotAccounts(
        self, request: lpb.ListBotAccountsRequest, context: Context
    ) -> lpb.ListBotAccountsResponse:
        return await self.api.ListBotAccounts(_creds(context), request)

    @map_service_errors
    async def GetLeaderboard(
        self, request: lpb.GetLeaderboardRequest, context: Context
    ) -> lpb.GetLeaderboardResponse:
        return await self.api.GetLeaderboard(_creds(context), request)
