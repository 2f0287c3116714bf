"""What a viewer receives: events (their payloads converted by field plans) and
observations (with the rules' summary and the clock)."""

from __future__ import annotations

import typing
from functools import lru_cache

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

import truco_engine as te
from truco_contract.codec import wire
from truco_contract.codec.actions import action_bytes, action_from_proto
from truco_contract.codec.plans import Plan, message_class, plan_for, time_bytes
from truco_contract.codec.scalars import enum_map, seconds_of, set_time, timestamp
from truco_contract.pb import event_pb2, game_pb2, match_pb2, observation_pb2
from truco_match.events import SERVICE_PAYLOADS, EventView, MatchStatus, Payload, UnknownPayload
from truco_match.views import ClockView, SeatView

# ---------------------------------------------------------------------------- events
_EVENT_DESC = event_pb2.Event.DESCRIPTOR
_PAYLOAD_CLASSES: dict[str, type] = {**{k.value: v for k, v in te.PAYLOADS.items()}, **SERVICE_PAYLOADS}
PAYLOAD_PLANS: dict[str, Plan] = {
    kind: plan_for(cls, message_class(_EVENT_DESC.fields_by_name[kind]))
    for kind, cls in _PAYLOAD_CLASSES.items()
}
"""One plan per payload kind, keyed by the ``oneof payload`` case name (= the kind)."""
_unplanned = {f.name for f in _EVENT_DESC.oneofs_by_name["payload"].fields} - set(PAYLOAD_PLANS)
if _unplanned:  # pragma: no cover - a payload message without a payload class
    raise TypeError(f"truco.v1.Event payloads without a payload class: {sorted(_unplanned)}")


def payload_to_proto(payload: Payload) -> Message:
    """A payload as its ``truco.v1`` message."""
    return PAYLOAD_PLANS[str(payload.kind)].encode(payload)


def event_to_proto(event: EventView) -> event_pb2.Event:
    """One event as ``truco.v1.Event`` (its payload in the ``oneof`` case named by its kind)."""
    if isinstance(event.payload, UnknownPayload):
        raise ValueError(f"cannot encode an unknown payload ({event.payload.kind})")
    kind = str(event.payload.kind)
    msg = event_pb2.Event(version=event.version, kind=kind)
    getattr(msg, kind).CopyFrom(payload_to_proto(event.payload))
    if event.time is not None:
        set_time(msg.time, event.time)
    return msg


_T_EVENT_VERSION = wire.tag(_EVENT_DESC, "version")
_T_EVENT_KIND = wire.tag(_EVENT_DESC, "kind")
_T_EVENT_TIME = wire.tag(_EVENT_DESC, "time")
_T_PAYLOAD: dict[str, bytes] = {kind: wire.tag(_EVENT_DESC, kind) for kind in PAYLOAD_PLANS}


def event_bytes(event: EventView) -> bytes:
    """:func:`event_to_proto` serialized, written directly (the same bytes)."""
    payload = event.payload
    if isinstance(payload, UnknownPayload):
        raise ValueError(f"cannot encode an unknown payload ({payload.kind})")
    kind = str(payload.kind)
    parts: list[bytes] = []
    wire.put_int(parts, _T_EVENT_VERSION, event.version)
    wire.put_str(parts, _T_EVENT_KIND, kind)
    if event.time is not None:
        wire.put_bytes(parts, _T_EVENT_TIME, time_bytes(event.time))
    wire.put_bytes(parts, _T_PAYLOAD[kind], PAYLOAD_PLANS[kind].to_bytes(payload))
    return b"".join(parts)


def event_from_proto(msg: event_pb2.Event, where: str = "event") -> EventView:
    """``truco.v1.Event`` as an :class:`EventView` (a payload this build does not know
    becomes :class:`UnknownPayload`)."""
    case = msg.WhichOneof("payload")
    time = seconds_of(msg.time) if msg.HasField("time") else None
    if case is None:
        return EventView(msg.version, UnknownPayload(msg.kind), time)
    payload = PAYLOAD_PLANS[case].decode(getattr(msg, case), f"{where}.{case}")
    return EventView(msg.version, payload, time)


# ----------------------------------------------------------------------- observations
_PHASE = enum_map(te.Phase, observation_pb2.Phase.DESCRIPTOR)
_FAMILY = enum_map(te.CallFamily, game_pb2.CallFamily.DESCRIPTOR)
_SPECIAL = enum_map(te.Special, game_pb2.Special.DESCRIPTOR)
_STATUS = enum_map(MatchStatus, match_pb2.MatchState.DESCRIPTOR)


_SUMMARIES: dict[int, tuple[te.RuleSet, observation_pb2.RulesSummary, bytes]] = {}
""":func:`rules_summary` and its bytes by the rule set's identity (a match keeps one rule set
object, and hashing one -- all its fields -- for the cache by value costs more than the copy)."""


def _summary(rules: te.RuleSet) -> tuple[te.RuleSet, observation_pb2.RulesSummary, bytes]:
    hit = _SUMMARIES.get(id(rules))
    if hit is not None and hit[0] is rules:  # the entry holds its rule set: ids are not reused
        return hit
    made = _rules_summary(rules)
    if len(_SUMMARIES) >= 1024:
        _SUMMARIES.clear()
    entry = _SUMMARIES[id(rules)] = (rules, made, made.SerializeToString())
    return entry


def rules_summary(rules: te.RuleSet) -> observation_pb2.RulesSummary:
    """The display summary of a rule set (cached per rule set; do not modify it)."""
    return _summary(rules)[1]


@lru_cache(maxsize=1024)
def _rules_summary(rules: te.RuleSet) -> observation_pb2.RulesSummary:
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


_OBS = observation_pb2.Observation.DESCRIPTOR
_T_VERSION = wire.tag(_OBS, "version")
_T_MATCH_STATE = wire.tag(_OBS, "match_state")
_T_SEAT = wire.tag(_OBS, "seat")
_T_TEAM = wire.tag(_OBS, "team")
_T_PHASE = wire.tag(_OBS, "phase")
_T_GAME_NUMBER = wire.tag(_OBS, "game_number")
_T_HAND_NUMBER = wire.tag(_OBS, "hand_number")
_T_DEALER = wire.tag(_OBS, "dealer")
_T_MANO = wire.tag(_OBS, "mano")
_T_TURN_UP = wire.tag(_OBS, "turn_up")
_T_SPECIAL = wire.tag(_OBS, "special")
_T_HAND = wire.tag(_OBS, "hand")
_T_HIDDEN_HAND = wire.tag(_OBS, "hidden_hand")
_T_HAND_SIZES = wire.tag(_OBS, "hand_sizes")
_T_REVEALED = wire.tag(_OBS, "revealed")
_T_TRICKS = wire.tag(_OBS, "tricks")
_T_SEAT_TEAMS = wire.tag(_OBS, "seat_teams")
_T_SCORES = wire.tag(_OBS, "scores")
_T_GAMES_WON = wire.tag(_OBS, "games_won")
_T_HAND_VALUE = wire.tag(_OBS, "hand_value")
_T_PENDING = wire.tag(_OBS, "pending")
_T_AWAITED = wire.tag(_OBS, "awaited")
_T_LEGAL_ACTIONS = wire.tag(_OBS, "legal_actions")
_T_DECISION = wire.tag(_OBS, "decision")
_T_WINNER_TEAM = wire.tag(_OBS, "winner_team")
_T_CARANCHO = wire.tag(_OBS, "carancho")
_T_HEAD_TO_HEAD = wire.tag(_OBS, "head_to_head")
_T_RULES = wire.tag(_OBS, "rules")
_T_CLOCK = wire.tag(_OBS, "clock")
_T_NOT_JOINED = wire.tag(_OBS, "not_joined")
_T_JOINED = wire.tag(_OBS, "joined")
_T_HAND_WINS_GAME = wire.tag(_OBS, "hand_wins_game")
_T_TAKEN_OVER = wire.tag(_OBS, "taken_over")
_ENTRY = typing.cast(Descriptor, _OBS.fields_by_name["revealed"].message_type)
_T_ENTRY_KEY = wire.tag(_ENTRY, "key")
_T_ENTRY_VALUE = wire.tag(_ENTRY, "value")
_T_CARDS = wire.tag(game_pb2.CardList.DESCRIPTOR, "cards")
_TRICK = game_pb2.Trick.DESCRIPTOR
_T_TRICK_LEADER = wire.tag(_TRICK, "leader")
_T_TRICK_PLAYS = wire.tag(_TRICK, "plays")
_T_TRICK_WINNER_SEAT = wire.tag(_TRICK, "winner_seat")
_T_TRICK_WINNER_TEAM = wire.tag(_TRICK, "winner_team")
_T_TRICK_TIED = wire.tag(_TRICK, "tied")
_PLAY = game_pb2.Play.DESCRIPTOR
_T_PLAY_SEAT = wire.tag(_PLAY, "seat")
_T_PLAY_CARD = wire.tag(_PLAY, "card")
_T_PLAY_FACE_DOWN = wire.tag(_PLAY, "face_down")
_PENDING = observation_pb2.PendingCall.DESCRIPTOR
_T_PENDING_FAMILY = wire.tag(_PENDING, "family")
_T_PENDING_NAME = wire.tag(_PENDING, "name")
_T_PENDING_CALLER = wire.tag(_PENDING, "caller")
_T_PENDING_RESPONDER = wire.tag(_PENDING, "responder")
_T_PENDING_ACCEPTED = wire.tag(_PENDING, "value_if_accepted")
_T_PENDING_DECLINED = wire.tag(_PENDING, "value_if_declined")


def _trick_bytes(t: te.TrickView) -> bytes:
    parts: list[bytes] = []
    wire.put_int(parts, _T_TRICK_LEADER, t.leader)
    for play in t.plays:
        p: list[bytes] = []
        wire.put_int(p, _T_PLAY_SEAT, play.seat)
        wire.put_str(p, _T_PLAY_CARD, play.card or "")
        wire.put_bool(p, _T_PLAY_FACE_DOWN, play.face_down)
        wire.put_bytes(parts, _T_TRICK_PLAYS, b"".join(p))
    wire.put_opt(parts, _T_TRICK_WINNER_SEAT, t.winner_seat)
    wire.put_opt(parts, _T_TRICK_WINNER_TEAM, t.winner_team)
    wire.put_bool(parts, _T_TRICK_TIED, t.tied)
    return b"".join(parts)


def _pending_bytes(p: te.PendingCall) -> bytes:
    parts: list[bytes] = []
    wire.put_int(parts, _T_PENDING_FAMILY, _FAMILY.encode(p.family))
    wire.put_str(parts, _T_PENDING_NAME, p.name)
    wire.put_opt(parts, _T_PENDING_CALLER, p.caller)
    wire.put_int(parts, _T_PENDING_RESPONDER, p.responder)
    wire.put_int(parts, _T_PENDING_ACCEPTED, p.value_if_accepted)
    wire.put_int(parts, _T_PENDING_DECLINED, p.value_if_declined)
    return b"".join(parts)


def observation_bytes(view: SeatView, rules: te.RuleSet) -> bytes:
    """A viewer's observation at a version, serialized as ``truco.v1.Observation`` (written
    directly: :mod:`.wire`)."""
    o = view.observation
    parts: list[bytes] = []
    wire.put_int(parts, _T_VERSION, view.version)
    wire.put_int(parts, _T_MATCH_STATE, _STATUS.encode(view.match_state))
    wire.put_opt(parts, _T_SEAT, o.seat)
    wire.put_opt(parts, _T_TEAM, o.team)
    wire.put_int(parts, _T_PHASE, _PHASE.encode(o.phase))
    wire.put_int(parts, _T_GAME_NUMBER, o.game_number)
    wire.put_int(parts, _T_HAND_NUMBER, o.hand_number)
    wire.put_int(parts, _T_DEALER, o.dealer)
    wire.put_opt(parts, _T_MANO, o.mano)
    wire.put_str(parts, _T_TURN_UP, o.turn_up or "")
    wire.put_int(parts, _T_SPECIAL, _SPECIAL.encode(o.special))
    wire.put_strs(parts, _T_HAND, o.hand)
    wire.put_int(parts, _T_HIDDEN_HAND, o.hidden_hand)
    wire.put_packed(parts, _T_HAND_SIZES, o.hand_sizes)
    for seat, cards in o.revealed.items():
        listed: list[bytes] = []
        wire.put_strs(listed, _T_CARDS, cards)
        entry: list[bytes] = []
        wire.put_opt(entry, _T_ENTRY_KEY, seat)
        wire.put_bytes(entry, _T_ENTRY_VALUE, b"".join(listed))
        wire.put_bytes(parts, _T_REVEALED, b"".join(entry))
    for t in o.tricks:
        wire.put_bytes(parts, _T_TRICKS, _trick_bytes(t))
    wire.put_packed(parts, _T_SEAT_TEAMS, o.seat_teams)
    wire.put_packed(parts, _T_SCORES, o.scores)
    wire.put_packed(parts, _T_GAMES_WON, o.games_won)
    wire.put_int(parts, _T_HAND_VALUE, o.hand_value)
    if o.pending is not None:
        wire.put_bytes(parts, _T_PENDING, _pending_bytes(o.pending))
    wire.put_packed(parts, _T_AWAITED, o.awaited)
    for a in o.legal_actions:
        wire.put_bytes(parts, _T_LEGAL_ACTIONS, action_bytes(a))
    wire.put_int(parts, _T_DECISION, o.decision)
    wire.put_opt(parts, _T_WINNER_TEAM, o.winner_team)
    wire.put_opt(parts, _T_CARANCHO, o.carancho)
    wire.put_packed(parts, _T_HEAD_TO_HEAD, o.head_to_head or ())
    wire.put_bytes(parts, _T_RULES, _summary(rules)[2])
    if view.clock is not None:
        wire.put_bytes(parts, _T_CLOCK, clock_to_proto(view.clock).SerializeToString())
    wire.put_packed(parts, _T_NOT_JOINED, view.not_joined)
    wire.put_bool(parts, _T_JOINED, view.joined)
    wire.put_bool(parts, _T_HAND_WINS_GAME, o.hand_wins_game)
    wire.put_packed(parts, _T_TAKEN_OVER, view.taken_over)
    return b"".join(parts)


def observation_to_proto(view: SeatView, rules: te.RuleSet) -> observation_pb2.Observation:
    """A viewer's observation at a version as ``truco.v1.Observation`` (parsed from
    :func:`observation_bytes`: about half the cost of setting its fields one by one)."""
    return observation_pb2.Observation.FromString(observation_bytes(view, rules))


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
    return SeatView(obs, msg.version, status, clock, tuple(msg.not_joined), msg.joined, tuple(msg.taken_over))


def clock_to_proto(c: ClockView) -> observation_pb2.Clock:
    """A clock as ``truco.v1.Clock``."""
    m = observation_pb2.Clock(
        seat=c.seat,
        remaining_ms=c.remaining_ms,
        server_time=timestamp(c.server_time),
        bank_ms=c.bank_ms,
        expiries=c.expiries,
    )
    if c.deadline is not None:
        set_time(m.deadline, c.deadline)
    return m


def clock_from_proto(m: observation_pb2.Clock) -> ClockView:
    """Inverse of :func:`clock_to_proto`."""
    return ClockView(
        seat=_opt(m, "seat"),
        deadline=seconds_of(m.deadline) if m.HasField("deadline") else None,
        remaining_ms=m.remaining_ms,
        server_time=seconds_of(m.server_time),
        bank_ms=tuple(m.bank_ms),
        expiries=tuple(m.expiries),
    )
