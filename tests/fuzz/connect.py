"""The ``connect`` fuzz target (:mod:`tests.fuzz.targets`): one player connection's
conversation, in process and without sockets, as the WebSocket face reads it.

An input is a JSON envelope ``{"protocol": "json" | "proto", "frames": [...]}`` (anything else
is one raw text frame). Each frame is read by the WebSocket face's own frame reader
(:class:`truco_server.transports.websocket._Frames`): with ``json`` an object is sent as its
JSON text and a string as raw text; with ``proto`` an object is turned into the binary
message it maps to (an object the mapping refuses goes as its JSON bytes, a frame the binary
parser must refuse), and a string of hex digits as those bytes. The frames are served by
:class:`truco_server.api.connection.PlayerConnection` over the API layer of the ``rest``
target (an in-memory store holding a live match and a waiting matchmaking ticket; ``$match``,
``$seat0``, ``$seat1``, ``$spectator``, ``$pool``, ``$ticketid`` and ``$tickettoken`` in strings
become theirs), followed by an unsubscribe of every subscription id
the frames opened and the end of the client's messages, so that the conversation ends by
itself once every action is answered.

Oracle: the connection ends normally or with a :class:`~truco_server.core.errors.ServiceError`
carrying a reason and a status other than UNKNOWN or INTERNAL; no action error and no
subscription end carries UNKNOWN or INTERNAL; every message the server sends writes in the
conversation's protocol; and a conversation in which no action was accepted leaves the live
match as it was (its presence aside: a subscription marks its seat present).
"""

from __future__ import annotations

import asyncio
import json
import string
from collections.abc import AsyncIterator, Iterator
from typing import Any

CONVERSATION_SECONDS = 5.0
"""A conversation still running after this long is counted (``timeouts``) and cut."""

_SUB0 = {"subscribe": {"subscriptionId": "1", "matchId": "$match", "token": "$seat0"}}
_SUB1 = {"subscribe": {"subscriptionId": "2", "matchId": "$match", "token": "$seat1"}}


def _act(sid: int, aid: int, action: dict[str, Any], **request: Any) -> dict[str, Any]:
    return {
        "action": {"subscriptionId": str(sid), "actionId": str(aid), "request": {**request, "action": action}}
    }


def connect_seeds() -> Iterator[tuple[str, str]]:
    """(name, envelope) of real conversations on the live match (argentine, at version 4,
    seat 0 to act with 2o, 5e and 7e)."""
    conversations: list[tuple[str, dict[str, Any]]] = [
        (
            "play",
            {
                "protocol": "json",
                "frames": [_SUB0, _act(1, 1, {"playCard": {"card": "2o"}}, requestId="c-1")],
            },
        ),
        ("play-proto", {"protocol": "proto", "frames": [_SUB0, _act(1, 1, {"playCard": {"card": "5e"}})]}),
        (
            "two-seats",
            {
                "protocol": "json",
                "frames": [
                    _SUB0,
                    _SUB1,
                    _act(1, 1, {"callTruco": {}}, expectedVersion="4"),
                    _act(2, 2, {"accept": {}}),
                ],
            },
        ),
        (
            "envido",
            {
                "protocol": "json",
                "frames": [_SUB0, _act(1, 7, {"callEnvido": {"kind": "ENVIDO_KIND_REAL_ENVIDO"}})],
            },
        ),
        (
            "retry",
            {
                "protocol": "json",
                "frames": [
                    _SUB0,
                    _act(1, 1, {"playCard": {"card": "7e"}}, requestId="same"),
                    _act(1, 2, {"playCard": {"card": "7e"}}, requestId="same"),
                ],
            },
        ),
        (
            "spectator-resume",
            {
                "protocol": "json",
                "frames": [
                    {
                        "subscribe": {
                            "subscriptionId": "9",
                            "matchId": "$match",
                            "token": "$spectator",
                            "fromVersion": "2",
                        }
                    }
                ],
            },
        ),
        (
            "unsubscribe",
            {
                "protocol": "json",
                "frames": [_SUB0, {"unsubscribe": {"subscriptionId": "1"}}, _act(1, 1, {"fold": {}})],
            },
        ),
        (
            "ticket",
            {
                "protocol": "json",
                "frames": [
                    {
                        "subscribeTicket": {
                            "subscriptionId": "3",
                            "token": "$tickettoken",
                            "poolId": "$pool",
                            "ticketId": "$ticketid",
                        }
                    },
                    _SUB0,
                    _act(3, 1, {"fold": {}}),
                ],
            },
        ),
        ("raw-text", {"protocol": "json", "frames": ['{"action": {"subscriptionId": 1}}']}),
        ("raw-bytes", {"protocol": "proto", "frames": ["0a0808011203736565641a016d"]}),
    ]
    for name, conversation in conversations:
        yield f"{name}.json", json.dumps(conversation, indent=1) + "\n"


async def _new_ticket(env: Any) -> None:
    """A waiting ticket in a two-seat pool (``$pool``, ``$ticketid``, ``$tickettoken``)."""
    from tests.fuzz.targets import API_KEY
    from truco_contract.pb import matchmaking_service_pb2 as MM
    from truco_server.core.caller import Credentials

    ops = Credentials(api_key=API_KEY)
    await env.apis["CreatePool"].CreatePool(
        ops, MM.CreatePoolRequest(pool=MM.Pool(pool_id="quick", players=2))
    )
    made = await env.apis["CreateTicket"].CreateTicket(
        ops, MM.CreateTicketRequest(pool_id="quick", players=[MM.TicketPlayer(player_id="ana")])
    )
    env.ticket = {"$pool": "quick", "$ticketid": made.ticket.ticket_id, "$tickettoken": made.ticket_token}


def _conversation(data: bytes) -> tuple[bool, list[Any]]:
    """(binary, frames) of an input (module docstring)."""
    try:
        env = json.loads(data)
    except (ValueError, RecursionError):
        env = None
    if not isinstance(env, dict) or not isinstance(env.get("frames"), list):
        return False, [data.decode("utf-8", "replace")]
    return env.get("protocol") == "proto", env["frames"]


def _frame_bytes(binary: bool, frame: Any) -> tuple[Any, Any]:
    """(frame type, payload) of one frame as the socket would deliver it."""
    from aiohttp import WSMsgType

    from truco_contract.pb import match_service_pb2 as MS
    from truco_server.core import errors as E
    from truco_server.transports.rest.routes import fill_message

    if not binary:
        if isinstance(frame, str):
            return WSMsgType.TEXT, frame
        return WSMsgType.TEXT, json.dumps(frame)
    if isinstance(frame, str):
        if frame and len(frame) % 2 == 0 and all(c in string.hexdigits for c in frame):
            return WSMsgType.BINARY, bytes.fromhex(frame)
        return WSMsgType.BINARY, frame.encode("utf-8", "surrogatepass")
    if not isinstance(frame, dict):
        return WSMsgType.BINARY, json.dumps(frame).encode()
    message = MS.ConnectRequest()
    try:
        fill_message(frame, message, "message")
    except E.ServiceError:
        return WSMsgType.BINARY, json.dumps(frame).encode()
    return WSMsgType.BINARY, message.SerializeToString()


def _opened(frames: list[Any]) -> set[int]:
    """The subscription ids the frames' subscribe messages name (the harness closes them)."""
    ids = set()
    for frame in frames:
        if isinstance(frame, dict):
            for kind in ("subscribe", "subscribeTicket", "subscribe_ticket"):
                sub = frame.get(kind)
                if isinstance(sub, dict):
                    sid = sub.get("subscriptionId", sub.get("subscription_id"))
                    if isinstance(sid, int | str):
                        try:
                            value = int(sid)
                        except ValueError:
                            continue
                        if -(2**63) <= value < 2**63:  # an int64: others are refused as read
                            ids.add(value)
    return ids


def connect_target(data: bytes) -> None:
    from tests.fuzz.targets import Finding, _new_match, _subst, rest_env
    from truco_contract.pb import match_service_pb2 as MS
    from truco_server.api.connection import PlayerConnection
    from truco_server.core import errors as E
    from truco_server.transports.websocket import _Frames

    env = rest_env()
    binary, frames = _conversation(data)
    if len(frames) > 16:
        frames = frames[:16]
    env.calls += 1
    if env.fresh != env.match_fingerprint(presence=False):
        env.loop.run_until_complete(_new_match(env))
        env.fresh = env.match_fingerprint(presence=False)
    if not env.ticket:
        env.loop.run_until_complete(_new_ticket(env))
    env.tokens.update(env.ticket)
    frames = _subst(env, frames)
    reader = _Frames(binary)
    closing = [
        MS.ConnectRequest(unsubscribe=MS.ConnectUnsubscribe(subscription_id=i)) for i in _opened(frames)
    ]

    read = 0  # actions handed to the connection

    async def requests() -> AsyncIterator[Any]:
        nonlocal read
        for frame in frames:
            request = reader.read(*_frame_bytes(binary, frame))
            # a malformed binary frame reads as a placeholder the connection refuses
            read += isinstance(request, MS.ConnectRequest) and request.WhichOneof("message") == "action"
            yield request
        for request in closing:
            yield request

    accepted = env.accepted  # results before this conversation

    async def converse() -> None:
        api = env.match_api
        async for data in PlayerConnection(api, api.tickets).run(requests()):
            reader.write(data)
            msg = MS.ConnectResponse.FromString(data)
            kind = msg.WhichOneof("message")
            if kind == "result":
                env.accepted += 1
            elif kind in ("error", "ended"):
                status = getattr(msg, kind).status
                if status.code in (2, 13):
                    raise Finding(f"a connection's {kind} with code {status.code}: {status.message}"[:400])

    env.loop.run_until_complete(env.services.relay.done())
    before = env.match_fingerprint(presence=False)
    cut = True  # by an error or the time limit: answers of actions in flight are dropped
    try:
        env.loop.run_until_complete(asyncio.wait_for(converse(), CONVERSATION_SECONDS))
        cut = False
    except TimeoutError:
        env.timeouts += 1
    except E.ServiceError as exc:  # the connection ended by a typed error
        env.refusal(exc, "the connection")
    except Finding:
        raise
    except Exception as exc:
        raise Finding(f"the connection raised {type(exc).__name__}: {exc}"[:400]) from exc
    # an action read before an error ended the connection may have been applied, its result
    # dropped with the connection (the client sends it again with its request id)
    if not read and env.match_fingerprint(presence=False) != before:
        raise Finding("no action was sent but the live match changed")
    if read and env.accepted == accepted and not cut and env.match_fingerprint(presence=False) != before:
        raise Finding("every action was refused but the live match changed")
