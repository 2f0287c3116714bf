"""Pieces shared by the sync and asyncio clients: requests, results, retries, resume."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from google.protobuf import duration_pb2, struct_pb2

import truco_engine as te
from truco_contract import codec
from truco_contract.pb import match_pb2, match_service_pb2
from truco_kit.actions import Action
from truco_kit.observation import Event, HandTracker, Observation
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.matches import MatchInfo

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    # Detect a dead connection under a silent stream (the server allows pings every 10 s).
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.enable_retries", 0),  # the SDK retries itself, with the same request id
]

CONNECT_TIMEOUT = 2.0
"""Seconds a client's first call waits for a server to accept a connection at each of its
addresses (``connect_timeout=``) before it raises
:class:`~truco_client.errors.ServerUnreachable`: an address where nothing listens fails in
this time with a line saying so, instead of after every retry of the
:class:`RetryPolicy`. Once a client has reached a server, a lost connection is retried as
before (a worker restarting, a failover)."""

STREAM_END_WAIT = 5.0
"""Seconds a stream that showed the match is over is read on, until the server ends it (its
status follows the last message at once), before the client cancels it. Cancelling at once
makes a ``grpc.aio`` server leak native memory: the cancellation reaches it while it completes
the stream (the last message's send, or the final status), and grpcio (1.85 measured) never
frees the batch it had started, about 0.1-0.3 KB a stream (docs/operations.md, "Memory")."""

MATCH_STATES: dict[str, match_pb2.MatchState.ValueType] = {
    "active": match_pb2.MATCH_STATE_ACTIVE,
    "finished": match_pb2.MATCH_STATE_FINISHED,
    "cancelled": match_pb2.MATCH_STATE_CANCELLED,
    "aborted": match_pb2.MATCH_STATE_ABORTED,
}
"""The states ``iter_matches``/``list_matches`` filter by: the same names as ``Match.state``."""


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of calls that failed with UNAVAILABLE or DEADLINE_EXCEEDED (and stream
    reconnects): exponential backoff with full jitter."""

    attempts: int = 8
    """Tries per call (1 = no retry). Streams reconnect up to this many times in a row."""
    initial_backoff: float = 0.1
    max_backoff: float = 3.0
    multiplier: float = 2.0

    def backoff(self, attempt: int, rng: random.Random | None = None, err: object = None) -> float:
        """Delay before retry number ``attempt`` (1-based); at least the delay the server
        asked for in the failed call's ``google.rpc.RetryInfo`` (a store fault), when ``err``
        (the ``grpc.RpcError``) carries one."""
        cap = min(self.max_backoff, self.initial_backoff * self.multiplier ** max(0, attempt - 1))
        return max((rng or random).uniform(cap / 2, cap), min(self.max_backoff, server_retry_delay(err)))


def server_retry_delay(err: object) -> float:
    """Seconds of the ``google.rpc.RetryInfo`` in a failed call's status details (0 without)."""
    trailers = getattr(err, "trailing_metadata", None)
    if trailers is None:
        return 0.0
    from google.rpc import status_pb2  # type: ignore[import-untyped]

    for key, value in trailers() or ():
        if key == "grpc-status-details-bin":
            return status_retry_delay(status_pb2.Status.FromString(value))
    return 0.0


def status_retry_delay(status: Any) -> float:
    """Seconds of the ``google.rpc.RetryInfo`` among a ``google.rpc.Status``'s details (0
    without): a failed call's, or a player connection's ``ConnectActionError``'s."""
    from google.rpc import error_details_pb2

    for detail in status.details:
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return float(info.retry_delay.ToMilliseconds()) / 1000
    return 0.0


def new_request_id() -> str:
    return str(uuid.uuid4())


Metadata = tuple[tuple[str, str | bytes], ...]


def metadata(token: str | None) -> Metadata:
    return (("authorization", f"Bearer {token}"),) if token else ()


def state_filter(state: str | None) -> match_pb2.MatchState.ValueType:
    """``active`` / ``finished`` / ``cancelled`` / ``aborted`` (or ``None``: any) as the proto
    enum."""
    if state is None:
        return match_pb2.MATCH_STATE_UNSPECIFIED
    try:
        return MATCH_STATES[state]
    except KeyError:
        raise ValueError(f"unknown match state {state!r}; states are: {', '.join(MATCH_STATES)}") from None


@dataclass(frozen=True)
class CreatedMatch:
    """Result of ``create_match``."""

    match_id: str
    match: MatchInfo
    seat_tokens: tuple[str, ...]
    """One credential per seat, in seat order."""
    spectator_token: str

    @property
    def rules(self) -> te.RuleSet:
        return self.match.rules


@dataclass(frozen=True)
class ActionResult:
    """Result of ``submit_action``."""

    version: int
    events: tuple[Event, ...]
    observation: Observation
    request_id: str


@dataclass(frozen=True)
class ReissuedCredential:
    """Result of ``reissue_credential``: the new credential (the previous one is refused)."""

    token: str
    seat: int | None
    """The seat; ``None`` for the spectators' credential."""
    version: int
    """Match version of the ``credential_reissued`` event."""
    expires_at: float | None
    """Seconds since the epoch (``credential_ttl``); ``None``: as long as the match is kept."""


@dataclass(frozen=True)
class JoinResult:
    """Result of ``join_match``."""

    version: int
    """Match version after joining (the first hand is dealt once every seat has joined)."""
    observation: Observation
    """The seat's observation."""


@dataclass(frozen=True)
class MatchView:
    """Result of ``get_match``."""

    match: MatchInfo
    observation: Observation

    @property
    def rules(self) -> te.RuleSet:
        return self.match.rules


@dataclass(frozen=True)
class Update:
    """One stream update (after de-duplication)."""

    version: int
    events: tuple[Event, ...]
    """New events since the previous update, each exactly once."""
    observation: Observation
    snapshot: bool
    """Events between the previous update and this one were not delivered (trimmed log,
    first message without a resume point): rebuild from ``observation``."""


Seconds = float | timedelta
"""A duration: seconds (``float``) or a ``timedelta``."""


def milliseconds(value: Seconds) -> int:
    """A duration in whole milliseconds (what the contract's lifecycle settings hold)."""
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    return round(seconds * 1000)


def lifecycle_of(
    *,
    time_control: TimeControl | None = None,
    join_window: Seconds | None = None,
    idle_timeout: Seconds | None = None,
    disconnect_grace: Seconds | None = None,
    spectator_delay: int = 0,
    show_hands: bool = False,
    credential_ttl: Seconds | None = None,
    takeover_level: int | None = None,
    bot_think_time: Seconds | None = None,
) -> Lifecycle:
    """The lifecycle settings of ``create_match``'s keyword arguments (``None``: unset; the
    server checks the values). ``takeover_level``: a bot of that level takes over a seat whose
    player is away for the disconnect grace (``ABANDONMENT_POLICY_BOT_TAKEOVER``)."""
    return Lifecycle(
        time_control=time_control,
        join_window=milliseconds(join_window) if join_window is not None else 0,
        idle_timeout=milliseconds(idle_timeout) if idle_timeout is not None else 0,
        disconnect_grace=milliseconds(disconnect_grace) if disconnect_grace is not None else 0,
        spectator_delay=spectator_delay,
        show_hands=show_hands,
        credential_ttl=milliseconds(credential_ttl) if credential_ttl is not None else 0,
        takeover=takeover_level is not None,
        takeover_level=takeover_level or 0,
        bot_think=milliseconds(bot_think_time) if bot_think_time is not None else 0,
    )


SeatArg = str | tuple[str, str] | tuple[str, str, int]
"""A seat of ``create_match``: a display name, ``(name, "human" | "bot")``, or
``(name, "bot", level)``: the server's built-in bot plays it at that level (1 to 6)."""


def create_request(
    preset: str,
    players: int | None,
    overrides: Mapping[str, Any] | None,
    seats: Sequence[SeatArg] | None,
    seed: bytes | None,
    deck_orders: Sequence[Sequence[str]] | None,
    turn_timeout: float | timedelta | None,
    labels: Mapping[str, str] | None,
    request_id: str,
    *,
    lifecycle: Lifecycle | None = None,
    client_seed: bytes | None = None,
) -> match_service_pb2.CreateMatchRequest:
    rules = match_pb2.RuleSet(preset=preset)
    if overrides:
        st = struct_pb2.Struct()
        st.update(dict(overrides))
        rules.overrides.CopyFrom(st)
    req = match_service_pb2.CreateMatchRequest(rules=rules, players=players or 0, request_id=request_id)
    for s in seats or ():
        name, kind, level = (s, "human", 0) if isinstance(s, str) else (*s, 0)[:3]
        req.seats.add(
            display_name=name,
            kind=match_pb2.SEAT_KIND_BOT if kind == "bot" or level else match_pb2.SEAT_KIND_HUMAN,
            bot_level=level,
        )
    if seed:
        req.seed = seed
    for d in deck_orders or ():
        req.deck_orders.add(cards=list(d))
    if client_seed:
        req.client_seed = client_seed
    if lifecycle is not None:
        if turn_timeout and lifecycle.time_control is not None:
            raise ValueError(
                "give turn_timeout (a clock of that much per decision) or time_control, not both"
            )
        req.settings.CopyFrom(codec.settings_to_proto({}, lifecycle))
    if turn_timeout:
        seconds = turn_timeout.total_seconds() if isinstance(turn_timeout, timedelta) else float(turn_timeout)
        req.settings.turn_timeout.CopyFrom(
            duration_pb2.Duration(seconds=int(seconds), nanos=int((seconds % 1) * 1e9))
        )
    for k, v in (labels or {}).items():
        req.settings.labels[k] = v
    return req


def submit_request(
    match_id: str, action: Action, request_id: str, expected_version: int | None
) -> match_service_pb2.SubmitActionRequest:
    req = match_service_pb2.SubmitActionRequest(
        match_id=match_id, request_id=request_id, action=codec.action_to_proto(action)
    )
    if expected_version is not None:
        req.expected_version = expected_version
    return req


def created(resp: match_service_pb2.CreateMatchResponse) -> CreatedMatch:
    return CreatedMatch(
        resp.match.match_id,
        codec.match_from_proto(resp.match),
        tuple(c.token for c in sorted(resp.seat_credentials, key=lambda c: c.seat)),
        resp.spectator_token,
    )


def action_result(
    resp: match_service_pb2.SubmitActionResponse, rules: te.RuleSet, request_id: str
) -> ActionResult:
    return ActionResult(
        resp.version,
        tuple(codec.event_from_proto(e) for e in resp.events),
        Observation.from_view(codec.observation_from_proto(resp.observation), rules),
        request_id,
    )


def join_result(resp: match_service_pb2.JoinMatchResponse, rules: te.RuleSet) -> JoinResult:
    return JoinResult(
        resp.version, Observation.from_view(codec.observation_from_proto(resp.observation), rules)
    )


def add_time_request(match_id: str, added: Seconds, seat: int | None) -> match_service_pb2.AddTimeRequest:
    ms = milliseconds(added)
    req = match_service_pb2.AddTimeRequest(
        match_id=match_id, added=duration_pb2.Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)
    )
    if seat is not None:
        req.seat = seat
    return req


def reissue_request(
    match_id: str, seat: int | None, request_id: str | None
) -> match_service_pb2.ReissueCredentialRequest:
    """A re-issue of ``seat``'s credential (``None``: the spectators'), with a request id so a
    retry returns the same token."""
    req = match_service_pb2.ReissueCredentialRequest(
        match_id=match_id, request_id=request_id or new_request_id()
    )
    if seat is None:
        req.spectators = True
    else:
        req.seat = seat
    return req


def reissued(resp: match_service_pb2.ReissueCredentialResponse) -> ReissuedCredential:
    return ReissuedCredential(
        resp.token,
        resp.seat if resp.HasField("seat") else None,
        resp.version,
        resp.expire_time.ToMilliseconds() / 1000 if resp.HasField("expire_time") else None,
    )


def match_view(resp: match_service_pb2.GetMatchResponse) -> MatchView:
    info = codec.match_from_proto(resp.match)
    return MatchView(info, Observation.from_view(codec.observation_from_proto(resp.observation), info.rules))


@dataclass
class StreamState:
    """Resume point and de-duplication of one logical stream across reconnects."""

    match_id: str
    last_version: int | None
    rules: te.RuleSet
    tracker: HandTracker = field(default_factory=HandTracker)
    reconnects: int = 0
    duplicates_dropped: int = 0

    def request(self) -> match_service_pb2.StreamObservationsRequest:
        req = match_service_pb2.StreamObservationsRequest(match_id=self.match_id)
        if self.last_version is not None:
            req.from_version = self.last_version
        return req

    def accept(self, msg: match_service_pb2.StreamObservationsResponse) -> Update | None:
        """The update to hand to the caller, or ``None`` (heartbeat, duplicate)."""
        if msg.WhichOneof("message") != "update":
            return None
        return self.accept_update(msg.update)

    def accept_result(self, resp: match_service_pb2.SubmitActionResponse) -> Update | None:
        """An action's result on the player connection, when it stands for this stream's
        update (its first event directly follows the last version seen and its observation
        is at its version; the server then sends no update for it), else ``None``."""
        last = self.last_version
        events = resp.events
        if last is None or not events or events[0].version != last + 1:
            return None
        if resp.observation.version != resp.version:
            return None
        return self.accept_update(resp)

    def accept_update(self, u: Any) -> Update | None:
        """An ``ObservationUpdate`` (or a ``SubmitActionResponse`` standing for one)."""
        last = self.last_version
        snapshot = bool(getattr(u, "snapshot", False))
        if snapshot:
            if last is not None and u.version <= last:
                self.duplicates_dropped += 1
                return None
            self.tracker.lost()
            events: list[Event] = []
        else:
            if last is not None and u.version <= last:
                self.duplicates_dropped += 1
                return None
            events = [codec.event_from_proto(e) for e in u.events if last is None or e.version > last]
            self.duplicates_dropped += len(u.events) - len(events)
            if last is not None and events and events[0].version != last + 1:
                self.tracker.lost()  # a gap (should not happen): history unknown until next hand
            self.tracker.add(events)
        self.last_version = u.version
        obs = Observation.from_view(
            codec.observation_from_proto(u.observation), self.rules, self.tracker.events
        )
        return Update(u.version, tuple(events), obs, snapshot)
