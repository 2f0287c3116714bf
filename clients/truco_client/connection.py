"""The player connection (``MatchService.Connect``) for asyncio programs: one bidirectional
stream to the server carrying every seat the program plays, the updates in and the actions
out.

    async with PlayerConnection("127.0.0.1:50051") as conn:
        seat = await conn.seat(match_id, token)          # subscribe (from version 0)
        async for update in seat:                        # resumes by itself after a cut
            if update.observation.is_my_turn:
                await seat.submit(action, request_id=..., expected_version=update.version)

Each seat is resumed from the last version it received when the connection is cut (the
server stopped, the worker died, a silent connection): the program reconnects (to the next
target, with backoff), subscribes every open seat again with its last version, and sends
the actions still unanswered again with their request ids, so an action is applied once.
A refused action raises the same typed errors as :meth:`AsyncTrucoClient.submit_action`.

Two transports carry the same messages: gRPC (a ``host:port`` target) and WebSocket (a
``ws://host:port`` or ``wss://...`` target: the server's HTTP port, ``/v1/connect``, binary
protobuf frames; :mod:`truco_client.websocket`, which needs ``aiohttp``)::

    async with PlayerConnection("ws://127.0.0.1:8080") as conn: ...

A matchmaking ticket rides the same connection (:meth:`PlayerConnection.ticket`): the app
learns its match is formed and subscribes the seat it got::

    ticket = await (await conn.ticket(pool_id, ticket_id, ticket_token)).final()
    seat = await conn.seat(ticket.match_id, ticket.seats[0].token)
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import grpc

import truco_engine as te
from truco_client import websocket
from truco_client._core import (
    CHANNEL_OPTIONS,
    ActionResult,
    RetryPolicy,
    StreamState,
    Update,
    action_result,
    metadata,
    new_request_id,
    submit_request,
)
from truco_client.errors import (
    RETRYABLE,
    TrucoApiError,
    Unavailable,
    from_rpc_error,
    from_status,
    lost_in_transport,
)
from truco_contract import codec
from truco_contract.pb import match_service_pb2, match_service_pb2_grpc, matchmaking_service_pb2
from truco_kit.actions import Action

pb = match_service_pb2
_END = object()
T = TypeVar("T")
Box = asyncio.Queue[pb.ConnectRequest | None]


class _GrpcLink:
    """One ``Connect`` call: the messages of ``box`` out, the server's in."""

    def __init__(self, stub: Any, box: Box) -> None:
        self.call = stub.Connect(self._requests(box))

    @staticmethod
    async def _requests(box: Box) -> AsyncIterator[pb.ConnectRequest]:
        while (msg := await box.get()) is not None:
            yield msg

    async def messages(self) -> AsyncIterator[pb.ConnectResponse]:
        try:
            async for msg in self.call:
                yield msg
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None

    async def close(self) -> None:
        self.call.cancel()


JOIN_ATTEMPTS = 6
"""Times :meth:`Seat.join` sends a join that fails with a retryable code."""
JOIN_FIRST_PAUSE, JOIN_MAX_PAUSE = 0.5, 8.0
"""Seconds between two of them: the first pause, doubled each time up to the last."""


class Seat:
    """One subscription of a :class:`PlayerConnection`: iterate it for updates, ``submit``
    to act. Iteration ends after the update that shows the match over."""

    def __init__(self, conn: PlayerConnection, sid: int, token: str, state: StreamState) -> None:
        self.conn = conn
        self.id = sid
        self.token = token
        self.state = state
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.closed = False

    @property
    def match_id(self) -> str:
        return self.state.match_id

    def subscribe_message(self) -> pb.ConnectRequest:
        sub = pb.ConnectSubscribe(subscription_id=self.id, token=self.token, match_id=self.match_id)
        if self.state.last_version is not None:
            sub.from_version = self.state.last_version
        return pb.ConnectRequest(subscribe=sub)

    def __aiter__(self) -> AsyncIterator[Update]:
        return _drained(self.queue, lambda update: update.observation.is_over)

    async def submit(
        self, action: Action, *, request_id: str | None = None, expected_version: int | None = None
    ) -> ActionResult:
        """Submit an action for this seat; the result, or the typed error of a refusal."""
        rid = request_id or new_request_id()
        req = submit_request(self.match_id, action, rid, expected_version)
        resp = await self.conn._act(self, req)
        return action_result(resp, self.state.rules, rid)

    async def join(self, client_seed: bytes = b"") -> None:
        """JoinMatch for this seat (a unary call on the connection's channel, or a POST on
        the WebSocket's HTTP port). A join that fails with a retryable code (UNAVAILABLE, or
        DEADLINE_EXCEEDED on a busy server) is sent again, up to :data:`JOIN_ATTEMPTS` times
        with growing pauses: joining again with the same seed changes nothing, so a join that
        went through but whose answer was lost is harmless, and a seat is not left to forfeit
        at the end of its join window for one slow answer."""
        pause = JOIN_FIRST_PAUSE
        for attempt in range(1, JOIN_ATTEMPTS + 1):
            try:
                await self._join_once(client_seed)
                return
            except TrucoApiError as exc:
                if exc.code not in RETRYABLE or attempt == JOIN_ATTEMPTS:
                    raise
            await asyncio.sleep(pause * random.uniform(0.8, 1.2))
            pause = min(pause * 2, JOIN_MAX_PAUSE)

    async def _join_once(self, client_seed: bytes) -> None:
        if self.conn.websocket:
            target = self.conn.targets[self.conn._index % len(self.conn.targets)]
            await websocket.join_match(self.conn._session(), target, self.match_id, self.token, client_seed)
            return
        try:
            await self.conn._stub().JoinMatch(
                pb.JoinMatchRequest(match_id=self.match_id, client_seed=client_seed),
                metadata=metadata(self.token),
                timeout=10,
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None

    async def close(self) -> None:
        """Unsubscribe (the server ends the subscription)."""
        await self.conn._unsubscribe(self)


async def _drained(queue: asyncio.Queue[Any], last: Callable[[T], bool]) -> AsyncIterator[T]:
    """What a subscription's reader puts in ``queue``, up to its end mark (a failure put there
    is raised); it stops after an item that is ``last``."""
    while True:
        item = await queue.get()
        if item is _END:
            return
        if isinstance(item, BaseException):
            raise item
        yield item
        if last(item):
            return


class TicketSubscription:
    """A matchmaking ticket followed on a :class:`PlayerConnection`: iterate it for the
    ticket (``truco.v1.Ticket``) when subscribed and at each change; iteration ends after the
    last one (matched -- with ``match_id`` and ``seats``, each seat's credential --, cancelled
    or expired). After a reconnect the ticket as it is now comes again."""

    def __init__(self, conn: PlayerConnection, sid: int, token: str, pool_id: str, ticket_id: str) -> None:
        self.conn = conn
        self.id = sid
        self.token = token
        self.pool_id = pool_id
        self.ticket_id = ticket_id
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    def subscribe_message(self) -> pb.ConnectRequest:
        sub = pb.ConnectSubscribeTicket(
            subscription_id=self.id, token=self.token, pool_id=self.pool_id, ticket_id=self.ticket_id
        )
        return pb.ConnectRequest(subscribe_ticket=sub)

    def __aiter__(self) -> AsyncIterator[matchmaking_service_pb2.Ticket]:
        return _drained(self.queue, lambda ticket: False)

    async def final(self) -> matchmaking_service_pb2.Ticket | None:
        """The ticket's last state (matched, cancelled or expired); ``None`` when the
        subscription ended before the server sent one (it was closed)."""
        last = None
        async for ticket in self:
            last = ticket
        return last

    async def close(self) -> None:
        """Unsubscribe (the server ends the subscription)."""
        await self.conn._unsubscribe(self)


class PlayerConnection:
    """asyncio client of ``Connect``; see the module docstring."""

    def __init__(
        self,
        target: str | Sequence[str] = "127.0.0.1:50051",
        *,
        retry: RetryPolicy | None = None,
        heartbeat_timeout: float = 30.0,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        self.targets = [target] if isinstance(target, str) else list(target)
        if not self.targets:
            raise ValueError("give at least one target, e.g. '127.0.0.1:50051' or 'ws://127.0.0.1:8080'")
        kinds = {websocket.is_websocket(t) for t in self.targets}
        if len(kinds) > 1:
            raise ValueError("give gRPC addresses (host:port) or WebSocket URLs (ws://host:port), not both")
        self.websocket = kinds == {True}
        """Whether the connection rides a WebSocket (the targets are ws:// or http:// URLs)."""
        self.retry = retry or RetryPolicy()
        self.heartbeat_timeout = heartbeat_timeout
        self.credentials = credentials
        self.reconnects = 0
        self._index = 0
        self._ids = itertools.count(1)
        self._seats: dict[int, Seat | TicketSubscription] = {}
        """The open subscriptions: seats and tickets."""
        self._pending: dict[int, tuple[Seat, pb.SubmitActionRequest, asyncio.Future[Any]]] = {}
        self._rules: dict[str, te.RuleSet] = {}
        self._outbox: Box | None = None
        self._channel: grpc.aio.Channel | None = None
        self._http: Any = None
        self._runner: asyncio.Task[None] | None = None
        self._rng = random.Random()
        self._closed = False
        self._link: _GrpcLink | websocket.WebSocketLink | None = None

    async def __aenter__(self) -> PlayerConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --------------------------------------------------------------------------- public
    async def seat(
        self, match_id: str, token: str, *, from_version: int | None = 0, rules: te.RuleSet | None = None
    ) -> Seat:
        """Subscribe a credential (from ``from_version``; ``None``: a snapshot first)."""
        if rules is None:
            rules = self._rules.get(match_id) or await self._rules_of(match_id, token)
        self._rules[match_id] = rules
        seat = Seat(self, next(self._ids), token, StreamState(match_id, from_version, rules))
        self._seats[seat.id] = seat
        self._start()
        self._send(seat.subscribe_message())
        return seat

    async def ticket(self, pool_id: str, ticket_id: str, token: str) -> TicketSubscription:
        """Follow a matchmaking ticket with its token (``tk1...``; or the operator's key): an
        app holding one connection learns its match is formed, then subscribes the seat
        (:meth:`seat`) with the credential the matched ticket carries."""
        sub = TicketSubscription(self, next(self._ids), token, pool_id, ticket_id)
        self._seats[sub.id] = sub
        self._start()
        self._send(sub.subscribe_message())
        return sub

    async def close(self) -> None:
        self._closed = True
        if isinstance(self._link, _GrpcLink):
            await self._link.close()  # a task blocked in the call's read does not always see its own cancel
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
            self._runner = None
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        if self._http is not None:
            await self._http.close()
            self._http = None
        for _seat, _req, fut in self._pending.values():
            if not fut.done():
                fut.set_exception(Unavailable(grpc.StatusCode.UNAVAILABLE, "connection closed"))
        for seat in self._seats.values():
            seat.queue.put_nowait(_END)

    # ------------------------------------------------------------------------- internal
    def _session(self) -> Any:
        """The aiohttp session of the WebSocket transport (its HTTP calls too)."""
        if self._http is None:
            self._http = websocket.new_session()
        return self._http

    def _open(self, box: Box) -> _GrpcLink | websocket.WebSocketLink:
        if self.websocket:
            return websocket.WebSocketLink(
                self._session(), self.targets[self._index % len(self.targets)], box
            )
        return _GrpcLink(self._stub(), box)

    def _stub(self) -> Any:
        if self._channel is None:
            target = self.targets[self._index % len(self.targets)]
            if self.credentials is not None:
                self._channel = grpc.aio.secure_channel(target, self.credentials, options=CHANNEL_OPTIONS)
            else:
                self._channel = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
        return match_service_pb2_grpc.MatchServiceStub(self._channel)

    async def _rules_of(self, match_id: str, token: str) -> te.RuleSet:
        """The match's rules (GetMatch), retried over the targets like the unary client."""
        if self.websocket:
            return await self._rules_over_http(match_id, token)
        req = pb.GetMatchRequest(match_id=match_id)
        attempt = 0
        while True:
            attempt += 1
            try:
                if attempt == 1:  # on the connection's channel
                    resp = await self._stub().GetMatch(req, metadata=metadata(token), timeout=10)
                else:  # the connection's target may be the one that failed: try the next ones
                    target = self.targets[(self._index + attempt - 1) % len(self.targets)]
                    async with grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS) as ch:
                        stub: Any = match_service_pb2_grpc.MatchServiceStub(ch)
                        resp = await stub.GetMatch(req, metadata=metadata(token), timeout=10)
                return codec.match_from_proto(resp.match).rules
            except grpc.RpcError as err:
                code = err.code() if hasattr(err, "code") else None
                if code not in RETRYABLE or attempt >= self.retry.attempts or self.credentials is not None:
                    raise from_rpc_error(err) from None
            await asyncio.sleep(self.retry.backoff(attempt, self._rng))

    async def _rules_over_http(self, match_id: str, token: str) -> te.RuleSet:
        attempt = 0
        while True:
            target = self.targets[(self._index + attempt) % len(self.targets)]
            attempt += 1
            try:
                resp = await websocket.get_match(self._session(), target, match_id, token)
                return codec.match_from_proto(resp.match).rules
            except TrucoApiError as err:
                if err.code not in RETRYABLE or attempt >= self.retry.attempts:
                    raise
            await asyncio.sleep(self.retry.backoff(attempt, self._rng))

    def _start(self) -> None:
        if self._closed:
            raise Unavailable(grpc.StatusCode.UNAVAILABLE, "connection closed")
        if self._runner is None:
            self._runner = asyncio.ensure_future(self._run())

    def _send(self, msg: pb.ConnectRequest) -> None:
        if self._outbox is not None:
            self._outbox.put_nowait(msg)
        # not connected: _run sends every open subscription and pending action on connecting

    async def _act(self, seat: Seat, req: pb.SubmitActionRequest) -> Any:
        aid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[aid] = (seat, req, fut)
        self._start()
        self._send(
            pb.ConnectRequest(action=pb.ConnectAction(subscription_id=seat.id, action_id=aid, request=req))
        )
        try:
            return await fut
        finally:
            self._pending.pop(aid, None)

    async def _unsubscribe(self, seat: Seat | TicketSubscription) -> None:
        if self._seats.pop(seat.id, None) is not None:
            self._send(pb.ConnectRequest(unsubscribe=pb.ConnectUnsubscribe(subscription_id=seat.id)))
            seat.queue.put_nowait(_END)

    async def _run(self) -> None:
        failures = 0
        while not self._closed:
            unexpected: Exception | None = None
            box: Box = asyncio.Queue()
            for seat in self._seats.values():
                box.put_nowait(seat.subscribe_message())
            for aid, (seat, req, _fut) in self._pending.items():
                box.put_nowait(
                    pb.ConnectRequest(
                        action=pb.ConnectAction(subscription_id=seat.id, action_id=aid, request=req)
                    )
                )
            self._outbox = box
            link: _GrpcLink | websocket.WebSocketLink | None = None
            try:
                link = self._link = self._open(box)
                it = link.messages().__aiter__()
                while True:
                    timeout = self.heartbeat_timeout if self._seats else None
                    try:
                        async with asyncio.timeout(timeout):  # no task per message (wait_for makes one)
                            msg = await it.__anext__()
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        break  # a silent connection: reconnect
                    failures = 0
                    self._dispatch(msg)
            except TrucoApiError as err:
                if self._closed:
                    return
                if err.code not in RETRYABLE:
                    if not lost_in_transport(err):  # the server's answer: every seat gets it
                        self._fail(err)
                        return
                    unexpected = err  # a broken connection: connect again, as below
            except Exception as err:  # anything else ends this connection, not the client
                # A fault the transport did not type (a socket error of the WebSocket library,
                # a message this client could not read): connect again as after a lost
                # connection (the subscriptions resume from their last version), and fail what
                # waits once it keeps happening. This task must never end silently: a seat
                # would wait for updates that no task reads any more.
                if self._closed:
                    return
                unexpected = err
            finally:
                self._outbox = None
                box.put_nowait(None)  # ends the requests the transport is sending
                self._link = None
                if link is not None:
                    await link.close()
            if not self._seats and not self._pending:
                self._runner = None
                return
            failures += 1
            self.reconnects += 1
            if failures >= self.retry.attempts:
                why = f"connection lost {failures} times in a row"
                if unexpected is not None:
                    why += f" (the last: {unexpected!r})"
                self._fail(Unavailable(grpc.StatusCode.UNAVAILABLE, why))
                return
            self._index += 1
            if len(self.targets) > 1 and self._channel is not None:
                await self._channel.close()
                self._channel = None
            await asyncio.sleep(self.retry.backoff(failures, self._rng))

    def _fail(self, err: Exception) -> None:
        self._runner = None
        for _seat, _req, fut in self._pending.values():
            if not fut.done():
                fut.set_exception(err)
        for seat in list(self._seats.values()):
            seat.queue.put_nowait(err)
        self._seats.clear()

    def _dispatch(self, msg: pb.ConnectResponse) -> None:
        kind = msg.WhichOneof("message")
        if kind == "update":
            seat = self._seats.get(msg.update.subscription_id)
            if isinstance(seat, Seat):
                upd = seat.state.accept(msg.update.message)
                if upd is not None:
                    seat.queue.put_nowait(upd)
        elif kind == "ticket":
            followed = self._seats.get(msg.ticket.subscription_id)
            if followed is not None and msg.ticket.message.HasField("ticket"):  # not a heartbeat
                followed.queue.put_nowait(msg.ticket.message.ticket)
        elif kind == "result" or kind == "error":
            body = msg.result if kind == "result" else msg.error
            if kind == "result":  # a result may stand for its seat's update (see the proto)
                seat = self._seats.get(msg.result.subscription_id)
                if isinstance(seat, Seat):
                    upd = seat.state.accept_result(msg.result.response)
                    if upd is not None:
                        seat.queue.put_nowait(upd)
            pending = self._pending.get(body.action_id)
            if pending is not None and not pending[2].done():
                if kind == "result":
                    pending[2].set_result(msg.result.response)
                else:
                    pending[2].set_exception(from_status(msg.error.status))
        elif kind == "ended":
            seat = self._seats.pop(msg.ended.subscription_id, None)
            if seat is not None:
                status = msg.ended.status
                seat.queue.put_nowait(_END if status.code == 0 else from_status(status))
