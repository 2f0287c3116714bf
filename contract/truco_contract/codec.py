"""The one codec between the engine's and the contract's types and ``truco.v1`` messages.

Both directions live here, and decoding is strict: a message that does not describe a valid
value raises :class:`DecodeError` naming the field. Event payloads and their messages have
the same field names, so they are converted by a plan built once per payload class from the
dataclass fields and the message descriptor (a field that exists on one side only fails at
import, not on the wire). Conventions: ``None`` is an unset ``optional`` field, an empty
string, or an enum's ``*_UNSPECIFIED``; a tuple is a ``repeated`` field; a ``StrEnum``
member ``X`` is the proto enum value ``<ENUM_NAME>_X``.

Round trips are exact: ``decode(encode(x)) == x`` for every action, payload, observation and
match (tests/contract checks them over random matches of every preset).
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

import truco_engine as te
from truco_contract.pb import (
    action_pb2,
    event_pb2,
    game_pb2,
    match_pb2,
    match_service_pb2,
    observation_pb2,
    operator_service_pb2,
)
from truco_match.create import MatchSpec, SeatSpec
from truco_match.events import (
    SERVICE_PAYLOADS,
    EventView,
    Fairness,
    MatchCancelled,
    MatchCreated,
    MatchRevealed,
    MatchStatus,
    Payload,
    RevealedDeal,
    SeatInfo,
    SeatKind,
    UnknownPayload,
)
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.matches import MatchInfo, MatchResult
from truco_match.operator_events import OperatorEvent, OperatorEventType
from truco_match.records import FORMAT as RECORD_FORMAT
from truco_match.records import MatchRecord, RecordedHand, RecordStep
from truco_match.views import ClockView, SeatView


class DecodeError(ValueError):
    """A message that does not describe a valid value; ``field`` is the path of the culprit
    (``action.call_envido.kind``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# ------------------------------------------------------------------------------ actions
ENVIDO_KINDS: dict[str, Any] = {
    "envido": action_pb2.ENVIDO_KIND_ENVIDO,
    "real_envido": action_pb2.ENVIDO_KIND_REAL_ENVIDO,
    "falta_envido": action_pb2.ENVIDO_KIND_FALTA_ENVIDO,
}
FLOR_KINDS: dict[str, Any] = {
    "flor": action_pb2.FLOR_KIND_FLOR,
    "contraflor": action_pb2.FLOR_KIND_CONTRAFLOR,
    "contraflor_al_resto": action_pb2.FLOR_KIND_CONTRAFLOR_AL_RESTO,
}
_ENVIDO_NAMES = {v: k for k, v in ENVIDO_KINDS.items()}
_FLOR_NAMES = {v: k for k, v in FLOR_KINDS.items()}
_SIMPLE = {
    "call_truco": "truco",
    "accept": "accept",
    "decline": "decline",
    "fold": "fold",
    "resign": "resign",
}
_SIMPLE_PROTO: dict[str, Callable[[], action_pb2.Action]] = {
    "truco": lambda: action_pb2.Action(call_truco=action_pb2.CallTruco()),
    "accept": lambda: action_pb2.Action(accept=action_pb2.Accept()),
    "decline": lambda: action_pb2.Action(decline=action_pb2.Decline()),
    "fold": lambda: action_pb2.Action(fold=action_pb2.Fold()),
    "resign": lambda: action_pb2.Action(resign=action_pb2.Resign()),
}
MAX_CARD_CODE = 8
"""Longest card code accepted on the wire (the longest real one, ``12c``, has 3 characters)."""


@lru_cache(maxsize=4096)
def action_to_proto(action: te.Action) -> action_pb2.Action:
    """An engine action as ``truco.v1.Action`` (cached: a match offers few distinct actions;
    callers must not modify the returned message)."""
    k = action.kind
    if k == "play":
        if action.slot is not None:
            return action_pb2.Action(play_card=action_pb2.PlayCard(slot=action.slot))
        return action_pb2.Action(
            play_card=action_pb2.PlayCard(card=action.card or "", face_down=action.face_down)
        )
    if k in _SIMPLE_PROTO:
        return _SIMPLE_PROTO[k]()
    if k in ENVIDO_KINDS:
        return action_pb2.Action(call_envido=action_pb2.CallEnvido(kind=ENVIDO_KINDS[k]))
    if k in FLOR_KINDS:
        return action_pb2.Action(call_flor=action_pb2.CallFlor(kind=FLOR_KINDS[k]))
    if k == "discard":
        return action_pb2.Action(discard=action_pb2.Discard(card=action.card or ""))
    raise ValueError(f"unknown action kind {k!r}")


def _card(code: str, where: str) -> str:
    if not code:
        raise DecodeError(where, "a card code is required")
    if len(code) > MAX_CARD_CODE or not code.isascii() or not code.isalnum():
        raise DecodeError(where, f"not a card code: {code[:MAX_CARD_CODE]!r}")
    return code


def action_from_proto(msg: action_pb2.Action, where: str = "action", *, hidden: bool = False) -> te.Action:
    """``truco.v1.Action`` as an engine action. Raises :class:`DecodeError` when no action is
    set or a field is malformed (whether the action is legal is the engine's business).
    ``hidden``: a face-down play or a discard may come without its card (a record seen
    during the match by another seat)."""
    which = msg.WhichOneof("action")
    if which is None:
        raise DecodeError(
            where, "no action given: set one of " + ", ".join(action_pb2.Action.DESCRIPTOR.fields_by_name)
        )
    if which == "play_card":
        pc = msg.play_card
        if pc.HasField("slot"):
            if pc.card or pc.face_down:
                raise DecodeError(f"{where}.play_card", "give either a card or a slot, not both")
            if pc.slot < 0:
                raise DecodeError(f"{where}.play_card.slot", "a slot is 0 or more")
            return te.Action("play", slot=pc.slot)
        if hidden and pc.face_down and not pc.card:
            return te.Action("play", None, face_down=True)
        return te.Action("play", _card(pc.card, f"{where}.play_card.card"), face_down=pc.face_down)
    if which == "discard":
        if hidden and not msg.discard.card:
            return te.Action("discard", None)
        return te.Action("discard", _card(msg.discard.card, f"{where}.discard.card"))
    if which == "call_envido":
        name = _ENVIDO_NAMES.get(msg.call_envido.kind)
        if name is None:
            raise DecodeError(f"{where}.call_envido.kind", "one of ENVIDO, REAL_ENVIDO, FALTA_ENVIDO")
        return te.Action(name)
    if which == "call_flor":
        name = _FLOR_NAMES.get(msg.call_flor.kind)
        if name is None:
            raise DecodeError(f"{where}.call_flor.kind", "one of FLOR, CONTRAFLOR, CONTRAFLOR_AL_RESTO")
        return te.Action(name)
    return te.Action(_SIMPLE[which])


# ----------------------------------------------------------------------------- enums
def _upper_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


class _EnumMap:
    """A ``StrEnum`` and a proto enum whose values are ``<PROTO_ENUM>_<MEMBER>``."""

    def __init__(self, py: type[StrEnum], proto: EnumDescriptor) -> None:
        prefix = _upper_snake(proto.name) + "_"
        self.to_proto: dict[Any, int] = {}
        for member in py:
            value = proto.values_by_name.get(prefix + member.name)
            if value is None:
                raise TypeError(f"{proto.full_name} has no value {prefix + member.name} for {member!r}")
            self.to_proto[member] = value.number
        self.from_proto = {v: k for k, v in self.to_proto.items()}
        self.name = proto.full_name

    def encode(self, value: Any) -> Any:  # a proto enum value (mypy-protobuf's ValueType)
        return 0 if value is None else self.to_proto[value]

    def decode(self, number: int, where: str, optional: bool) -> Any:
        if number == 0 and optional:
            return None
        try:
            return self.from_proto[number]
        except KeyError:
            raise DecodeError(where, f"unknown {self.name} value {number}") from None


_ENUMS: dict[tuple[type, str], _EnumMap] = {}


def _enum(py: type[StrEnum], proto: EnumDescriptor) -> _EnumMap:
    key = (py, proto.full_name)
    if key not in _ENUMS:
        _ENUMS[key] = _EnumMap(py, proto)
    return _ENUMS[key]


# ------------------------------------------------------------ payloads by field plans
Encode = Callable[[Any], Any]
Decode = Callable[[Message, str], Any]


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to convert one dataclass to and from one message, field by field."""

    cls: type
    message: type[Message]
    fields: tuple[tuple[str, Encode, Decode], ...]

    def encode(self, value: Any) -> Message:
        return self.message(**{name: enc(getattr(value, name)) for name, enc, _ in self.fields})

    def decode(self, msg: Message, where: str) -> Any:
        return self.cls(**{name: dec(msg, f"{where}.{name}") for name, _, dec in self.fields})


def _same(value: Any) -> Any:
    return value


def _field_plan(name: str, hint: Any, fd: FieldDescriptor, owner: str) -> tuple[Encode, Decode]:
    args = typing.get_args(hint)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), hint) if optional else hint
    repeated = fd.is_repeated
    if repeated:
        item = typing.get_args(base)[0] if typing.get_args(base) else Any
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            sub = _plan_for(item, _message_class(fd))

            def enc_list(value: Any) -> Any:
                return [sub.encode(v) for v in value]

            def dec_list(msg: Message, where: str) -> Any:
                return tuple(sub.decode(v, f"{where}[{i}]") for i, v in enumerate(getattr(msg, name)))

            return enc_list, dec_list
        return _same, lambda msg, where: tuple(getattr(msg, name))
    if fd.type == FieldDescriptor.TYPE_ENUM:
        em = _enum(base, typing.cast(EnumDescriptor, fd.enum_type))
        return em.encode, lambda msg, where: em.decode(getattr(msg, name), where, optional)
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return _message_field_plan(name, base, optional, fd, owner)
    if optional:
        if fd.has_presence:
            return _same, lambda msg, where: getattr(msg, name) if msg.HasField(name) else None
        if fd.type == FieldDescriptor.TYPE_STRING:
            return _same, lambda msg, where: getattr(msg, name) or None
        raise TypeError(f"{owner}.{name}: None needs an optional or string field")
    return _same, lambda msg, where: getattr(msg, name)


def _message_field_plan(
    name: str, base: Any, optional: bool, fd: FieldDescriptor, owner: str
) -> tuple[Encode, Decode]:
    """A singular message field: a nested dataclass, an engine action, or a ``Duration`` held
    as whole milliseconds."""
    full_name = fd.message_type.full_name if fd.message_type is not None else ""
    if base is te.Action:
        enc: Encode = lambda value: None if value is None else action_to_proto(value)  # noqa: E731

        def dec_action(msg: Message, where: str) -> Any:
            return action_from_proto(getattr(msg, name), where) if msg.HasField(name) else None

        return enc, dec_action
    if full_name == "google.protobuf.Timestamp" and base is float:

        def enc_time(value: Any) -> Any:
            return None if value is None else _timestamp(value)

        def dec_time(msg: Message, where: str) -> Any:
            if not msg.HasField(name):
                return None if optional else 0.0
            return _seconds(getattr(msg, name))

        return enc_time, dec_time
    if full_name == "google.protobuf.Duration" and base is int:

        def enc_ms(value: Any) -> Any:
            if value is None:
                return None
            return duration_pb2.Duration(seconds=value // 1000, nanos=(value % 1000) * 1_000_000)

        def dec_ms(msg: Message, where: str) -> Any:
            if not msg.HasField(name):
                return None if optional else 0
            d = getattr(msg, name)
            return d.seconds * 1000 + d.nanos // 1_000_000

        return enc_ms, dec_ms
    if isinstance(base, type) and dataclasses.is_dataclass(base):
        sub = _plan_for(base, _message_class(fd))

        def enc_sub(value: Any) -> Any:
            return None if value is None else sub.encode(value)

        def dec_sub(msg: Message, where: str) -> Any:
            if not msg.HasField(name):
                if optional:
                    return None
                raise DecodeError(where, "required")
            return sub.decode(getattr(msg, name), where)

        return enc_sub, dec_sub
    raise TypeError(f"{owner}.{name}: no plan for a {full_name} field held as {base!r}")


_PLANS: dict[type, _Plan] = {}


def _message_class(fd: FieldDescriptor) -> type[Message]:
    """The generated class of a message-typed field."""
    cls: type[Message] = fd.message_type._concrete_class  # type: ignore[union-attr]
    return cls


def _plan_for(cls: Any, message: type[Message]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    desc = typing.cast(Descriptor, message.DESCRIPTOR)
    hints = typing.get_type_hints(cls)
    fields = []
    names = [f.name for f in dataclasses.fields(cls)]
    missing = sorted(set(desc.fields_by_name) - set(names))
    if missing:
        raise TypeError(f"{desc.full_name} has fields {missing} that {cls.__name__} lacks")
    for name in names:
        fd = desc.fields_by_name.get(name)
        if fd is None:
            raise TypeError(f"{cls.__name__}.{name} has no field in {desc.full_name}")
        enc, dec = _field_plan(name, hints[name], fd, cls.__name__)
        fields.append((name, enc, dec))
    plan = _Plan(cls, message, tuple(fields))
    _PLANS[cls] = plan
    return plan


_EVENT_DESC = event_pb2.Event.DESCRIPTOR
_PAYLOAD_CLASSES: dict[str, type] = {**{k.value: v for k, v in te.PAYLOADS.items()}, **SERVICE_PAYLOADS}
PAYLOAD_PLANS: dict[str, _Plan] = {
    kind: _plan_for(cls, _message_class(_EVENT_DESC.fields_by_name[kind]))
    for kind, cls in _PAYLOAD_CLASSES.items()
}
"""One plan per payload kind, keyed by the ``oneof payload`` case name (= the kind)."""
_unplanned = {f.name for f in _EVENT_DESC.oneofs_by_name["payload"].fields} - set(PAYLOAD_PLANS)
if _unplanned:  # pragma: no cover - a payload message without a payload class
    raise TypeError(f"truco.v1.Event payloads without a payload class: {sorted(_unplanned)}")


def payload_to_proto(payload: Payload) -> Message:
    """A payload as its ``truco.v1`` message."""
    return PAYLOAD_PLANS[str(payload.kind)].encode(payload)


def _timestamp(seconds: float) -> timestamp_pb2.Timestamp:
    whole = math.floor(seconds)
    nanos = round((seconds - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    return timestamp_pb2.Timestamp(seconds=whole, nanos=nanos)


def _seconds(ts: timestamp_pb2.Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def event_to_proto(event: EventView) -> event_pb2.Event:
    """One event as ``truco.v1.Event`` (its payload in the ``oneof`` case named by its kind)."""
    if isinstance(event.payload, UnknownPayload):
        raise ValueError(f"cannot encode an unknown payload ({event.payload.kind})")
    kind = str(event.payload.kind)
    msg = event_pb2.Event(version=event.version, kind=kind)
    getattr(msg, kind).CopyFrom(payload_to_proto(event.payload))
    if event.time is not None:
        msg.time.CopyFrom(_timestamp(event.time))
    return msg


def event_from_proto(msg: event_pb2.Event, where: str = "event") -> EventView:
    """``truco.v1.Event`` as an :class:`EventView` (a payload this build does not know
    becomes :class:`UnknownPayload`)."""
    case = msg.WhichOneof("payload")
    time = _seconds(msg.time) if msg.HasField("time") else None
    if case is None:
        return EventView(msg.version, UnknownPayload(msg.kind), time)
    payload = PAYLOAD_PLANS[case].decode(getattr(msg, case), f"{where}.{case}")
    return EventView(msg.version, payload, time)


# ----------------------------------------------------------------------- observations
_PHASE = _enum(te.Phase, observation_pb2.Phase.DESCRIPTOR)
_FAMILY = _enum(te.CallFamily, game_pb2.CallFamily.DESCRIPTOR)
_SPECIAL = _enum(te.Special, game_pb2.Special.DESCRIPTOR)
_STATUS = _enum(MatchStatus, match_pb2.MatchState.DESCRIPTOR)


@lru_cache(maxsize=1024)
def rules_summary(rules: te.RuleSet) -> observation_pb2.RulesSummary:
    """The display summary of a rule set (cached per rule set; do not modify it)."""
    return observation_pb2.RulesSummary(
        preset=rules.name,
        players=rules.players,
        target_points=rules.target_points,
        games_to_win=rules.games_to_win,
        deck_style=observation_pb2.DECK_STYLE_FRENCH
        if rules.deck == "french40"
        else observation_pb2.DECK_STYLE_SPANISH,
        envido=rules.envido,
        flor=rules.flor,
        house_rules=te.house_rules(rules),
    )


def observation_to_proto(view: SeatView, rules: te.RuleSet) -> observation_pb2.Observation:
    """A viewer's observation at a version as ``truco.v1.Observation``."""
    o = view.observation
    msg = observation_pb2.Observation(
        version=view.version,
        match_state=_STATUS.encode(view.match_state),
        seat=o.seat,
        team=o.team,
        phase=_PHASE.encode(o.phase),
        game_number=o.game_number,
        hand_number=o.hand_number,
        dealer=o.dealer,
        mano=o.mano,
        turn_up=o.turn_up or "",
        special=_SPECIAL.encode(o.special),
        hand=o.hand,
        hidden_hand=o.hidden_hand,
        hand_sizes=o.hand_sizes,
        tricks=[
            game_pb2.Trick(
                leader=t.leader,
                plays=[game_pb2.Play(seat=p.seat, card=p.card or "", face_down=p.face_down) for p in t.plays],
                winner_seat=t.winner_seat,
                winner_team=t.winner_team,
                tied=t.tied,
            )
            for t in o.tricks
        ],
        seat_teams=o.seat_teams,
        scores=o.scores,
        games_won=o.games_won,
        hand_value=o.hand_value,
        awaited=o.awaited,
        legal_actions=[action_to_proto(a) for a in o.legal_actions],
        decision=o.decision,
        winner_team=o.winner_team,
        carancho=o.carancho,
        head_to_head=o.head_to_head or (),
        hand_wins_game=o.hand_wins_game,
        rules=rules_summary(rules),
    )
    for seat, cards in o.revealed.items():
        msg.revealed[seat].cards.extend(cards)
    if view.clock is not None:
        msg.clock.CopyFrom(clock_to_proto(view.clock))
    msg.not_joined.extend(view.not_joined)
    msg.joined = view.joined
    p = o.pending
    if p is not None:
        msg.pending.CopyFrom(
            observation_pb2.PendingCall(
                family=_FAMILY.encode(p.family),
                name=p.name,
                caller=p.caller,
                responder=p.responder,
                value_if_accepted=p.value_if_accepted,
                value_if_declined=p.value_if_declined,
            )
        )
    return msg


def _opt(msg: Message, name: str) -> int | None:
    value: int = getattr(msg, name)
    return value if msg.HasField(name) else None


def observation_from_proto(msg: observation_pb2.Observation, where: str = "observation") -> SeatView:
    """``truco.v1.Observation`` as the engine's observation with its version and state."""
    phase = _PHASE.decode(msg.phase, f"{where}.phase", optional=False)
    pending = None
    if msg.HasField("pending"):
        pc = msg.pending
        pending = te.PendingCall(
            family=_FAMILY.decode(pc.family, f"{where}.pending.family", optional=False),
            name=pc.name,
            caller=_opt(pc, "caller"),
            responder=pc.responder,
            value_if_accepted=pc.value_if_accepted,
            value_if_declined=pc.value_if_declined,
        )
    obs = te.Observation(
        seat=_opt(msg, "seat"),
        team=_opt(msg, "team"),
        preset=msg.rules.preset,
        players=msg.rules.players,
        phase=phase,
        game_number=msg.game_number,
        hand_number=msg.hand_number,
        dealer=msg.dealer,
        mano=_opt(msg, "mano"),
        turn_up=msg.turn_up or None,
        special=_SPECIAL.decode(msg.special, f"{where}.special", optional=True),
        hand=tuple(msg.hand),
        hidden_hand=msg.hidden_hand,
        hand_sizes=tuple(msg.hand_sizes),
        revealed={seat: tuple(cards.cards) for seat, cards in sorted(msg.revealed.items())},
        tricks=tuple(
            te.TrickView(
                leader=t.leader,
                plays=tuple(
                    te.PlayView(seat=p.seat, card=p.card or None, face_down=p.face_down) for p in t.plays
                ),
                winner_seat=_opt(t, "winner_seat"),
                winner_team=_opt(t, "winner_team"),
                tied=t.tied,
            )
            for t in msg.tricks
        ),
        seat_teams=tuple(msg.seat_teams),
        scores=tuple(msg.scores),
        games_won=tuple(msg.games_won),
        hand_value=msg.hand_value,
        pending=pending,
        awaited=tuple(msg.awaited),
        legal_actions=tuple(
            action_from_proto(a, f"{where}.legal_actions[{i}]") for i, a in enumerate(msg.legal_actions)
        ),
        decision=msg.decision,
        winner_team=_opt(msg, "winner_team"),
        carancho=_opt(msg, "carancho"),
        head_to_head=tuple(msg.head_to_head) or None,
        hand_wins_game=msg.hand_wins_game,
    )
    status = _STATUS.decode(msg.match_state, f"{where}.match_state", optional=False)
    clock = clock_from_proto(msg.clock) if msg.HasField("clock") else None
    return SeatView(obs, msg.version, status, clock, tuple(msg.not_joined), msg.joined)


def clock_to_proto(c: ClockView) -> observation_pb2.Clock:
    """A clock as ``truco.v1.Clock``."""
    m = observation_pb2.Clock(
        seat=c.seat,
        remaining_ms=c.remaining_ms,
        server_time=_timestamp(c.server_time),
        bank_ms=c.bank_ms,
        expiries=c.expiries,
    )
    if c.deadline is not None:
        m.deadline.CopyFrom(_timestamp(c.deadline))
    return m


def clock_from_proto(m: observation_pb2.Clock) -> ClockView:
    """Inverse of :func:`clock_to_proto`."""
    return ClockView(
        seat=_opt(m, "seat"),
        deadline=_seconds(m.deadline) if m.HasField("deadline") else None,
        remaining_ms=m.remaining_ms,
        server_time=_seconds(m.server_time),
        bank_ms=tuple(m.bank_ms),
        expiries=tuple(m.expiries),
    )


# ------------------------------------------------------------------------------- rules
def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def struct_to_dict(s: struct_pb2.Struct) -> dict[str, Any]:
    """A ``Struct`` as plain values (JSON numbers that are whole become ``int``)."""
    return {k: _integral(v) for k, v in MessageToDict(s).items()}


def rules_to_struct(rules: te.RuleSet) -> struct_pb2.Struct:
    """Every field of a rule set as a ``Struct`` (``Match.effective_rules``)."""
    s = struct_pb2.Struct()
    s.update(rules.to_dict())
    return s


def rules_from_struct(s: struct_pb2.Struct, where: str = "effective_rules") -> te.RuleSet:
    """Inverse of :func:`rules_to_struct` (strict: an invalid rule set is a DecodeError)."""
    try:
        return te.RuleSet.from_dict(struct_to_dict(s))
    except (te.TrucoError, TypeError) as exc:
        raise DecodeError(where, str(exc)) from None


# ------------------------------------------------------------------------------ matches
_SEAT = _plan_for(SeatInfo, match_pb2.Seat)


_FAIRNESS = _plan_for(Fairness, match_pb2.Fairness)


def _duration(ms: int) -> duration_pb2.Duration:
    return duration_pb2.Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def _ms(d: duration_pb2.Duration) -> int:
    return d.seconds * 1000 + d.nanos // 1_000_000


def settings_to_proto(labels: Mapping[str, str], lc: Lifecycle) -> match_pb2.MatchSettings:
    """A match's labels and lifecycle settings as ``truco.v1.MatchSettings``."""
    m = match_pb2.MatchSettings(
        labels=dict(labels),
        spectator_delay_actions=lc.spectator_delay,
        show_hands_to_spectators=lc.show_hands,
    )
    for name, value in (
        ("join_window", lc.join_window),
        ("idle_timeout", lc.idle_timeout),
        ("disconnect_grace", lc.disconnect_grace),
        ("credential_ttl", lc.credential_ttl),
    ):
        if value:
            getattr(m, name).CopyFrom(_duration(value))
    tc = lc.time_control
    if tc is not None:
        t = m.time_control
        for name in ("per_decision", "bank", "increment", "first_decision"):
            if getattr(tc, name):
                getattr(t, name).CopyFrom(_duration(getattr(tc, name)))
        t.on_expiry = match_pb2.EXPIRY_ACTION_DEFAULT_MOVE
        t.forfeit_after = tc.forfeit_after
    return m


def lifecycle_from_proto(m: match_pb2.MatchSettings, where: str = "settings") -> Lifecycle:
    """The lifecycle settings of ``truco.v1.MatchSettings`` (``turn_timeout`` is a clock of
    that much per decision). Values are not range-checked here (the service validates them)."""
    tc = None
    if m.HasField("time_control"):
        t = m.time_control
        tc = TimeControl(
            per_decision=_ms(t.per_decision),
            bank=_ms(t.bank),
            increment=_ms(t.increment),
            first_decision=_ms(t.first_decision),
            forfeit_after=t.forfeit_after,
        )
    elif m.HasField("turn_timeout") and (m.turn_timeout.seconds or m.turn_timeout.nanos):
        tc = TimeControl(per_decision=_ms(m.turn_timeout))
    return Lifecycle(
        time_control=tc,
        join_window=_ms(m.join_window),
        idle_timeout=_ms(m.idle_timeout),
        disconnect_grace=_ms(m.disconnect_grace),
        spectator_delay=m.spectator_delay_actions,
        show_hands=m.show_hands_to_spectators,
        credential_ttl=_ms(m.credential_ttl),
    )


_SEAT_KINDS = {
    match_pb2.SEAT_KIND_UNSPECIFIED: SeatKind.HUMAN,
    match_pb2.SEAT_KIND_HUMAN: SeatKind.HUMAN,
    match_pb2.SEAT_KIND_BOT: SeatKind.BOT,
}


def match_spec_from_proto(request: match_service_pb2.CreateMatchRequest) -> MatchSpec:
    """What a ``CreateMatchRequest`` asks for (the preset defaults to ``paulista``); a malformed
    field is a :class:`DecodeError` naming it. Values are range-checked when the match is made."""
    overrides: dict[str, Any] = {}
    if request.HasField("rules") and request.rules.HasField("overrides"):
        overrides = struct_to_dict(request.rules.overrides)
    preset = request.rules.preset if request.HasField("rules") and request.rules.preset else "paulista"
    seats = []
    for i, s in enumerate(request.seats):
        kind = _SEAT_KINDS.get(s.kind)
        if kind is None:
            allowed = "SEAT_KIND_HUMAN, SEAT_KIND_BOT"
            raise DecodeError(f"seats[{i}].kind", f"unknown seat kind {s.kind}; allowed: {allowed}")
        seats.append(SeatSpec(s.display_name, kind))
    settings = request.settings
    tc = settings.time_control
    if settings.HasField("time_control") and tc.on_expiry not in (
        match_pb2.EXPIRY_ACTION_UNSPECIFIED,
        match_pb2.EXPIRY_ACTION_DEFAULT_MOVE,
    ):
        raise DecodeError("settings.time_control.on_expiry", f"unknown expiry action {tc.on_expiry}")
    for name in ("turn_timeout", "join_window", "idle_timeout", "disconnect_grace"):
        if getattr(settings, name).seconds < 0 or getattr(settings, name).nanos < 0:
            raise DecodeError(f"settings.{name}", "must not be negative")
    return MatchSpec(
        preset=preset,
        overrides=overrides,
        players=request.players or None,
        seats=tuple(seats),
        seed=request.seed or None,
        deck_orders=tuple(tuple(d.cards) for d in request.deck_orders),
        labels=dict(settings.labels),
        lifecycle=lifecycle_from_proto(settings),
        client_seed=request.client_seed,
    )


def match_to_proto(info: MatchInfo) -> match_pb2.Match:
    """A match's public description as ``truco.v1.Match``."""
    m = match_pb2.Match(
        match_id=info.match_id,
        state=_STATUS.encode(info.state),
        version=info.version,
        rules=match_pb2.RuleSet(preset=info.rules.name),
        effective_rules=rules_to_struct(info.rules),
        seats=[typing.cast(match_pb2.Seat, _SEAT.encode(s)) for s in info.seats],
        settings=settings_to_proto(info.labels, info.lifecycle),
        create_time=_timestamp(info.created_at),
        update_time=_timestamp(info.updated_at),
    )
    if info.fairness is not None:
        m.fairness.CopyFrom(typing.cast(match_pb2.Fairness, _FAIRNESS.encode(info.fairness)))
    if info.result is not None:
        m.result.CopyFrom(result_to_proto(info.result))
    return m


def result_to_proto(r: MatchResult) -> match_pb2.MatchResult:
    return match_pb2.MatchResult(winner_team=r.winner_team, scores=r.scores, games_won=r.games_won)


def result_from_proto(r: match_pb2.MatchResult) -> MatchResult:
    return MatchResult(winner_team=r.winner_team, scores=tuple(r.scores), games_won=tuple(r.games_won))


def match_from_proto(msg: match_pb2.Match, where: str = "match") -> MatchInfo:
    """Inverse of :func:`match_to_proto`."""
    result = result_from_proto(msg.result) if msg.HasField("result") else None
    return MatchInfo(
        match_id=msg.match_id,
        state=_STATUS.decode(msg.state, f"{where}.state", optional=False),
        rules=rules_from_struct(msg.effective_rules, f"{where}.effective_rules"),
        seats=tuple(_SEAT.decode(s, f"{where}.seats[{i}]") for i, s in enumerate(msg.seats)),
        version=msg.version,
        created_at=_seconds(msg.create_time),
        updated_at=_seconds(msg.update_time),
        labels=dict(msg.settings.labels),
        result=result,
        lifecycle=lifecycle_from_proto(msg.settings, f"{where}.settings"),
        fairness=_FAIRNESS.decode(msg.fairness, f"{where}.fairness") if msg.HasField("fairness") else None,
    )


__all__ = [
    "ENVIDO_KINDS",
    "FLOR_KINDS",
    "DecodeError",
    "MatchCancelled",
    "MatchCreated",
    "MatchInfo",
    "MatchResult",
    "MatchRevealed",
    "RevealedDeal",
    "SeatKind",
    "action_from_proto",
    "action_to_proto",
    "event_from_proto",
    "event_to_proto",
    "match_from_proto",
    "match_to_proto",
    "observation_from_proto",
    "observation_to_proto",
    "payload_to_proto",
    "rules_from_struct",
    "rules_summary",
    "rules_to_struct",
    "struct_to_dict",
]


# ------------------------------------------------------------------------------ records
_STEP_ACTION = "action"


def _step_plan() -> _Plan:
    plan = _plan_for(RecordStep, match_service_pb2.RecordStep)
    fields: list[tuple[str, Encode, Decode]] = []
    for name, enc, dec in plan.fields:
        if name == _STEP_ACTION:

            def dec_hidden(msg: Message, where: str) -> Any:
                field_msg = getattr(msg, _STEP_ACTION)
                return (
                    action_from_proto(field_msg, where, hidden=True) if msg.HasField(_STEP_ACTION) else None
                )

            fields.append((name, enc, dec_hidden))
        else:
            fields.append((name, enc, dec))
    return _Plan(plan.cls, plan.message, tuple(fields))


_STEP = _step_plan()
_HAND = _plan_for(RecordedHand, match_service_pb2.RecordedHand)


def record_to_proto(record: MatchRecord) -> match_service_pb2.MatchRecord:
    """A match's record as ``truco.v1.MatchRecord`` (its JSON mapping is the export file)."""
    m = match_service_pb2.MatchRecord(
        format=record.format,
        match=match_to_proto(record.match),
        hands=[typing.cast(match_service_pb2.RecordedHand, _HAND.encode(h)) for h in record.hands],
        steps=[typing.cast(match_service_pb2.RecordStep, _STEP.encode(st)) for st in record.steps],
    )
    if record.reveal is not None:
        m.reveal.CopyFrom(typing.cast(event_pb2.MatchRevealed, payload_to_proto(record.reveal)))
    return m


def record_from_proto(msg: match_service_pb2.MatchRecord, where: str = "record") -> MatchRecord:
    """Inverse of :func:`record_to_proto` (strict)."""
    if msg.format != RECORD_FORMAT:
        raise DecodeError(f"{where}.format", f"not a match record of format {RECORD_FORMAT!r}")
    reveal = None
    if msg.HasField("reveal"):
        reveal = PAYLOAD_PLANS["match_revealed"].decode(msg.reveal, f"{where}.reveal")
    return MatchRecord(
        match=match_from_proto(msg.match, f"{where}.match"),
        hands=tuple(_HAND.decode(h, f"{where}.hands[{i}]") for i, h in enumerate(msg.hands)),
        steps=tuple(_STEP.decode(st, f"{where}.steps[{i}]") for i, st in enumerate(msg.steps)),
        reveal=reveal,
        format=msg.format,
    )


# ------------------------------------------------------------------------ operator events
def operator_event_to_proto(ev: OperatorEvent) -> operator_service_pb2.OperatorEvent:
    """A lifecycle event as ``truco.v1.OperatorEvent`` (its bytes are also its stored form)."""
    m = operator_service_pb2.OperatorEvent(
        id=ev.id,
        cursor=ev.cursor,
        match_id=ev.match_id,
        type=ev.type.value,
        time=_timestamp(ev.time),
        event=event_to_proto(ev.event),
        labels=dict(ev.labels),
    )
    if ev.result is not None:
        m.result.CopyFrom(result_to_proto(ev.result))
    return m


def operator_event_from_proto(msg: operator_service_pb2.OperatorEvent, where: str = "event") -> OperatorEvent:
    """Inverse of :func:`operator_event_to_proto`."""
    try:
        kind = OperatorEventType(msg.type)
    except ValueError:
        raise DecodeError(f"{where}.type", f"unknown operator event type {msg.type!r}") from None
    return OperatorEvent(
        id=msg.id,
        match_id=msg.match_id,
        type=kind,
        time=_seconds(msg.time),
        event=event_from_proto(msg.event, f"{where}.event"),
        labels=dict(msg.labels),
        result=result_from_proto(msg.result) if msg.HasField("result") else None,
        cursor=msg.cursor,
    )


def webhook_payload(ev: OperatorEvent) -> dict[str, Any]:
    """The body of a webhook delivery (Standard Webhooks: ``type``, ``timestamp``, ``data``;
    ``data`` is the event's proto3 JSON mapping)."""
    msg = operator_event_to_proto(dataclasses.replace(ev, cursor=""))
    return {
        "type": ev.type.value,
        "timestamp": msg.time.ToJsonString(),
        "data": MessageToDict(msg, preserving_proto_field_name=False),
    }
