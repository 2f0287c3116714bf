"""The gRPC adapter: ``truco.v1.MatchService`` over :class:`truco_server.service.MatchService`.

It only authenticates the caller from metadata, converts messages (``convert``) and
delegates. Credentials travel in ``authorization: Bearer <token>``: a match credential
(``tc1.…``, one seat or the spectators of one match) or an operator API key (also accepted
as ``x-api-key``). With no API keys configured the worker runs open: every caller is the
operator ``public`` (fine on a laptop, never in production — see docs/operations.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import grpc
import structlog

from truco.v1 import match_service_pb2, match_service_pb2_grpc
from truco_server import errors as E
from truco_server.config import Settings
from truco_server.convert import (
    STATE_NAMES,
    ViewProtos,
    action_from_proto,
    encode_legal,
    match_to_proto,
    observation_to_proto,
    update_to_proto,
)
from truco_server.grpc_errors import map_service_errors
from truco_server.service import (
    VIEW_CACHE_SIZE,
    CreateMatchRequest,
    MatchService,
    Operator,
    SeatSpec,
    token_match_id,
)
from truco_server.storage import MatchIndexEntry

PUBLIC_OPERATOR = Operator("public")

mapped = map_service_errors(encode_action=encode_legal)

Metadata = Iterable[tuple[str, str | bytes]] | Any


def credentials(metadata: Metadata) -> tuple[str | None, str | None]:
    """(match credential, operator API key) found in call metadata."""
    bearer: str | None = None
    api_key: str | None = None
    for key, value in metadata or ():
        text = value.decode() if isinstance(value, bytes) else value
        if key == "authorization":
            scheme, _, rest = text.partition(" ")
            if scheme.lower() == "bearer" and rest.strip():
                bearer = rest.strip()
        elif key == "x-api-key":
            api_key = text.strip()
    if bearer is not None and token_match_id(bearer) is None:
        api_key, bearer = api_key or bearer, None
    return bearer, api_key


class Authenticator:
    """Resolves operator API keys against the configured ones."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def operator(self, api_key: str | None, *, required: bool) -> Operator | None:
        if not self.settings.api_keys:
            return PUBLIC_OPERATOR if (required or api_key is not None) else None
        if api_key is None:
            if required:
                raise E.Unauthenticated("an operator API key is required: 'authorization: Bearer <api key>'")
            return None
        key = self.settings.api_key_for(api_key)
        if key is None:
            raise E.Unauthenticated("unknown API key")
        return Operator(key.name)


def _match_id(value: str) -> str:
    if not value:
        raise E.InvalidArgument(
            "match_id is required", field_violations=[E.FieldViolation("match_id", "empty")]
        )
    return value


class GrpcMatchService(match_service_pb2_grpc.MatchServiceServicer):
    """Thin adapter; see the module docstring."""

    def __init__(self, service: MatchService, settings: Settings) -> None:
        self.service = service
        self.auth = Authenticator(settings)
        self.views = ViewProtos(VIEW_CACHE_SIZE)

    @mapped
    async def CreateMatch(
        self, request: match_service_pb2.CreateMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_service_pb2.CreateMatchResponse:
        _, api_key = credentials(context.invocation_metadata())
        operator = self.auth.operator(api_key, required=True)
        assert operator is not None
        overrides: dict[str, Any] = {}
        if request.HasField("rules") and request.rules.HasField("overrides"):
            from google.protobuf.json_format import MessageToDict

            overrides = MessageToDict(request.rules.overrides)
            for k, v in list(overrides.items()):
                if isinstance(v, float) and v.is_integer():
                    overrides[k] = int(v)
                elif isinstance(v, list):
                    overrides[k] = [int(x) if isinstance(x, float) and x.is_integer() else x for x in v]
        preset = request.rules.preset if request.HasField("rules") and request.rules.preset else "paulista"
        seats = [SeatSpec(name=s.display_name, kind="bot" if s.kind == 2 else "human") for s in request.seats]
        if request.HasField("settings") and (
            request.settings.turn_timeout.seconds or request.settings.turn_timeout.nanos
        ):
            raise E.InvalidArgument(
                "turn clocks are not implemented yet: leave settings.turn_timeout unset",
                field_violations=[E.FieldViolation("settings.turn_timeout", "not supported yet")],
            )
        created = await self.service.create_match(
            operator,
            CreateMatchRequest(
                preset=preset,
                overrides=overrides,
                players=request.players or None,
                seats=seats,
                seed=request.seed or None,
                deck_orders=[list(d.cards) for d in request.deck_orders],
                request_id=request.request_id or None,
                labels=dict(request.settings.labels),
            ),
        )
        resp = match_service_pb2.CreateMatchResponse(
            match=match_to_proto(created.match), spectator_token=created.spectator_token
        )
        for i, token in enumerate(created.seat_tokens):
            resp.seat_credentials.add(seat=i, token=token)
        return resp

    @mapped
    async def SubmitAction(
        self, request: match_service_pb2.SubmitActionRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_service_pb2.SubmitActionResponse:
        token, _ = credentials(context.invocation_metadata())
        match_id = _match_id(request.match_id)
        action = action_from_proto(request.action)
        expected = request.expected_version if request.HasField("expected_version") else None
        result = await self.service.submit_action(
            match_id, token, action, request_id=request.request_id or None, expected_version=expected
        )
        structlog.contextvars.bind_contextvars(seat=result.seat)
        rules = await self.service.rules_of(match_id)
        events, observation = self.views.get(
            match_id, result.events, result.version, result.observation, rules
        )
        return match_service_pb2.SubmitActionResponse(
            version=result.version, events=events, observation=observation
        )

    @mapped
    async def StreamObservations(
        self,
        request: match_service_pb2.StreamObservationsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[match_service_pb2.StreamObservationsResponse]:
        token, api_key = credentials(context.invocation_metadata())
        match_id = _match_id(request.match_id)
        operator = self.auth.operator(api_key, required=False) if token is None else None
        if token is None and operator is None:
            raise E.Unauthenticated("send a seat or spectator credential: 'authorization: Bearer <token>'")
        rules = await self.service.rules_of(match_id)
        from_version = request.from_version if request.HasField("from_version") else None
        async for upd in self.service.stream(match_id, token, operator, from_version):
            yield update_to_proto(upd, rules, self.views, match_id)

    @mapped
    async def GetMatch(
        self, request: match_service_pb2.GetMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_service_pb2.GetMatchResponse:
        token, api_key = credentials(context.invocation_metadata())
        match_id = _match_id(request.match_id)
        operator = self.auth.operator(api_key, required=False) if token is None else None
        if token is None and operator is None:
            raise E.Unauthenticated("send a match credential or an operator API key")
        info, obs = await self.service.get_match(match_id, token, operator)
        return match_service_pb2.GetMatchResponse(
            match=match_to_proto(info), observation=observation_to_proto(obs, info.rules)
        )

    @mapped
    async def ListMatches(
        self, request: match_service_pb2.ListMatchesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_service_pb2.ListMatchesResponse:
        _, api_key = credentials(context.invocation_metadata())
        operator = self.auth.operator(api_key, required=True)
        assert operator is not None
        status = STATE_NAMES.get(request.state) if request.state else None
        if request.state and status is None:
            raise E.InvalidArgument("unknown state", field_violations=[E.FieldViolation("state", "unknown")])
        entries, token = await self.service.list_matches(
            operator, status, request.page_size, request.page_token
        )
        resp = match_service_pb2.ListMatchesResponse(next_page_token=token or "")
        for entry in entries:
            resp.matches.append(await self._listed(entry))
        return resp

    async def _listed(self, entry: MatchIndexEntry) -> Any:
        info = await self.service.info(entry.match_id)
        return match_to_proto(info)

    @mapped
    async def CancelMatch(
        self, request: match_service_pb2.CancelMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_service_pb2.CancelMatchResponse:
        _, api_key = credentials(context.invocation_metadata())
        operator = self.auth.operator(api_key, required=True)
        assert operator is not None
        info = await self.service.cancel_match(operator, _match_id(request.match_id), request.reason)
        return match_service_pb2.CancelMatchResponse(match=match_to_proto(info))
