"""Synchronous client of ``truco.v1.MatchService``.

    from truco_client import TrucoClient, actions as A

    with TrucoClient("127.0.0.1:50051", api_key="secret") as client:
        m = client.create_match("argentine")
        seat0 = client.with_token(m.seat_tokens[0])
        for update in seat0.stream(m.match_id):          # resumes by itself after a cut
            obs = update.observation
            if obs.is_my_turn:
                seat0.submit_action(m.match_id, obs.legal_actions[0])

Unary calls are retried on UNAVAILABLE / DEADLINE_EXCEEDED with the same request id (so an
action is applied once even if a response was lost); streams reconnect and resume from the
last version seen, handing every event over exactly once. Several targets (workers) may be
given: the client moves to the next one when a call fails.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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


def _read_to_end(call: Any) -> None:
    """Read a stream that showed the match is over until the server ends it (it does at once),
    at most ``STREAM_END_WAIT`` seconds (then the call is cancelled), so that the call is not
    cancelled under the server (see :data:`truco_client._core.STREAM_END_WAIT`)."""
    timer = threading.Timer(STREAM_END_WAIT, call.cancel)
    timer.daemon = True
    timer.start()
    try:
        for _ in call:
            pass
    except grpc.RpcError:
        pass
    finally:
        timer.cancel()


class _Channels:
    """One channel at a time over a list of targets; ``rotate()`` moves to the next. The
    first ``stub()`` waits until a target accepts a connection (``connect_timeout`` each;
    ``None`` or 0: not at all), trying each in turn, and raises :class:`ServerUnreachable` when
    none does; after that, failures are the retry policy's business."""

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
        self._channel: grpc.Channel | None = None
        self._stub: match_service_pb2_grpc.MatchServiceStub | None = None
        self._lock = threading.Lock()
        self._reached = not connect_timeout

    def _open(self) -> match_service_pb2_grpc.MatchServiceStub:
        if self._stub is None:
            target = self.targets[self.index]
            if self.credentials is not None:
                self._channel = grpc.secure_channel(target, self.credentials, options=CHANNEL_OPTIONS)
            else:
                self._channel = grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
            self._stub = match_service_pb2_grpc.MatchServiceStub(self._channel)
        return self._stub

    def _reach(self, timeout: float) -> None:
        """Wait (``timeout`` per target) until one accepts a connection; keep its channel."""
        for _ in self.targets:
            self._open()
            assert self._channel is not None
            ready = grpc.channel_ready_future(self._channel)
            try:
                ready.result(timeout=timeout)
            except grpc.FutureTimeoutError:
                ready.cancel()
                self._drop()
                self.index = (self.index + 1) % len(self.targets)
                continue
            self._reached = True
            return
        raise ServerUnreachable(self.targets, timeout)

    def stub(self) -> match_service_pb2_grpc.MatchServiceStub:
        with self._lock:
            if not self._reached and self.connect_timeout:
                self._reach(self.connect_timeout)
            return self._open()

    def _drop(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = None
        self._stub = None

    def rotate(self) -> None:
        with self._lock:
            if len(self.targets) > 1:
                self.index = (self.index + 1) % len(self.targets)
                self._drop()

    def close(self) -> None:
        with self._lock:
            self._drop()


class TrucoClient:
    """Blocking client; thread-safe. See the module docstring."""

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
        _channels: _Channels | None = None,
    ) -> None:
        self._channels = _channels or _Channels(
            [target] if isinstance(target, str) else target, credentials, connect_timeout
        )
        self.token = token
        """Default seat / spectator credential."""
        self.api_key = api_key
        """Default operator API key (create, list, cancel)."""
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.heartbeat_timeout = heartbeat_timeout
        """A stream with no message (not even a heartbeat) for this long is reconnected."""
        self._rules: dict[str, te.RuleSet] = {}
        self._rng = random.Random()

    # ---------------------------------------------------------------- plumbing
    def with_token(self, token: str) -> TrucoClient:
        """A client for another credential sharing this one's connection."""
        c = TrucoClient(
            token=token,
            api_key=self.api_key,
            timeout=self.timeout,
            retry=self.retry,
            heartbeat_timeout=self.heartbeat_timeout,
            _channels=self._channels,
        )
        c._rules = self._rules
        return c

    def close(self) -> None:
        self._channels.close()

    def __enter__(self) -> TrucoClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, fn: Callable[[match_service_pb2_grpc.MatchServiceStub], T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn(self._channels.stub())
            except grpc.RpcError as err:
                code = err.code() if hasattr(err, "code") else None
                if code not in RETRYABLE or attempt >= self.retry.attempts:
                    raise from_rpc_error(err) from None
                failed = err
            self._channels.rotate()
            time.sleep(self.retry.backoff(attempt, self._rng, failed))

    def _token(self, token: str | None) -> str | None:
        """The credential of a match call: the ``token`` given, else the client's token, else its
        API key (the same rule on every call; the server says which credential it wanted)."""
        return token if token is not None else (self.token or self.api_key)

    def _op(self, api_key: str | None) -> Metadata:
        return metadata(api_key if api_key is not None else (self.api_key or self.token))

    def rules_of(self, match_id: str, token: str | None = None) -> te.RuleSet:
        """The engine rule set of a match (cached; from ``Match.effective_rules``)."""
        if match_id not in self._rules:
            self._rules[match_id] = self.get_match(match_id, token=token).rules
        return self._rules[match_id]

    # -------------------------------------------------------------------- RPCs
    def create_match(
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
        """Create a match (operator API key). ``seats`` are display names, (name, "bot"), or
        (name, "bot", level): a seat the server's built-in bot plays at that level (1 to 6).

        Lifecycle (``docs/sdk.md``): ``time_control`` (a
        :class:`~truco_match.lifecycle.TimeControl`, in milliseconds) or its shorthand
        ``turn_timeout`` (that many seconds per decision); ``join_window``, ``idle_timeout``,
        ``disconnect_grace`` in seconds (or ``timedelta``); ``spectator_delay`` in actions;
        ``show_hands`` shows spectators each hand's cards once it is over; ``client_seed``
        (at most 64 bytes) is the creator's entropy, mixed into every deal; ``credential_ttl``
        (seconds) how long each match credential is valid after it was issued;
        ``takeover_level``: a bot of that level (1 to 6) takes over a seat whose player is away
        for ``disconnect_grace`` until the player acts again (unset: the default move);
        ``bot_think_time`` (seconds): how long the server's bots think per decision, on average."""
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
        resp = self._call(lambda s: s.CreateMatch(req, metadata=md, timeout=self.timeout))
        out = created(resp)
        self._rules[out.match_id] = out.rules
        return out

    def submit_action(
        self,
        match_id: str,
        action: Action,
        *,
        token: str | None = None,
        request_id: str | None = None,
        expected_version: int | None = None,
    ) -> ActionResult:
        """Submit one action for the credential's seat; retried with the same request id."""
        rid = request_id or new_request_id()
        req = submit_request(match_id, action, rid, expected_version)
        md = metadata(self._token(token))
        resp = self._call(lambda s: s.SubmitAction(req, metadata=md, timeout=self.timeout))
        return action_result(resp, self.rules_of(match_id, self._token(token)), rid)

    def get_match(self, match_id: str, *, token: str | None = None) -> MatchView:
        """The match and, for seat / spectator credentials, the caller's observation (the
        spectator view for the owner's API key, on a server with API keys: a server without
        them reads a match to its seat and spectator tokens only)."""
        req = match_service_pb2.GetMatchRequest(match_id=match_id)
        md = metadata(self._token(token))
        view = match_view(self._call(lambda s: s.GetMatch(req, metadata=md, timeout=self.timeout)))
        self._rules[match_id] = view.rules
        return view

    def list_matches(
        self,
        *,
        page_size: int = 0,
        page_token: str = "",
        state: str | None = None,
        api_key: str | None = None,
    ) -> tuple[list[MatchInfo], str]:
        """One page of the operator's matches, newest first: (matches, next_page_token)."""
        req = match_service_pb2.ListMatchesRequest(
            page_size=page_size, page_token=page_token, state=state_filter(state)
        )
        md = self._op(api_key)
        resp = self._call(lambda s: s.ListMatches(req, metadata=md, timeout=self.timeout))
        return [codec.match_from_proto(m) for m in resp.matches], resp.next_page_token

    def iter_matches(self, *, state: str | None = None, api_key: str | None = None) -> Iterator[MatchInfo]:
        """Every match of the operator, following pages."""
        token = ""
        while True:
            page, token = self.list_matches(page_token=token, state=state, api_key=api_key)
            yield from page
            if not token:
                return

    def cancel_match(
        self, match_id: str, reason: str = "", *, request_id: str | None = None, api_key: str | None = None
    ) -> MatchInfo:
        """Cancel an active match (the creating operator's API key)."""
        req = match_service_pb2.CancelMatchRequest(
            match_id=match_id, reason=reason, request_id=request_id or new_request_id()
        )
        md = self._op(api_key)
        return codec.match_from_proto(
            self._call(lambda s: s.CancelMatch(req, metadata=md, timeout=self.timeout)).match
        )

    def join_match(self, match_id: str, client_seed: bytes = b"", *, token: str | None = None) -> JoinResult:
        """Join the credential's seat (a match with a join window), giving ``client_seed`` (at
        most 64 bytes; empty: none) to be mixed into the deals. Joining again returns the
        match; a different seed then is refused."""
        req = match_service_pb2.JoinMatchRequest(match_id=match_id, client_seed=client_seed)
        md = metadata(self._token(token))
        resp = self._call(lambda s: s.JoinMatch(req, metadata=md, timeout=self.timeout))
        return join_result(resp, self.rules_of(match_id, self._token(token)))

    def get_match_record(self, match_id: str, *, token: str | None = None) -> MatchRecord:
        """The match's record as the caller may see it: everything (the seed, every deal)
        once the match is over; during it, only what the seat or spectator may see. Seat or
        spectator token, or the owner's API key on a server with API keys (like
        ``get_match``). Write it to a file with :func:`truco_client.write_record`."""
        req = match_service_pb2.GetMatchRecordRequest(match_id=match_id)
        md = metadata(self._token(token))
        resp = self._call(lambda s: s.GetMatchRecord(req, metadata=md, timeout=self.timeout))
        return codec.record_from_proto(resp.record)

    def add_time(
        self, match_id: str, added: Seconds, *, seat: int | None = None, api_key: str | None = None
    ) -> MatchInfo:
        """Give ``seat`` (``None``: every seat) ``added`` seconds more: on the decision being
        timed and in the bank (the creating operator's API key; 1 s to 1 day)."""
        req = add_time_request(match_id, added, seat)
        md = self._op(api_key)
        return codec.match_from_proto(
            self._call(lambda s: s.AddTime(req, metadata=md, timeout=self.timeout)).match
        )

    def reissue_credential(
        self,
        match_id: str,
        seat: int | None,
        *,
        request_id: str | None = None,
        api_key: str | None = None,
    ) -> ReissuedCredential:
        """A new credential for ``seat`` (``None``: the spectators') of an active match; the
        previous one is refused from now on, and streams opened with it end UNAUTHENTICATED
        (the creating operator's API key). Retried with the same request id, so a retry gets
        the same token."""
        req = reissue_request(match_id, seat, request_id)
        md = self._op(api_key)
        return reissued(self._call(lambda s: s.ReissueCredential(req, metadata=md, timeout=self.timeout)))

    def adjudicate_match(
        self, match_id: str, winner_team: int, reason: str = "", *, api_key: str | None = None
    ) -> MatchInfo:
        """Award an active match to ``winner_team`` (the creating operator's API key)."""
        req = match_service_pb2.AdjudicateMatchRequest(
            match_id=match_id, winner_team=winner_team, reason=reason
        )
        md = self._op(api_key)
        return codec.match_from_proto(
            self._call(lambda s: s.AdjudicateMatch(req, metadata=md, timeout=self.timeout)).match
        )

    # ------------------------------------------------------------------ stream
    def stream(
        self,
        match_id: str,
        *,
        token: str | None = None,
        from_version: int | None = 0,
        resume: bool = True,
    ) -> Iterator[Update]:
        """Updates of the credential's view until the match ends.

        ``from_version=0`` (default) replays the match from its start, so observations carry
        the current hand's events (``hand_events``); ``None`` starts from a snapshot. A cut
        stream (worker stopped, network error, no heartbeat for ``heartbeat_timeout``) is
        reconnected (possibly to another target) from the last version seen; duplicates are
        dropped. ``resume=False`` raises instead.
        """
        tok = self._token(token)
        state = StreamState(match_id, from_version, self.rules_of(match_id, tok))
        md = metadata(tok)
        failures = 0
        while True:
            call: Any = None
            timed_out = threading.Event()
            watchdog: threading.Timer | None = None

            def expire(c: Any = None, flag: threading.Event = timed_out) -> None:
                flag.set()
                if c is not None:
                    c.cancel()

            try:
                call = self._channels.stub().StreamObservations(state.request(), metadata=md)
                watchdog = threading.Timer(self.heartbeat_timeout, expire, (call,))
                watchdog.daemon = True
                watchdog.start()
                for msg in call:
                    watchdog.cancel()
                    watchdog = threading.Timer(self.heartbeat_timeout, expire, (call,))
                    watchdog.daemon = True
                    watchdog.start()
                    failures = 0
                    upd = state.accept(msg)
                    if upd is None:
                        continue
                    if upd.observation.is_over:
                        _read_to_end(call)
                        yield upd
                        return
                    yield upd
                # The server ended the stream before the match ended (e.g. connection aged out).
            except grpc.RpcError as err:
                code = err.code() if hasattr(err, "code") else None
                retry = code in RETRYABLE or (code == grpc.StatusCode.CANCELLED and timed_out.is_set())
                if not retry or not resume:
                    raise from_rpc_error(err) from None
            finally:
                if watchdog is not None:
                    watchdog.cancel()
                if call is not None:
                    call.cancel()
            failures += 1
            state.reconnects += 1
            if failures >= self.retry.attempts:
                raise Unavailable(grpc.StatusCode.UNAVAILABLE, f"stream lost {failures} times in a row")
            self._channels.rotate()
            time.sleep(self.retry.backoff(failures, self._rng))

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until a server accepts a connection, ``timeout`` seconds per address (raises
        :class:`~truco_client.errors.ServerUnreachable`, a :class:`TrucoClientError`)."""
        with self._channels._lock:
            self._channels._reach(timeout)


__all__ = ["TrucoClient"]
