"""The player-connection half of ``truco bench service``: the same random bots as the unary
load, but every seat of ``per_connection`` matches rides one ``Connect`` stream (one
connection per 25 matches by default, as the unary load's channels), and the no-work
server's bidirectional form of that pattern.

Each bot subscribes both seats of its match on its connection, acts when an update shows
its turn (``expected_version`` and a ``request_id``, as the unary bots), and replaces a
finished match with a new one (CreateMatch is a unary call, outside the measured figures).
Figures: accepted actions, action latency (ConnectAction sent -> its ConnectActionResult)
and delivery (ConnectAction sent -> the new version on the other seat's subscription).
"""

from __future__ import annotations

import asyncio
import math
import random
import struct
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import aiohttp
import grpc

from truco_client._core import status_retry_delay
from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc
from truco_tools.bench_policy import choose

pb = match_service_pb2
ABORTED = grpc.StatusCode.ABORTED.value[0]
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION.value[0]
RESOURCE_EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]


class Figures(Protocol):
    actions: int
    errors: int
    matches_finished: int
    submit_ms: list[float]
    delivery_ms: list[float]
    measuring: bool
    seen: int
    observed_ms: list[float]
    observed_at: list[float]


class _Match:
    __slots__ = ("done", "last", "mid", "n", "players", "rng", "sent", "sids", "slot", "waiting")

    def __init__(self, slot: int, mid: str, sids: list[int], rng: random.Random) -> None:
        self.rng = rng
        self.last = [-1] * len(sids)  # last version each seat's subscription delivered
        self.slot = slot
        self.mid = mid
        self.sids = sids
        self.players = len(sids)
        self.sent: dict[int, tuple[float, int]] = {}  # version acted on -> (send time, seat)
        self.waiting: dict[int, tuple[float, set[int]]] = {}
        """Version acted on -> (send time, the seats that have not observed a later version)."""
        self.n = 0
        self.done = asyncio.Event()


class ConnectionBots:
    """``matches`` concurrent matches over one Connect stream per stub until ``stop``
    (:class:`WebSocketBots`: the same over WebSocket connections)."""

    def __init__(
        self,
        stubs: list[Any],
        preset: str,
        players: int,
        seed: int,
        think_ms: float,
        figures: Figures,
        stop: asyncio.Event,
        policy: str = "random",
    ) -> None:
        self.stubs = stubs
        self.preset = preset
        self.players = players
        self.seed = seed
        self.think = think_ms / 1000
        self.policy = policy
        """How the bots choose their actions (:mod:`.bench_policy`)."""
        self.fig = figures
        self.stop = stop
        self.live: set[str] = set()
        self._ids = iter(range(1, 1 << 62))
        self._boxes: list[asyncio.Queue[pb.ConnectRequest | None]] = []
        self._subs: dict[int, tuple[_Match, int]] = {}  # subscription -> (match, seat)
        self._actions: dict[int, tuple[float, _Match, int, int, Any]] = {}
        """action id -> (sent, match, seat, version, action)"""
        self._readers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for stub in self.stubs:
            box: asyncio.Queue[pb.ConnectRequest | None] = asyncio.Queue()
            call = stub.Connect(self._requests(box))
            self._boxes.append(box)
            self._readers.append(asyncio.ensure_future(self._read(call)))

    async def create(self, conn: int) -> tuple[str, list[str]] | None:
        """A new match (its id and seat tokens) created on connection ``conn``'s server;
        ``None`` after a refusal (counted, retried by the caller)."""
        try:
            created = await self.stubs[conn].CreateMatch(
                pb.CreateMatchRequest(rules=match_pb2.RuleSet(preset=self.preset), players=self.players),
                timeout=30,
            )
        except grpc.aio.AioRpcError:
            return None
        return created.match.match_id, [
            c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)
        ]

    def connections(self) -> int:
        return len(self._boxes)

    async def close(self) -> None:
        for box in self._boxes:
            box.put_nowait(None)
        for task in self._readers:
            task.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)

    @staticmethod
    async def _requests(box: asyncio.Queue[pb.ConnectRequest | None]) -> AsyncIterator[pb.ConnectRequest]:
        while (msg := await box.get()) is not None:
            yield msg

    async def run_slot(self, slot: int) -> None:
        rng = random.Random(f"{self.seed}:c{slot}")
        conn = slot % self.connections()
        box = self._boxes[conn]
        while not self.stop.is_set():
            made = await self.create(conn)
            if made is None:
                if self.stop.is_set():
                    return
                self.fig.errors += 1
                await asyncio.sleep(0.05)
                continue
            mid, tokens = made
            m = _Match(slot, mid, [next(self._ids) for _ in tokens], rng)
            self.live.add(m.mid)
            for seat, (sid, token) in enumerate(zip(m.sids, tokens, strict=True)):
                self._subs[sid] = (m, seat)
                sub = pb.ConnectSubscribe(subscription_id=sid, token=token, match_id=m.mid)
                box.put_nowait(pb.ConnectRequest(subscribe=sub))
            try:
                await m.done.wait()
            finally:
                self.live.discard(m.mid)
                for sid in m.sids:
                    self._subs.pop(sid, None)

    async def _read(self, call: Any) -> None:
        async for msg in call:
            self._handle(msg)

    def _handle(self, msg: pb.ConnectResponse) -> None:
        kind = msg.WhichOneof("message")
        if kind == "update":
            self._update(msg.update)
        elif kind == "result":
            self._result(msg.result.action_id, ok=True)
            self._standing(msg.result)
        elif kind == "error":
            code = msg.error.status.code
            self.fig.errors += 1
            if code == RESOURCE_EXHAUSTED:  # the seat's rate of actions (one match played fast)
                self._again(msg.error.action_id, msg.error.status)
                return
            if code not in (ABORTED, FAILED_PRECONDITION):
                raise RuntimeError(f"action refused: {msg.error.status.message}")
            self._result(msg.error.action_id, ok=False)

    def _result(self, aid: int, *, ok: bool) -> None:
        got = self._actions.pop(aid, None)
        if got is None:
            return
        t0, m, _seat, version, _action = got
        if not ok:  # refused: no seat will observe it
            m.waiting.pop(version, None)
            return
        m.n += 1
        self.fig.seen += 1
        if self.fig.measuring:
            self.fig.actions += 1
            self.fig.submit_ms.append((time.perf_counter() - t0) * 1000)

    def _again(self, aid: int, status: Any) -> None:
        """Send an action refused by its seat's quota again once the refusal's wait is over."""
        got = self._actions.pop(aid, None)
        if got is None:
            return
        _t0, m, seat, version, action = got
        m.waiting.pop(version, None)
        delay = status_retry_delay(status) or 0.05
        asyncio.get_running_loop().call_later(delay, self._act, m, seat, version, action)

    def _standing(self, r: pb.ConnectActionResult) -> None:
        """A result that continues its subscription stands for the update (the server sends
        none): the same rule as the SDK's ``StreamState.accept_result``."""
        found = self._subs.get(r.subscription_id)
        if found is None:
            return
        m, seat = found
        resp = r.response
        if not resp.events or resp.events[0].version != m.last[seat] + 1:
            return
        if resp.observation.version == resp.version:
            self._seen(m, seat, resp)

    def _update(self, u: pb.ConnectUpdate) -> None:
        if not u.message.HasField("update"):
            return
        found = self._subs.get(u.subscription_id)
        if found is None:
            return
        m, seat = found
        upd = u.message.update
        if upd.version <= m.last[seat] and not upd.snapshot:
            return
        self._seen(m, seat, upd)

    def _seen(self, m: _Match, seat: int, upd: Any) -> None:
        m.last[seat] = upd.version
        now = time.perf_counter()
        if m.waiting:
            self._observed(m, seat, upd.version, now)
        if upd.events and self.fig.measuring:
            got = m.sent.get(upd.events[0].version - 1)
            if got is not None and got[1] != seat:
                self.fig.delivery_ms.append((now - got[0]) * 1000)
        obs = upd.observation
        if obs.match_state != match_pb2.MATCH_STATE_ACTIVE:
            if not m.done.is_set():
                self.fig.matches_finished += int(self.fig.measuring)  # in the window, as the actions
                m.done.set()
            return
        if not obs.awaited or obs.awaited[0] != seat or not obs.legal_actions or self.stop.is_set():
            return
        rng = m.rng
        action = choose(rng, obs.legal_actions, self.policy)
        if self.think > 0:
            delay = rng.expovariate(1.0 / self.think)
            asyncio.get_running_loop().call_later(delay, self._act, m, seat, obs.version, action)
        else:
            self._act(m, seat, obs.version, action)

    def _observed(self, m: _Match, seat: int, version: int, now: float) -> None:
        """``seat`` observed ``version``: every action made on an earlier version is observed
        by it; one observed by every seat counts its latency (sent -> the last seat's view)."""
        for acted in [v for v in m.waiting if v < version]:
            t0, left = m.waiting[acted]
            left.discard(seat)
            if not left:
                del m.waiting[acted]
                if self.fig.measuring:
                    self.fig.observed_ms.append((now - t0) * 1000)
                    self.fig.observed_at.append(t0)

    def _act(self, m: _Match, seat: int, version: int, action: Any) -> None:
        if self.stop.is_set() or m.done.is_set():
            return
        aid = next(self._ids)
        t0 = time.perf_counter()
        m.sent[version] = (t0, seat)
        m.waiting[version] = (t0, set(range(m.players)))
        self._actions[aid] = (t0, m, seat, version, action)
        req = pb.SubmitActionRequest(
            request_id=f"{seat}-{m.n}-{version}", expected_version=version, action=action
        )
        box = self._boxes[m.slot % len(self._boxes)]
        box.put_nowait(
            pb.ConnectRequest(
                action=pb.ConnectAction(subscription_id=m.sids[seat], action_id=aid, request=req)
            )
        )


class WebSocketBots(ConnectionBots):
    """The same bots over the WebSocket player connection (``/v1/connect``, binary protobuf
    frames): ``connections`` sockets to ``base`` (the worker's HTTP port); matches created
    with ``POST /v1/matches``."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base: str,
        connections: int,
        preset: str,
        players: int,
        seed: int,
        think_ms: float,
        figures: Figures,
        stop: asyncio.Event,
        policy: str = "random",
    ) -> None:
        super().__init__([], preset, players, seed, think_ms, figures, stop, policy)
        self.http = session
        self.base = base
        self.n_connections = connections
        self._sockets: list[aiohttp.ClientWebSocketResponse] = []

    async def start(self) -> None:
        for _ in range(self.n_connections):
            ws = await self.http.ws_connect(f"{self.base}/v1/connect", protocols=("truco.v1+proto",))
            box: asyncio.Queue[pb.ConnectRequest | None] = asyncio.Queue()
            self._sockets.append(ws)
            self._boxes.append(box)
            self._readers.append(asyncio.ensure_future(self._read_socket(ws)))
            self._readers.append(asyncio.ensure_future(self._write_socket(ws, box)))

    async def close(self) -> None:
        await super().close()
        for ws in self._sockets:
            await ws.close()

    async def create(self, conn: int) -> tuple[str, list[str]] | None:
        body = {"rules": {"preset": self.preset}, "players": self.players}
        try:
            async with self.http.post(f"{self.base}/v1/matches", json=body) as resp:
                if resp.status != 200:
                    return None
                created = await resp.json()
        except (aiohttp.ClientError, TimeoutError):
            return None
        seats = sorted(created["seatCredentials"], key=lambda c: c.get("seat", 0))
        return created["match"]["matchId"], [c["token"] for c in seats]

    async def _read_socket(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        read = pb.ConnectResponse.FromString
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                self._handle(read(msg.data))

    @staticmethod
    async def _write_socket(
        ws: aiohttp.ClientWebSocketResponse, box: asyncio.Queue[pb.ConnectRequest | None]
    ) -> None:
        while (msg := await box.get()) is not None:
            await ws.send_bytes(msg.SerializeToString())


# ------------------------------------------------------------------ the no-work bidi pattern
PATTERN_CONNECT = "Connect"
"""Method of the no-work server's bidirectional pattern (``truco.bench.Pattern/Connect``)."""
_HEAD = struct.Struct("!cIBB")  # kind, match, seat, flag (S: players)


def pattern_connect_handler(body: bytes) -> Any:
    """The no-work server's ``Connect``: per connection, subscriptions ``S`` (match, seat,
    players) and actions ``A`` (match, seat); an action answers ``R`` to its sender and pushes
    ``U`` to every seat of its match (the next one flagged "your turn") -- the player
    connection's messages per action, with nothing behind them."""
    matches: dict[int, list[asyncio.Queue[bytes] | None]] = {}

    async def connect(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        out: asyncio.Queue[bytes] = asyncio.Queue()
        mine: list[int] = []

        async def read() -> None:
            async for req in requests:
                kind, match, seat, extra = _HEAD.unpack_from(req)
                if kind == b"S":
                    seats = matches.setdefault(match, [None] * extra)
                    seats[seat] = out
                    mine.append(match)
                    out.put_nowait(_HEAD.pack(b"U", match, seat, 1 if seat == 0 else 0) + body)
                else:
                    out.put_nowait(_HEAD.pack(b"R", match, seat, 0) + body)
                    seats = matches.get(match, [])
                    for i, q in enumerate(seats):
                        if q is not None:
                            q.put_nowait(
                                _HEAD.pack(b"U", match, i, 1 if i == (seat + 1) % len(seats) else 0) + body
                            )

        reader = asyncio.ensure_future(read())
        try:
            while True:
                yield await out.get()
        finally:
            reader.cancel()
            for match in mine:
                matches.pop(match, None)

    return grpc.stream_stream_rpc_method_handler(connect)


async def pattern_connect_load(
    channels: list[grpc.aio.Channel],
    service: str,
    matches: int,
    players: int,
    seconds: float,
    server_cpu: Callable[[], float] | None = None,
) -> tuple[float, float]:
    """Actions/s of the player connection's pattern on the no-work server: ``matches``
    "matches" spread over one Connect stream per channel; and the server's CPU per action
    (ms, over the same window: ``server_cpu`` reads its CPU seconds; NaN without it)."""
    count = 0
    measuring = False

    async def connection(index: int, ch: grpc.aio.Channel) -> None:
        nonlocal count
        call: grpc.aio.StreamStreamCall[bytes, bytes] = ch.stream_stream(f"/{service}/{PATTERN_CONNECT}")()
        mine = range(index, matches, len(channels))
        for match in mine:
            for seat in range(players):
                await call.write(_HEAD.pack(b"S", match, seat, players))
        async for msg in call:
            kind, match, seat, flag = _HEAD.unpack_from(msg)
            if kind == b"R":
                if measuring:
                    count += 1
            elif flag:
                await call.write(_HEAD.pack(b"A", match, seat, 0))

    tasks = [asyncio.ensure_future(connection(i, ch)) for i, ch in enumerate(channels)]
    try:
        await asyncio.sleep(1.0)  # warm up
        cpu0 = server_cpu() if server_cpu else math.nan
        measuring = True
        t0 = time.perf_counter()
        await asyncio.sleep(seconds)
        measuring = False
        elapsed = time.perf_counter() - t0
        cpu = server_cpu() - cpu0 if server_cpu else math.nan
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return count / elapsed, 1000 * cpu / max(count, 1)


def stubs_of(channels: list[grpc.aio.Channel]) -> list[Any]:
    return [match_service_pb2_grpc.MatchServiceStub(ch) for ch in channels]
