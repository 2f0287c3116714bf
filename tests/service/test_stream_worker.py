"""What a worker does for its streams beyond delivering commits: a stream whose subscription
missed a commit (a lost notification, or a feed later than the heartbeat) sends the update at
its next heartbeat instead of staying silent until the next commit -- which, when the missed commit
made it this seat's turn, only the turn clock would bring; and a worker holds at most
``TRUCO_MAX_STREAMS_PER_WORKER`` streams."""

from __future__ import annotations

import asyncio
import gc
import inspect
import random
from typing import Any

import pytest

import truco_engine as te
from tests.helpers.proxy import Proxy
from tests.service.conftest import SETTINGS
from tests.service.test_service import act, cred, play_out, view_of
from truco_contract.pb import match_service_pb2 as pb
from truco_match.events import EventView
from truco_match.match import Match, Moment
from truco_server.api.auth import Authenticator
from truco_server.api.matches import MatchApi
from truco_server.app.wiring import Services
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core import requests as T
from truco_server.core.caller import Credentials, Operator
from truco_server.ports.matches import Batch

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


class Forgetful:
    """A subscription that loses the next ``drop`` batches it is given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.drop = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def next(self, timeout: float) -> Any:
        got = await self.inner.next(timeout)
        if isinstance(got, Batch) and self.drop:
            self.drop -= 1
            return None  # as if nothing had come: the stream sends a heartbeat
        return got


def catch_ups() -> float:
    return metrics.STREAM_CATCH_UPS._value.get()


async def test_a_missed_commit_is_delivered_at_the_next_heartbeat(
    service: Services, operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    subs: list[Forgetful] = []
    log = service.matches.log

    def forgetful(*args: Any, **kwargs: Any) -> Forgetful:
        subs.append(Forgetful(log.subscribe(*args, **kwargs)))
        return subs[-1]

    monkeypatch.setattr(service.matches, "log", Proxy(log, subscribe=forgetful))
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    seat = (await view_of(service, mid, tokens[0])).observation.awaited[0]
    other = 1 - seat
    got: list[T.StreamUpdate] = []
    arrived = asyncio.Event()

    async def reader() -> None:
        async for upd in service.streams.stream(cred(tokens[other]), T.StreamRequest(mid)):
            got.append(upd)
            arrived.set()

    task = asyncio.create_task(reader())
    before = catch_ups()
    try:
        while not subs:  # the snapshot went out and the stream follows the match
            await asyncio.wait_for(arrived.wait(), 10)
            arrived.clear()
        subs[0].drop = 1
        res = await act(service, mid, tokens[seat], te.Action("truco"))
        async with asyncio.timeout(10):  # heartbeats come every 0.2 s here
            while not any(u.version == res.version and not u.heartbeat for u in got):
                await arrived.wait()
                arrived.clear()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    caught = next(u for u in got if u.version == res.version)
    assert subs[0].drop == 0  # the commit's notification was lost
    assert [e.kind for e in caught.events] == ["call_made"]
    assert caught.view is not None and other in caught.view.observation.awaited  # its turn: to answer
    assert catch_ups() == before + 1


async def test_a_worker_holds_at_most_its_bound_of_streams(service: Services, operator: Operator) -> None:
    """``TRUCO_MAX_STREAMS_PER_WORKER``: one more stream is refused RESOURCE_EXHAUSTED
    (quota ``worker_streams``), a slot frees when a stream ends, refused or failed streams
    hold none."""
    streams = service.streams
    streams.max_open = 2
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    spectator = cred(created.spectator_token)
    opened = [streams.stream(spectator, T.StreamRequest(mid)) for _ in range(2)]
    for stream in opened:
        assert (await stream.__anext__()).snapshot  # open: its first message came
    assert streams.open == 2
    third = streams.stream(spectator, T.StreamRequest(mid))
    with pytest.raises(E.QuotaExceeded) as refused:
        await third.__anext__()
    assert refused.value.metadata == {"quota": "worker_streams"} and refused.value.retry_after == 1.0
    await opened.pop().aclose()
    assert streams.open == 1
    with pytest.raises(E.MatchNotFound):  # a stream that fails holds no slot
        await streams.stream(spectator, T.StreamRequest("m0000000000000000000")).__anext__()
    again = streams.stream(spectator, T.StreamRequest(mid))
    assert (await again.__anext__()).snapshot
    for stream in (*opened, again):
        await stream.aclose()
    assert streams.open == 0


async def _played(service: Services, operator: Operator, actions: int) -> T.CreateMatchResponse:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    await play_out(service, created.match.match_id, created.seat_tokens, random.Random(5), limit=actions)
    return created


def _alive(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is kind)


async def test_a_stream_whose_first_message_is_not_taken_holds_no_decoded_log(
    service: Services, operator: Operator
) -> None:
    """A stream from version 0 decodes the match's log for its first message. Once that
    message is handed on, the stream keeps none of it: the events and views it was made of
    are not held by the suspended stream (a reader that never reads would otherwise pin a
    copy of the log per stream; docs/reliability.md, "Never-read streams")."""
    created = await _played(service, operator, 12)
    mid, spectator = created.match.match_id, cred(created.spectator_token)
    held = []
    counts = []
    for _ in range(3):
        for _ in range(5):
            stream = service.streams.stream(spectator, T.StreamRequest(mid, 0))
            first = await stream.__anext__()
            assert [e.version for e in first.events] == list(range(1, first.version + 1))
            del first  # taken by the reader (here: dropped), the stream suspended after it
            held.append(stream)
        counts.append((_alive(EventView), _alive(Moment)))
    assert counts[0] == counts[1] == counts[2], counts  # 5, 10, 15 streams: nothing more held
    for stream in held:
        await stream.aclose()


def _suspended_locals(agen: Any) -> list[tuple[str, Any]]:
    """The locals of ``agen``'s frame and of every async generator it holds, recursively."""
    out: list[tuple[str, Any]] = []
    frame = agen.ag_frame
    if frame is None:
        return out
    for name, value in frame.f_locals.items():
        out.append((f"{frame.f_code.co_name}.{name}", value))
        if inspect.isasyncgen(value):
            out += _suspended_locals(value)
    return out


async def test_a_grpc_stream_suspended_after_its_first_message_names_no_update_or_message(
    service: Services, operator: Operator
) -> None:
    """StreamObservations, the chain of generators from the service to the gRPC handler:
    while the first message waits to be sent, no frame of the chain holds the update, its
    encoded message or the decoded log (the transport holds the bytes it sends)."""
    created = await _played(service, operator, 8)
    api = MatchApi(service.matches, service.steps, service.reads, service.streams, Authenticator(SETTINGS))
    creds = Credentials(bearer=created.spectator_token)
    request = pb.StreamObservationsRequest(match_id=created.match.match_id, from_version=0)
    stream = api.StreamObservations(creds, request)
    first = await anext(stream)
    assert len(first.update.events) == first.update.version > 8  # the log from its start
    del first
    held = _suspended_locals(stream)
    frames = {name.split(".")[0] for name, _ in held}
    assert frames >= {"StreamObservations", "stream_updates", "stream"}
    kinds = (T.StreamUpdate, pb.StreamObservationsResponse, EventView, Moment)
    assert [name for name, value in held if isinstance(value, kinds)] == []
    matches = [value for _, value in held if isinstance(value, Match)]
    assert matches and all(m.memo == {} for m in matches)  # the first message's memo went with it
    await stream.aclose()
