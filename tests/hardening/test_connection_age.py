"""Finding 4 of issue 31: a stream cut by the maximum connection age (the worker's GOAWAY, then
the close after the grace) is normal operation: the client sees UNAVAILABLE and reconnects,
and the worker counts the call CANCELLED -- never UNKNOWN or INTERNAL, which alerts watch --
and writes no ``rpc finished`` line for it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from tests.e2e.client import MS, Stub, bearer, create
from tests.e2e.conftest import WorkerFactory

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]
CUT = ("Connect", "StreamObservations")


def _handled(method: str, code: str) -> float:
    labels = {"grpc_service": "truco.v1.MatchService", "grpc_method": method, "grpc_code": code}
    return sum(
        REGISTRY.get_sample_value("grpc_server_handled_total", {**labels, "grpc_type": kind}) or 0.0
        for kind in ("bidi_stream", "server_stream")
    )


def _counts() -> dict[tuple[str, str], float]:
    return {(m, c.name): _handled(m, c.name) for m in CUT for c in grpc.StatusCode}


def _total(counts: dict[tuple[str, str], float], method: str) -> float:
    return sum(n for (m, _), n in counts.items() if m == method)


async def _end_code(call: grpc.aio.Call) -> grpc.StatusCode:
    try:
        async for _ in call:  # type: ignore[attr-defined]
            pass
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def test_streams_cut_by_the_connection_age_are_cancelled_not_unknown(
    make_worker: WorkerFactory,
) -> None:
    before = _counts()
    with capture_logs() as logs:
        async with (
            make_worker(max_connection_age_seconds=0.5) as w,
            grpc.aio.insecure_channel(w.grpc_address) as ch,
        ):
            stub = Stub(ch)
            made = await create(stub, "paulista", 2)
            box: asyncio.Queue[MS.ConnectRequest | None] = asyncio.Queue()

            async def requests() -> AsyncIterator[MS.ConnectRequest]:
                while (msg := await box.get()) is not None:
                    yield msg

            sub = MS.ConnectSubscribe(subscription_id=1, token=made.tokens[0], match_id=made.match_id)
            box.put_nowait(MS.ConnectRequest(subscribe=sub))
            connect = stub.Connect(requests())
            stream = stub.StreamObservations(
                MS.StreamObservationsRequest(match_id=made.match_id), metadata=bearer(made.tokens[1])
            )
            codes = await asyncio.wait_for(asyncio.gather(_end_code(connect), _end_code(stream)), 60)
            box.put_nowait(None)
            assert codes == [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE]

            # the handlers finish on the worker after the client saw the end
            async def counted() -> None:
                while any(_total(_counts(), m) == _total(before, m) for m in CUT):
                    await asyncio.sleep(0.02)

            await asyncio.wait_for(counted(), 20)
    after = _counts()
    for m in CUT:
        assert after[(m, "CANCELLED")] == before[(m, "CANCELLED")] + 1, m
        others = {c: n - before[(m, c)] for (k, c), n in after.items() if k == m and c != "CANCELLED"}
        assert not any(others.values()), (m, others)
    finished = [
        e for e in logs if e.get("event") == "rpc finished" and e.get("grpc_method", "").endswith(CUT)
    ]
    assert not finished, finished


def _http(code: str) -> float:
    labels = {"route": "StreamObservations", "method": "GET", "code": code}
    return REGISTRY.get_sample_value("truco_http_requests_total", labels) or 0.0


@pytest.mark.parametrize("accept", ["application/x-ndjson", "text/event-stream"])
async def test_a_rest_stream_whose_client_went_away_is_a_499_not_a_500(
    make_worker: WorkerFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, accept: str
) -> None:
    """A write to a connection the client has just closed raises aiohttp's
    ``ClientConnectionResetError`` in the stream's handler (it happens when the close and a
    new update cross): the request is logged and counted 499, like a cancel, and aiohttp logs
    no "Error handling request" traceback."""
    from aiohttp.client_exceptions import ClientConnectionResetError

    from truco_server.transports.rest import app

    writer = app._SseWriter if accept == "text/event-stream" else app._NdjsonWriter
    written = writer.message

    async def closing(self: object, message: object) -> None:
        if getattr(self, "sent", False):
            raise ClientConnectionResetError("Cannot write to closing transport")
        self.sent = True  # type: ignore[attr-defined]
        await written(self, message)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "message", closing)
    # the REST face's own log calls, recorded as made (a structlog configuration cached by an
    # earlier test in the same process would keep capture_logs from seeing them)
    logs: list[dict[str, Any]] = []

    class Recorder:
        def __getattr__(self, level: str) -> Any:
            return lambda event, **kw: logs.append({"event": event, "level": level, **kw})

    monkeypatch.setattr(app, "_log", Recorder())
    gone, failed = _http("499"), _http("500")
    async with make_worker() as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        stub = Stub(ch)
        made = await create(stub, "paulista", 2)
        url = f"http://127.0.0.1:{w.http_port}/v1/matches/{made.match_id}:streamObservations"
        headers = {"Authorization": f"Bearer {made.spectator}", "Accept": accept}
        async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as resp:
            assert resp.status == 200
            await resp.content.readline()  # the first message went out

            # the next message (a heartbeat within 2 s) meets the closed connection
            async def counted() -> None:
                while _http("499") == gone and _http("500") == failed:
                    await asyncio.sleep(0.02)

            await asyncio.wait_for(counted(), 20)
    assert _http("499") == gone + 1 and _http("500") == failed
    lines = [
        e for e in logs if e.get("event") == "http request" and e["path"].endswith(":streamObservations")
    ]
    assert [e["status"] for e in lines] == [499], lines
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.records
