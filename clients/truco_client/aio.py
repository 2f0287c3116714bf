"""asyncio client of ``truco.v1.MatchService``: the same API as
:class:`truco_client.TrucoClient`, with ``await`` and ``async for``.

    async with AsyncTrucoClient("127.0.0.1:50051", api_key="secret") as client:
        m = await client.create_match("argentine")
        seat = client.with_token(m.seat_tokens[0])
        async for update in seat.stream(m.match_id):
            ...
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import grpc

import truco_engine as te
from truco_client._core import (
    CHANNEL_OPTIONS,
    CONNECT_TIMEOUT,
    STREAM_END_WAIT,
    ActionResult,
    CreatedMatch,
    JoinResult,
    MatchView,
    Metadata,
    ReissuedCredential,
    RetryPolicy,
    SeatArg,
    Seconds,
    StreamState,
    Update,
    action_result,
    add_time_request,
    create_request,
    created,
    join_result,
    lifecycle_of,
    match_view,
    metadata,
    new_request_id,
    reissue_request,
    reissued,
    state_filter,
    submit_request,
)
from truco_client.errors import RETRYABLE, ServerUnreachable, Unavailable, from_rpc_error
from truco_contract import codec
from truco_contract.pb import match_service_pb2, match_service_pb2_grpc
from truco_kit.actions import Action
from truco_match.lifecycle import TimeControl
from truco_match.matches import MatchInfo
from truco_match.records import MatchRecord

T = TypeVar("T")


class _AioChannels:
    """One channel at a time over a list of targets, as the sync client's: the first
    :meth:`reach` waits until a target accepts a connection (``connect_timeout`` each) and
    raises :class:`ServerUnreachable` when none does."""

    def __init__(
        self,
        targets: Sequence[str],
        credentials: grpc.ChannelCredentials | None,
        connect_timeout: float | None = CONNECT_TIMEOUT,
    ) -> None:
        if not targets:
            raise ValueError("give at least one target, e.g. '127.0.0.1:50051'")
        self.targets = list(targets)
        self.credentials = credentials
        self.connect_timeout = connect_timeout
        self.index = 0
        self._channel: grpc.aio.Channel | None = None
        self._stub: match_service_pb2_grpc.MatchServiceStub | None = None
        self._reached = not connect_timeout
        self._reaching = asyncio.Lock()

    async def reach(self, timeout: float | None = None) -> None:
        """On the first call (or with a ``timeout``, always): wait until a target accepts a
        connection, ``timeout`` (else ``connect_timeout``) seconds per target."""
        wait = timeout or self.connect_timeout
        if (self._reached and timeout is None) or not wait:
            return
        async with self._reaching:
            if self._reached and timeout is None:
                return
            for _ in self.targets:
                self.stub()
                assert self._channel is not None
                try:
                    await asyncio.wait_for(self._channel.channel_ready(), wait)
                except TimeoutError:
                    await self.close()
                    self.index = (self.index + 1) % len(self.targets)
                    continue
                self._reached = True
                return
            raise ServerUnreachable(self.targets, wait)

    def stub(self) -> Any:
        if self._stub is None:
            target = self.targets[self.index]
            if self.credentials is not None:
                self._channel = grpc.aio.secure_channel(target, self.credentials, options=CHANNEL_OPTIONS)
            else:
                self._channel = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
            self._stub = match_service_pb2_grpc.MatchServiceStub(self._channel)
        return self._stub

    async def rotate(self) -> None:
        if len(self.targets) > 1:
            self.index = (self.index + 1) % len(self.targets)
            await self.close()

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
        self._channel = None
        self._stub = None


async def read_to_end(stream: AsyncIterable[Any]) -> None:
    """Read a stream that showed the match is over until the server ends it (it does at once),
    at most ``STREAM_END_WAIT`` seconds, so that the call is not cancelled under the server
    (see :data:`truco_client._core.STREAM_END_WAIT`). ``stream``: a ``grpc.aio`` stream call
    (its messages go on from where an earlier ``async for`` over it stopped) or its iterator."""
    with contextlib.suppress(TimeoutError, grpc.RpcError):
        async with asyncio.timeout(STREAM_END_WAIT):
            async for _ in stream:
                pass


class AsyncTrucoClient:
    """asyncio client; see the module docstring and :class:`truco_client.TrucoClient`."""

    def __init__(
        self,
        target: str | Sequence[str] = "127.0.0.1:50051",
        *,
        token: str | None = None,
        api_key: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        heartbeat_timeout: float = 30.0,
        credentials: grpc.ChannelCredentials | None = None,
        connect_timeout: float | None = CONNECT_TIMEOUT,
        _channels: _AioChannels | None = None,
    ) -> None:
        self._channels = _channels or _AioChannels(
            [target] if isinstance(target, str) else target, credentials, connect_timeout
        )
        self.token = token
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.heartbeat_timeout = heartbeat_timeout
        self._rules: dict[str, te.RuleSet] = {}
        self._rng = random.Random()

    def with_token(self, token: str) -> AsyncTrucoClient:
        c = AsyncTrucoClient(
            token=token,
            api_key=self.api_key,
            timeout=self.timeout,
            retry=self.retry,
            heartbeat_timeout=self.heartbeat_timeout,
            _channels=self._channels,
        )
        c._rules = self._rules
        return c

    async def close(self) -> None:
        await self._channels.close()

    async def wait_ready(self, timeout: float = 10.0) -> None:
        """Wait until a server accepts a connection, ``timeout`` seconds per address (raises
        :class:`~truco_client.errors.ServerUnreachable`)."""
        await self._channels.reach(timeout)

    async def __aenter__(self) -> AsyncTrucoClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        attempt = 0
        while True:
            attempt += 1
            await self._channels.reach()
            try:
                return await fn(self._channels.stub())
            except grpc.RpcError as err:
                code = err.code() if hasattr(err, "code") else None
                if code not in RETRYABLE or attempt >= self.retry.attempts:
                    raise from_rpc_error(err) from None
                failed = err
            await self._channels.rotate()
            await asyncio.sleep(self.retry.backoff(attempt, self._rng, failed))

    def _token(self, token: str | None) -> str | None:
        """The credential of a match call: the ``token`` given, else the client's token, else its
        API key (the same rule on every call; the server says which credential it wanted)."""
        return token if token is not None else (self.token or self.api_key)

    def _op(self, api_key: str | None) -> Metadata:
        return metadata(api_key if api_key is not None else (self.api_key or self.token))

    async def rules_of(self, match_id: str, token: str | None = None) -> te.RuleSet:
        if match_id not in self._rules:
            self._rules[match_id] = (await self.get_match(match_id, token=token)).rules
        return self._rules[match_id]

    async def create_match(
        self,
        preset: str = "paulista",
        *,
        players: int | None = None,
        overrides: Mapping[str, Any] | None = None,
        seats: Sequence[SeatArg] | None = None,
        seed: bytes | None = None,
        deck_orders: Sequence[Sequence[str]] | None = None,
        turn_timeout: float | timedelta | None = None,
        labels: Mapping[str, str] | None = None,
        request_id: str | None = None,
        api_key: str | None = None,
        time_control: TimeControl | None = None,
        join_window: Seconds | None = None,
        idle_timeout: Seconds | None = None,
        disconnect_grace: Seconds | None = None,
        spectator_delay: int = 0,
        show_hands: bool = False,
        client_seed: bytes | None = None,
        credential_ttl: Seconds | None = None,
        takeover_level: int | None = None,
        bot_think_time: Seconds | None = None,
    ) -> CreatedMatch:
        req = create_request(
            preset,
            players,
            overrides,
            seats,
            seed,
            deck_orders,
            turn_timeout,
            labels,
            request_id or new_request_id(),
            lifecycle=lifecycle_of(
                time_control=time_control,
                join_window=join_window,
                idle_timeout=idle_timeout,
                disconnect_grace=disconnect_grace,
                spectator_delay=spectator_delay,
                show_hands=show_hands,
                credential_ttl=credential_ttl,
                takeover_level=takeover_level,
                bot_think_time=bot_think_time,
            ),
            client_seed=client_seed,
        )
        md = self._op(api_key)
        out = created(await self._call(lambda s: s.CreateMatch(req, metadata=md, timeout=self.timeout)))
        self._rules[out.match_id] = out.rules
        return out

    async def submit_action(
        self,
        match_id: str,
        action: Action,
        *,
        token: str | None = None,
        request_id: str | None = None,
        expected_version: int | None = None,
    ) -> ActionResult:
        rid = request_id or new_request_id()
        req = submit_request(match_id, action, rid, expected_version)
        md = metadata(self._token(token))
        resp = await self._call(lambda s: s.SubmitAction(req, metadata=md, timeout=self.timeout))
        return action_result(resp, await self.rules_of(match_id, self._token(token)), rid)

    async def get_match(self, match_id: str, *, token: str | None = None) -> MatchView:
        req = match_service_pb2.GetMatchRequest(match_id=match_id)
        md = metadata(self._token(token))
        view = match_view(await self._call(lambda s: s.GetMatch(req, metadata=md, timeout=self.timeout)))
        self._rules[match_id] = view.rules
        return view

    async def list_matches(
        self,
        *,
        page_size: int = 0,
        page_token: str = "",
        state: str | None = None,
        api_key: str | None = None,
    ) -> tuple[list[MatchInfo], str]:
        req = match_service_pb2.ListMatchesRequest(
            page_size=page_size, page_token=page_token, state=state_filter(state)
        )
        md = self._op(api_key)
        resp = await self._call(lambda s: s.ListMatches(req, metadata=md, timeout=self.timeout))
        return [codec.match_from_proto(m) for m in resp.matches], resp.next_page_token

    async def iter_matches(
        self, *, state: str | None = None, api_key: str | None = None
    ) -> AsyncIterator[MatchInfo]:
        token = ""
        while True:
            page, token = await self.list_matches(page_token=token, state=state, api_key=api_key)
            for m in page:
                yield m
            if not token:
                return

    async def cancel_match(
        self, match_id: str, reason: str = "", *, request_id: str | None = None, api_key: str | None = None
    ) -> MatchInfo:
        req = match_service_pb2.CancelMatchRequest(
            match_id=match_id, reason=reason, request_id=request_id or new_request_id()
        )
        md = self._op(api_key)
        resp: match_service_pb2.CancelMatchResponse = await self._call(
            lambda s: s.CancelMatch(req, metadata=md, timeout=self.timeout)
        )
        return codec.match_from_proto(resp.match)

    async def join_match(
        self, match_id: str, client_seed: bytes = b"", *, token: str | None = None
    ) -> JoinResult:
        """See :meth:`truco_client.TrucoClient.join_match`."""
        req = match_service_pb2.JoinMatchRequest(match_id=match_id, client_seed=client_seed)
        md = metadata(self._token(token))
        resp = await self._call(lambda s: s.JoinMatch(req, metadata=md, timeout=self.timeout))
        return join_result(resp, await self.rules_of(match_id, self._token(token)))

    async def get_match_record(self, match_id: str, *, token: str | None = None) -> MatchRecord:
        """See :meth:`truco_client.TrucoClient.get_match_record`."""
        req = match_service_pb2.GetMatchRecordRequest(match_id=match_id)
        md = metadata(self._token(token))
        resp: match_service_pb2.GetMatchRecordResponse = await self._call(
            lambda s: s.GetMatchRecord(req, metadata=md, timeout=self.timeout)
        )
        return codec.record_from_proto(resp.record)

    async def add_time(
        self, match_id: str, added: Seconds, *, seat: int | None = None, api_key: str | None = None
    ) -> MatchInfo:
        """See :meth:`truco_client.TrucoClient.add_time`."""
        req = add_time_request(match_id, added, seat)
        md = self._op(api_key)
        resp: match_service_pb2.AddTimeResponse = await self._call(
            lambda s: s.AddTime(req, metadata=md, timeout=self.timeout)
        )
        return codec.match_from_proto(resp.match)

    async def reissue_credential(
        self,
        match_id: str,
        seat: int | None,
        *,
        request_id: str | None = None,
        api_key: str | None = None,
    ) -> ReissuedCredential:
        """See :meth:`truco_client.TrucoClient.reissue_credential`."""
        req = reissue_request(match_id, seat, request_id)
        md = self._op(api_key)
        resp: match_service_pb2.ReissueCredentialResponse = await self._call(
            lambda s: s.ReissueCredential(req, metadata=md, timeout=self.timeout)
        )
        return reissued(resp)

    async def adjudicate_match(
        self, match_id: str, winner_team: int, reason: str = "", *, api_key: str | None = None
    ) -> MatchInfo:
        """See :meth:`truco_client.TrucoClient.adjudicate_match`."""
        req = match_service_pb2.AdjudicateMatchRequest(
            match_id=match_id, winner_team=winner_team, reason=reason
        )
        md = self._op(api_key)
        resp: match_service_pb2.AdjudicateMatchResponse = await self._call(
            lambda s: s.AdjudicateMatch(req, metadata=md, timeout=self.timeout)
        )
        return codec.match_from_proto(resp.match)

    async def stream(
        self,
        match_id: str,
        *,
        token: str | None = None,
        from_version: int | None = 0,
        resume: bool = True,
    ) -> AsyncIterator[Update]:
        """See :meth:`truco_client.TrucoClient.stream`."""
        tok = self._token(token)
        state = StreamState(match_id, from_version, await self.rules_of(match_id, tok))
        md = metadata(tok)
        failures = 0
        while True:
            call: Any = None
            await self._channels.reach()
            try:
                call = self._channels.stub().StreamObservations(state.request(), metadata=md)
                it = call.__aiter__()
                while True:
                    try:
                        msg = await asyncio.wait_for(it.__anext__(), self.heartbeat_timeout)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        break  # silent stream: reconnect
                    failures = 0
                    upd = state.accept(msg)
                    if upd is None:
                        continue
                    if upd.observation.is_over:
                        await read_to_end(it)
                        yield upd
                        return
                    yield upd
            except grpc.RpcError as err:
                code = err.code() if hasattr(err, "code") else None
                if code not in RETRYABLE or not resume:
                    raise from_rpc_error(err) from None
            finally:
                if call is not None:
                    call.cancel()
            failures += 1
            state.reconnects += 1
            if failures >= self.retry.attempts:
                raise Unavailable(grpc.StatusCode.UNAVAILABLE, f"stream lost {failures} times in a row")
            await self._channels.rotate()
            await asyncio.sleep(self.retry.backoff(failures, self._rng))
