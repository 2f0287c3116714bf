"""What a viewer receives: events (their payloads converted by field plans) and
observations (with the rules' summary and the clock)."""

from __future__ import annotations

from functools import lru_cache

from google.protobuf.message import Message

import truco_engine as te
from truco_contract.codec.actions import action_from_proto, action_to_proto
from truco_contract.codec.plans import Plan, message_class, plan_for
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


_SUMMARIES: dict[int, tuple[te.RuleSet, observation_pb2.RulesSummary]] = {}
""":func:`rules_summary` by the rule set's identity (a match keeps one rule set object, and
hashing one -- all its fields -- for the cache by value costs more than the copy)."""


def rules_summary(rules: te.RuleSet) -> observation_pb2.RulesSummary:
    """The display summary of a rule set (cached per rule set; do not modify it)."""
    hit = _SUMMARIES.get(id(rules))
    if hit is not None and hit[0] is rules:  # the entry holds its rule set: ids are not reused
        return hit[1]
    made = _rules_summary(rules)
    if len(_SUMMARIES) >= 1024:
        _SUMMARIES.clear()
    _SUMMARIES[id(rules)] = (rules, made)
    return made


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
    add_trick = msg.tricks.add  # in place: a nested message given to a constructor is copied
    for t in o.tricks:
        add_play = add_trick(
            leader=t.leader, winner_seat=t.winner_seat, winner_team=t.winner_team, tied=t.tied
        ).plays.add
        for play in t.plays:
            add_play(seat=play.seat, card=play.card or "", face_down=play.face_down)
    for seat, cards in o.revealed.items():
        msg.revealed[seat].cards.extend(cards)
    if view.clock is not None:
        msg.clock.CopyFrom(clock_to_proto(view.clock))
    msg.not_joined.extend(view.not_joined)
    msg.taken_over.extend(view.taken_over)
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
