"""The codec round-trips exactly: every observation, event payload, action and match of random
matches of every preset and player count, through protobuf bytes and protobuf JSON."""

from __future__ import annotations

import dataclasses
import enum
import random
import typing
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

import truco_engine as te
from truco_contract import codec
from truco_contract.pb import action_pb2, event_pb2, match_pb2, observation_pb2, operator_service_pb2
from truco_match import table
from truco_match.events import EventView, MatchStatus, SeatKind, TimeoutCause, UnknownPayload, redact
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.matches import MatchInfo, MatchResult
from truco_match.operator_events import (
    Awaiting,
    OperatorEvent,
    OperatorEventType,
    TicketMatch,
    TicketSeat,
    Turn,
)
from truco_match.views import view


def _cases() -> list[str]:
    out = []
    for name in te.preset_names():
        for n in range(2, 13):
            try:
                te.get_rules(name, players=n)
            except te.InvalidRulesError:
                continue
            out.append(f"{name}-{n}p")
    return out


CASES = _cases()


def _wire(msg: Message) -> Message:
    """The message after protobuf bytes and after protobuf JSON (what gRPC and REST carry)."""
    again = type(msg).FromString(msg.SerializeToString())
    assert again == msg
    return json_format.Parse(json_format.MessageToJson(msg), type(msg)())


@pytest.mark.parametrize("case", CASES)
def test_every_view_event_and_action_of_a_random_match_round_trips(case: str) -> None:
    rules = te.get_rules(case)
    rng = random.Random(case)
    clock = TimeControl(per_decision=10_000, bank=60_000, increment=1_000, forfeit_after=3)
    setup = table.Setup(
        rules=rules, seed=rng.randbytes(32), lifecycle=Lifecycle(time_control=clock, show_hands=True)
    )
    seats = table.seats_of(rules, [("ana", SeatKind.BOT)])
    step = table.start(setup, seats, b"creator entropy", 0)
    state, life, entries = step.state, step.life, step.entries
    version = 0
    now = 0
    viewers: list[int | None] = [*range(rules.players), None]
    for _ in range(400):
        for entry in entries:
            version += 1
            for v in viewers:
                ev = EventView(version, redact(entry, v), time=1700000000.25)
                msg = _wire(codec.event_to_proto(ev))
                assert isinstance(msg, event_pb2.Event)
                assert codec.event_bytes(ev) == codec.event_to_proto(ev).SerializeToString()
                back = codec.event_from_proto(msg)
                assert back == ev and back.time == ev.time and msg.kind == ev.kind
        over = te.is_over(state)
        status = MatchStatus.FINISHED if over else MatchStatus.ACTIVE
        for v in viewers:
            sv = view(state, v, version, status, life, 1700000000.0, 1700000000.0 + now / 1000)
            msg = _wire(codec.observation_to_proto(sv, rules))
            assert isinstance(msg, observation_pb2.Observation)
            assert codec.observation_from_proto(msg) == sv
            for a in sv.observation.legal_actions:
                am = _wire(codec.action_to_proto(a))
                assert isinstance(am, action_pb2.Action)
                assert codec.action_from_proto(am) == a
        if over:
            break
        seat = te.to_act(state)[0]
        legal = te.legal_actions(state, seat)
        now += rng.randrange(0, 4_000)
        end = life.deadline()
        expired = (
            table.expire(setup, state, life, TimeoutCause.CLOCK, now)
            if end is not None and now >= end
            else None
        )
        step = expired or table.act(setup, state, life, seat, rng.choice(legal), now)
        state, life, entries = step.state, step.life, step.entries
    assert te.is_over(state), "the random match did not end"


def test_a_cancelled_view_offers_nothing_and_round_trips() -> None:
    rules = te.get_rules("argentine")
    state = table.start(table.Setup(rules=rules, seed=b"s" * 32), table.seats_of(rules)).state
    sv = view(state, 0, 7, MatchStatus.CANCELLED)
    assert sv.observation.legal_actions == () and sv.observation.awaited == ()
    assert codec.observation_from_proto(_wire(codec.observation_to_proto(sv, rules))) == sv  # type: ignore[arg-type]


def test_match_info_round_trips_with_and_without_a_result() -> None:
    rules = te.get_rules("carancho")
    seats = table.seats_of(rules, [("a", SeatKind.HUMAN), ("b", SeatKind.BOT)])
    info = MatchInfo(
        match_id="m1",
        state=MatchStatus.ACTIVE,
        rules=rules,
        seats=seats,
        version=12,
        created_at=1700000000.5,
        updated_at=1700000100.75,
        labels={"table": "3"},
    )
    for i in (
        info,
        MatchInfo(
            **{
                **_fields(info),
                "state": MatchStatus.FINISHED,
                "result": MatchResult(winner_team=1, scores=(3, 15, 0), games_won=(0, 1, 0)),
            }
        ),
    ):
        msg = _wire(codec.match_to_proto(i))
        assert isinstance(msg, match_pb2.Match)
        assert codec.match_from_proto(msg) == i
    assert [s.display_name for s in seats] == ["a", "b", "seat 2"]


def _fields(info: MatchInfo) -> dict[str, object]:
    return {f: getattr(info, f) for f in info.__dataclass_fields__}


@pytest.mark.parametrize(
    ("msg", "field"),
    [
        (action_pb2.Action(), "action"),
        (action_pb2.Action(call_envido=action_pb2.CallEnvido()), "action.call_envido.kind"),
        (action_pb2.Action(call_flor=action_pb2.CallFlor(kind=99)), "action.call_flor.kind"),  # type: ignore[arg-type]
        (action_pb2.Action(play_card=action_pb2.PlayCard()), "action.play_card.card"),
        (action_pb2.Action(play_card=action_pb2.PlayCard(card="4C", slot=0)), "action.play_card"),
        (action_pb2.Action(play_card=action_pb2.PlayCard(slot=-1)), "action.play_card.slot"),
        (action_pb2.Action(play_card=action_pb2.PlayCard(card="x" * 5000)), "action.play_card.card"),
        (action_pb2.Action(play_card=action_pb2.PlayCard(card="4C\n")), "action.play_card.card"),
        (action_pb2.Action(discard=action_pb2.Discard()), "action.discard.card"),
    ],
)
def test_malformed_actions_name_the_field_and_quote_little(msg: action_pb2.Action, field: str) -> None:
    with pytest.raises(codec.DecodeError) as info:
        codec.action_from_proto(msg)
    assert info.value.field == field
    assert len(str(info.value)) < 200


def test_an_event_of_an_unknown_kind_keeps_its_kind() -> None:
    ev = codec.event_from_proto(event_pb2.Event(version=3, kind="clock_started"))
    assert ev.kind == "clock_started" and ev.version == 3 and ev.data == {}


def test_the_rules_summary_names_the_house_rules() -> None:
    """``RulesSummary.house_rules``: the fields set apart from the preset at this table size,
    target and number of games (docs/rules/house-rules.md)."""
    plain = codec.rules_summary(te.get_rules("argentine-4p", target_points=30))
    assert list(plain.house_rules) == []
    house = te.get_rules(
        "argentine-4p", fold_alone=True, truco_capped_at_game=True, envido_declined_plus_one=True
    )
    summary = codec.rules_summary(house)
    assert list(summary.house_rules) == ["envido_declined_plus_one", "fold_alone", "truco_capped_at_game"]
    assert json_format.MessageToDict(summary)["houseRules"] == list(summary.house_rules)


# ------------------------------------------------------------- events written directly
_ACTIONS = (
    te.Action("play", "4o"),
    te.Action("play", "7E", face_down=True),
    te.Action("truco"),
    te.Action("accept"),
    te.Action("fold"),
)


def _random_value(hint: Any, rng: random.Random) -> Any:
    """A random value of type ``hint`` (a payload's field): defaults, edges and ordinary
    values, nested dataclasses and tuples included (an optional string is None or not empty:
    its message has no other way to say None)."""
    args = typing.get_args(hint)
    if type(None) in args:
        if rng.random() < 0.3:
            return None
        (rest,) = [a for a in args if a is not type(None)]
        return rng.choice(("a", "señor ✓")) if rest is str else _random_value(rest, rng)
    if typing.get_origin(hint) is tuple:
        return tuple(_random_value(args[0], rng) for _ in range(rng.choice((0, 1, 3))))
    if hint is bool:
        return rng.random() < 0.5
    if hint is int:
        return rng.choice((0, 1, 2, 11, 127, 128, 300, 65_536, 2**31 - 1))
    if hint is float:
        return rng.choice((0.0, 1700000000.0, 1700000000.25, 1700000000.9999999999, rng.uniform(0, 2e9)))
    if hint is str:
        return rng.choice(("", "a", "truco", "señor ✓", "x" * 200))
    if hint is bytes:
        return rng.choice((b"", b"\x00", rng.randbytes(32)))
    if hint is te.Action:
        return rng.choice(_ACTIONS)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return rng.choice(list(hint))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        fields = [f.name for f in dataclasses.fields(hint) if f.init]
        return hint(**{name: _random_value(hints[name], rng) for name in fields})
    raise TypeError(f"no random value for {hint!r}")


@pytest.mark.parametrize("kind", sorted(codec.PAYLOAD_PLANS))
def test_an_event_written_directly_is_the_bytes_protobuf_writes(kind: str) -> None:
    """``event_bytes`` (the player connection's and the streams' encoding) writes what
    ``event_to_proto(...).SerializeToString()`` does, for every payload kind: random payloads
    with default, edge and ordinary values in every field, with and without a time."""
    cls = codec.PAYLOAD_PLANS[kind].cls
    rng = random.Random(kind)
    for i in range(200):
        payload = _random_value(cls, rng)
        time = None if i % 4 == 0 else _random_value(float, rng)
        ev = EventView(rng.choice((1, 2, 300, 2**40)), payload, time)
        written = codec.event_bytes(ev)
        assert written == codec.event_to_proto(ev).SerializeToString()
        assert codec.event_from_proto(event_pb2.Event.FromString(written)) == ev


def test_an_unknown_payload_is_not_written() -> None:
    with pytest.raises(ValueError, match="unknown payload"):
        codec.event_bytes(EventView(1, UnknownPayload("clock_started")))


_TURNS = (
    Turn(seat=0, decision=0, awaiting=Awaiting.PLAY),
    Turn(seat=3, player_id="p-1", decision=300, awaiting=Awaiting.ANSWER, call="truco", hand_number=7),
    Turn(seat=1, decision=2**40, awaiting=Awaiting.PLAY, hand_number=128, deadline=1700000000.25),
)
_TICKET = TicketMatch(
    ticket_id="t-1",
    pool_id="ranked",
    seats=(TicketSeat(player_id="ana", seat=0, token="tok-a"), TicketSeat(player_id="", seat=1, token="")),
)


def test_an_operator_event_written_directly_is_the_bytes_protobuf_writes() -> None:
    """``operator_event_bytes`` (what a commit appends to its operator's stream) writes the
    message ``operator_event_to_proto`` makes, and its bytes but for the order of several
    labels (a map's order is left open by protobuf): every type, with and without each
    optional part, labels none, one or several."""
    rng = random.Random("operator events")
    kinds = sorted(codec.PAYLOAD_PLANS)
    for i in range(600):
        event = None
        if rng.random() < 0.7:
            payload = _random_value(codec.PAYLOAD_PLANS[rng.choice(kinds)].cls, rng)
            event = EventView(rng.randrange(1, 500), payload, _random_value(float, rng))
        labels = {f"k{j}": rng.choice(("", "v", "league ✓")) for j in range(rng.choice((0, 1, 4)))}
        ev = OperatorEvent(
            id=f"{i}-{rng.randrange(10**6)}",
            match_id=rng.choice(("", "m-1")),
            type=rng.choice(list(OperatorEventType)),
            time=_random_value(float, rng),
            event=event,
            labels=labels,
            result=rng.choice((None, MatchResult(winner_team=1, scores=(12, 300), games_won=(0, 1)))),
            cursor=rng.choice(("", "1700000000000-3")),
            turn=rng.choice((None, *_TURNS)),
            ticket=rng.choice((None, _TICKET)),
        )
        written = codec.operator_event_bytes(ev)
        made = codec.operator_event_to_proto(ev)
        assert operator_service_pb2.OperatorEvent.FromString(written) == made
        if len(labels) <= 1:
            assert written == made.SerializeToString()
