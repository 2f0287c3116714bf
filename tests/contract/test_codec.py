"""The codec round-trips exactly: every observation, event payload, action and match of random
matches of every preset and player count, through protobuf bytes and protobuf JSON."""

from __future__ import annotations

import random

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

import truco_engine as te
from truco_contract import codec
from truco_contract.pb import action_pb2, event_pb2, match_pb2, observation_pb2
from truco_match import table
from truco_match.events import EventView, MatchStatus, SeatKind, TimeoutCause, redact
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.matches import MatchInfo, MatchResult
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
