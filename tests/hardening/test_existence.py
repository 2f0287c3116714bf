"""Finding 5 of issue 31: one existence rule for every resource. An operator asking for another
operator's match, league or webhook gets exactly what it gets for an id that does not exist
(``NOT_FOUND``, the same reason, the same message but for the id), over gRPC and REST, so no
operator can learn which of another's ids exist; a credential used for a resource it does
not name is an invalid credential, as any bad one (docs/api.md, "Existence")."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import aiohttp
import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.e2e.client import Stub, bearer, create, rich
from tests.e2e.conftest import WorkerFactory
from truco_contract.pb import league_service_pb2 as LS
from truco_contract.pb import league_service_pb2_grpc, match_pb2, operator_service_pb2_grpc
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import operator_service_pb2 as OS
from truco_server.core.config import ApiKey
from truco_server.transports.rest.routes import Route, routes_of

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]
ACME, OTHER = "acme-secret-1", "other-secret-2"


def _route(service: Any, method: str) -> Route:
    return next(r for r in routes_of(service) if r.method_name == method)


# (service module, RPC, the request for a resource id) -- every RPC that names one
CASES: list[tuple[Any, str, Callable[[str], Message]]] = [
    (MS, "GetMatch", lambda i: MS.GetMatchRequest(match_id=i)),
    (MS, "StreamObservations", lambda i: MS.StreamObservationsRequest(match_id=i)),
    (MS, "GetMatchRecord", lambda i: MS.GetMatchRecordRequest(match_id=i)),
    (MS, "CancelMatch", lambda i: MS.CancelMatchRequest(match_id=i)),
    (MS, "AddTime", lambda i: MS.AddTimeRequest(match_id=i, added={"seconds": 5})),
    (MS, "AdjudicateMatch", lambda i: MS.AdjudicateMatchRequest(match_id=i, winner_team=0)),
    (MS, "ReissueCredential", lambda i: MS.ReissueCredentialRequest(match_id=i, seat=0)),
    (LS, "GetLeague", lambda i: LS.GetLeagueRequest(league_id=i)),
    (LS, "GetStandings", lambda i: LS.GetStandingsRequest(league_id=i)),
    (LS, "ListPairings", lambda i: LS.ListPairingsRequest(league_id=i)),
    (LS, "StartLeague", lambda i: LS.StartLeagueRequest(league_id=i)),
    (LS, "PauseLeague", lambda i: LS.PauseLeagueRequest(league_id=i)),
    (LS, "ResumeLeague", lambda i: LS.ResumeLeagueRequest(league_id=i)),
    (LS, "RegisterEntrant", lambda i: LS.RegisterEntrantRequest(league_id=i, entrant={"entrant_id": "zed"})),
    (LS, "WithdrawEntrant", lambda i: LS.WithdrawEntrantRequest(league_id=i, entrant_id="alice")),
    (OS, "DeleteWebhook", lambda i: OS.DeleteWebhookRequest(webhook_id=i)),
    (OS, "ListWebhookDeliveries", lambda i: OS.ListWebhookDeliveriesRequest(webhook_id=i)),
]
SERVICE = {MS: "MatchService", LS: "LeagueService", OS: "OperatorService"}


def _unknown(real: str) -> str:
    """An id of the same shape that names nothing."""
    return real[:-4] + ("zzzz" if not real.endswith("zzzz") else "yyyy")


async def _grpc(channel: grpc.aio.Channel, mod: Any, rpc: str, request: Message) -> tuple[str, str, str]:
    route = _route(mod.DESCRIPTOR.services_by_name[SERVICE[mod]], rpc)
    path = f"/truco.v1.{SERVICE[mod]}/{rpc}"
    kind = channel.unary_stream if route.server_streaming else channel.unary_unary
    call = kind(path, request_serializer=lambda m: m.SerializeToString(), response_deserializer=lambda b: b)
    try:
        got = call(request, metadata=bearer(OTHER), timeout=20)
        if route.server_streaming:
            async for _ in got:
                break
            got.cancel()
        else:
            await got
    except grpc.aio.AioRpcError as exc:
        r = rich(exc)
        return exc.code().name, r.reason or "", r.message
    return "OK", "", ""


async def _rest(
    http: aiohttp.ClientSession, base: str, mod: Any, rpc: str, request: Message
) -> tuple[int, str]:
    route = _route(mod.DESCRIPTOR.services_by_name[SERVICE[mod]], rpc)
    fields = json_format.MessageToDict(request, preserving_proto_field_name=True)
    path = route.template
    for name in route.path_fields:
        path = path.replace("{" + name + "}", str(fields.pop(name)))
    body = json.dumps(
        json_format.MessageToDict(type(request)(**{}), preserving_proto_field_name=True) | fields
    )
    kw: dict[str, Any] = {"headers": {"X-Api-Key": OTHER, "Content-Type": "application/json"}}
    if route.body:
        kw["data"] = body
    async with http.request(route.http_method, base + path, **kw) as resp:
        return resp.status, await resp.text()


async def test_another_operators_resource_is_answered_as_an_unknown_one(make_worker: WorkerFactory) -> None:
    keys = (ApiKey("acme", ACME), ApiKey("other", OTHER))
    async with (
        make_worker(api_keys=keys, webhook_allow="127.0.0.0/8") as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
        aiohttp.ClientSession() as http,
    ):
        match = await create(Stub(ch), "paulista", 2, api_key=ACME)
        league = await league_service_pb2_grpc.LeagueServiceStub(ch).CreateLeague(
            LS.CreateLeagueRequest(
                name="cup", format="round_robin", rules=match_pb2.RuleSet(preset="argentine"),
                entrants=[LS.Entrant(entrant_id="alice"), LS.Entrant(entrant_id="bob")],
            ),
            metadata=bearer(ACME),
        )  # fmt: skip
        hook = await operator_service_pb2_grpc.OperatorServiceStub(ch).CreateWebhook(
            OS.CreateWebhookRequest(url="http://127.0.0.1:9/hook"), metadata=bearer(ACME)
        )
        ids = {MS: match.match_id, LS: league.league.league_id, OS: hook.webhook.webhook_id}
        base = f"http://127.0.0.1:{w.http_port}"
        differ = []
        for mod, rpc, make in CASES:
            real, none = ids[mod], _unknown(ids[mod])
            theirs, unknown = await _grpc(ch, mod, rpc, make(real)), await _grpc(ch, mod, rpc, make(none))
            if theirs[0] != "NOT_FOUND" or theirs[:2] != unknown[:2]:
                differ.append(("grpc", rpc, theirs, unknown))
            elif theirs[2].replace(real, "<id>") != unknown[2].replace(none, "<id>"):
                differ.append(("grpc message", rpc, theirs[2], unknown[2]))
            rest_theirs = await _rest(http, base, mod, rpc, make(real))
            rest_unknown = await _rest(http, base, mod, rpc, make(none))
            if rest_theirs[0] != 404 or rest_theirs[1].replace(real, "<id>") != rest_unknown[1].replace(
                none, "<id>"
            ):
                differ.append(("rest", rpc, rest_theirs, rest_unknown))
        assert not differ, differ


async def test_a_bot_credential_on_another_bots_lobby_is_an_invalid_credential(
    make_worker: WorkerFactory,
) -> None:
    keys = (ApiKey("acme", ACME),)
    async with make_worker(api_keys=keys) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        leagues = league_service_pb2_grpc.LeagueServiceStub(ch)
        mine, theirs = [
            (await leagues.CreateBotAccount(LS.CreateBotAccountRequest(name=n), metadata=bearer(ACME))).bot
            for n in ("a", "b")
        ]

        async def lobby(bot_id: str, token: str) -> tuple[str, str, str]:
            call = leagues.StreamAssignments(
                LS.StreamAssignmentsRequest(bot_id=bot_id), metadata=bearer(token)
            )
            try:
                async for _ in call:
                    break
            except grpc.aio.AioRpcError as exc:
                return exc.code().name, rich(exc).reason or "", rich(exc).message
            finally:
                call.cancel()
            return "OK", "", ""

        other = await lobby(theirs.bot_id, mine.token)
        forged = await lobby(mine.bot_id, mine.token[:-2] + ("xx" if not mine.token.endswith("xx") else "yy"))
        assert other == forged == ("UNAUTHENTICATED", "INVALID_CREDENTIAL", "invalid bot credential")
