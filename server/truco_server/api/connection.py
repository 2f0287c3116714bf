"""The player connection (``MatchService.Connect``): one bidirectional stream that carries,
for every seat credential a client holds, the observation updates out and the actions in.

It is a multiplexer over the same API methods the unary path calls, so it gives the same
guarantees with the same code: each subscription is :meth:`MatchApi.stream_updates` (what
StreamObservations sends: resume from a version, snapshots, heartbeats with the clock,
presence), each action is :meth:`MatchApi.SubmitAction` (request ids, expected versions,
the service's one atomic commit). What differs is only the framing: every message names its
subscription, and a refused action is a ``ConnectActionError`` message carrying the
``google.rpc.Status`` SubmitAction would end with, instead of the end of a call.

One message less per action: a result whose first event directly follows the last version
its subscription delivered (and whose observation is at the result's version) stands for that
subscription's update, which is then not sent (the client applies the same rule; the
bidirectional stream keeps the order, so both sides agree on what was delivered).

Bounds (DESIGN invariant 7): at most :attr:`PlayerConnection.max_subscriptions` open
subscriptions (more are refused with RESOURCE_EXHAUSTED), at most
:attr:`PlayerConnection.max_in_flight` actions being handled (the reader waits for one to
finish before it reads the next message), and a bounded queue of outgoing messages: a client
that does not read stalls its subscriptions, whose store queues then overflow, and they resume
with a snapshot (the same rule as a slow server stream).

The connection ends with UNAVAILABLE (SHUTTING_DOWN) when the worker stops; a protocol
error (no message set, a subscription id that is already open) ends it with INVALID_ARGUMENT.

A subscription may follow a matchmaking ticket instead of a seat (``subscribe_ticket``): it is
:meth:`MatchmakingApi.StreamTicket` (the ticket, each change, heartbeats; the seats and their
credentials once matched) as ``ticket`` messages, one of the connection's subscriptions (the
same ids, bound and unsubscribe), that cannot act. An app holding one connection learns its
match is formed and subscribes the seat it got on that connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import structlog
from google.rpc import status_pb2  # type: ignore[import-untyped]

from truco_contract.codec import wire
from truco_contract.pb import match_service_pb2, matchmaking_service_pb2
from truco_server.api import limits
from truco_server.api.matches import MatchApi
from truco_server.api.matchmaking import MatchmakingApi
from truco_server.api.status import INTERNAL, to_status
from truco_server.core import errors as E
from truco_server.core.caller import Credentials

pb = match_service_pb2
log = structlog.get_logger("truco_server.connection")

MAX_SUBSCRIPTIONS = 1000
"""Open subscriptions per connection."""
MAX_IN_FLIGHT = 64
"""Actions of one connection handled at the same time."""
OUT_QUEUE = 1024
"""Outgoing messages buffered per connection."""

_OK = status_pb2.Status(code=0)
#: Where the player connection carries a subscription's credential, for messages.
SUBSCRIBE_CARRIER = "subscribe.token"
TICKET_CARRIER = "subscribe_ticket.token"

# An update and an action's result are written directly around the bytes of the message they
# carry (truco_contract.codec.wire): the messages of a move are never built as objects.
_T_UPDATE = wire.tag(pb.ConnectResponse.DESCRIPTOR, "update")
_T_RESULT = wire.tag(pb.ConnectResponse.DESCRIPTOR, "result")
_T_UPDATE_SID = wire.tag(pb.ConnectUpdate.DESCRIPTOR, "subscription_id")
_T_UPDATE_MESSAGE = wire.tag(pb.ConnectUpdate.DESCRIPTOR, "message")
_T_RESULT_SID = wire.tag(pb.ConnectActionResult.DESCRIPTOR, "subscription_id")
_T_RESULT_ACTION = wire.tag(pb.ConnectActionResult.DESCRIPTOR, "action_id")
_T_RESULT_RESPONSE = wire.tag(pb.ConnectActionResult.DESCRIPTOR, "response")


def update_frame(sid: int, message: bytes) -> bytes:
    """A serialized ``ConnectResponse`` carrying subscription ``sid``'s stream message
    (a serialized ``StreamObservationsResponse``)."""
    parts: list[bytes] = []
    wire.put_int(parts, _T_UPDATE_SID, sid)
    wire.put_bytes(parts, _T_UPDATE_MESSAGE, message)
    return wire.one_field(_T_UPDATE, parts)


def result_frame(sid: int, aid: int, response: bytes) -> bytes:
    """A serialized ``ConnectResponse`` carrying the result of action ``aid`` of subscription
    ``sid`` (a serialized ``SubmitActionResponse``)."""
    parts: list[bytes] = []
    wire.put_int(parts, _T_RESULT_SID, sid)
    wire.put_int(parts, _T_RESULT_ACTION, aid)
    wire.put_bytes(parts, _T_RESULT_RESPONSE, response)
    return wire.one_field(_T_RESULT, parts)


class _End:
    """Queued last: the connection's work is done (or ``error`` ends it)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


def _status(exc: BaseException) -> status_pb2.Status:
    if isinstance(exc, E.ServiceError):
        return to_status(exc)
    log.error("unexpected error on a player connection", exc_info=exc)
    return to_status(INTERNAL)


class PlayerConnection:
    """One ``Connect`` stream: :meth:`run` turns the client's messages into the server's."""

    def __init__(
        self,
        api: MatchApi,
        tickets: MatchmakingApi | None = None,
        *,
        max_subscriptions: int | None = None,
        max_in_flight: int | None = None,
        out_queue: int | None = None,
    ) -> None:
        self.api = api
        self.tickets = tickets
        self.max_subscriptions = max_subscriptions or MAX_SUBSCRIPTIONS
        self._out: asyncio.Queue[bytes | _End] = asyncio.Queue(out_queue or OUT_QUEUE)
        """Serialized ``ConnectResponse`` messages, then the end."""
        self._slots = asyncio.Semaphore(max_in_flight or MAX_IN_FLIGHT)
        self._subs: dict[int, tuple[Credentials, str | None, asyncio.Task[None]]] = {}
        """Per open subscription: its credential, its match (``None``: a ticket's), its task."""
        self._actions: set[asyncio.Task[None]] = set()
        self._delivered: dict[int, int] = {}
        """The last version each subscription delivered (by an update or a result)."""
        self._tasks: set[asyncio.Task[None]] = set()
        """Subscriptions (also those being unsubscribed) and refusals being sent."""
        self._leaving: set[asyncio.Task[Any] | None] = set()
        self._reading = True
        self._closing = False
        self._closer: asyncio.Task[None] | None = None

    async def run(self, requests: AsyncIterator[pb.ConnectRequest]) -> AsyncIterator[bytes]:
        """The server's messages, each a serialized ``ConnectResponse``, until the client has
        half-closed and every subscription and action is done, or until an error ends the
        connection (raised)."""
        tracker = self.api.tracker
        async with contextlib.AsyncExitStack() as stack:
            if tracker is not None:  # the worker's drain waits for the connection
                await stack.enter_async_context(tracker.track())
            reader = asyncio.ensure_future(self._read(requests))
            watch = asyncio.ensure_future(self._stop_on(self.api.streams.stopping))
            try:
                while True:
                    msg = await self._out.get()
                    if isinstance(msg, _End):
                        error = msg.error
                        del msg
                        if error is not None:
                            try:
                                raise error
                            finally:  # its traceback holds this frame: no local may hold it
                                del error
                        return
                    yield msg
            finally:
                reader.cancel()
                tasks = [*self._tasks, *self._actions]
                tasks.append(watch)
                if self._closer is not None:
                    tasks.append(self._closer)
                for task in tasks:
                    task.cancel()
                await asyncio.gather(reader, *tasks, return_exceptions=True)

    async def _put_end(self) -> None:
        await self._out.put(_End())

    async def _stop_on(self, shutdown: asyncio.Event) -> None:
        """End the connection with UNAVAILABLE (SHUTTING_DOWN) when the worker stops, even
        when no subscription is open to notice it."""
        await shutdown.wait()
        while True:  # make room: what is queued is not delivered anyway
            try:
                self._out.put_nowait(_End(E.ShuttingDown()))
                return
            except asyncio.QueueFull:
                self._out.get_nowait()

    # --------------------------------------------------------------------------- reading
    async def _read(self, requests: AsyncIterator[pb.ConnectRequest]) -> None:
        try:
            async for req in requests:
                limits.require(req)  # malformed bytes or oversized fields: INVALID_ARGUMENT, the end
                kind = req.WhichOneof("message")
                if kind == "action":
                    await self._slots.acquire()
                    # the subscription as it is when the action is read: an unsubscribe read
                    # after it (a last move, then leaving) does not take it from the action
                    found = self._subs.get(req.action.subscription_id)
                    target = None if found is None else (found[0], found[1])
                    del found  # not its task: this frame may end in a traceback
                    task = asyncio.get_running_loop().create_task(self._act(req.action, target))
                    self._actions.add(task)
                    task.add_done_callback(self._acted)
                elif kind == "subscribe":
                    self._subscribe(req.subscribe)
                elif kind == "unsubscribe":
                    self._unsubscribe(req.unsubscribe.subscription_id)
                elif kind == "subscribe_ticket":
                    self._subscribe_ticket(req.subscribe_ticket)
                else:
                    raise E.InvalidArgument(
                        "a ConnectRequest must set subscribe, action, unsubscribe or subscribe_ticket"
                    )
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # ends the connection with it
            await self._out.put(_End(exc))
            return
        self._reading = False
        self._maybe_done()

    def _maybe_done(self) -> None:
        """Queue the end once the client has half-closed and nothing is left to send."""
        if self._reading or self._closing:  # what every action's end finds while the client sends
            return
        me = asyncio.current_task()
        # a task that has finished counts as gone before its done callback has run: the last
        # two to finish (an action, a subscription's end) may each run this while the other
        # is finished but still listed, and nothing would run it again
        if any(not t.done() for t in self._actions) or any(t is not me and not t.done() for t in self._tasks):
            return
        self._closing = True
        try:
            self._out.put_nowait(_End())
        except asyncio.QueueFull:
            self._closer = asyncio.ensure_future(self._put_end())

    # ----------------------------------------------------------------------- subscribing
    def _open(self, sid: int, where: str) -> bool:
        """Whether a new subscription ``sid`` may open (else it is ended with
        RESOURCE_EXHAUSTED); an id already open ends the connection."""
        if sid in self._subs:
            raise E.InvalidArgument(
                f"subscription_id {sid} is already open on this connection",
                field_violations=[E.FieldViolation(f"{where}.subscription_id", "already open")],
            )
        if len(self._subs) >= self.max_subscriptions:
            refused = E.ResourceExhausted(f"at most {self.max_subscriptions} subscriptions per connection")
            self._spawn(self._send(self._ended(sid, to_status(refused))))
            return False
        return True

    def _subscribe(self, sub: pb.ConnectSubscribe) -> None:
        sid = sub.subscription_id
        if not self._open(sid, "subscribe"):
            return
        creds = Credentials.from_pairs((("authorization", f"Bearer {sub.token}"),), SUBSCRIBE_CARRIER)
        request = pb.StreamObservationsRequest(match_id=sub.match_id)
        if sub.HasField("from_version"):
            request.from_version = sub.from_version
        task = self._spawn(self._pump(sid, functools.partial(self._updates, sid, creds, request)))
        self._subs[sid] = (creds, sub.match_id, task)

    def _subscribe_ticket(self, sub: pb.ConnectSubscribeTicket) -> None:
        """Follow a matchmaking ticket: what ``StreamTicket`` sends, as ``ticket`` messages
        (a subscription that cannot act: its match id is none)."""
        sid = sub.subscription_id
        if not self._open(sid, "subscribe_ticket"):
            return
        if self.tickets is None:
            refused = E.ServiceError("this server has no matchmaking", code=E.Code.FAILED_PRECONDITION)
            self._spawn(self._send(self._ended(sid, to_status(refused))))
            return
        creds = Credentials.from_pairs((("authorization", f"Bearer {sub.token}"),), TICKET_CARRIER)
        request = matchmaking_service_pb2.StreamTicketRequest(pool_id=sub.pool_id, ticket_id=sub.ticket_id)
        task = self._spawn(self._pump(sid, functools.partial(self._ticket, sid, creds, request)))
        self._subs[sid] = (creds, None, task)

    def _unsubscribe(self, sid: int) -> None:
        found = self._subs.pop(sid, None)
        if found is not None:
            task = found[2]
            self._leaving.add(task)
            task.add_done_callback(self._leaving.discard)
            # _pump sends the end. Cancelled on the loop's next turn, after the task's first
            # step (queued when it was made): a task cancelled before it starts never runs a
            # line, so neither the end nor the connection's own end would be sent.
            asyncio.get_running_loop().call_soon(task.cancel)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _send(self, msg: pb.ConnectResponse) -> None:
        await self._out.put(msg.SerializeToString())
        self._maybe_done()

    async def _updates(self, sid: int, creds: Credentials, request: pb.StreamObservationsRequest) -> None:
        """A seat's subscription: what StreamObservations sends, as ``update`` messages, put
        straight on the connection's queue (each update passes every frame between the
        subscription and the socket: no generator of its own here)."""
        delivered = self._delivered
        out_queue = self._out

        def held() -> int:  # what the action results delivered: those updates are not built
            return delivered.get(sid, -1)

        async with contextlib.aclosing(self.api.stream_updates(creds, request, held)) as updates:
            async for upd in updates:
                if upd.view is not None:
                    if not upd.snapshot and upd.version <= held():
                        continue  # an action's result already stood for this update
                    delivered[sid] = upd.version
                out = update_frame(sid, self.api.update_bytes(upd))
                del upd  # a slow reader's queue holds the messages' bytes, not what they came from
                await out_queue.put(out)
                del out

    async def _ticket(
        self, sid: int, creds: Credentials, request: matchmaking_service_pb2.StreamTicketRequest
    ) -> None:
        """A ticket's subscription: what StreamTicket sends, as ``ticket`` messages."""
        assert self.tickets is not None
        async with contextlib.aclosing(self.tickets.StreamTicket(creds, request)) as messages:
            async for msg in messages:
                out = pb.ConnectResponse()
                out.ticket.subscription_id = sid
                out.ticket.message.CopyFrom(msg)
                await self._out.put(out.SerializeToString())

    async def _pump(self, sid: int, follow: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run a subscription (``follow()`` puts its messages on the connection's queue and
        closes its stream when it ends, also when cancelled; made here, so that a task
        cancelled before it starts leaves no coroutine unawaited), then send its end (with
        the status its stream ended with; OK when it is over or unsubscribed)."""
        status = _OK
        try:
            await follow()
        except asyncio.CancelledError:
            # no local of this frame refers to its task: a cancellation raised on keeps the
            # frame in its traceback, which the task holds, and that would be a cycle (the
            # subscription's whole chain of frames left for the garbage collector)
            if asyncio.current_task() not in self._leaving:
                raise
            self._leaving.discard(asyncio.current_task())  # unsubscribed: say so below
        except E.ShuttingDown as exc:
            await self._out.put(_End(exc))  # the whole connection ends: reconnect elsewhere
            return
        except Exception as exc:
            status = _status(exc)
        finally:
            self._forget(sid)
        await self._send(self._ended(sid, status))

    def _forget(self, sid: int) -> None:
        """Drop subscription ``sid`` when it is the current task's (the id may have been
        opened again by a new subscription since it was unsubscribed)."""
        found = self._subs.get(sid)
        if found is not None and found[2] is asyncio.current_task():
            del self._subs[sid]
            self._delivered.pop(sid, None)

    @staticmethod
    def _ended(sid: int, status: status_pb2.Status) -> pb.ConnectResponse:
        return pb.ConnectResponse(ended=pb.ConnectSubscriptionEnded(subscription_id=sid, status=status))

    # --------------------------------------------------------------------------- acting
    async def _act(self, action: pb.ConnectAction, target: tuple[Credentials, str | None] | None) -> None:
        """One action of subscription ``target`` (its credential and match, as it was when the
        action was read; ``None``: no such subscription was open)."""
        sid, aid = action.subscription_id, action.action_id
        try:
            if target is None:
                raise E.InvalidArgument(
                    f"no open subscription {sid} on this connection",
                    field_violations=[E.FieldViolation("action.subscription_id", "not subscribed")],
                )
            creds, match_id = target
            if match_id is None:
                raise E.InvalidArgument(
                    f"subscription {sid} follows a ticket: subscribe its seat to act",
                    field_violations=[E.FieldViolation("action.subscription_id", "a ticket's subscription")],
                )
            request = action.request
            if not request.match_id:
                request.match_id = match_id
            elif request.match_id != match_id:
                raise E.InvalidArgument(
                    "action.request.match_id is not the subscription's match",
                    field_violations=[E.FieldViolation("action.request.match_id", "another match")],
                )
            structlog.contextvars.bind_contextvars(match_id=match_id, request_id=request.request_id or None)
            done = await self.api.submit(creds, request)
            out = result_frame(sid, aid, self.api.result_bytes(done))
            # the result continues what the subscription delivered: it stands for the update
            last = self._delivered.get(sid)
            events = done.events
            if (
                last is not None
                and events
                and events[0].version == last + 1
                and done.view.version == done.version
            ):
                self._delivered[sid] = done.version
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            out = pb.ConnectResponse(
                error=pb.ConnectActionError(subscription_id=sid, action_id=aid, status=_status(exc))
            ).SerializeToString()
        await self._out.put(out)

    def _acted(self, task: asyncio.Task[Any]) -> None:
        self._actions.discard(task)
        self._slots.release()
        self._maybe_done()
