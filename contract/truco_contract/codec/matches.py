"""Matches: a match's public description (``truco.v1.Match``) with its rule set, settings
and lifecycle, its result, and what a ``CreateMatchRequest`` asks for."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict

import truco_engine as te
from truco_contract.codec.errors import DecodeError
from truco_contract.codec.plans import plan_for
from truco_contract.codec.scalars import duration, enum_map, ms_of, seconds_of, timestamp
from truco_contract.pb import match_pb2, match_service_pb2
from truco_match.create import MatchSpec, SeatSpec
from truco_match.events import Fairness, MatchStatus, SeatInfo, SeatKind
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.matches import MatchInfo, MatchResult

_STATUS = enum_map(MatchStatus, match_pb2.MatchState.DESCRIPTOR)


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
    """Every field of a rule set as a ``Struct`` (``Match.effective_rules``): a new message,
    copied from the one made once per rule set (``Struct.update`` is Python, field by field:
    it took most of a ``match_to_proto``)."""
    s = struct_pb2.Struct()
    s.CopyFrom(_rules_struct(rules))
    return s


@lru_cache(maxsize=256)
def _rules_struct(rules: te.RuleSet) -> struct_pb2.Struct:
    """:func:`rules_to_struct`'s message, kept by rule set (by value: a match's rule set is
    rebuilt from its stored form on each load). Never modified."""
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
_SEAT = plan_for(SeatInfo, match_pb2.Seat)
_FAIRNESS = plan_for(Fairness, match_pb2.Fairness)


def settings_to_proto(
    labels: Mapping[str, str], lc: Lifecycle, rated: bool = False
) -> match_pb2.MatchSettings:
    """A match's labels, lifecycle settings and rated flag as ``truco.v1.MatchSettings``."""
    m = match_pb2.MatchSettings(
        labels=dict(labels),
        spectator_delay_actions=lc.spectator_delay,
        show_hands_to_spectators=lc.show_hands,
        rated=rated,
        abandonment=(
            match_pb2.ABANDONMENT_POLICY_BOT_TAKEOVER
            if lc.takeover
            else match_pb2.ABANDONMENT_POLICY_UNSPECIFIED
        ),
        takeover_level=lc.takeover_level,
    )
    for name, value in (
        ("join_window", lc.join_window),
        ("idle_timeout", lc.idle_timeout),
        ("disconnect_grace", lc.disconnect_grace),
        ("credential_ttl", lc.credential_ttl),
        ("bot_think_time", lc.bot_think),
    ):
        if value:
            getattr(m, name).CopyFrom(duration(value))
    tc = lc.time_control
    if tc is not None:
        t = m.time_control
        for name in ("per_decision", "bank", "increment", "first_decision", "remind_before"):
            if getattr(tc, name):
                getattr(t, name).CopyFrom(duration(getattr(tc, name)))
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
            per_decision=ms_of(t.per_decision),
            bank=ms_of(t.bank),
            increment=ms_of(t.increment),
            first_decision=ms_of(t.first_decision),
            forfeit_after=t.forfeit_after,
            remind_before=ms_of(t.remind_before),
        )
    elif m.HasField("turn_timeout") and (m.turn_timeout.seconds or m.turn_timeout.nanos):
        tc = TimeControl(per_decision=ms_of(m.turn_timeout))
    known = (match_pb2.ABANDONMENT_POLICY_DEFAULT_MOVE, match_pb2.ABANDONMENT_POLICY_BOT_TAKEOVER)
    if m.abandonment not in (0, *known):
        raise DecodeError(f"{where}.abandonment", f"unknown abandonment policy {m.abandonment}")
    return Lifecycle(
        time_control=tc,
        join_window=ms_of(m.join_window),
        idle_timeout=ms_of(m.idle_timeout),
        disconnect_grace=ms_of(m.disconnect_grace),
        spectator_delay=m.spectator_delay_actions,
        show_hands=m.show_hands_to_spectators,
        credential_ttl=ms_of(m.credential_ttl),
        takeover=m.abandonment == match_pb2.ABANDONMENT_POLICY_BOT_TAKEOVER,
        takeover_level=m.takeover_level,
        bot_think=ms_of(m.bot_think_time),
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
        seats.append(SeatSpec(s.display_name, kind, s.player_id, s.bot_level))
    settings = request.settings
    tc = settings.time_control
    if settings.HasField("time_control") and tc.on_expiry not in (
        match_pb2.EXPIRY_ACTION_UNSPECIFIED,
        match_pb2.EXPIRY_ACTION_DEFAULT_MOVE,
    ):
        raise DecodeError("settings.time_control.on_expiry", f"unknown expiry action {tc.on_expiry}")
    for name in ("turn_timeout", "join_window", "idle_timeout", "disconnect_grace", "bot_think_time"):
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
        rated=settings.rated,
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
        settings=settings_to_proto(info.labels, info.lifecycle, info.rated),
        create_time=timestamp(info.created_at),
        update_time=timestamp(info.updated_at),
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
        created_at=seconds_of(msg.create_time),
        updated_at=seconds_of(msg.update_time),
        labels=dict(msg.settings.labels),
        result=result,
        lifecycle=lifecycle_from_proto(msg.settings, f"{where}.settings"),
        fairness=_FAIRNESS.decode(msg.fairness, f"{where}.fairness") if msg.HasField("fairness") else None,
        rated=msg.settings.rated,
    )
