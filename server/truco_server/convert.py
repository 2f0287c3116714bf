"""Conversions between the service layer's values and ``truco.v1`` messages.

One place for the mapping, used by the gRPC adapter (and by the REST face, which speaks
the same messages through protobuf's JSON mapping). Engine names map to proto names here:
the engine's ``side`` is the proto's ``team``; the engine's 1-based ``trick`` is the proto's
0-based ``trick_index``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import struct_pb2, timestamp_pb2

import truco_engine as te
from truco.v1 import (
    action_pb2,
    event_pb2,
    game_pb2,
    match_pb2,
    match_service_pb2,
    observation_pb2,
)
from truco_client.actions import ENVIDO_KINDS, ENVIDO_NAMES, FLOR_KINDS, FLOR_NAMES, to_proto
from truco_server import errors as E
from truco_server.lru import Lru
from truco_server.service import MatchInfo, Update

_FAMILY = {
    "truco": game_pb2.CALL_KIND_TRUCO,
    "envido": game_pb2.CALL_KIND_ENVIDO,
    "flor": game_pb2.CALL_KIND_FLOR,
    "hand_of_eleven": game_pb2.CALL_KIND_HAND_OF_ELEVEN,
}
_STATE = {
    "active": match_pb2.MATCH_STATE_ACTIVE,
    "finished": match_pb2.MATCH_STATE_FINISHED,
    "cancelled": match_pb2.MATCH_STATE_CANCELLED,
}
STATE_NAMES = {v: k for k, v in _STATE.items()}
_REASON = {
    "tricks": event_pb2.HAND_END_REASON_TRICKS,
    "folded": event_pb2.HAND_END_REASON_FOLD,
    "declined": event_pb2.HAND_END_REASON_DECLINED,
    "eleven_refused": event_pb2.HAND_END_REASON_HAND_OF_ELEVEN_REFUSED,
    "all_tied_mano": event_pb2.HAND_END_REASON_ALL_TIED,
    "all_tied_redeal": event_pb2.HAND_END_REASON_ALL_TIED,
}


# ---------------------------------------------------------------------------- actions
def action_to_proto(a: te.Action) -> action_pb2.Action:
    """Engine action -> ``truco.v1.Action`` (the SDK's mapping: one place for both sides)."""
    return to_proto(a)


def encode_legal(a: object) -> action_pb2.Action:
    """Encoder for ``grpc_errors.map_service_errors`` (legal actions in error details)."""
    if isinstance(a, te.Action):
        return action_to_proto(a)
    if isinstance(a, Mapping):
        return action_to_proto(te.Action.from_dict(dict(a)))
    raise TypeError(f"cannot encode {type(a).__name__}")


def _bad(field: str, message: str) -> E.InvalidArgument:
    return E.InvalidArgument(message, field_violations=[E.FieldViolation(field, message)])


def action_from_proto(msg: action_pb2.Action) -> te.Action:
    """``truco.v1.Action`` -> engine action; malformed input is INVALID_ARGUMENT."""
    which = msg.WhichOneof("action")
    if which is None:
        raise _bad("action", "no action given: set one of play_card, call_truco, accept, ...")
    if which == "play_card":
        pc = msg.play_card
        if pc.HasField("slot"):
            if pc.card:
                raise _bad("action.play_card", "give either card or slot, not both")
            if pc.slot < 0:
                raise _bad("action.play_card.slot", "slot must not be negative")
            return te.Action("play", slot=pc.slot)
        if not pc.card:
            raise _bad("action.play_card.card", "card is required (a card of this match's deck, or a slot)")
        return te.Action("play", pc.card, face_down=pc.face_down)
    if which == "discard":
        if not msg.discard.card:
            raise _bad("action.discard.card", "card is required")
        return te.Action("discard", msg.discard.card)
    if which == "call_envido":
        kind = ENVIDO_NAMES.get(msg.call_envido.kind)
        if kind is None:
            raise _bad("action.call_envido.kind", "kind is required: ENVIDO, REAL_ENVIDO or FALTA_ENVIDO")
        return te.Action(kind)
    if which == "call_flor":
        kind = FLOR_NAMES.get(msg.call_flor.kind)
        if kind is None:
            raise _bad("action.call_flor.kind", "kind is required: FLOR, CONTRAFLOR or CONTRAFLOR_AL_RESTO")
        return te.Action(kind)
    simple = {"call_truco": "truco", "accept": "accept", "decline": "decline", "fold": "fold"}
    return te.Action(simple[which])


# ------------------------------------------------------------------------ observation
def _opt(value: Any) -> int | None:
    return None if value is None else int(value)


_LEGAL: dict[tuple[Any, ...], action_pb2.Action] = {}


def _legal_proto(a: Mapping[str, Any]) -> action_pb2.Action:
    """A legal action (dict) as a proto; a match only ever offers a few hundred distinct
    actions (the cards of its deck times a few flags, plus the calls), so they are cached."""
    key = tuple(a.items())
    try:
        hit = _LEGAL.get(key)
    except TypeError:  # an unhashable value: not cacheable
        return action_to_proto(te.Action.from_dict(dict(a)))
    if hit is None:
        hit = action_to_proto(te.Action.from_dict(dict(a)))
        if len(_LEGAL) < 4096:
            _LEGAL[key] = hit
    return hit


_SUMMARIES: dict[int, tuple[Mapping[str, Any], str, int, observation_pb2.RulesSummary]] = {}


def _rules_summary(preset: str, players: int, rules: Mapping[str, Any]) -> observation_pb2.RulesSummary:
    """The ``RulesSummary`` of a match, built once per rules mapping (the mapping is the
    match's, shared by every observation of it; the entry keeps it alive, so its id is not
    reused while cached)."""
    hit = _SUMMARIES.get(id(rules))
    if hit is not None and hit[0] is rules and hit[1] == preset and hit[2] == players:
        return hit[3]
    summary = observation_pb2.RulesSummary(
        preset=preset,
        players=players,
        target_points=int(rules.get("target_points", 0)),
        games_to_win=int(rules.get("games_to_win", 1)),
        deck_style=observation_pb2.DECK_STYLE_FRENCH
        if rules.get("deck") == "french40"
        else observation_pb2.DECK_STYLE_SPANISH,
        envido=bool(rules.get("envido")),
        flor=bool(rules.get("flor")),
    )
    if len(_SUMMARIES) >= 1024:
        _SUMMARIES.clear()
    _SUMMARIES[id(rules)] = (rules, preset, players, summary)
    return summary


def observation_to_proto(obs: Mapping[str, Any], rules: Mapping[str, Any]) -> observation_pb2.Observation:
    """Observation dict (``MatchService._observe``) -> ``truco.v1.Observation``."""
    players = int(obs["players"])
    teams = rules.get("play_mode", "teams") == "teams"
    pending = obs.get("pending")
    phase = observation_pb2.PHASE_PLAYING
    if obs["phase"] == "over" or obs.get("status") in ("finished", "cancelled"):
        phase = observation_pb2.PHASE_MATCH_OVER
    elif obs["phase"] == "deal":
        phase = observation_pb2.PHASE_HAND_OVER
    elif pending is not None and pending["family"] == "hand_of_eleven":
        phase = observation_pb2.PHASE_HAND_OF_ELEVEN_DECISION
    elif (
        any(a.get("kind") == "discard" for a in obs.get("legal_actions", [])) or obs.get("phase") == "discard"
    ):
        phase = observation_pb2.PHASE_DISCARD
    msg = observation_pb2.Observation(
        version=int(obs.get("version", 0)),
        seat=_opt(obs.get("seat")),
        phase=phase,
        hand_number=int(obs["hand_number"]),
        game_number=int(obs["game"]),
        dealer=int(obs["dealer"]),
        mano=int(obs["mano"] if obs.get("mano") is not None else -1),
        vira=obs.get("turn_up") or "",
        my_hand=list(obs["hand"]),
        my_hand_hidden_count=int(obs["hidden_hand"]),
        hand_sizes=list(obs["hand_sizes"]),
        seat_teams=[(s % 2 if teams else s) for s in range(players)],
        team_scores=list(obs["scores"]),
        games_won=list(obs["games"]),
        hand_value=int(obs["hand_value"]),
        acting_seats=list(obs["to_act"]),
        legal_actions=[_legal_proto(a) for a in obs["legal_actions"]],
        rules=_rules_summary(str(obs["preset"]), players, rules),
    )
    for seat, cards in obs.get("revealed", {}).items():
        msg.revealed_cards[int(seat)].cards.extend(cards)
    for t in obs["tricks"]:
        tr = msg.tricks.add(
            leader=int(t["leader"]),
            winner_seat=_opt(t["winner"]),
            winner_team=_opt(t["side"]),
            tied=bool(t["tied"]),
            complete=bool(t["tied"] or t["winner"] is not None),
        )
        for p in t["plays"]:
            tr.plays.add(seat=int(p["seat"]), card=p["card"] or "", face_down=bool(p["face_down"]))
    if pending is not None:
        pc = msg.pending_call
        pc.kind = _FAMILY.get(pending["family"], game_pb2.CALL_KIND_UNSPECIFIED)
        pc.name = str(pending["call"])
        caller = pending.get("caller")
        pc.by_seat = -1 if caller is None else int(caller)
        pc.by_team = -1 if caller is None else (int(caller) % 2 if teams else int(caller))
        pc.value_if_accepted = int(pending["value_if_accepted"])
        pc.value_if_declined = int(pending["value_if_declined"])
        if pending["call"] in ENVIDO_KINDS:
            pc.envido_chain.append(ENVIDO_KINDS[pending["call"]])
        if pending["call"] in FLOR_KINDS:
            pc.flor_chain.append(FLOR_KINDS[pending["call"]])
    return msg


# ------------------------------------------------------------------------------ events
def _struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update({k: v for k, v in d.items() if k != "kind"})
    return s


def _cards(value: Any) -> tuple[list[str], int]:
    if isinstance(value, list):
        return [str(c) for c in value], len(value)
    return [], int(value or 0)


def event_to_proto(d: Mapping[str, Any], version: int, index: int) -> event_pb2.Event:
    """One redacted event dict -> ``truco.v1.Event`` (typed payload plus ``details``)."""
    kind = str(d["kind"])
    ev = event_pb2.Event(version=version, index=index, kind=kind, details=_struct(d))
    seat = d.get("seat")
    if isinstance(seat, int) and kind not in ("bet_won",):
        ev.seat = seat
    if kind == "hand_started":
        ev.hand_started.CopyFrom(
            event_pb2.HandStarted(
                hand_number=d["hand"],
                game_number=d["game"],
                dealer=d["dealer"],
                mano=d["mano"],
                vira=d.get("turn_up") or "",
                deck_commitment=d["commitment"],
            )
        )
    elif kind == "cards_dealt":
        cards, count = _cards(d["cards"])
        ev.cards_dealt.CopyFrom(event_pb2.CardsDealt(seat=d["seat"], cards=cards, count=count))
    elif kind in ("cards_shown", "cards_revealed"):
        cards, _ = _cards(d["cards"])
        ev.cards_revealed.CopyFrom(
            event_pb2.CardsRevealed(
                seat=d["seat"], cards=cards, reason=str(d.get("reason", "")), public=kind == "cards_revealed"
            )
        )
    elif kind == "card_played":
        ev.card_played.CopyFrom(
            event_pb2.CardPlayed(
                seat=d["seat"],
                card=d.get("card") or "",
                face_down=bool(d["face_down"]),
                trick_index=d["trick"] - 1,
            )
        )
    elif kind == "card_discarded":
        ev.card_discarded.CopyFrom(event_pb2.CardDiscarded(seat=d["seat"], card=d.get("card") or ""))
    elif kind == "trick_ended":
        ev.trick_ended.CopyFrom(
            event_pb2.TrickEnded(
                trick_index=d["trick"] - 1,
                winner_seat=_opt(d["winner"]),
                winner_team=_opt(d["side"]),
                tied=d["tied"],
            )
        )
    elif kind == "called":
        cm = event_pb2.CallMade(
            seat=d["seat"],
            call=_FAMILY.get(d["family"], game_pb2.CALL_KIND_UNSPECIFIED),
            name=d["call"],
            value_if_accepted=d["value_if_accepted"],
            value_if_declined=d["value_if_declined"],
            responder=_opt(d.get("responder")),
        )
        if d["call"] in ENVIDO_KINDS:
            cm.envido_kind = ENVIDO_KINDS[d["call"]]
        if d["call"] in FLOR_KINDS:
            cm.flor_kind = FLOR_KINDS[d["call"]]
        ev.call_made.CopyFrom(cm)
    elif kind == "answered":
        ev.call_answered.CopyFrom(
            event_pb2.CallAnswered(
                seat=d["seat"],
                call=_FAMILY.get(d["family"], game_pb2.CALL_KIND_UNSPECIFIED),
                answer=game_pb2.ANSWER_ACCEPT if d["answer"] == "accept" else game_pb2.ANSWER_DECLINE,
                value=d["value"],
            )
        )
    elif kind == "eleven_decided":
        ev.hand_of_eleven_decision.CopyFrom(
            event_pb2.HandOfElevenDecision(team=d["side"], seat=d["seat"], play=d["play"])
        )
    elif kind == "points_declared":
        ev.points_declared.CopyFrom(
            event_pb2.PointsDeclared(
                seat=d["seat"],
                family=_FAMILY.get(d["family"], game_pb2.CALL_KIND_UNSPECIFIED),
                points=_opt(d.get("points")),
            )
        )
    elif kind == "bet_won":
        body = {"winner_seat": d["seat"], "winner_team": d["side"], "points": d["points"]}
        if d["family"] == "flor":
            ev.flor_resolved.CopyFrom(event_pb2.FlorResolved(**body))
        else:
            ev.envido_resolved.CopyFrom(event_pb2.EnvidoResolved(**body))
    elif kind == "folded":
        ev.folded.CopyFrom(event_pb2.Folded(seat=d["seat"], team=d["side"]))
    elif kind == "hand_ended":
        ev.hand_ended.CopyFrom(
            event_pb2.HandEnded(
                winner_team=_opt(d["side"]),
                points=d["points"],
                reason=_REASON.get(d["reason"], event_pb2.HAND_END_REASON_UNSPECIFIED),
            )
        )
    elif kind == "score":
        ev.score_changed.CopyFrom(event_pb2.ScoreChanged(scores=d["scores"], games_won=d["games"]))
    elif kind == "game_ended":
        ev.game_ended.CopyFrom(
            event_pb2.GameEnded(game_number=d["game"], winner_team=d["side"], games_won=d["games"])
        )
    elif kind == "match_ended":
        ev.match_ended.CopyFrom(event_pb2.MatchEnded(winner_team=_opt(d.get("side"))))
    elif kind == "match_revealed":
        me = event_pb2.MatchEnded(seed=bytes.fromhex(d["seed"]))
        for deal in d.get("deals", []):
            me.deals.add(cards=deal["cards"], salt=deal["salt"], commitment=deal["commitment"])
        ev.match_ended.CopyFrom(me)
    elif kind == "match_cancelled":
        ev.match_cancelled.CopyFrom(event_pb2.MatchCancelled(reason=str(d.get("reason", ""))))
    return ev


class EventProtos:
    """Built event protos by the identity of the event dict they were built from.

    The service hands every viewer the *same* dict for a public event (and one per seat
    for a private one), so a public event is converted once and copied (in C) for the
    other viewers, with its position in their message. An entry keeps its dict alive, so
    an identity can never be reused while it is cached."""

    def __init__(self, size: int = 4096) -> None:
        self._built: Lru[int, tuple[Mapping[str, Any], event_pb2.Event]] = Lru(size)

    def get(self, d: Mapping[str, Any], version: int, index: int) -> event_pb2.Event:
        hit = self._built.get(id(d))
        if hit is not None and hit[0] is d and hit[1].version == version:
            ev = event_pb2.Event()
            ev.CopyFrom(hit[1])
            ev.index = index
            return ev
        ev = event_to_proto(d, version, index)
        self._built.put(id(d), (d, ev))
        return ev


def events_to_proto(
    events: list[dict[str, Any]], last_version: int, built: EventProtos | None = None
) -> list[event_pb2.Event]:
    """A contiguous run of events ending at ``last_version``."""
    first = last_version - len(events) + 1
    if built is None:
        return [event_to_proto(e, first + i, i) for i, e in enumerate(events)]
    return [built.get(e, first + i, i) for i, e in enumerate(events)]


# ------------------------------------------------------------------------------ matches
def _ts(seconds: float) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(seconds * 1e9))
    return ts


def match_to_proto(info: MatchInfo) -> match_pb2.Match:
    rules = info.rules
    teams = rules.get("play_mode", "teams") == "teams"
    eff = struct_pb2.Struct()
    eff.update(rules)
    m = match_pb2.Match(
        match_id=info.match_id,
        state=_STATE.get(info.status, match_pb2.MATCH_STATE_UNSPECIFIED),
        version=info.version,
        rules=match_pb2.RuleSet(preset=info.preset),
        effective_rules=eff,
        create_time=_ts(info.created_at),
    )
    for i, s in enumerate(info.seats):
        m.seats.add(
            seat=i,
            team=i % 2 if teams else i,
            display_name=s.get("name", ""),
            kind=match_pb2.SEAT_KIND_BOT if s.get("kind") == "bot" else match_pb2.SEAT_KIND_HUMAN,
        )
    m.settings.labels.update(info.labels)
    m.result.team_scores.extend(info.scores)
    m.result.games_won.extend(info.games)
    m.result.winner_team = -1 if info.winner is None else info.winner
    return m


class ViewProtos:
    """Recently built ``(events, observation)`` protos of one viewer, by match and versions.

    The reply to a SubmitAction and the next message of the actor's own stream carry the
    same events (redacted for the same seat) and the same observation, so building them
    once serves both. A view is fully determined by the match, the viewer, the versions
    of its events and the version of its observation (a match's state at a version never
    changes), so a hit can never be stale. Bounded: least recently used entries go first.
    """

    def __init__(self, size: int = 512) -> None:
        self._views: Lru[tuple[Any, ...], tuple[list[event_pb2.Event], observation_pb2.Observation]] = Lru(
            size
        )
        self._events = EventProtos(2 * size)

    def get(
        self,
        match_id: str,
        events: list[dict[str, Any]],
        last_version: int,
        observation: Mapping[str, Any],
        rules: Mapping[str, Any],
    ) -> tuple[list[event_pb2.Event], observation_pb2.Observation]:
        key = (match_id, observation.get("seat"), last_version, len(events), observation.get("version"))
        hit = self._views.get(key)
        if hit is not None:
            return hit
        return self._views.put(
            key, (events_to_proto(events, last_version), observation_to_proto(observation, rules))
        )


def update_to_proto(
    upd: Update, rules: Mapping[str, Any], views: ViewProtos | None = None, match_id: str = ""
) -> match_service_pb2.StreamObservationsResponse:
    if upd.heartbeat:
        now = timestamp_pb2.Timestamp()
        now.GetCurrentTime()
        return match_service_pb2.StreamObservationsResponse(
            heartbeat=match_service_pb2.Heartbeat(server_time=now, version=upd.version)
        )
    assert upd.observation is not None
    if views is not None:
        events, observation = views.get(match_id, upd.events, upd.version, upd.observation, rules)
    else:
        events = events_to_proto(upd.events, upd.version)
        observation = observation_to_proto(upd.observation, rules)
    return match_service_pb2.StreamObservationsResponse(
        update=match_service_pb2.ObservationUpdate(
            version=upd.version, events=events, observation=observation, snapshot=upd.snapshot
        )
    )
