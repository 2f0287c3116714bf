"""Finding 1 of issue 31: a stream resumed from before the kept log, on a match still being
played as fast as bots play it, is complete and contiguous -- over gRPC, SSE, NDJSON and the
player connection -- and never ends ``ABORTED``.

Two workers on one Redis keep only the last 8 events of a match, so a resume from version 0
always rebuilds its first message from the match's record while bots (each seat on its own
stream, acting through either worker) keep committing. Each resume reads its first message
(every event from version 1 to the version it shows) and then follows the match for a few
more messages, each continuing the last; anything else (a gap, a snapshot, an error) is a
failure and is reported with what came.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
import pytest

from tests.e2e.conftest import WorkerFactory
from tests.hardening.helpers import details
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import match_service_pb2_grpc
from truco_server.transports.rest.routes import message_to_json
from truco_tools.cluster_load import ClusterBots

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(600)]

RESUMES = 1000
"""Resumes in all, shared evenly by the four surfaces."""
FOLLOW = 3
"""Messages each resumed stream is followed for after its first (fewer when the match ends)."""
SURFACES = ("grpc", "sse", "ndjson", "connection")


class RecordingBots(ClusterBots):
    """The campaign's bots, remembering each match's credentials for the resumers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.credentials: dict[str, list[str]] = {}

    async def _create(self, request: Any) -> Any:
        created = await super()._create(request)
        tokens = [c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)]
        self.credentials[created.match.match_id] = [*tokens, created.spectator_token]
        return created


@dataclass
class Outcome:
    """What the resumes saw."""

    done: Counter[str] = field(default_factory=Counter)
    messages: int = 0
    longest_first: int = 0
    """Most events in one first message (how far back the resumes reached)."""
    failures: list[str] = field(default_factory=list)


def _check(surface: str, match_id: str, updates: list[tuple[int, list[int], bool]], out: Outcome) -> None:
    """``updates``: (version, event versions, snapshot) of every update a resume got."""
    if not updates:
        out.failures.append(f"{surface} {match_id}: no update")
        return
    version, versions, snapshot = updates[0]
    if snapshot or versions != list(range(1, version + 1)):
        out.failures.append(f"{surface} {match_id}: first message v{version} snapshot={snapshot} {versions}")
        return
    out.longest_first = max(out.longest_first, len(versions))
    last = version
    for version, versions, snapshot in updates[1:]:
        if snapshot or versions != list(range(last + 1, version + 1)):
            out.failures.append(f"{surface} {match_id}: after v{last} got v{version} {versions}")
            return
        last = version
    out.messages += len(updates)
    out.done[surface] += 1


def _from_json(message: dict[str, Any]) -> tuple[int, list[int], bool] | None:
    update = message.get("update")
    if update is None:
        return None
    versions = [int(e["version"]) for e in update.get("events", [])]
    return int(update["version"]), versions, bool(update.get("snapshot", False))


def _from_pb(message: MS.StreamObservationsResponse) -> tuple[int, list[int], bool] | None:
    if not message.HasField("update"):
        return None
    u = message.update
    return int(u.version), [int(e.version) for e in u.events], bool(u.snapshot)


def _over(message: dict[str, Any]) -> bool:
    state = message.get("update", {}).get("observation", {}).get("matchState", "")
    return bool(state) and state != "MATCH_STATE_ACTIVE"


async def _lines(resp: aiohttp.ClientResponse, sse: bool) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(kind, message) of an NDJSON or SSE body: ``update``/``heartbeat``, ``error``, ``end``."""
    event, data = "message", ""
    async for raw in resp.content:
        line = raw.decode().rstrip("\r\n")
        if not sse:
            if line:
                msg = json.loads(line)
                yield ("error" if "error" in msg else "message"), msg
            continue
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            data += line.split(":", 1)[1].strip()
        elif not line and data:
            kind = {"rpc_error": "error", "end": "end"}.get(event, "message")
            yield kind, json.loads(data)
            event, data = "message", ""


async def _rest(http: aiohttp.ClientSession, base: str, match_id: str, token: str, sse: bool) -> Any:
    url = f"{base}/v1/matches/{match_id}:streamObservations?from_version=0"
    headers = {"Authorization": f"Bearer {token}"}
    if sse:
        headers["Accept"] = "text/event-stream"
    updates: list[tuple[int, list[int], bool]] = []
    async with http.get(url, headers=headers) as resp:
        if resp.status != 200:
            return f"HTTP {resp.status} {(await resp.text())[:300]}"
        async for kind, msg in _lines(resp, sse):
            if kind == "error":
                return f"error {msg}"
            if kind == "end":
                break
            got = _from_json(msg)
            if got is None:
                continue
            updates.append(got)
            if len(updates) > FOLLOW or _over(msg):
                break
    return updates


async def _grpc(stub: Any, match_id: str, token: str) -> Any:
    req = MS.StreamObservationsRequest(match_id=match_id, from_version=0)
    call = stub.StreamObservations(req, metadata=(("authorization", f"Bearer {token}"),), timeout=60)
    updates: list[tuple[int, list[int], bool]] = []
    try:
        async for msg in call:
            got = _from_pb(msg)
            if got is None:
                continue
            updates.append(got)
            if len(updates) > FOLLOW or _over(message_to_json(msg)):
                break
    except grpc.aio.AioRpcError as exc:
        return f"{exc.code().name} {exc.details()} reason {details(exc).reason}"
    finally:
        call.cancel()
    return updates


async def _connection(stub: Any, match_id: str, token: str) -> Any:
    box: asyncio.Queue[MS.ConnectRequest | None] = asyncio.Queue()

    async def requests() -> AsyncIterator[MS.ConnectRequest]:
        while (msg := await box.get()) is not None:
            yield msg

    sub = MS.ConnectSubscribe(subscription_id=1, token=token, match_id=match_id, from_version=0)
    box.put_nowait(MS.ConnectRequest(subscribe=sub))
    call = stub.Connect(requests(), timeout=60)
    updates: list[tuple[int, list[int], bool]] = []
    try:
        async for msg in call:
            kind = msg.WhichOneof("message")
            if kind == "ended":
                if msg.ended.status.code:
                    return f"ended {msg.ended.status}"
                break
            if kind != "update":
                continue
            got = _from_pb(msg.update.message)
            if got is None:
                continue
            updates.append(got)
            if len(updates) > FOLLOW or _over(message_to_json(msg.update.message)):
                break
    except grpc.aio.AioRpcError as exc:
        return f"{exc.code().name} {exc.details()}"
    finally:
        box.put_nowait(None)
        call.cancel()
    return updates


async def test_a_thousand_resumes_from_version_0_on_busy_matches(make_worker: WorkerFactory) -> None:
    settings = {"event_log_max_len": 8, "heartbeat_interval_seconds": 1.0}
    async with (
        make_worker(**settings) as w1,
        make_worker(**settings) as w2,
        RecordingBots([w1.grpc_address, w2.grpc_address], seed=31, preset="paulista", players=2) as two,
        RecordingBots([w2.grpc_address, w1.grpc_address], seed=32, preset="argentine", players=4) as four,
        grpc.aio.insecure_channel(w1.grpc_address) as ch1,
        grpc.aio.insecure_channel(w2.grpc_address) as ch2,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
    ):
        stubs = [match_service_pb2_grpc.MatchServiceStub(ch1), match_service_pb2_grpc.MatchServiceStub(ch2)]
        bases = [f"http://127.0.0.1:{w.http_port}" for w in (w1, w2)]
        stop = asyncio.Event()
        playing = [
            asyncio.ensure_future(two.run_until(4, stop)),
            asyncio.ensure_future(four.run_until(2, stop)),
        ]
        out = Outcome()
        rng = random.Random(31)

        def busy() -> tuple[str, str] | None:
            live = [(b, m) for b in (two, four) for m in b.live if m in b.credentials]
            if not live:
                return None
            bots, mid = rng.choice(live)
            return mid, rng.choice(bots.credentials[mid])

        async def resumer(surface: str, quota: int) -> None:
            while out.done[surface] < quota and len(out.failures) < 20:
                picked = busy()
                if picked is None:
                    await asyncio.sleep(0.01)
                    continue
                mid, token = picked
                i = rng.randrange(2)
                if surface == "grpc":
                    got = await _grpc(stubs[i], mid, token)
                elif surface == "connection":
                    got = await _connection(stubs[i], mid, token)
                else:
                    got = await _rest(http, bases[i], mid, token, surface == "sse")
                if isinstance(got, str):
                    out.failures.append(f"{surface} {mid}: {got}")
                else:
                    _check(surface, mid, got, out)

        try:
            per = RESUMES // len(SURFACES)
            await asyncio.gather(*(resumer(s, per) for s in SURFACES for _ in range(2)))
        finally:
            stop.set()
            for task in playing:
                with contextlib.suppress(Exception):
                    await task
    assert not out.failures, out.failures
    assert sum(out.done.values()) >= RESUMES and set(out.done) == set(SURFACES), out.done
    # the resumes reached far back: a first message held far more than the 8 events kept
    assert out.longest_first > 50, out.longest_first
