"""``truco.v1.MatchService`` in its wire messages, for every transport.

:class:`MatchApi` has one method per RPC, named as in the proto, taking the caller's
:class:`~truco_server.core.caller.Credentials` and the request message and returning the
response message (or an async iterator of them for a server stream). Each method
authenticates (:mod:`.auth`), decodes the request into its typed form
(:mod:`truco_server.core.requests`), calls the match services and encodes what they return
with the contract's codec. The gRPC servicer is derived from this class and the descriptors
(:mod:`truco_server.transports.grpc.servicers`); the REST face calls the same methods with the
HTTP headers after protobuf's JSON mapping; the player connection calls them per message.

An observation or an event is encoded once per match version and viewer: the encoding is kept
on the immutable :class:`~truco_match.match.Match` or :class:`~truco_match.match.Moment` it
comes from, so the reply to an action and the actor's next stream message, or the same public
event on every stream of a match, share one.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

import structlog
from google.protobuf.descriptor import Descriptor

import truco_engine as te
from truco_contract import codec
from truco_contract.codec import wire
from truco_contract.pb import match_pb2, match_service_pb2
from truco_match.events import EventView, MatchStatus
from truco_match.match import Match, Moment
from truco_match.views import SeatView
from truco_server.api.auth import Authenticator
from truco_server.api.status import uniform
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Credentials, MatchCredential
from truco_server.services.matches import MatchService
from truco_server.services.quotas import Quotas
from truco_server.services.reads import MatchReads
from truco_server.services.steps import MatchSteps
from truco_server.services.streams import MatchStreams

if TYPE_CHECKING:  # it builds on this module
    from truco_server.api.matchmaking import MatchmakingApi

pb = match_service_pb2


class StreamTracker(Protocol):
    """Counts open streams so a stopping worker can refuse new ones and wait for the rest."""

    def track(self) -> AbstractAsyncContextManager[None]: ...


def bad(field: str, message: str) -> E.InvalidArgument:
    return E.InvalidArgument(message, field_violations=[E.FieldViolation(field, message)])


def required_id(value: str, field: str = "match_id") -> str:
    if not value:
        raise bad(field, f"{field} is required")
    return value


# ---------------------------------------------------------------------------- encoding
def observation(view: SeatView, rules: te.RuleSet, viewer: int, at: Match | None) -> bytes:
    """``view`` serialized (a ``truco.v1.Observation``), once per match version and viewer
    when ``at`` is its version; a message takes it with ``MergeFromString`` (parsed straight
    into its field: no message of its own to copy)."""
    if at is None:
        return codec.observation_bytes(view, rules)
    key = ("pb observation", viewer)
    made = at.memo.get(key)
    if made is None:
        made = at.memo[key] = codec.observation_bytes(view, rules)
    return made


def events(views: Sequence[EventView], moment: Moment | None) -> list[bytes]:
    """``views`` serialized (each a ``truco.v1.Event``), each once per moment when they come
    from ``moment`` (a public event is one object for every viewer, so one encoding)."""
    if moment is None:
        return [codec.event_bytes(ev) for ev in views]
    out = []
    memo = moment.memo
    for ev in views:
        key = ("pb event", id(ev))
        hit = memo.get(key)
        if hit is None or hit[0] is not ev:  # the moment holds every view it made: ids are not reused
            hit = memo[key] = (ev, codec.event_bytes(ev))
        out.append(hit[1])
    return out


# The messages a move sends, written directly (truco_contract.codec.wire; the writers are
# MatchApi.result_bytes and update_bytes): an action's result and a stream's update are each a
# version, the events and the observation, already bytes.
def _seen_tags(desc: Descriptor) -> tuple[bytes, bytes, bytes]:
    return wire.tag(desc, "version"), wire.tag(desc, "events"), wire.tag(desc, "observation")


_T_SUBMITTED = _seen_tags(pb.SubmitActionResponse.DESCRIPTOR)
_T_UPDATE = _seen_tags(pb.ObservationUpdate.DESCRIPTOR)
_T_UPDATE_SNAPSHOT = wire.tag(pb.ObservationUpdate.DESCRIPTOR, "snapshot")
_T_STREAM_UPDATE = wire.tag(pb.StreamObservationsResponse.DESCRIPTOR, "update")


def _seen(
    tags: tuple[bytes, bytes, bytes],
    version: int,
    views: Sequence[EventView],
    moment: Moment | None,
    seen: bytes,
) -> list[bytes]:
    """The fields of a version the viewer has seen: ``views`` and the observation ``seen``."""
    t_version, t_events, t_observation = tags
    parts: list[bytes] = []
    wire.put_int(parts, t_version, version)
    for data in events(views, moment):
        wire.put_bytes(parts, t_events, data)
    wire.put_bytes(parts, t_observation, seen)
    return parts


def decode_create(request: pb.CreateMatchRequest) -> T.CreateMatchRequest:
    """The typed CreateMatch request; malformed fields are INVALID_ARGUMENT."""
    try:
        spec = codec.match_spec_from_proto(request)
    except codec.DecodeError as exc:
        raise bad(exc.field, exc.message) from None
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    return T.CreateMatchRequest(**fields, request_id=request.request_id or None)


# ------------------------------------------------------------------------------ the API
class MatchApi:
    """``truco.v1.MatchService`` (see the module docstring)."""

    def __init__(
        self,
        matches: MatchService,
        steps: MatchSteps,
        reads: MatchReads,
        streams: MatchStreams,
        auth: Authenticator,
        tracker: StreamTracker | None = None,
        quotas: Quotas | None = None,
        tickets: MatchmakingApi | None = None,
    ) -> None:
        self.matches = matches
        self.steps = steps
        self.reads = reads
        self.streams = streams
        self.auth = auth
        self.tracker = tracker
        self.quotas = quotas
        self.tickets = tickets
        """What the player connection's ticket subscriptions follow (``None``: none)."""

    async def CreateMatch(self, creds: Credentials, request: pb.CreateMatchRequest) -> pb.CreateMatchResponse:
        operator = self.auth.operator(creds)
        decoded = decode_create(request)
        if self.quotas is not None:
            await self.quotas.create(operator.name)
        created = await self.steps.create_match(operator, decoded)
        resp = pb.CreateMatchResponse(
            match=codec.match_to_proto(created.match), spectator_token=created.spectator_token
        )
        for i, token in enumerate(created.seat_tokens):
            resp.seat_credentials.add(seat=i, token=token)
        return resp

    async def SubmitAction(
        self, creds: Credentials, request: pb.SubmitActionRequest
    ) -> pb.SubmitActionResponse:
        msg = pb.SubmitActionResponse()
        self.fill_result(msg, await self.submit(creds, request))
        return msg

    async def submit(self, creds: Credentials, request: pb.SubmitActionRequest) -> T.SubmitActionResponse:
        """SubmitAction before encoding (the player connection writes the result's bytes
        into its own message, :meth:`result_bytes`)."""
        cred = self.auth.seat(creds, request.match_id)
        try:
            action = codec.action_from_proto(request.action)
        except codec.DecodeError as exc:
            raise bad(exc.field, exc.message) from None
        req = T.SubmitActionRequest(
            required_id(request.match_id),
            action,
            request.request_id or None,
            request.expected_version if request.HasField("expected_version") else None,
        )
        charge = None if self.quotas is None else self.quotas.action_charge(cred.token)
        with uniform(cred):
            result = await self.matches.submit_action(cred, req, charge)
        structlog.contextvars.bind_contextvars(seat=result.seat)
        return result

    @staticmethod
    def result_bytes(result: T.SubmitActionResponse) -> bytes:
        """An action's result serialized (a ``SubmitActionResponse``)."""
        seen = observation(result.view, result.rules, result.seat, result.match)
        return b"".join(_seen(_T_SUBMITTED, result.version, result.events, result.moment, seen))

    @staticmethod
    def update_bytes(update: T.StreamUpdate) -> bytes:
        """A stream's message serialized (a ``StreamObservationsResponse``): an update, or a
        heartbeat when it has no view."""
        if update.view is None:
            msg = pb.StreamObservationsResponse()
            beat = msg.heartbeat
            beat.server_time.GetCurrentTime()
            beat.version = update.version
            if update.clock is not None:
                beat.clock.CopyFrom(codec.clock_to_proto(update.clock))
            return msg.SerializeToString()
        seen = observation(update.view, update.rules, update.viewer, update.match)
        inner = _seen(_T_UPDATE, update.version, update.events, update.moment, seen)
        wire.put_bool(inner, _T_UPDATE_SNAPSHOT, update.snapshot)
        return wire.one_field(_T_STREAM_UPDATE, inner)

    @staticmethod
    def fill_result(msg: pb.SubmitActionResponse, result: T.SubmitActionResponse) -> None:
        """Write an action's result into ``msg``, an empty one (parsed from
        :meth:`result_bytes`, which the player connection sends as they are)."""
        msg.MergeFromString(MatchApi.result_bytes(result))

    async def StreamObservations(
        self, creds: Credentials, request: pb.StreamObservationsRequest
    ) -> AsyncIterator[pb.StreamObservationsResponse]:
        updates = self.stream_updates(creds, request)
        while True:
            try:  # neither the update nor its message is named here: a stream whose reader
                # does not take a message holds only what the transport made of it
                yield self.update_message(await anext(updates))
            except StopAsyncIteration:
                return

    @classmethod
    def update_message(cls, update: T.StreamUpdate) -> pb.StreamObservationsResponse:
        msg = pb.StreamObservationsResponse()
        cls.fill_update(msg, update)
        return msg

    async def stream_updates(
        self,
        creds: Credentials,
        request: pb.StreamObservationsRequest,
        delivered: Callable[[], int] | None = None,
    ) -> AsyncGenerator[T.StreamUpdate, None]:
        """StreamObservations before encoding (the player connection writes each update's
        bytes into its own message, :meth:`update_bytes`, and says with ``delivered`` what its
        action results delivered: :meth:`MatchStreams.stream`)."""
        caller = self.auth.viewer(creds, request.match_id)
        req = T.StreamRequest(
            required_id(request.match_id),
            request.from_version if request.HasField("from_version") else None,
        )
        async with contextlib.AsyncExitStack() as held:
            if self.quotas is not None:
                key = caller.token if isinstance(caller, MatchCredential) else f"operator:{caller.name}"
                await held.enter_async_context(self.quotas.stream(key))
            if self.tracker is not None:  # the worker's drain waits for it; refused once stopping
                await held.enter_async_context(self.tracker.track())
            started = False
            updates = self.streams.stream(caller, req, delivered)
            try:
                while True:
                    try:  # handed on unnamed (MatchStreams.stream)
                        yield await anext(updates)
                    except StopAsyncIteration:
                        return
                    started = True
            except E.MatchNotFound:
                if started:  # the match vanished under an open stream (a store lost it)
                    raise
                with uniform(caller):
                    raise

    @staticmethod
    def fill_update(msg: pb.StreamObservationsResponse, update: T.StreamUpdate) -> None:
        """Write a stream message (an update or a heartbeat) into ``msg``, an empty one
        (parsed from :meth:`update_bytes`, which the player connection sends as they are)."""
        msg.MergeFromString(MatchApi.update_bytes(update))

    def Connect(self, creds: Credentials, requests: AsyncIterator[pb.ConnectRequest]) -> AsyncIterator[bytes]:
        """The player connection: every seat credential's subscriptions and actions on one
        bidirectional stream (:mod:`.connection`; the credentials are in its messages). Its
        messages come serialized (``ConnectResponse``): a move's are written as bytes."""
        from truco_server.api.connection import PlayerConnection  # it builds on this class

        return PlayerConnection(self, self.tickets).run(requests)

    async def GetMatch(self, creds: Credentials, request: pb.GetMatchRequest) -> pb.GetMatchResponse:
        caller = self.auth.viewer(creds, request.match_id)
        with uniform(caller):
            got = await self.reads.get_match(caller, T.GetMatchRequest(required_id(request.match_id)))
        resp = pb.GetMatchResponse(match=codec.match_to_proto(got.match))
        resp.observation.MergeFromString(observation(got.view, got.match.rules, got.viewer, got.at))
        return resp

    async def ListMatches(self, creds: Credentials, request: pb.ListMatchesRequest) -> pb.ListMatchesResponse:
        operator = self.auth.operator(creds)
        status: MatchStatus | None = None
        if request.state:
            try:
                status = MatchStatus[match_pb2.MatchState.Name(request.state).removeprefix("MATCH_STATE_")]
            except (ValueError, KeyError):
                raise bad("state", f"unknown state {request.state}") from None
        listed = await self.reads.list_matches(
            operator, T.ListMatchesRequest(status, request.page_size, request.page_token or None)
        )
        return pb.ListMatchesResponse(
            matches=[codec.match_to_proto(m) for m in listed.matches],
            next_page_token=listed.next_page_token or "",
        )

    async def CancelMatch(self, creds: Credentials, request: pb.CancelMatchRequest) -> pb.CancelMatchResponse:
        operator = self.auth.operator(creds)
        done = await self.steps.cancel_match(
            operator, T.CancelMatchRequest(required_id(request.match_id), request.reason)
        )
        return pb.CancelMatchResponse(match=codec.match_to_proto(done.match))

    async def JoinMatch(self, creds: Credentials, request: pb.JoinMatchRequest) -> pb.JoinMatchResponse:
        cred = self.auth.seat(creds, request.match_id)
        with uniform(cred):
            joined = await self.matches.join_match(
                cred, T.JoinMatchRequest(required_id(request.match_id), request.client_seed)
            )
        resp = pb.JoinMatchResponse(version=joined.version)
        resp.observation.MergeFromString(observation(joined.view, joined.rules, joined.seat, joined.match))
        return resp

    async def GetMatchRecord(
        self, creds: Credentials, request: pb.GetMatchRecordRequest
    ) -> pb.GetMatchRecordResponse:
        caller = self.auth.viewer(creds, request.match_id)
        with uniform(caller):
            got = await self.reads.get_match_record(
                caller, T.GetMatchRecordRequest(required_id(request.match_id))
            )
        return pb.GetMatchRecordResponse(record=codec.record_to_proto(got.record))

    async def AddTime(self, creds: Credentials, request: pb.AddTimeRequest) -> pb.AddTimeResponse:
        operator = self.auth.operator(creds)
        ms = request.added.seconds * 1000 + request.added.nanos // 1_000_000
        seat = request.seat if request.HasField("seat") else None
        done = await self.steps.add_time(operator, T.AddTimeRequest(required_id(request.match_id), seat, ms))
        return pb.AddTimeResponse(match=codec.match_to_proto(done.match))

    async def AdjudicateMatch(
        self, creds: Credentials, request: pb.AdjudicateMatchRequest
    ) -> pb.AdjudicateMatchResponse:
        operator = self.auth.operator(creds)
        req = T.AdjudicateMatchRequest(required_id(request.match_id), request.winner_team, request.reason)
        done = await self.steps.adjudicate_match(operator, req)
        return pb.AdjudicateMatchResponse(match=codec.match_to_proto(done.match))

    async def ReissueCredential(
        self, creds: Credentials, request: pb.ReissueCredentialRequest
    ) -> pb.ReissueCredentialResponse:
        operator = self.auth.operator(creds)
        has_seat = request.HasField("seat")
        if has_seat == request.spectators:
            raise bad("seat", "give either seat or spectators")
        done = await self.steps.reissue_credential(
            operator,
            T.ReissueCredentialRequest(
                required_id(request.match_id), request.seat if has_seat else None, request.request_id or None
            ),
        )
        resp = pb.ReissueCredentialResponse(token=done.token, version=done.version)
        if done.seat is not None:
            resp.seat = done.seat
        if done.expires_at is not None:
            resp.expire_time.FromMilliseconds(round(done.expires_at * 1000))
        return resp
