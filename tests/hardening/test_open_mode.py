"""A worker without API keys (open mode) on a real Redis, over gRPC, REST (JSON, NDJSON, SSE) and
the player connection. Open mode opens the operator's calls (create, list, cancel without a
key), never a match: every read of one takes a credential that grants it -- a seat or spectator
token -- and a refusal says what was wrong: nothing sent (and where a credential goes), something
that is no credential (and what one looks like), or a credential that is not valid for this
match -- the same bytes whether its signature is wrong or its match does not exist."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from tests.connection.test_connection import Raw
from tests.e2e.client import bearer
from truco_contract.pb import action_pb2, match_pb2, match_service_pb2, match_service_pb2_grpc
from truco_match.credentials import SHAPE
from truco_server.app.wiring import MATCH_SERVICE
from truco_server.core.errors import CredentialNotValid, ExpiredCredential
from truco_server.transports.grpc.server import Worker
from truco_server.transports.rest import Route, routes_of

MS = match_service_pb2
pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

Metadata = list[tuple[str, str]]
GrpcAnswer = tuple[str, Any]
"""("ok", the response or first stream message) or ("error", (code, message, details bytes))."""


def match_reads() -> dict[str, Route]:
    """Every read of a match the proto declares: the MatchService RPCs bound to GET on a path
    that names the match."""
    return {
        r.method_name: r
        for r in routes_of(MATCH_SERVICE)
        if r.http_method == "GET" and "match_id" in r.path_fields
    }


async def _first(call: Any) -> Any:
    try:
        return await call.read()
    finally:
        call.cancel()


GRPC_READS: dict[str, Callable[[match_service_pb2_grpc.MatchServiceStub, str, Metadata], Awaitable[Any]]] = {
    "GetMatch": lambda s, mid, md: s.GetMatch(MS.GetMatchRequest(match_id=mid), metadata=md),
    "GetMatchRecord": lambda s, mid, md: s.GetMatchRecord(
        MS.GetMatchRecordRequest(match_id=mid), metadata=md
    ),
    "StreamObservations": lambda s, mid, md: _first(
        s.StreamObservations(MS.StreamObservationsRequest(match_id=mid), metadata=md)
    ),
}


def submit(stub: match_service_pb2_grpc.MatchServiceStub, mid: str, md: Metadata) -> Awaitable[Any]:
    req = MS.SubmitActionRequest(
        match_id=mid, request_id="r1", action=action_pb2.Action(fold=action_pb2.Fold())
    )
    return stub.SubmitAction(req, metadata=md)


async def grpc_answer(call: Awaitable[Any]) -> GrpcAnswer:
    try:
        return "ok", await call
    except grpc.aio.AioRpcError as err:
        raw = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin", b"")
        return "error", (err.code(), err.details(), raw)


def reason_of(status: status_pb2.Status) -> str:
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return str(info.reason)


def refused(answer: GrpcAnswer) -> tuple[str, str]:
    """The reason and message of a refused gRPC call (UNAUTHENTICATED)."""
    kind, got = answer
    assert kind == "error", f"answered {got}"
    code, message, raw = got
    assert code == grpc.StatusCode.UNAUTHENTICATED, (code, message)
    return reason_of(status_pb2.Status.FromString(raw)), message


@dataclass
class Open:
    worker: Worker
    stub: match_service_pb2_grpc.MatchServiceStub
    channel: grpc.aio.Channel
    http: aiohttp.ClientSession
    base: str
    match_id: str
    seats: list[str]
    spectator: str


@asynccontextmanager
async def open_worker(worker: Worker) -> AsyncIterator[Open]:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch, aiohttp.ClientSession() as http:
        stub = match_service_pb2_grpc.MatchServiceStub(ch)
        # open mode is for this: a match created with no key at all
        created = await stub.CreateMatch(MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista")))
        seats = [c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)]
        yield Open(
            worker,
            stub,
            ch,
            http,
            f"http://127.0.0.1:{worker.http_port}",
            created.match.match_id,
            seats,
            created.spectator_token,
        )


def forged(match_id: str, viewer: str = "0") -> str:
    """A well-formed credential of ``match_id`` whose signature is not the match's."""
    return f"tc1.{match_id}.{viewer}.{'0' * 40}"


# ------------------------------------------------------------------------------- gRPC
async def test_operator_calls_stay_open_without_a_key(worker: Worker) -> None:
    async with open_worker(worker) as o:
        listed = await o.stub.ListMatches(MS.ListMatchesRequest())
        assert o.match_id in [m.match_id for m in listed.matches]
        async with o.http.post(f"{o.base}/v1/matches", json={"rules": {"preset": "argentine"}}) as resp:
            assert resp.status == 200 and (await resp.json())["spectatorToken"]


async def test_every_match_read_over_grpc_needs_a_match_credential(worker: Worker) -> None:
    assert set(GRPC_READS) == set(match_reads()), "a read of a match the proto declares is not covered"
    async with open_worker(worker) as o:
        for name, read in GRPC_READS.items():
            reason, message = refused(await grpc_answer(read(o.stub, o.match_id, [])))
            assert reason == "MISSING_CREDENTIAL", name
            assert message.startswith("missing credential") and "'authorization: Bearer <token>'" in message
            for md in (bearer("any-api-key"), [("x-api-key", "any-api-key")]):
                reason, message = refused(await grpc_answer(read(o.stub, o.match_id, md)))
                assert reason == "MALFORMED_CREDENTIAL", (name, md)
                assert SHAPE in message and "open mode" in message
            for token in (o.seats[0], o.spectator):
                kind, got = await grpc_answer(read(o.stub, o.match_id, bearer(token)))
                assert kind == "ok", (name, got)
        seat = await o.stub.GetMatch(MS.GetMatchRequest(match_id=o.match_id), metadata=bearer(o.seats[0]))
        assert seat.observation.seat == 0 and len(seat.observation.hand) == 3
        looking = await o.stub.GetMatch(MS.GetMatchRequest(match_id=o.match_id), metadata=bearer(o.spectator))
        assert not looking.observation.HasField("seat") and not looking.observation.hand


async def test_player_connection_subscriptions_need_a_match_credential(worker: Worker) -> None:
    async with open_worker(worker) as o:
        raw = Raw(o.channel)
        try:
            for sid, token in ((1, ""), (2, "any-api-key")):
                raw.subscribe(sid, token, o.match_id)
                msg = await raw.next()
                assert msg.WhichOneof("message") == "ended", msg  # refused: no update comes
                ended = msg.ended
                assert ended.subscription_id == sid
                assert ended.status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
                if sid == 1:
                    assert reason_of(ended.status) == "MISSING_CREDENTIAL"
                    assert "subscribe.token" in ended.status.message
                else:
                    assert reason_of(ended.status) == "MALFORMED_CREDENTIAL" and SHAPE in ended.status.message
            answers = []
            for sid, (token, mid) in enumerate(
                ((forged("m-unknown"), "m-unknown"), (forged(o.match_id), o.match_id)), start=3
            ):
                raw.subscribe(sid, token, mid)
                msg = await raw.next()
                assert msg.WhichOneof("message") == "ended", msg
                answers.append(msg.ended.status.SerializeToString())
            assert answers[0] == answers[1]
            raw.subscribe(5, o.spectator, o.match_id)
            update = (await raw.next("update")).update
            assert update.subscription_id == 5 and update.message.update.snapshot
        finally:
            raw.box.put_nowait(None)
            raw.call.cancel()


async def test_a_wrong_bearer_says_what_is_wrong_over_grpc(worker: Worker) -> None:
    async with open_worker(worker) as o:
        acting = await grpc_answer(submit(o.stub, o.match_id, bearer("not-a-token")))
        reason, message = refused(acting)
        assert reason == "MALFORMED_CREDENTIAL" and SHAPE in message
        reason, message = refused(await grpc_answer(submit(o.stub, o.match_id, [])))
        assert reason == "MISSING_CREDENTIAL" and "'authorization: Bearer <token>'" in message
        cut = o.seats[0][:-6]  # a token cut short
        reason, message = refused(await grpc_answer(submit(o.stub, o.match_id, bearer(cut))))
        assert reason == "MALFORMED_CREDENTIAL" and "40 lower-case hex digits" in message
        other = await o.stub.CreateMatch(MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista")))
        reason, message = refused(
            await grpc_answer(
                o.stub.GetMatch(
                    MS.GetMatchRequest(match_id=other.match.match_id), metadata=bearer(o.seats[0])
                )
            )
        )
        assert reason == "INVALID_CREDENTIAL" and o.match_id in message and other.match.match_id in message


async def test_an_unknown_match_and_a_bad_signature_answer_alike_over_grpc(worker: Worker) -> None:
    async with open_worker(worker) as o:
        calls = {**GRPC_READS, "SubmitAction": submit}
        for name, call in calls.items():
            answers = [
                await grpc_answer(call(o.stub, "m-unknown", bearer(forged("m-unknown")))),
                await grpc_answer(call(o.stub, o.match_id, bearer(forged(o.match_id)))),
                await grpc_answer(call(o.stub, o.match_id, bearer(forged(o.match_id, "7")))),  # no seat 7
            ]
            assert answers[0] == answers[1] == answers[2], name
            reason, message = refused(answers[0])
            assert (reason, message) == ("INVALID_CREDENTIAL", CredentialNotValid.MESSAGE)


# ------------------------------------------------------------------------------- REST
@dataclass
class HttpAnswer:
    status: int
    body: bytes
    www_authenticate: str | None
    content_type: str


async def http_answer(
    o: Open, route: Route, match_id: str, headers: dict[str, str], query: str = ""
) -> HttpAnswer:
    path = route.template.replace("{match_id}", match_id)
    method, body = route.http_method, None
    if route.method_name == "SubmitAction":
        body = {"requestId": "r1", "action": {"fold": {}}}
    async with o.http.request(method, o.base + path + query, json=body, headers=headers) as resp:
        data = await (
            resp.content.readline() if route.server_streaming and resp.status == 200 else resp.read()
        )
        return HttpAnswer(resp.status, data, resp.headers.get("WWW-Authenticate"), resp.content_type)


def rest_refusal(answer: HttpAnswer) -> tuple[str, str]:
    """The reason and message of a 401 answer."""
    assert answer.status == 401, answer
    assert answer.www_authenticate is not None and answer.www_authenticate.startswith("Bearer")
    status = json_format.Parse(answer.body, status_pb2.Status())
    assert status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    return reason_of(status), status.message


def stream_kinds(route: Route) -> list[dict[str, str]]:
    """The ways a route answers: JSON, or for a stream NDJSON and Server-Sent Events."""
    return [{}, {"Accept": "text/event-stream"}] if route.server_streaming else [{}]


async def test_every_match_read_over_rest_needs_a_match_credential(worker: Worker) -> None:
    reads = match_reads()
    assert {"GetMatch", "GetMatchRecord", "StreamObservations"} <= set(reads)
    async with open_worker(worker) as o:
        for name, route in reads.items():
            for accept in stream_kinds(route):
                reason, message = rest_refusal(await http_answer(o, route, o.match_id, accept))
                assert reason == "MISSING_CREDENTIAL", name
                assert (
                    message.startswith("missing credential") and "'authorization: Bearer <token>'" in message
                )
                wrong: list[dict[str, str]] = [
                    {"Authorization": "Bearer any-api-key"},
                    {"X-Api-Key": "any-api-key"},
                    {"Authorization": "Basic dXNlcjpwYXNz"},
                ]
                for headers in wrong:
                    reason, message = rest_refusal(
                        await http_answer(o, route, o.match_id, {**accept, **headers})
                    )
                    assert reason == "MALFORMED_CREDENTIAL", (name, headers)
                    assert SHAPE in message or "'Bearer <token>'" in message
                for token in (o.seats[0], o.spectator):
                    ok = await http_answer(
                        o, route, o.match_id, {**accept, "Authorization": f"Bearer {token}"}
                    )
                    assert ok.status == 200 and ok.body, (name, ok)
            if route.server_streaming:  # a browser's EventSource sends the token in the URL
                url_token = f"?access_token={o.spectator}"
                ok = await http_answer(o, route, o.match_id, {"Accept": "text/event-stream"}, url_token)
                assert ok.status == 200
                bad = await http_answer(o, route, o.match_id, {}, "?access_token=any-api-key")
                assert rest_refusal(bad)[0] == "MALFORMED_CREDENTIAL"


async def test_a_wrong_bearer_says_what_is_wrong_over_rest_as_over_grpc(worker: Worker) -> None:
    acts = next(r for r in routes_of(MATCH_SERVICE) if r.method_name == "SubmitAction")
    get = match_reads()["GetMatch"]
    async with open_worker(worker) as o:
        cases: list[tuple[Route, Metadata, str]] = [
            (acts, bearer("not-a-token"), "MALFORMED_CREDENTIAL"),
            (acts, [], "MISSING_CREDENTIAL"),
            (acts, bearer(o.seats[0][:-6]), "MALFORMED_CREDENTIAL"),
            (get, bearer("not-a-token"), "MALFORMED_CREDENTIAL"),
            (get, bearer(o.seats[0][:-6]), "MALFORMED_CREDENTIAL"),
        ]
        for route, md, want in cases:
            headers = {"Authorization": md[0][1]} if md else {}
            reason, message = rest_refusal(await http_answer(o, route, o.match_id, headers))
            assert reason == want, (route.method_name, md, message)
            call = (
                submit(o.stub, o.match_id, md)
                if route is acts
                else GRPC_READS["GetMatch"](o.stub, o.match_id, md)
            )
            assert refused(await grpc_answer(call)) == (reason, message)  # the same words on both


async def test_an_unknown_match_and_a_bad_signature_answer_byte_for_byte_alike_over_rest(
    worker: Worker,
) -> None:
    routes = {
        **match_reads(),
        "SubmitAction": next(r for r in routes_of(MATCH_SERVICE) if r.method_name == "SubmitAction"),
    }
    async with open_worker(worker) as o:
        for name, route in routes.items():
            for accept in stream_kinds(route):
                answers = [
                    await http_answer(o, route, mid, {**accept, "Authorization": f"Bearer {token}"})
                    for mid, token in (
                        ("m-unknown", forged("m-unknown")),
                        (o.match_id, forged(o.match_id)),
                        (o.match_id, forged(o.match_id, "7")),
                    )
                ]
                assert answers[0] == answers[1] == answers[2], (name, accept, answers)
                assert rest_refusal(answers[0]) == ("INVALID_CREDENTIAL", CredentialNotValid.MESSAGE)


async def test_an_expired_credential_is_told_so_over_grpc_and_rest(worker: Worker) -> None:
    async with open_worker(worker) as o:
        settings = match_pb2.MatchSettings()
        settings.credential_ttl.FromSeconds(1)  # the shortest lifetime there is
        created = await o.stub.CreateMatch(
            MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista"), settings=settings)
        )
        mid = created.match.match_id
        seat = next(c.token for c in created.seat_credentials if c.seat == 0)
        # wait (bounded) for the lifetime to pass: the answer changes by itself
        deadline = time.monotonic() + 30
        while (answer := await grpc_answer(GRPC_READS["GetMatch"](o.stub, mid, bearer(seat))))[0] == "ok":
            assert time.monotonic() < deadline, "the credential never expired"
            await asyncio.sleep(0.05)
        expired = ("EXPIRED_CREDENTIAL", ExpiredCredential.MESSAGE)
        assert refused(answer) == expired
        routes = {
            **match_reads(),
            "SubmitAction": next(r for r in routes_of(MATCH_SERVICE) if r.method_name == "SubmitAction"),
        }
        calls = {**GRPC_READS, "SubmitAction": submit}
        for name, route in routes.items():
            assert refused(await grpc_answer(calls[name](o.stub, mid, bearer(seat)))) == expired, name
            for accept in stream_kinds(route):
                got = await http_answer(o, route, mid, {**accept, "Authorization": f"Bearer {seat}"})
                assert rest_refusal(got) == expired, (name, accept)
            # a made-up token of the same seat learns nothing from the expiry
            made_up = refused(await grpc_answer(calls[name](o.stub, mid, bearer(forged(mid)))))
            assert made_up == ("INVALID_CREDENTIAL", CredentialNotValid.MESSAGE), name


async def test_a_credential_of_another_kind_is_told_so_over_grpc_and_rest(worker: Worker) -> None:
    async with open_worker(worker) as o:
        async with o.http.post(f"{o.base}/v1/bots", json={"name": "lobby bot"}) as resp:
            assert resp.status == 200, await resp.text()
            bot = (await resp.json())["bot"]
        assert bot["token"].startswith("tb1.")
        routes = {
            **match_reads(),
            "SubmitAction": next(r for r in routes_of(MATCH_SERVICE) if r.method_name == "SubmitAction"),
        }
        calls = {**GRPC_READS, "SubmitAction": submit}
        for name, route in routes.items():
            # a bot account's credential opens the bot lobby only, never a match
            reason, message = refused(
                await grpc_answer(calls[name](o.stub, o.match_id, bearer(bot["token"])))
            )
            assert reason == "WRONG_CREDENTIAL_KIND" and "bot account's credential" in message, name
            for accept in stream_kinds(route):
                headers = {**accept, "Authorization": f"Bearer {bot['token']}"}
                got = await http_answer(o, route, o.match_id, headers)
                assert rest_refusal(got) == (reason, message), (name, accept)
        # and the bot lobby takes no match credential
        lobby = f"{o.base}/v1/bots/{bot['botId']}/assignments:stream"
        async with o.http.get(lobby, headers={"Authorization": f"Bearer {o.seats[0]}"}) as resp:
            got = HttpAnswer(
                resp.status, await resp.read(), resp.headers.get("WWW-Authenticate"), resp.content_type
            )
        reason, message = rest_refusal(got)
        assert reason == "WRONG_CREDENTIAL_KIND" and "a match credential" in message
