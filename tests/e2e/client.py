"""A small test client for the end-to-end suite: only the public gRPC API, plus two
read-only looks at what the server holds in Redis (state, stored events) for leak checks.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import grpc
import redis.asyncio as aioredis
from google.rpc import error_details_pb2, status_pb2

from truco_contract.pb import (
    action_pb2,
    match_pb2,
    match_service_pb2,
    match_service_pb2_grpc,
    observation_pb2,
)
from truco_contract.pb import error_details_pb2 as truco_error_details_pb2

MS = match_service_pb2
Stub = match_service_pb2_grpc.MatchServiceStub
MATCH_OVER = match_pb2.MATCH_STATE_FINISHED


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


@dataclass
class Created:
    match_id: str
    tokens: list[str]
    spectator: str
    version: int
    response: MS.CreateMatchResponse


async def create(
    stub: Stub,
    preset: str = "paulista",
    players: int = 0,
    *,
    api_key: str | None = None,
    **fields: Any,
) -> Created:
    req = MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset=preset), players=players, **fields)
    md = bearer(api_key) if api_key else None
    resp = await stub.CreateMatch(req, metadata=md, timeout=10)
    tokens = [c.token for c in sorted(resp.seat_credentials, key=lambda c: c.seat)]
    return Created(resp.match.match_id, tokens, resp.spectator_token, resp.match.version, resp)


async def get(stub: Stub, match_id: str, token: str) -> MS.GetMatchResponse:
    return await stub.GetMatch(MS.GetMatchRequest(match_id=match_id), metadata=bearer(token), timeout=10)


# ------------------------------------------------------------------------------ errors
@dataclass
class RichError:
    code: grpc.StatusCode
    message: str
    info: error_details_pb2.ErrorInfo | None
    bad_request: error_details_pb2.BadRequest | None
    illegal: truco_error_details_pb2.IllegalActionDetail | None

    @property
    def reason(self) -> str | None:
        return None if self.info is None else self.info.reason

    @property
    def fields(self) -> list[str]:
        return [] if self.bad_request is None else [v.field for v in self.bad_request.field_violations]


def rich(err: grpc.aio.AioRpcError) -> RichError:
    """The status code and the google.rpc details carried by a failed call."""
    status: status_pb2.Status | None = None
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
    info = bad = illegal = None
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
        elif detail.Is(truco_error_details_pb2.IllegalActionDetail.DESCRIPTOR):
            illegal = truco_error_details_pb2.IllegalActionDetail()
            detail.Unpack(illegal)
    return RichError(err.code(), err.details() or "", info, bad, illegal)


async def end_code(stream: Any) -> grpc.StatusCode:
    """Read ``stream`` to its end; the status it ended with (OK for a clean end)."""
    try:
        while await stream.read() is not grpc.aio.EOF:
            pass
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


# ----------------------------------------------------------------------------- streams
@dataclass
class Tracker:
    """Reads one observation stream in a task and checks that versions are contiguous."""

    stub: Stub
    match_id: str
    token: str
    from_version: int | None = None
    messages: list[MS.StreamObservationsResponse] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    events: dict[int, Any] = field(default_factory=dict)
    duplicates: list[int] = field(default_factory=list)
    gaps: list[tuple[int, int]] = field(default_factory=list)
    snapshots: int = 0
    version: int = -1
    obs: observation_pb2.Observation | None = None
    error: grpc.aio.AioRpcError | None = None
    done: bool = False
    arrivals: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._cond = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._call: Any = None
        if self.from_version is not None:
            self.version = self.from_version

    def start(self) -> Tracker:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        req = MS.StreamObservationsRequest(match_id=self.match_id)
        if self.from_version is not None:
            req.from_version = self.from_version
        self._call = self.stub.StreamObservations(req, metadata=bearer(self.token))
        try:
            async for msg in self._call:
                self._take(msg)
                async with self._cond:
                    self._cond.notify_all()
        except grpc.aio.AioRpcError as exc:
            self.error = exc
        finally:
            self.done = True
            async with self._cond:
                self._cond.notify_all()

    def _take(self, msg: MS.StreamObservationsResponse) -> None:
        self.messages.append(msg)
        if not msg.HasField("update"):
            return
        upd = msg.update
        if upd.snapshot:
            self.snapshots += 1
        elif upd.events:
            first = upd.events[0].version
            if self.version >= 0 and first != self.version + 1:
                if first <= self.version:
                    self.duplicates.append(first)
                else:
                    self.gaps.append((self.version, first))
        for ev in upd.events:
            if ev.version in self.events:
                self.duplicates.append(ev.version)
            self.events[ev.version] = ev
            self.versions.append(ev.version)
        loop = asyncio.get_running_loop()
        self.arrivals.setdefault(upd.version, loop.time())
        self.version = upd.version
        self.obs = upd.observation

    async def wait_version(self, version: int, timeout: float = 10.0) -> None:
        async def until() -> None:
            async with self._cond:
                await self._cond.wait_for(
                    lambda: (self.obs is not None and self.version >= version) or self.done
                )

        await asyncio.wait_for(until(), timeout)
        if self.obs is None or self.version < version:
            raise AssertionError(f"stream ended at {self.version} before version {version}: {self.error}")

    async def wait_done(self, timeout: float = 10.0) -> None:
        assert self._task is not None
        await asyncio.wait_for(asyncio.shield(self._task), timeout)

    async def close(self) -> None:
        if self._call is not None:
            self._call.cancel()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def assert_contiguous(self, first: int, last: int) -> None:
        assert not self.duplicates, f"doubled versions {self.duplicates}"
        assert not self.gaps, f"lost versions {self.gaps}"
        assert self.versions == list(range(first, last + 1)), (self.versions[:5], first, last)


# ------------------------------------------------------------------ server-side looks
# The leak oracle is shared with the campaign (docs/reliability.md): one definition.
from truco_tools.campaign.leaks import (  # noqa: E402
    leaks_in_events,
    leaks_in_observation,
    server_state,
    stored_events,
)


# ------------------------------------------------------------------------------ playing
def request_id(match_id: str, n: int) -> str:
    return f"{match_id}-a{n}"


async def act(
    stub: Stub,
    match_id: str,
    token: str,
    action: action_pb2.Action,
    *,
    rid: str | None = None,
    expected_version: int | None = None,
    timeout: float = 10.0,
) -> MS.SubmitActionResponse:
    req = MS.SubmitActionRequest(match_id=match_id, action=action, request_id=rid or "")
    if expected_version is not None:
        req.expected_version = expected_version
    return await stub.SubmitAction(req, metadata=bearer(token), timeout=timeout)


@dataclass
class Player:
    """Plays random legal actions, learning each seat's options from ``GetMatch``."""

    stub: Stub
    match: Created
    rng: random.Random
    actions: int = 0

    async def step(self) -> MS.SubmitActionResponse | None:
        """One random legal action by the seat to act; None when the match is over."""
        view = await get(self.stub, self.match.match_id, self.match.tokens[0])
        if view.match.state != match_pb2.MATCH_STATE_ACTIVE:
            return None
        seat = view.observation.awaited[0]
        mine = await get(self.stub, self.match.match_id, self.match.tokens[seat])
        action = self.rng.choice(list(mine.observation.legal_actions))
        resp = await act(
            self.stub,
            self.match.match_id,
            self.match.tokens[seat],
            action,
            rid=request_id(self.match.match_id, self.actions),
            expected_version=mine.observation.version,
        )
        self.actions += 1
        return resp


async def play_with_streams(
    act_stub: Stub,
    match: Created,
    trackers: dict[int, Tracker],
    rng: random.Random,
    *,
    version: int,
    max_actions: int | None = None,
    redis: aioredis.Redis | None = None,
    spectator: Tracker | None = None,
    start_n: int = 0,
) -> tuple[int, int]:
    """Play random legal actions chosen from each seat's own stream until the match ends
    (or ``max_actions``); ``trackers`` maps every seat to its stream. After each commit
    every stream must deliver the new version; with ``redis`` each new observation is
    checked against the server state and each event against the stored one for leaks.
    Returns (actions played, last version)."""
    n = 0
    checked = {id(t): 0 for t in [*trackers.values(), *([spectator] if spectator else [])]}
    while True:
        watchers = [(s, t) for s, t in trackers.items()] + ([(None, spectator)] if spectator else [])
        for _, t in watchers:
            await t.wait_version(version)
        if redis is not None:
            v, state = await server_state(redis, match.match_id)
            assert v == version
            stored = await stored_events(redis, match.match_id)
            for viewer, t in watchers:
                new = t.messages[checked[id(t)] :]
                checked[id(t)] = len(t.messages)
                for msg in new:
                    if not msg.HasField("update"):
                        continue
                    upd = msg.update
                    assert not leaks_in_events(upd.events, stored, viewer), (viewer, upd.version)
                    if upd.version == version:
                        assert not leaks_in_observation(upd.observation, state, viewer), (viewer, version)
                        if viewer is not None and state.hand is not None and not state.hand.blind:
                            assert sorted(upd.observation.hand) == sorted(state.hand.cards[viewer])
        first = trackers[min(trackers)].obs
        assert first is not None
        if first.match_state == MATCH_OVER or (max_actions is not None and n >= max_actions):
            return n, version
        seat = first.awaited[0]
        mine = trackers[seat].obs
        assert mine is not None and mine.version == version and mine.legal_actions
        action = rng.choice(list(mine.legal_actions))
        resp = await act(
            act_stub,
            match.match_id,
            match.tokens[seat],
            action,
            rid=request_id(match.match_id, start_n + n),
            expected_version=version,
        )
        assert resp.version > version
        assert [e.version for e in resp.events] == list(range(version + 1, resp.version + 1))
        version = resp.version
        n += 1
