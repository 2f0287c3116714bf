"""The leak oracle (invariant "no leak"): nothing a seat or a spectator receives shows a card
it may not see, judged against what the server itself holds in Redis -- the match state at the
version of an observation, and each stored event's hidden fields. Shared by the end-to-end
tests (``tests/e2e/client.py``) and the campaign's leak phase (:func:`run_leaks`): random
matches of every preset, every seat and a spectator each on its own stream, every message
checked."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import redis.asyncio as aioredis
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

import truco_engine as te
from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc, observation_pb2
from truco_match.events import entry_to_dict
from truco_server.services.stored import entry_of, meta_of, state_of

MS = match_service_pb2
MAX_ACTIONS = 3000
"""A bound on one match's actions: random play ends every preset's match long before it."""
LATE_AT = 70
"""Actions after which a viewer streams from version 0 again: past what the worker's log keeps
(64 events by default), so its stream is rebuilt from the record."""


async def server_state(r: aioredis.Redis, match_id: str) -> tuple[int, te.MatchState]:
    version, raw, meta = await r.hmget(f"truco:{{{match_id}}}:match", ["version", "state", "meta"])
    assert isinstance(version, bytes) and isinstance(raw, bytes) and isinstance(meta, bytes), match_id
    return int(version), state_of(raw, te.RuleSet.from_dict(meta_of(meta).rules))[0]


async def stored_events(r: aioredis.Redis, match_id: str, after: int = 0) -> dict[int, dict[str, Any]]:
    """The match's stored events after version ``after`` (those its log still keeps)."""
    entries: Any = await r.xrange(f"truco:{{{match_id}}}:events", min=f"{after + 1}-0")
    return {int(eid.split(b"-")[0]): entry_to_dict(entry_of(fields[b"e"])[0]) for eid, fields in entries}


def hidden_cards(state: te.MatchState, viewer: int | None) -> set[str]:
    """Cards ``viewer`` (``None``: a spectator) is not entitled to see right now, according
    to the server's own state: other seats' hands (teammates' hands are shown in a hand of
    eleven), one's own hand when it is dealt blind, face-down cards played by others."""
    h = state.hand
    if h is None:
        return set()
    side = None if viewer is None else h.side_of[viewer]
    eleven_shown = h.special == "eleven" and side is not None and side == h.eleven_side and not h.over
    hidden: set[str] = set()
    for s, cards in enumerate(h.cards):
        if s == viewer and not h.blind:
            continue
        if eleven_shown and s != viewer and h.side_of[s] == side:
            continue
        hidden.update(cards)
    for t in h.tricks:
        for x, card, face_down in t.plays:
            if face_down and x != viewer and card:
                hidden.add(card)
    return hidden


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def message_strings(msg: Message) -> set[str]:
    return set(strings(MessageToDict(msg)))


def private_cards(stored: dict[str, Any], viewer: int | None) -> set[str]:
    """Values of the hidden fields of a stored event that ``viewer`` may not see."""
    private = stored.get("private_to")
    if private is None or (viewer is not None and viewer in private):
        return set()
    out: set[str] = set()
    for key in stored.get("hidden", ()):
        out.update(strings(stored.get(key)))
    return out


def leaks_in_events(
    events: Iterable[Any], stored: dict[int, dict[str, Any]], viewer: int | None
) -> list[tuple[int, set[str]]]:
    """(version, leaked cards) for each received event that shows a hidden field's value.
    ``match_revealed`` (the seed and every deal, sent once the match is over) is public by
    design and skipped."""
    found = []
    for ev in events:
        if ev.kind == "match_revealed":
            continue
        secret = private_cards(stored[ev.version], viewer)
        leaked = secret & message_strings(ev)
        if leaked:
            found.append((ev.version, leaked))
    return found


def leaks_in_observation(
    obs: observation_pb2.Observation, state: te.MatchState, viewer: int | None
) -> set[str]:
    return hidden_cards(state, viewer) & message_strings(obs)


# --------------------------------------------------------------------------- the phase
@dataclass
class LeakResult:
    matches: int = 0
    presets: set[str] = field(default_factory=set)
    messages: int = 0
    """Stream messages checked (every update of every seat's and spectator's stream)."""
    actions: int = 0
    hands: int = 0
    special_hands: int = 0
    """Hands of eleven (of ten in mineiro) and iron hands."""
    reopened: Counter[str] = field(default_factory=Counter)
    """Streams whose connection went (by status), reopened from the last version received."""
    refused: Counter[str] = field(default_factory=Counter)
    """Actions refused (by status) because the match had moved past the observation they were
    chosen from; the player read its observation again and went on."""
    late_streams: int = 0
    """Streams opened from version 0 after the log had dropped the first events: served from
    the match's record, rebuilt."""
    leaks: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def cases() -> list[tuple[str, int]]:
    """Every preset at every table size its rules allow."""
    out = []
    for name in te.preset_names():
        for n in range(2, 13):
            try:
                te.get_rules(name, players=n)
            except te.InvalidRulesError:
                continue
            out.append((name, n))
    return out


REOPEN = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
"""How a stream ends when its connection goes (the worker's maximum connection age, a restart):
reopened from the last version received, as docs/api.md tells clients to."""
REFUSALS = 20
"""Refused actions in a row after which a match is reported as one that could not be played."""


class _Stream:
    """One viewer's observation stream, reopened from the last version received when its
    connection goes (:data:`REOPEN`); another error ends it (``error``)."""

    def __init__(
        self, stub: Any, match_id: str, token: str, reopened: Counter[str], since: int | None = None
    ) -> None:
        self.messages: list[Any] = []
        self.version = -1 if since is None else since
        self.obs: Any = None
        self.error: grpc.aio.AioRpcError | None = None
        self.reopened = reopened
        self._stub, self._match_id, self._token = stub, match_id, token
        self._closing = False
        self._changed = asyncio.Event()
        self._call = self._open()
        self._task = asyncio.ensure_future(self._run())

    def _open(self) -> Any:
        """The stream from the last version received (the first time: from ``since``, or the
        current state)."""
        since = self.version if self.version >= 0 else None
        req = MS.StreamObservationsRequest(match_id=self._match_id, from_version=since)
        return self._stub.StreamObservations(req, metadata=(("authorization", f"Bearer {self._token}"),))

    async def _run(self) -> None:
        while True:
            try:
                async for msg in self._call:
                    if msg.HasField("update"):
                        self.messages.append(msg.update)
                        self.version, self.obs = msg.update.version, msg.update.observation
                        self._changed.set()
                break
            except grpc.aio.AioRpcError as exc:
                if self._closing or exc.code() not in REOPEN:
                    self.error = exc
                    break
                self.reopened[exc.code().name] += 1
                self._call = self._open()
        self._changed.set()

    async def at(self, version: int, timeout: float = 10.0) -> None:
        """Wait until this stream has shown ``version``; raise its error if it ended on one."""

        async def until() -> None:
            while self.version < version and self.error is None and not self._task.done():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(until(), timeout)
        if self.error is not None:
            raise self.error

    async def close(self) -> None:
        self._closing = True
        self._call.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


async def _one(stub: Any, r: aioredis.Redis, name: str, players: int, rng: random.Random, out: LeakResult,
               max_actions: int, late_at: int) -> None:  # fmt: skip
    """Play one whole match with random legal actions, every seat and a spectator on its own
    stream, and after ``late_at`` actions one more viewer from version 0 (the log keeps fewer
    events by then: the record is rebuilt for it); check every message as it comes."""
    create = MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset=name), players=players,
                                   request_id=f"leaks-{uuid.uuid4().hex}")  # fmt: skip
    made = await _unary(stub.CreateMatch, create)
    mid = made.match.match_id
    tokens = [c.token for c in sorted(made.seat_credentials, key=lambda c: c.seat)]
    viewers: list[tuple[int | None, _Stream]] = [
        (s, _Stream(stub, mid, t, out.reopened)) for s, t in enumerate(tokens)
    ]
    viewers.append((None, _Stream(stub, mid, made.spectator_token, out.reopened)))
    checked = {id(s): 0 for _, s in viewers}
    version = made.match.version
    stored: dict[int, dict[str, Any]] = {}
    refusals = 0
    try:
        for n in range(max_actions + 1):
            if n == late_at:  # a seat, or the spectator, that comes back from the start
                late = rng.choice([*range(players), None])
                token = made.spectator_token if late is None else tokens[late]
                viewers.append((late, _Stream(stub, mid, token, out.reopened, since=0)))
                checked[id(viewers[-1][1])] = 0
                out.late_streams += 1
            for _, s in viewers:
                await s.at(version)
            at_version, state = await server_state(r, mid)
            stored.update(await stored_events(r, mid, max(stored, default=0)))
            for viewer, s in viewers:
                for upd in s.messages[checked[id(s)] :]:
                    out.messages += 1
                    for v, cards in leaks_in_events(upd.events, stored, viewer):
                        out.leaks.append(f"{name}-{players}p {mid} viewer {viewer} v{v}: event shows {cards}")
                    if upd.version == at_version:
                        cards = leaks_in_observation(upd.observation, state, viewer)
                        if cards:
                            out.leaks.append(
                                f"{name}-{players}p {mid} viewer {viewer} v{upd.version}: {cards}"
                            )
                checked[id(s)] = len(s.messages)
            obs = viewers[0][1].obs
            if obs is None or obs.match_state != match_pb2.MATCH_STATE_ACTIVE:
                break
            if n == max_actions:
                out.errors.append(f"{name}-{players}p {mid}: not over after {max_actions} actions")
                break
            movers = [(s, viewers[s][1].obs) for s in obs.awaited]
            movers = [(s, o) for s, o in movers if o is not None and o.legal_actions]
            if not movers:  # a match nobody can move on is a failure to report, not a crash
                out.errors.append(
                    f"{name}-{players}p {mid} v{version}: awaited {list(obs.awaited)} without a legal action"
                )
                break
            seat, mine = movers[0]
            action = rng.choice(list(mine.legal_actions))
            req = MS.SubmitActionRequest(match_id=mid, action=action, request_id=f"{mid}-{n}",
                                         expected_version=version)  # fmt: skip
            version, refusals = await _act(stub, req, tokens[seat], out, refusals)
    finally:
        for _, s in viewers:
            await s.close()
    started = [e for e in stored.values() if e.get("kind") == "hand_started"]
    out.hands += len(started)
    out.special_hands += sum(1 for e in started if e.get("special"))
    out.matches += 1
    out.presets.add(name)


async def _unary(method: Any, req: Any, metadata: Any = None, attempts: int = 5) -> Any:
    """One call, sent again on UNAVAILABLE (a connection closed by its maximum age while the
    call was in flight): safe for reads, and for writes with a ``request_id``, which apply at
    most once (docs/api.md, "Errors")."""
    for attempt in range(attempts):
        try:
            return await method(req, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE or attempt == attempts - 1:
                raise
            await asyncio.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


async def _act(stub: Any, req: Any, token: str, out: LeakResult, refusals: int) -> tuple[int, int]:
    """Submit one action; returns the match's version after it and the refusals in a row.

    An action chosen from an observation the match has moved past is refused:
    FAILED_PRECONDITION when it is not legal in the match's current state (the version the
    player sent was the current one, its observation was not), ABORTED when the version it
    sent is not the current one (docs/api.md, "Errors"). A well-behaved client reads its
    observation again and goes on, and so does the player here: the version to act on is
    read again (GetMatch), and the caller waits for every stream to show it."""
    auth = (("authorization", f"Bearer {token}"),)
    try:
        resp = await _unary(stub.SubmitAction, req, auth)
    except grpc.aio.AioRpcError as exc:
        if exc.code() not in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ABORTED):
            raise
        if refusals >= REFUSALS:
            raise RuntimeError(f"{refusals} actions refused in a row, the last: {exc.details()}") from exc
        out.refused[exc.code().name] += 1
        got = await _unary(stub.GetMatch, MS.GetMatchRequest(match_id=req.match_id), auth)
        return got.match.version, refusals + 1
    out.actions += 1
    return resp.version, 0


async def run_leaks(
    redis_url: str,
    address: str,
    matches: int,
    *,
    seed: int = 5,
    max_actions: int = MAX_ACTIONS,
    at_once: int = 8,
    late_at: int = LATE_AT,
    progress: Callable[[LeakResult], None] | None = None,
    websocket: str | None = None,
) -> LeakResult:
    """``matches`` random matches spread over :func:`cases` (each at least once when
    ``matches`` allows), each played to its end (a match not over after ``max_actions`` is an
    error), ``at_once`` at a time, on the worker at ``address``, whose store is ``redis_url``;
    ``progress`` is told the result so far every 100 matches. With ``websocket`` (the worker's
    HTTP base, ``http://host:port``) every seat and the spectator follow the match, and the
    seats act, over one WebSocket player connection per match (text frames, JSON), and every
    frame is checked."""
    out = LeakResult()
    all_cases = cases()
    r = aioredis.Redis.from_url(redis_url)
    gate = asyncio.Semaphore(at_once)

    async def play(i: int, stub: Any) -> None:
        name, players = all_cases[i % len(all_cases)]
        async with gate:
            rng = random.Random(seed * 1_000_003 + i)
            try:
                if websocket is None:
                    await _one(stub, r, name, players, rng, out, max_actions, late_at)
                else:
                    await _one_over_websocket(websocket, stub, r, name, players, rng, out, max_actions)
            except Exception as exc:  # one match's failure is reported; the phase goes on
                out.errors.append(f"{name}-{players}p: {type(exc).__name__}: {str(exc)[:200]}")
            if progress is not None and (out.matches + len(out.errors)) % 100 == 0:
                progress(out)

    try:
        async with grpc.aio.insecure_channel(address) as ch:
            stub = match_service_pb2_grpc.MatchServiceStub(ch)
            await asyncio.gather(*(play(i, stub) for i in range(matches)))
    finally:
        await r.aclose()
    return out


class _Socket:
    """One WebSocket player connection (JSON frames) carrying every viewer of a match:
    subscription ``i`` is seat ``i``, the last one the spectator. Each frame is parsed into
    its ``ConnectResponse``; updates go to their subscription's list (an action's result too,
    when it stands for the actor's update), results and errors to ``answers``."""

    def __init__(self, ws: Any, viewers: int) -> None:
        self.ws = ws
        self.messages: list[list[Any]] = [[] for _ in range(viewers)]
        self.version = [-1] * viewers
        self.obs: list[Any] = [None] * viewers
        self.answers: dict[int, Any] = {}
        self.closed: str | None = None
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        import aiohttp
        from google.protobuf import json_format

        async for frame in self.ws:
            if frame.type != aiohttp.WSMsgType.TEXT:
                break
            msg = MS.ConnectResponse()
            json_format.Parse(frame.data, msg)
            kind = msg.WhichOneof("message")
            if kind == "update" and msg.update.message.HasField("update"):
                sid, upd = msg.update.subscription_id, msg.update.message.update
                self.messages[sid].append(upd)
                self.version[sid], self.obs[sid] = upd.version, upd.observation
            elif kind in ("result", "error"):
                self.answers[getattr(msg, kind).action_id] = msg
                if kind == "result":  # it stands for the actor's update when it continues it
                    sid, resp = msg.result.subscription_id, msg.result.response
                    if resp.events and resp.events[0].version == self.version[sid] + 1:
                        self.messages[sid].append(resp)
                        self.version[sid], self.obs[sid] = resp.version, resp.observation
            self._changed.set()
        self.closed = f"closed {self.ws.close_code}"
        self._changed.set()

    async def until(self, ready: Any, timeout: float = 10.0) -> None:
        async def wait() -> None:
            while not ready() and self.closed is None:
                self._changed.clear()
                await self._changed.wait()
            if self.closed is not None and not ready():
                raise ConnectionError(self.closed)

        await asyncio.wait_for(wait(), timeout)

    async def send(self, msg: Message) -> None:
        from google.protobuf import json_format

        await self.ws.send_str(json_format.MessageToJson(msg))

    async def close(self) -> None:
        await self.ws.close()
        await asyncio.gather(self._task, return_exceptions=True)


async def _one_over_websocket(base: str, stub: Any, r: aioredis.Redis, name: str, players: int,
                              rng: random.Random, out: LeakResult, max_actions: int) -> None:  # fmt: skip
    import aiohttp

    made = await stub.CreateMatch(
        MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset=name), players=players)
    )
    mid = made.match.match_id
    tokens = [c.token for c in sorted(made.seat_credentials, key=lambda c: c.seat)]
    async with aiohttp.ClientSession() as http:
        sock = _Socket(await http.ws_connect(f"{base}/v1/connect", protocols=("truco.v1+json",)), players + 1)
        try:
            for sid, token in enumerate([*tokens, made.spectator_token]):
                await sock.send(
                    MS.ConnectRequest(
                        subscribe=MS.ConnectSubscribe(subscription_id=sid, token=token, match_id=mid)
                    )
                )
            checked = [0] * (players + 1)
            version = made.match.version
            for n in range(max_actions + 1):
                await sock.until(lambda: min(sock.version) >= version)  # noqa: B023 - awaited here
                at_version, state = await server_state(r, mid)
                stored = await stored_events(r, mid)
                for sid in range(players + 1):
                    viewer = sid if sid < players else None
                    for upd in sock.messages[sid][checked[sid] :]:
                        out.messages += 1
                        for v, cards in leaks_in_events(upd.events, stored, viewer):
                            out.leaks.append(
                                f"{name}-{players}p {mid} viewer {viewer} v{v}: event shows {cards}"
                            )
                        if upd.version == at_version:
                            cards = leaks_in_observation(upd.observation, state, viewer)
                            if cards:
                                out.leaks.append(
                                    f"{name}-{players}p {mid} viewer {viewer} v{upd.version}: {cards}"
                                )
                    checked[sid] = len(sock.messages[sid])
                obs = sock.obs[0]
                if obs is None or obs.match_state != match_pb2.MATCH_STATE_ACTIVE or n == max_actions:
                    break
                seat = obs.awaited[0]
                action = rng.choice(list(sock.obs[seat].legal_actions))
                req = MS.SubmitActionRequest(request_id=f"{mid}-{n}", expected_version=version, action=action)
                await sock.send(
                    MS.ConnectRequest(action=MS.ConnectAction(subscription_id=seat, action_id=n, request=req))
                )
                await sock.until(lambda: n in sock.answers)  # noqa: B023 - awaited here
                answer = sock.answers[n]
                if answer.WhichOneof("message") != "result":
                    raise ConnectionError(f"action refused: {answer.error.status.message}")
                version = answer.result.response.version
        finally:
            await sock.close()
    out.matches += 1
    out.presets.add(name)
