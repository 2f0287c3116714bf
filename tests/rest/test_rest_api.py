"""The REST/JSON face over real HTTP, against a real worker on a real redis-server.

A full match through REST alone; idempotent retries; list and cancel; and every error case
answered with the HTTP status mapped from the gRPC code and a JSON body equal to the
``google.rpc.Status`` the same call gets over gRPC.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from grpc_status import rpc_status

from tests.rest.conftest import ACME_KEY, OTHER_KEY, RestWorker
from tests.rest.helpers import act_once, bearer, call, create_match, ndjson_lines
from truco_contract.pb import match_service_pb2
from truco_server.transports.rest.routes import message_to_json

pytestmark = pytest.mark.timeout(120)


async def test_full_match_through_rest_alone(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    created = await create_match(
        http,
        base,
        ACME_KEY,
        "argentine",
        seats=[{"displayName": "ana"}, {"display_name": "bot", "kind": "SEAT_KIND_BOT"}],
    )
    match = created["match"]
    match_id = match["matchId"]
    tokens = [c["token"] for c in created["seatCredentials"]]
    assert match["state"] == "MATCH_STATE_ACTIVE"
    assert [s["displayName"] for s in match["seats"]] == ["ana", "bot"]
    assert match["seats"][1]["kind"] == "SEAT_KIND_BOT"
    assert len(tokens) == 2 and created["spectatorToken"]

    # Seat 0 follows the match over NDJSON while the seats play through REST calls.
    received: list[dict[str, Any]] = []

    async def follow() -> None:
        url = f"{base}/v1/matches/{match_id}:streamObservations"
        async with http.get(url, headers=bearer(tokens[0])) as resp:
            assert resp.status == 200
            assert resp.content_type == "application/x-ndjson"
            async for message in ndjson_lines(resp):
                received.append(message)

    follower = asyncio.create_task(follow())
    rng = random.Random(20261130)
    actions = 0
    while await act_once(http, base, match_id, tokens, rng) is not None:
        actions += 1
        assert actions < 3000, "the match does not end"
    await asyncio.wait_for(follower, 30)

    status, final = await call(http, "GET", f"{base}/v1/matches/{match_id}", token=ACME_KEY)
    assert status == 200
    m = final["match"]
    assert m["state"] == "MATCH_STATE_FINISHED"
    assert m["result"]["winnerTeam"] in (0, 1)
    target = m["effectiveRules"]["target_points"]
    assert max(m["result"]["scores"]) >= target

    # The stream: a snapshot, then every later version exactly once, in order, ending with
    # the match over (and the deals revealed).
    updates = [r["update"] for r in received if "update" in r]
    assert updates[0]["snapshot"] is True
    start = int(updates[0]["version"])
    versions = [int(e["version"]) for u in updates[1:] for e in u["events"]]
    assert versions == list(range(start + 1, int(m["version"]) + 1))
    assert updates[-1]["observation"]["matchState"] == "MATCH_STATE_FINISHED"
    kinds = [e["kind"] for u in updates for e in u["events"]]
    assert "match_revealed" in kinds
    revealed = next(e for u in updates for e in u["events"] if e["kind"] == "match_revealed")
    assert revealed["matchRevealed"]["deals"], revealed
    # Seat 0 never sees seat 1's dealt cards.
    for u in updates:
        for e in u["events"]:
            if e["kind"] == "cards_dealt" and e["cardsDealt"]["seat"] == 1:
                assert e["cardsDealt"]["cards"] == [] and e["cardsDealt"]["count"] > 0


async def test_idempotent_retries(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    body = {"requestId": "create-once", "rules": {"preset": "paulista"}}
    s1, first = await call(http, "POST", f"{base}/v1/matches", body, ACME_KEY)
    s2, again = await call(http, "POST", f"{base}/v1/matches", body, ACME_KEY)
    assert (s1, s2) == (200, 200)
    assert again["match"]["matchId"] == first["match"]["matchId"]
    assert again["seatCredentials"] == first["seatCredentials"]
    match_id = first["match"]["matchId"]
    tokens = [c["token"] for c in first["seatCredentials"]]

    _, got = await call(http, "GET", f"{base}/v1/matches/{match_id}", token=tokens[0])
    seat = got["observation"]["awaited"][0]
    _, mine = await call(http, "GET", f"{base}/v1/matches/{match_id}", token=tokens[seat])
    action = mine["observation"]["legalActions"][0]
    url = f"{base}/v1/matches/{match_id}/actions"
    req = {"request_id": "act-once", "action": action}  # proto field names are accepted too
    s1, r1 = await call(http, "POST", url, req, tokens[seat])
    s2, r2 = await call(http, "POST", url, req, tokens[seat])
    assert (s1, s2) == (200, 200)
    assert r1["version"] == r2["version"] and r1["events"] == r2["events"]
    _, after = await call(http, "GET", f"{base}/v1/matches/{match_id}", token=ACME_KEY)
    assert after["match"]["version"] == r1["version"]  # applied once


async def test_list_and_cancel(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    ids = [(await create_match(http, base, ACME_KEY))["match"]["matchId"] for _ in range(3)]
    await create_match(http, base, OTHER_KEY)

    status, page = await call(http, "GET", f"{base}/v1/matches?pageSize=2", token=ACME_KEY)
    assert status == 200 and len(page["matches"]) == 2 and page["nextPageToken"]
    status, rest = await call(
        http, "GET", f"{base}/v1/matches?page_size=2&page_token={page['nextPageToken']}", token=ACME_KEY
    )
    assert status == 200
    listed = [m["matchId"] for m in page["matches"] + rest["matches"]]
    assert sorted(listed) == sorted(ids) and rest["nextPageToken"] == ""

    status, cancelled = await call(
        http, "POST", f"{base}/v1/matches/{ids[0]}:cancel", {"reason": "rain"}, ACME_KEY
    )
    assert status == 200 and cancelled["match"]["state"] == "MATCH_STATE_CANCELLED"
    status, active = await call(
        http, "GET", f"{base}/v1/matches?state=MATCH_STATE_ACTIVE", headers={"X-Api-Key": ACME_KEY}
    )
    assert status == 200
    assert sorted(m["matchId"] for m in active["matches"]) == sorted(ids[1:])
    status, by_number = await call(http, "GET", f"{base}/v1/matches?state=3", token=ACME_KEY)
    assert [m["matchId"] for m in by_number["matches"]] == [ids[0]]


async def test_access_token_query_parameter_is_for_streams_only(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    created = await create_match(http, base, ACME_KEY)
    match_id, token = created["match"]["matchId"], created["seatCredentials"][0]["token"]
    status, body = await call(http, "GET", f"{base}/v1/matches/{match_id}?access_token={token}")
    assert status == 400
    assert body["details"][1]["fieldViolations"][0]["field"] == "access_token"
    url = f"{base}/v1/matches/{match_id}:streamObservations?access_token={token}"
    async with http.get(url) as resp:
        assert resp.status == 200
        first = await resp.content.readline()
        assert b'"snapshot":true' in first
    async with http.get(url.replace(token, token[:-2] + "xx")) as resp:
        assert resp.status == 401
        assert resp.headers["WWW-Authenticate"].startswith("Bearer")


async def test_malformed_requests_are_400_with_bad_request(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    async with http.post(f"{base}/v1/matches", data=b"{not json", headers=bearer(ACME_KEY)) as resp:
        body = await resp.json()
        assert resp.status == 400 and body["code"] == 3
        assert body["details"][0]["reason"] == "INVALID_REQUEST"
        assert body["details"][1]["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    for payload in ({"nope": 1}, {"players": "many"}, [1, 2], {"rules": {"preset": 5}}):
        status, body = await call(http, "POST", f"{base}/v1/matches", payload, ACME_KEY)
        assert status == 400 and body["code"] == 3, (payload, body)
    status, body = await call(http, "GET", f"{base}/v1/matches?colour=red", token=ACME_KEY)
    assert status == 400 and "colour" in body["message"]
    status, body = await call(http, "GET", f"{base}/v1/nothing-here", token=ACME_KEY)
    assert status == 404 and body["code"] == 5
    status, body = await call(http, "DELETE", f"{base}/v1/matches", token=ACME_KEY)
    assert status == 405 and body["code"] == 12


# --------------------------------------------------------------------- error parity
def _grpc_request(rpc: str, fields: dict[str, Any]) -> Any:
    cls = getattr(match_service_pb2, f"{rpc}Request")
    return json_format.ParseDict(fields, cls())


async def _grpc_status(rw: RestWorker, rpc: str, fields: dict[str, Any], cred: dict[str, str]) -> Any:
    metadata = [(k.lower(), v) for k, v in cred.items()]
    request = _grpc_request(rpc, fields)
    try:
        if rpc == "StreamObservations":
            call_ = rw.stub.StreamObservations(request, metadata=metadata, timeout=10)
            async for _ in call_:
                break
            call_.cancel()
        else:
            await getattr(rw.stub, rpc)(request, metadata=metadata, timeout=10)
    except grpc.aio.AioRpcError as err:
        for key, value in err.trailing_metadata() or ():
            if key == rpc_status.GRPC_DETAILS_METADATA_KEY:
                return status_pb2.Status.FromString(value)
        raise AssertionError(f"{rpc}: no rich status in {err}") from None
    raise AssertionError(f"{rpc} {fields} succeeded over gRPC")


async def test_every_error_case_matches_grpc(rest_worker: RestWorker) -> None:
    rw = rest_worker
    http, base = rw.http, rw.base
    created = await create_match(http, base, ACME_KEY, "argentine")
    mid = created["match"]["matchId"]
    tokens = [c["token"] for c in created["seatCredentials"]]
    spectator = created["spectatorToken"]
    other = await create_match(http, base, ACME_KEY, "argentine")
    other_token = other["seatCredentials"][0]["token"]
    cancelled_match = await create_match(http, base, ACME_KEY)
    cancelled = cancelled_match["match"]["matchId"]
    cancelled_seat = {"Authorization": f"Bearer {cancelled_match['seatCredentials'][0]['token']}"}
    status, _ = await call(http, "POST", f"{base}/v1/matches/{cancelled}:cancel", {}, ACME_KEY)
    assert status == 200

    _, got = await call(http, "GET", f"{base}/v1/matches/{mid}", token=tokens[0])
    acting = got["observation"]["awaited"][0]
    idle = 1 - acting
    _, mine = await call(http, "GET", f"{base}/v1/matches/{mid}", token=tokens[acting])
    legal = mine["observation"]["legalActions"]
    # An accepted action under request_id "dup" (so a different action under it is a reuse).
    dup = legal[0]
    status, _ = await call(
        http, "POST", f"{base}/v1/matches/{mid}/actions", {"requestId": "dup", "action": dup}, tokens[acting]
    )
    assert status == 200
    _, now = await call(http, "GET", f"{base}/v1/matches/{mid}", token=tokens[0])
    acting = now["observation"]["awaited"][0]
    idle = 1 - acting
    _, mine = await call(http, "GET", f"{base}/v1/matches/{mid}", token=tokens[acting])
    hand = set(mine["observation"]["hand"])
    version = int(mine["observation"]["version"])
    not_in_hand = next(c for c in ("1e", "1b", "7e", "7o", "3c", "4b", "5o", "12c", "2e") if c not in hand)
    play_it = {"playCard": {"card": not_in_hand}}
    key = {"Authorization": f"Bearer {ACME_KEY}"}
    seat = {"Authorization": f"Bearer {tokens[acting]}"}
    idle_seat = {"Authorization": f"Bearer {tokens[idle]}"}
    other_seat = {"Authorization": f"Bearer {other_token}"}
    acts = f"/v1/matches/{mid}/actions"

    # (name, http verb, path, body, credential, rpc, request fields, http status, code, reason)
    # fmt: off
    cases: list[tuple[str, str, str, Any, dict[str, str], str, dict[str, Any], int, int, str]] = [
        ("create: no key", "POST", "/v1/matches", {"rules": {"preset": "argentine"}}, {},
         "CreateMatch", {"rules": {"preset": "argentine"}}, 401, 16, "MISSING_CREDENTIAL"),
        ("create: unknown key", "POST", "/v1/matches", {}, {"X-Api-Key": "nope"},
         "CreateMatch", {}, 401, 16, "INVALID_CREDENTIAL"),
        ("create: unknown preset", "POST", "/v1/matches", {"rules": {"preset": "chess"}}, key,
         "CreateMatch", {"rules": {"preset": "chess"}}, 400, 3, "INVALID_RULES"),
        ("create: seat count", "POST", "/v1/matches", {"rules": {"preset": "argentine"}, "seats": [{}]}, key,
         "CreateMatch", {"rules": {"preset": "argentine"}, "seats": [{}]}, 400, 3, "INVALID_REQUEST"),
        ("act: not your turn", "POST", acts, {"requestId": "x1", "action": legal[0]}, idle_seat,
         "SubmitAction", {"matchId": mid, "requestId": "x1", "action": legal[0]}, 400, 9, "NOT_YOUR_TURN"),
        ("act: illegal card", "POST", acts, {"requestId": "x2", "action": play_it}, seat,
         "SubmitAction", {"matchId": mid, "requestId": "x2", "action": play_it}, 400, 9, "ILLEGAL_ACTION"),
        ("act: unknown card", "POST", acts,
         {"requestId": "x3", "action": {"playCard": {"card": "ZZ"}}}, seat, "SubmitAction",
         {"matchId": mid, "requestId": "x3", "action": {"playCard": {"card": "ZZ"}}}, 400, 3,
         "INVALID_REQUEST"),
        ("act: no action", "POST", acts, {"requestId": "x4"}, seat,
         "SubmitAction", {"matchId": mid, "requestId": "x4"}, 400, 3, "INVALID_REQUEST"),
        ("act: stale version", "POST", acts,
         {"requestId": "x5", "expectedVersion": str(version - 1), "action": legal[0]}, seat, "SubmitAction",
         {"matchId": mid, "requestId": "x5", "expectedVersion": version - 1, "action": legal[0]},
         409, 10, "STALE_VERSION"),
        ("act: spectator", "POST", acts, {"requestId": "x6", "action": legal[0]},
         {"Authorization": f"Bearer {spectator}"},
         "SubmitAction", {"matchId": mid, "requestId": "x6", "action": legal[0]}, 403, 7,
         "PERMISSION_DENIED"),
        ("act: no credential", "POST", acts, {"requestId": "x7", "action": legal[0]},
         {}, "SubmitAction", {"matchId": mid, "requestId": "x7", "action": legal[0]}, 401, 16,
         "MISSING_CREDENTIAL"),
        ("act: other match's seat", "POST", acts, {"requestId": "x8", "action": legal[0]}, other_seat,
         "SubmitAction", {"matchId": mid, "requestId": "x8", "action": legal[0]}, 401, 16,
         "INVALID_CREDENTIAL"),
        ("act: request_id reused", "POST", acts,
         {"requestId": "dup", "action": {"fold": {}}}, {"Authorization": f"Bearer {tokens[1 - acting]}"},
         "SubmitAction", {"matchId": mid, "requestId": "dup", "action": {"fold": {}}}, 409, 6,
         "REQUEST_ID_REUSED"),
        ("act: cancelled match", "POST", f"/v1/matches/{cancelled}/actions",
         {"requestId": "x9", "action": {"fold": {}}}, cancelled_seat,
         "SubmitAction", {"matchId": cancelled, "requestId": "x9", "action": {"fold": {}}}, 400, 9,
         "MATCH_NOT_ACTIVE"),
        ("get: unknown match", "GET", "/v1/matches/m0000", None, key,
         "GetMatch", {"matchId": "m0000"}, 404, 5, "MATCH_NOT_FOUND"),
        ("get: other operator", "GET", f"/v1/matches/{mid}", None, {"X-Api-Key": OTHER_KEY},
         "GetMatch", {"matchId": mid}, 404, 5, "MATCH_NOT_FOUND"),
        ("get: no credential", "GET", f"/v1/matches/{mid}", None, {},
         "GetMatch", {"matchId": mid}, 401, 16, "MISSING_CREDENTIAL"),
        ("list: bad page token", "GET", "/v1/matches?pageToken=garbage!", None, key,
         "ListMatches", {"pageToken": "garbage!"}, 400, 3, "INVALID_REQUEST"),
        ("list: negative page size", "GET", "/v1/matches?page_size=-4", None, key,
         "ListMatches", {"pageSize": -4}, 400, 3, "INVALID_REQUEST"),
        ("list: no key", "GET", "/v1/matches", None, {},
         "ListMatches", {}, 401, 16, "MISSING_CREDENTIAL"),
        ("cancel: other operator", "POST", f"/v1/matches/{mid}:cancel", {}, {"X-Api-Key": OTHER_KEY},
         "CancelMatch", {"matchId": mid}, 404, 5, "MATCH_NOT_FOUND"),
        ("cancel: seat credential", "POST", f"/v1/matches/{mid}:cancel", {}, seat,
         "CancelMatch", {"matchId": mid}, 401, 16, "WRONG_CREDENTIAL_KIND"),
        # a match credential never tells an unknown match from a bad credential
        ("stream: unknown match", "GET", "/v1/matches/m0000:streamObservations", None, seat,
         "StreamObservations", {"matchId": "m0000"}, 401, 16, "INVALID_CREDENTIAL"),
        ("stream: no credential", "GET", f"/v1/matches/{mid}:streamObservations", None, {},
         "StreamObservations", {"matchId": mid}, 401, 16, "MISSING_CREDENTIAL"),
        ("stream: from_version ahead", "GET", f"/v1/matches/{mid}:streamObservations?from_version=99999",
         None, seat, "StreamObservations", {"matchId": mid, "fromVersion": 99999}, 400, 3, "INVALID_REQUEST"),
        ("stream: other operator", "GET", f"/v1/matches/{mid}:streamObservations", None,
         {"X-Api-Key": OTHER_KEY}, "StreamObservations", {"matchId": mid}, 404, 5, "MATCH_NOT_FOUND"),
    ]
    # fmt: on
    failures = []
    for name, verb, path, body, cred, rpc, fields, http_status, code, reason in cases:
        expected = message_to_json(await _grpc_status(rw, rpc, fields, cred))
        async with http.request(verb, base + path, json=body, headers=cred) as resp:
            got = await resp.json()
            problems = []
            if resp.status != http_status:
                problems.append(f"HTTP {resp.status} != {http_status}")
            if got != expected:
                problems.append(f"body {got} != gRPC status {expected}")
            if got.get("code") != code or got["details"][0].get("reason") != reason:
                problems.append(f"code/reason {got.get('code')}/{got['details'][0].get('reason')}")
            if resp.status == 401 and "WWW-Authenticate" not in resp.headers:
                problems.append("no WWW-Authenticate")
            if problems:
                failures.append(f"{name}: " + "; ".join(problems))
    assert not failures, "\n".join(failures)

    # Illegal actions name what is legal now (IllegalActionDetail), as over gRPC.
    status, body = await call(
        http,
        "POST",
        f"{base}/v1/matches/{mid}/actions",
        {"requestId": str(uuid.uuid4()), "action": play_it},
        tokens[acting],
    )
    detail = next(d for d in body["details"] if d["@type"].endswith("truco.v1.IllegalActionDetail"))
    assert detail["legalActions"] and int(detail["currentVersion"]) == version
    # ... and no error changed the match.
    _, after = await call(http, "GET", f"{base}/v1/matches/{mid}", token=ACME_KEY)
    assert int(after["match"]["version"]) == version
