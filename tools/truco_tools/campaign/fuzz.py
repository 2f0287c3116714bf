"""Fuzz every RPC of one worker (Redis store) over gRPC and REST, and its WebSocket player
connection, with random, malformed and adversarial requests: messages built from the
descriptors with hostile values (huge and unicode strings, unknown enum numbers, negative and
huge numbers, deep nesting), real and wrong credentials (other seats, spectators, forged
tokens), stale versions, replayed request ids, and raw bytes that are not protobuf. The oracle:
no INTERNAL/UNKNOWN (REST: no 5xx; WebSocket: no such status in a message or a close code, no
5xx refusing an upgrade) and a rejected request changes nothing (a watched match's version,
Redis's set of keys); over WebSocket, a connection that sent no action changes nothing."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
import redis.asyncio as aioredis
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

import truco_engine as te
from truco_contract.pb import match_service_pb2, match_service_pb2_grpc
from truco_server.app.wiring import service_factory
from truco_server.core.config import Settings
from truco_server.transports.grpc.server import Worker
from truco_server.transports.websocket import CLOSE_BASE, JSON, PROTO
from truco_tools.redis_proc import start_redis

SERVICE = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"]
BAD = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN})


@dataclass
class FuzzResult:
    transport: str
    inputs: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)
    """Inputs answered INTERNAL/UNKNOWN/5xx (with what was sent)."""
    changed: list[str] = field(default_factory=list)
    """Rejected inputs after which the watched state was not the same."""
    messages: Counter[str] = field(default_factory=Counter)
    """WebSocket: the server's messages by kind, over every connection."""


class Gen:
    """Random hostile values for a message's fields."""

    def __init__(self, rng: random.Random, match_id: str, tokens: list[str], request_ids: list[str]) -> None:
        self.rng, self.match_id, self.tokens, self.request_ids = rng, match_id, tokens, request_ids

    def string(self) -> str:
        r = self.rng
        return r.choice([
            "", self.match_id, self.match_id[:-1] + "x", "m" * r.choice([1, 129, 5000]), "4C", "AS", "XX",
            "paulista", "argentine", "uruguayan", "nope", r.choice(self.request_ids), "\u0663\u0664",
            "é" * 70, "\x00", "tc1." + self.match_id + ".0." + "0" * 40, "a" * r.randint(0, 300),
            json.dumps({"a": [1] * 5}),
        ])  # fmt: skip

    def number(self, f: FieldDescriptor) -> Any:
        r = self.rng
        if f.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return r.choice([0.0, -1.0, 1e308, float("nan"), float("inf"), 0.5])
        big = 2**31 - 1 if f.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32) else 2**62
        if f.type in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
            return r.choice([0, 1, 2, 3, 7, 100, big])
        return r.choice([0, 1, 2, 3, -1, 7, 100, -big, big])

    def fill(self, msg: Message, depth: int = 0) -> Message:
        d = msg.DESCRIPTOR
        for f in d.fields:
            if self.rng.random() < 0.45:
                continue
            self._set(msg, f, depth)
        return msg

    def _value(self, f: FieldDescriptor) -> Any:
        r = self.rng
        if f.type == FieldDescriptor.TYPE_STRING:
            return self.string()
        if f.type == FieldDescriptor.TYPE_BYTES:
            return r.randbytes(r.choice([0, 3, 16, 32, 64, 300]))
        if f.type == FieldDescriptor.TYPE_BOOL:
            return r.random() < 0.5
        if f.type == FieldDescriptor.TYPE_ENUM:
            numbers = [v.number for v in f.enum_type.values] if f.enum_type is not None else []
            return r.choice([*numbers, 99, -1])
        return self.number(f)

    def _set(self, msg: Message, f: Any, depth: int) -> None:
        r = self.rng
        if f.message_type is not None:
            if f.message_type.GetOptions().map_entry:
                target = getattr(msg, f.name)
                for _ in range(r.choice([0, 1, 3, 40])):
                    key = self.string()[:80]
                    if f.message_type.fields_by_name["value"].message_type is None:
                        target[key] = self.string()
                return
            if f.message_type.full_name == "google.protobuf.Struct":
                s = getattr(msg, f.name)
                s.update(
                    {
                        r.choice(["players", "target_points", "name", "flor", "x" * 70]): r.choice(
                            [2, 4, 6, 7, -3, "z", True, None, [1, 2], {"deep": {"er": 1}}]
                        )
                    }
                )
                return
            if depth > 3:
                return
            if f.is_repeated:
                for _ in range(r.choice([0, 1, 2, 5])):
                    self.fill(getattr(msg, f.name).add(), depth + 1)
            else:
                self.fill(getattr(msg, f.name), depth + 1)
            return
        try:
            if f.is_repeated:
                getattr(msg, f.name).extend(self._value(f) for _ in range(r.choice([0, 1, 3, 60])))
            else:
                setattr(msg, f.name, self._value(f))
        except (ValueError, TypeError):  # e.g. a closed enum refused the value
            pass

    def metadata(self) -> list[tuple[str, str]]:
        r = self.rng
        token = r.choice([
            None, *self.tokens, "tc1." + self.match_id + ".9." + "0" * 40, "garbage", "tc1.x.y.z",
            self.tokens[0][:-2] + "00",
        ])  # fmt: skip
        return [] if token is None else [("authorization", f"Bearer {token}")]


async def _watch(r: aioredis.Redis, match_id: str) -> tuple[Any, frozenset[Any]]:
    """The watched match's version and idempotency records, and the set of matches (the
    state a request can change; seats' last-seen times, the clock queue and the relay of
    operator events are written in the background and not watched)."""
    keys = frozenset(k for k in await r.keys("truco:*:match"))
    version = await r.hget(f"truco:{{{match_id}}}:match", "version")
    return (version, await r.hlen(f"truco:{{{match_id}}}:req")), keys


@asynccontextmanager
async def worker_env() -> AsyncIterator[tuple[str, Worker]]:
    """A fresh ``redis-server`` and one in-process worker on it (quotas off), stopped after."""
    rp = start_redis()
    settings = Settings(
        redis_url=rp.url,
        grpc_port=0,
        http_port=0,
        metrics_port=0,
        shutdown_grace_seconds=1.0,
        # the default event log (64): a stream from version 0 late in a match is rebuilt from
        # the record (the leak phase's late viewers)
        quota_actions_per_second=0,
        quota_matches_per_minute=0,
        quota_streams=0,
        quota_live_matches=0,
        quota_stored_bytes_per_day=0,
    )
    worker = Worker(settings, service_factory)
    try:
        await worker.start()
        yield rp.url, worker
    finally:
        await worker.stop()
        rp.stop()


async def run_fuzz(redis_url: str, worker: Worker, inputs: int, seed: int = 12) -> list[FuzzResult]:
    """``inputs`` requests per transport against ``worker`` (whose store is ``redis_url``)."""
    results = [FuzzResult("grpc"), FuzzResult("rest"), FuzzResult("websocket")]
    r = aioredis.Redis.from_url(redis_url)
    try:
        async with grpc.aio.insecure_channel(worker.grpc_address) as ch, aiohttp.ClientSession() as http:
            stub = match_service_pb2_grpc.MatchServiceStub(ch)
            made = await stub.CreateMatch(match_service_pb2.CreateMatchRequest(request_id="watched"))
            mid = made.match.match_id
            tokens = [c.token for c in made.seat_credentials] + [made.spectator_token]
            rng = random.Random(seed)
            gen = Gen(rng, mid, tokens, ["watched", f"{mid}-r1"])
            methods = list(SERVICE.methods)
            await _grpc_phase(ch, r, gen, methods, mid, inputs, results[0])
            base = f"http://127.0.0.1:{worker.http_port}"
            await _rest_phase(http, base, r, gen, methods, mid, inputs, results[1])
            # a match of its own, in play (the phases before may have cancelled or ended theirs)
            made = await stub.CreateMatch(match_service_pb2.CreateMatchRequest(request_id="watched-ws"))
            ws_mid = made.match.match_id
            ws_tokens = [c.token for c in made.seat_credentials] + [made.spectator_token]
            ws_gen = Gen(rng, ws_mid, ws_tokens, ["watched-ws", f"{ws_mid}-r1"])
            await _websocket_phase(http, base, r, ws_gen, ws_mid, inputs, results[2])
    finally:
        await r.aclose()
    return results


async def _grpc_phase(
    ch: grpc.aio.Channel, r: aioredis.Redis, gen: Gen, methods: list[Any], mid: str, n: int, out: FuzzResult
) -> None:
    rng = gen.rng
    for _ in range(n):
        m = rng.choice(methods)
        path = f"/{SERVICE.full_name}/{m.name}"
        msg = gen.fill(_class(m.input_type)())
        if rng.random() < 0.3 and "match_id" in m.input_type.fields_by_name:
            setattr(msg, "match_id", mid)  # noqa: B010 (aim at the watched match)
        raw = rng.randbytes(rng.randint(1, 40)) if rng.random() < 0.08 else msg.SerializeToString()
        before = await _watch(r, mid)
        out.inputs += 1
        try:
            if m.server_streaming:
                call = ch.unary_stream(path, request_serializer=bytes, response_deserializer=bytes)(
                    raw, metadata=gen.metadata(), timeout=5
                )
                await call.read()  # the first message (or the error)
                call.cancel()
                out.codes["OK"] += 1
                continue
            await ch.unary_unary(path, request_serializer=bytes, response_deserializer=bytes)(
                raw, metadata=gen.metadata(), timeout=5
            )
            out.codes["OK"] += 1
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            out.codes[code.name] += 1
            if code in BAD:
                out.bad.append(f"{m.name} {code.name} {exc.details()!r} {raw[:200]!r}")
            elif code != grpc.StatusCode.DEADLINE_EXCEEDED and (after := await _watch(r, mid)) != before:
                out.changed.append(f"{m.name} {code.name} {_diff(before, after)} {raw[:200]!r}")


async def _rest_phase(
    http: aiohttp.ClientSession,
    base: str,
    r: aioredis.Redis,
    gen: Gen,
    methods: list[Any],
    mid: str,
    n: int,
    out: FuzzResult,
) -> None:
    from truco_server.transports.rest.routes import routes_of

    rng = gen.rng
    routes = routes_of(SERVICE)
    for _ in range(n):
        route = rng.choice(routes)
        msg = gen.fill(_class(route.input)())
        try:
            body: Any = json_format.MessageToDict(msg)
        except json_format.SerializeToJsonError:  # a value JSON cannot spell (a bad duration)
            body = {"settings": {"idleTimeout": rng.choice(["-5s", "1e9s", "x"])}}
        kind = rng.random()
        if kind < 0.1:
            body = "[" * rng.choice([10, 1500]) + "]" * 5
        elif kind < 0.2:
            key = rng.choice(["requestId", "action", "rules", "x"])
            body = {key: rng.choice([None, [], {"a": "b"}, 1e400])}
        path = route.template
        for p in route.path_fields:
            path = path.replace("{" + p + "}", rng.choice([mid, gen.string()[:300] or "m", "%2e%2e"]))
        headers = dict(gen.metadata())
        if rng.random() < 0.2:
            headers["Accept"] = "text/event-stream"
            last = rng.choice(["5", str(2**64), "-1", "\u0663"])
            headers["Last-Event-ID"] = last.encode().decode("latin-1")
        if rng.random() < 0.1:
            headers["Content-Type"] = rng.choice(["application/xml", "multipart/form-data", "text/plain"])
        data = body if isinstance(body, str) else json.dumps(body, allow_nan=True)
        before = await _watch(r, mid)
        out.inputs += 1
        try:
            async with http.request(
                route.http_method, base + path, data=data.encode() if route.body else None, headers=headers,
                timeout=aiohttp.ClientTimeout(total=5, sock_read=2),
            ) as resp:  # fmt: skip
                status = resp.status
                if status < 300 and route.server_streaming:
                    await resp.content.readline()
                else:
                    await resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            out.codes[type(exc).__name__] += 1
            continue
        out.codes[str(status)] += 1
        if status >= 500:
            out.bad.append(f"{route.method_name} {status} {path[:100]} {data[:200]}")
        elif status >= 300 and (after := await _watch(r, mid)) != before:
            out.changed.append(f"{route.method_name} {status} {_diff(before, after)} {data[:200]}")


WS_BAD_CLOSES = frozenset({CLOSE_BASE + 2, CLOSE_BASE + 13, 1011})
"""Close codes of a connection ended by UNKNOWN or INTERNAL (and WebSocket's own internal error)."""
_WS_TIMEOUT = aiohttp.ClientWSTimeout(ws_close=5)
_CARDS = sorted({*te.DECKS["spanish40"], *te.DECKS["french40"]})
_CONNECT_KINDS = ("subscribe", "action", "unsubscribe", "subscribe_ticket", "subscribe", "action")


def _plausible_action(gen: Gen, mid: str) -> match_service_pb2.SubmitActionRequest:
    """An action one of the watched match's seats may well be allowed to make now."""
    rng = gen.rng
    req = match_service_pb2.SubmitActionRequest(match_id=rng.choice(["", mid]))
    kind = rng.choice(["call_truco", "accept", "decline", "play_card", "play_card"])
    getattr(req.action, kind).SetInParent()
    if kind == "play_card":
        req.action.play_card.card = rng.choice(_CARDS)
    return req


def connect_frames(gen: Gen, mid: str, binary: bool) -> tuple[list[str | bytes], int, int]:
    """1-4 frames of a player connection (the subprotocol's, or hostile ones): how many of them
    are actions, and how many subscribe a seat or the spectator of the watched match. About a
    third of the connections play: a seat of the watched match subscribed, then actions it may
    be allowed to make; the others send messages filled at random."""
    rng = gen.rng
    msgs: list[match_service_pb2.ConnectRequest] = []
    if rng.random() < 0.35:
        sid = rng.choice([1, 2, 7])
        token = rng.choice(gen.tokens[:-1])  # a seat's
        subscribe = match_service_pb2.ConnectSubscribe(subscription_id=sid, match_id=mid, token=token)
        msgs.append(match_service_pb2.ConnectRequest(subscribe=subscribe))
        for aid in range(rng.randint(1, 2)):
            act = match_service_pb2.ConnectAction(
                subscription_id=sid, action_id=aid, request=_plausible_action(gen, mid)
            )
            msgs.append(match_service_pb2.ConnectRequest(action=act))
    else:
        for _ in range(rng.randint(1, 4)):
            msg = match_service_pb2.ConnectRequest()
            kind = rng.choice(_CONNECT_KINDS)
            body = getattr(msg, kind)
            body.SetInParent()
            gen.fill(body)
            if rng.random() < 0.7:
                body.subscription_id = rng.choice([0, 1, 2])
            if kind == "subscribe" and rng.random() < 0.6:
                body.match_id, body.token = mid, rng.choice(gen.tokens)
            elif kind == "action" and rng.random() < 0.5:
                body.request.match_id = rng.choice(["", mid])
            msgs.append(msg)
    frames: list[str | bytes] = []
    actions = aimed = 0
    for msg in msgs:
        odd = rng.random()
        if odd < 0.04:  # bytes that are no message, text that is no JSON
            junk: list[str | bytes] = [rng.randbytes(rng.randint(1, 40)), "{" * rng.randint(1, 3000), "[]"]
            frames.append(rng.choice(junk))
            continue
        if odd < 0.07:
            msg.Clear()  # no message set: a protocol error
        which = msg.WhichOneof("message")
        actions += which == "action"
        aimed += which == "subscribe" and msg.subscribe.match_id == mid and msg.subscribe.token in gen.tokens
        if binary != (odd < 0.1):  # mostly the subprotocol's frame type
            frames.append(msg.SerializeToString())
            continue
        try:
            frames.append(json_format.MessageToJson(msg))
        except json_format.SerializeToJsonError:
            frames.append('{"action": {"request": {"expectedVersion": "x"}}}')
    return frames, actions, aimed


def server_message(data: str | bytes, binary: bool) -> tuple[str, int, str]:
    """One server message of a player connection: its kind, and the code and message of its
    status (an ``error`` or an ``ended``; 0 and "" for the others)."""
    msg = match_service_pb2.ConnectResponse()
    if binary:
        msg.ParseFromString(data if isinstance(data, bytes) else data.encode())
    else:
        json_format.Parse(data, msg)
    kind = msg.WhichOneof("message") or "none"
    if kind not in ("error", "ended"):
        return kind, 0, ""
    status = getattr(msg, kind).status
    return kind, status.code, status.message


async def _websocket_phase(
    http: aiohttp.ClientSession, base: str, r: aioredis.Redis, gen: Gen, mid: str, n: int, out: FuzzResult
) -> None:
    """One WebSocket player connection per input: a subprotocol (or a hostile upgrade), 1-4
    frames, the answers to its actions (or the connection's end), then the client's close."""
    rng = gen.rng
    for _ in range(n):
        binary = rng.random() < 0.5
        protocols = [PROTO] if binary else rng.choice([[JSON], []])
        params = None
        hostile = rng.random()
        if hostile < 0.03:
            protocols = ["chat", "superchat"]  # refused before the upgrade
        elif hostile < 0.05:
            params = {"access_token": rng.choice(gen.tokens)}  # a credential in the URL: refused
        frames, actions, aimed = connect_frames(gen, mid, binary)
        before = await _watch(r, mid)
        out.inputs += 1
        sent = f"{'proto' if binary else 'json'} {[f[:120] for f in frames]!r}"[:400]
        try:
            async with http.ws_connect(
                base + "/v1/connect", protocols=protocols, params=params, timeout=_WS_TIMEOUT
            ) as ws:
                for frame in frames:
                    await (ws.send_bytes(frame) if isinstance(frame, bytes) else ws.send_str(frame))
                answered = first = 0
                async with asyncio.timeout(5):  # every action answered, every aimed subscription's
                    while answered < actions or first < aimed:  # first message, or the end
                        got = await ws.receive()
                        if got.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                            break
                        kind, status, text = server_message(got.data, binary)
                        out.messages[kind] += 1
                        if status in (2, 13):  # UNKNOWN, INTERNAL
                            out.bad.append(f"websocket {kind} code {status} {text[:200]!r} after {sent}")
                        answered += kind in ("result", "error")
                        first += kind in ("update", "ended")
                await ws.close()
                code = ws.close_code
        except aiohttp.WSServerHandshakeError as exc:
            out.codes[f"upgrade {exc.status}"] += 1
            if exc.status >= 500:
                out.bad.append(f"websocket upgrade {exc.status} {protocols} {params}")
            continue
        except (TimeoutError, aiohttp.ClientError) as exc:
            out.codes[type(exc).__name__] += 1
            continue
        out.codes[f"close {code}"] += 1
        if code in WS_BAD_CLOSES:
            out.bad.append(f"websocket closed {code} after {sent}")
        elif not actions and (after := await _watch(r, mid)) != before:
            out.changed.append(f"websocket {_diff(before, after)} {sent}")


def _diff(before: tuple[Any, frozenset[Any]], after: tuple[Any, frozenset[Any]]) -> str:
    added, gone = sorted(after[1] - before[1]), sorted(before[1] - after[1])
    return f"watched {before[0]!r}->{after[0]!r}, matches +{added} -{gone}"


def _class(d: Descriptor) -> type[Message]:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(d)
