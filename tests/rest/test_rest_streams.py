"""Observation streams over HTTP: SSE and NDJSON, resume, heartbeats, end, shutdown.

Each resume test drops a live stream, plays on while the client is away, reconnects from
the last version it saw (``Last-Event-ID`` for SSE, ``?from_version=`` for NDJSON) and
checks that it receives exactly the missing events — the same message gRPC sends for the
same resume point.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import aiohttp
import pytest

from tests.rest.conftest import ACME_KEY, RestWorker
from tests.rest.helpers import act_once, bearer, create_match, ndjson_lines, sse_events
from truco_contract.pb import match_service_pb2
from truco_server.transports.rest.routes import message_to_json

pytestmark = pytest.mark.timeout(90)

SSE = {"Accept": "text/event-stream"}


def _versions(update: dict[str, Any]) -> list[int]:
    return [int(e["version"]) for e in update["events"]]


async def _grpc_first(rw: RestWorker, match_id: str, token: str, from_version: int) -> dict[str, Any]:
    request = match_service_pb2.StreamObservationsRequest(match_id=match_id, from_version=from_version)
    call = rw.stub.StreamObservations(request, metadata=[("authorization", f"Bearer {token}")], timeout=10)
    try:
        async for message in call:
            return message_to_json(message)
    finally:
        call.cancel()
    raise AssertionError("gRPC stream ended at once")


async def _play(rw: RestWorker, match_id: str, tokens: list[str], n: int, rng: random.Random) -> int:
    played = 0
    for _ in range(n):
        if await act_once(rw.http, rw.base, match_id, tokens, rng) is None:
            break
        played += 1
    return played


async def _version(rw: RestWorker, match_id: str) -> int:
    async with rw.http.get(f"{rw.base}/v1/matches/{match_id}", headers=bearer(ACME_KEY)) as resp:
        return int((await resp.json())["match"]["version"])


async def test_sse_resume_with_last_event_id_gets_exactly_the_missing_events(rest_worker: RestWorker) -> None:
    rw = rest_worker
    created = await create_match(rw.http, rw.base, ACME_KEY, "argentine")
    match_id = created["match"]["matchId"]
    tokens = [c["token"] for c in created["seatCredentials"]]
    url = f"{rw.base}/v1/matches/{match_id}:streamObservations"
    rng = random.Random(5)

    # First connection: the snapshot, then live updates while two actions are played.
    seen: list[int] = []
    last_id = None
    async with rw.http.get(url, headers={**SSE, **bearer(tokens[0])}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        assert resp.headers["Cache-Control"] == "no-store"
        events = sse_events(resp)
        first = await anext(events)
        assert first.event == "update" and first.data["update"]["snapshot"] is True
        assert first.id == first.data["update"]["version"]
        last_id = int(first.id)
        assert await _play(rw, match_id, tokens, 2, rng) == 2
        target = await _version(rw, match_id)
        while last_id < target:
            ev = await anext(events)
            if ev.event == "heartbeat":
                assert ev.id is None  # heartbeats never move the resume point
                continue
            assert ev.event == "update"
            seen += _versions(ev.data["update"])
            last_id = int(ev.id or 0)
    assert seen == list(range(int(first.id) + 1, target + 1))

    # Away: more actions happen.
    assert await _play(rw, match_id, tokens, 5, rng) == 5
    now = await _version(rw, match_id)
    expected = await _grpc_first(rw, match_id, tokens[0], last_id)

    # The browser reconnects with Last-Event-ID (and, being an EventSource, the token in the URL).
    resume = {**SSE, "Last-Event-ID": str(last_id)}
    async with rw.http.get(f"{url}?access_token={tokens[0]}", headers=resume) as resp:
        assert resp.status == 200
        events = sse_events(resp)
        ev = await anext(events)
        assert ev.event == "update" and int(ev.id or 0) == now
        update = ev.data["update"]
        assert update["snapshot"] is False
        assert _versions(update) == list(range(last_id + 1, now + 1))
        assert ev.data == expected  # the very message gRPC sends for this resume point
        # And it stays live: the next action arrives as the next id.
        assert await _play(rw, match_id, tokens, 1, rng) == 1
        after = await _version(rw, match_id)
        got: list[int] = []
        while len(got) < after - now:
            ev = await anext(events)
            if ev.event == "update":
                got += _versions(ev.data["update"])
                assert int(ev.id or 0) == got[-1]
        assert got == list(range(now + 1, after + 1))


async def test_ndjson_resume_with_from_version_gets_exactly_the_missing_events(
    rest_worker: RestWorker,
) -> None:
    rw = rest_worker
    created = await create_match(rw.http, rw.base, ACME_KEY, "argentine")
    match_id = created["match"]["matchId"]
    tokens = [c["token"] for c in created["seatCredentials"]]
    url = f"{rw.base}/v1/matches/{match_id}:streamObservations"
    rng = random.Random(11)

    async with rw.http.get(url, headers=bearer(tokens[1])) as resp:
        assert resp.status == 200 and resp.content_type == "application/x-ndjson"
        lines = ndjson_lines(resp)
        snapshot = (await anext(lines))["update"]
        assert snapshot["snapshot"] is True and snapshot["events"] == []
        last = int(snapshot["version"])
        assert await _play(rw, match_id, tokens, 1, rng) == 1
        target = await _version(rw, match_id)
        while last < target:
            msg = await anext(lines)
            if "update" in msg:
                assert _versions(msg["update"])[0] == last + 1
                last = int(msg["update"]["version"])

    assert await _play(rw, match_id, tokens, 6, rng) == 6
    now = await _version(rw, match_id)
    expected = await _grpc_first(rw, match_id, tokens[1], last)
    async with rw.http.get(f"{url}?from_version={last}", headers=bearer(tokens[1])) as resp:
        assert resp.status == 200
        first = await anext(ndjson_lines(resp))
    assert first == expected
    assert _versions(first["update"]) == list(range(last + 1, now + 1))
    assert int(first["update"]["version"]) == now
    # Seat 1's stream never shows seat 0's cards.
    for e in first["update"]["events"]:
        if e["kind"] == "cards_dealt" and e["cardsDealt"]["seat"] == 0:
            assert e["cardsDealt"]["cards"] == []


async def test_heartbeats_in_both_formats(rest_worker: RestWorker) -> None:
    rw = rest_worker
    created = await create_match(rw.http, rw.base, ACME_KEY, "argentine")
    match_id = created["match"]["matchId"]
    token = created["spectatorToken"]
    url = f"{rw.base}/v1/matches/{match_id}:streamObservations"
    async with rw.http.get(url, headers=bearer(token)) as resp:
        lines = ndjson_lines(resp)
        assert "update" in await anext(lines)
        beat = await asyncio.wait_for(anext(lines), 5)
        assert int(beat["heartbeat"]["version"]) == int(created["match"]["version"])
        assert beat["heartbeat"]["serverTime"].endswith("Z")
    async with rw.http.get(url, headers={**SSE, **bearer(token)}) as resp:
        events = sse_events(resp)
        assert (await anext(events)).event == "update"
        beat_ev = await asyncio.wait_for(anext(events), 5)
        assert beat_ev.event == "heartbeat" and "heartbeat" in beat_ev.data


async def test_streams_end_when_the_match_ends_and_sse_resume_after_the_end_is_204(
    rest_worker: RestWorker,
) -> None:
    rw = rest_worker
    created = await create_match(rw.http, rw.base, ACME_KEY, "argentine")
    match_id = created["match"]["matchId"]
    token = created["seatCredentials"][0]["token"]
    url = f"{rw.base}/v1/matches/{match_id}:streamObservations"
    async with (
        rw.http.get(url, headers={**SSE, **bearer(token)}) as sse_resp,
        rw.http.get(url, headers=bearer(token)) as nd_resp,
    ):
        sse_it, nd_it = sse_events(sse_resp), ndjson_lines(nd_resp)
        await anext(sse_it)
        await anext(nd_it)
        async with rw.http.post(
            f"{url.split(':stream')[0]}:cancel", json={"reason": "rain"}, headers=bearer(ACME_KEY)
        ) as resp:
            assert resp.status == 200
        sse_rest = [ev async for ev in sse_it if ev.event != "heartbeat"]
        nd_rest = [m async for m in nd_it if "heartbeat" not in m]
    assert [ev.event for ev in sse_rest] == ["update", "end"]
    kinds = [e["kind"] for e in sse_rest[0].data["update"]["events"]]
    assert kinds == ["match_cancelled", "match_revealed"]
    assert sse_rest[0].data["update"]["observation"]["matchState"] == "MATCH_STATE_CANCELLED"
    assert len(nd_rest) == 1 and nd_rest[0] == sse_rest[0].data
    final = int(sse_rest[0].id or 0)
    # An EventSource would reconnect after the stream closed: 204 tells it to stop.
    async with rw.http.get(url, headers={**SSE, **bearer(token), "Last-Event-ID": str(final)}) as resp:
        assert resp.status == 204
    async with rw.http.get(url, headers={**SSE, **bearer(token), "Last-Event-ID": "x"}) as resp:
        assert resp.status == 400


async def test_shutdown_ends_streams_with_unavailable(rest_worker: RestWorker) -> None:
    rw = rest_worker
    created = await create_match(rw.http, rw.base, ACME_KEY, "argentine")
    match_id = created["match"]["matchId"]
    token = created["seatCredentials"][0]["token"]
    url = f"{rw.base}/v1/matches/{match_id}:streamObservations"
    async with (
        rw.http.get(url, headers={**SSE, **bearer(token)}) as sse_resp,
        rw.http.get(url, headers=bearer(token)) as nd_resp,
    ):
        sse_it, nd_it = sse_events(sse_resp), ndjson_lines(nd_resp)
        await anext(sse_it)
        await anext(nd_it)
        stopping = asyncio.create_task(rw.worker.stop())
        sse_rest = [ev async for ev in sse_it if ev.event != "heartbeat"]
        nd_rest = [m async for m in nd_it if "heartbeat" not in m]
        await asyncio.wait_for(stopping, 15)
    assert [ev.event for ev in sse_rest] == ["rpc_error"]
    for status in (sse_rest[0].data, nd_rest[-1]["error"]):
        assert status["code"] == 14
        assert status["details"][0]["reason"] == "SHUTTING_DOWN"
    with pytest.raises(aiohttp.ClientConnectionError):
        async with rw.http.get(url, headers=bearer(token)):
            pass
