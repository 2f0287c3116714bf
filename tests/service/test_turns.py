"""``match.turn`` operator events, correspondence clocks and their reminders, and ratings of
rated matches, through the service on both stores.

The expected decisions come from the seats' own observations (the engine's ``decision`` and
``awaited`` after every commit), not from the code that makes the events."""

from __future__ import annotations

import asyncio
import random

import pytest
from google.protobuf.json_format import MessageToDict

from tests.helpers.clock import FakeClock
from tests.service.conftest import SETTINGS
from tests.service.test_service import act, cred, view_of
from truco_contract import codec
from truco_contract.pb import operator_service_pb2
from truco_engine import Action
from truco_match.create import SeatSpec
from truco_match.events import MatchStatus, TurnReminder
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.operator_events import Awaiting, OperatorEvent
from truco_match.records import StepCause
from truco_match.verify import verify
from truco_server.app.wiring import Services, build_services, store_settings
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.stores import open_store

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

DAY = 24 * 3600 * 1000
TURN_KEYS = {"seat", "playerId", "decision", "awaiting", "call", "handNumber", "deadline"}
EVENT_KEYS = {"id", "matchId", "type", "time", "labels", "turn"}


async def _events(svc: Services, owner: str) -> list[tuple[dict[str, object], OperatorEvent]]:
    await svc.relay.done()
    got = await svc.store.operators.read(owner, "", 10_000)
    out = []
    for _, raw in got:
        msg = operator_service_pb2.OperatorEvent.FromString(raw)
        out.append((MessageToDict(msg), codec.operator_event_from_proto(msg)))
    return out


def _turns(
    events: list[tuple[dict[str, object], OperatorEvent]], match_id: str, kind: str = "match.turn"
) -> list[tuple[dict[str, object], OperatorEvent]]:
    return [(d, ev) for d, ev in events if ev.match_id == match_id and ev.type.value == kind]


@pytest.mark.parametrize("preset", ["paulista-4p", "argentine-2p", "mineiro-4p"])
async def test_one_match_turn_per_awaited_decision_in_order_and_never_a_card(
    service: Services, operator: Operator, preset: str
) -> None:
    """Commits that leave the awaited decision as it was (time added, a credential
    re-issued) make no ``match.turn``; each new decision makes one, with its deadline."""
    rng = random.Random(preset)
    players = 4 if preset.endswith("4p") else 2
    seats = tuple(SeatSpec(f"name {i}", player_id=f"player-{i}") for i in range(players))
    clock = Lifecycle(time_control=TimeControl(per_decision=3_600_000))
    made = T.CreateMatchRequest(preset=preset, seats=seats, lifecycle=clock)
    created = await service.steps.create_match(operator, made)
    mid, tokens = created.match.match_id, list(created.seat_tokens)
    view = await view_of(service, mid, tokens[0])
    seen = [view]  # what the seats saw after every commit
    while view.match_state is MatchStatus.ACTIVE:
        seat = view.observation.awaited[0]
        if rng.random() < 0.2:  # commits that change no decision
            await service.steps.add_time(operator, T.AddTimeRequest(mid, None, 60_000))
            again = await service.steps.reissue_credential(operator, T.ReissueCredentialRequest(mid, seat))
            tokens[seat] = again.token
            seen.append(await view_of(service, mid, tokens[seat]))
        mine = await view_of(service, mid, tokens[seat])
        res = await act(service, mid, tokens[seat], rng.choice(mine.observation.legal_actions))
        view = res.view
        seen.append(view)
    expected: list[tuple[int, int, Awaiting, int]] = []
    deadlines: list[float | None] = []
    for v in seen:
        obs = v.observation
        if not obs.awaited:
            continue
        seat = obs.awaited[0]
        answering = obs.pending is not None and obs.pending.responder == seat
        step = (obs.decision, seat, Awaiting.ANSWER if answering else Awaiting.PLAY, obs.hand_number)
        if not expected or expected[-1][:2] != step[:2]:
            expected.append(step)
            deadlines.append(v.clock.deadline if v.clock is not None else None)
    turns = _turns(await _events(service, operator.name), mid)
    got = [
        (ev.turn.decision, ev.turn.seat, ev.turn.awaiting, ev.turn.hand_number) for _, ev in turns if ev.turn
    ]
    assert got == expected
    assert len(expected) > 10
    assert [ev.turn.deadline for _, ev in turns if ev.turn] == pytest.approx(deadlines)
    assert len({ev.id for _, ev in turns}) == len(turns)
    for as_json, ev in turns:
        assert ev.turn is not None and ev.turn.player_id == f"player-{ev.turn.seat}"
        assert (ev.turn.call != "") == (ev.turn.awaiting is Awaiting.ANSWER)
        # nothing but the turn: no log entry, no hand, no card anywhere in the event
        assert set(as_json) <= EVENT_KEYS and set(as_json["turn"]) <= TURN_KEYS, as_json  # type: ignore[arg-type]
    calls = {ev.turn.call for _, ev in turns if ev.turn is not None and ev.turn.call}
    assert calls, "a random match of this length answers a call at least once"


async def test_a_filtered_feed_reads_only_the_types_asked_for(service: Services, operator: Operator) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    await service.steps.cancel_match(operator, T.CancelMatchRequest(created.match.match_id))
    await service.relay.done()
    got = []
    stream = service.operators.stream(operator, "0-0", ["match.turn", "match.cancelled"])
    async for ev in stream:
        assert ev is not None
        got.append(ev.type.value)
        if len(got) == 2:
            break
    await stream.aclose()
    assert got == ["match.turn", "match.cancelled"]


async def test_a_correspondence_clock_reminds_once_per_decision_before_it_times_out(
    service: Services, operator: Operator, request: pytest.FixtureRequest
) -> None:
    clock = FakeClock(1_800_000_000.0)
    url = None if "memory" in request.node.name else request.getfixturevalue("clean_redis_url")
    svc = build_services(SETTINGS, asyncio.Event(), open_store(url, store_settings(SETTINGS)), clock=clock)
    try:
        tc = TimeControl(per_decision=3 * DAY, remind_before=DAY)
        created = await svc.steps.create_match(
            operator,
            T.CreateMatchRequest(
                preset="paulista-2p",
                seats=(SeatSpec(player_id="ana"), SeatSpec(player_id="bia")),
                lifecycle=Lifecycle(time_control=tc),
            ),
        )
        mid = created.match.match_id
        start = clock.now
        first = _turns(await _events(svc, operator.name), mid)
        assert len(first) == 1 and first[0][1].turn is not None
        assert first[0][1].turn.deadline == pytest.approx(start + 3 * 86400)
        # the next wakeup is the reminder, a day before the deadline
        assert await svc.steps.wake_match(mid) == round((start + 2 * 86400) * 1000)
        clock.advance(2 * 86400 + 60)
        await svc.steps.wake_match(mid)
        await svc.steps.wake_match(mid)  # again: reminded once
        events = await _events(svc, operator.name)
        reminders = _turns(events, mid, "match.turn_reminder")
        assert len(reminders) == 1
        _, reminder = reminders[0]
        assert reminder.turn is not None and reminder.turn.player_id in ("ana", "bia")
        assert reminder.turn.deadline == pytest.approx(start + 3 * 86400)
        assert reminder.event is not None and isinstance(reminder.event.payload, TurnReminder)
        assert reminder.event.payload.remaining == DAY - 60_000
        clock.advance(86400)  # past the deadline: the default move, a new decision
        await svc.steps.wake_match(mid)
        events = await _events(svc, operator.name)
        kinds = [ev.type.value for _, ev in events if ev.match_id == mid]
        assert kinds.index("match.turn_reminder") < kinds.index("match.turn_timed_out")
        assert kinds[-1] == "match.turn"
        match = await svc.matches.load(mid, fresh=True)
        record = await svc.reads.get_match_record(operator, T.GetMatchRecordRequest(mid))
        assert [s.remind for s in record.record.steps if s.remind] == [reminder.event.payload]
        await svc.steps.cancel_match(operator, T.CancelMatchRequest(mid))
        record = await svc.reads.get_match_record(operator, T.GetMatchRecordRequest(mid))
        assert verify(record.record).ok, "the record with its reminder replays"
        assert match.version < record.record.match.version
    finally:
        await svc.relay.done()
        svc.streams.close()
        await svc.store.close()


async def test_a_rated_match_rates_its_players_whatever_created_it(
    service: Services, operator: Operator
) -> None:
    seats = tuple(SeatSpec(player_id=p) for p in ("ana", "bia", "caio", "duda"))
    made = await service.steps.create_match(
        operator, T.CreateMatchRequest(preset="paulista-4p", seats=seats, rated=True)
    )
    mid = made.match.match_id
    await act(service, mid, made.seat_tokens[0], Action("resign"))
    await service.relay.done()
    ratings = await service.ratings.ratings(operator.name, "paulista-4p", ["ana", "bia", "caio", "duda"])
    assert all(r.games == 1 for r in ratings.values())
    # seat 0 (ana) and seat 2 (caio) lost, bia and duda won
    assert ratings["bia"].mu > ratings["ana"].mu and ratings["duda"].mu > ratings["caio"].mu
    unrated = await service.steps.create_match(
        operator, T.CreateMatchRequest(preset="paulista-4p", seats=seats)
    )
    await act(service, unrated.match.match_id, unrated.seat_tokens[0], Action("resign"))
    await service.relay.done()
    again = await service.ratings.ratings(operator.name, "paulista-4p", ["ana"])
    assert again["ana"].games == 1  # an unrated match changes nothing


async def test_no_match_turn_for_a_decision_the_servers_bot_makes(operator: Operator) -> None:
    """A bot seat's decisions, and those of a seat a bot has taken over, have no ``match.turn``:
    the player's do, one each; a player taking his seat back while it is awaited gets one."""
    clock = FakeClock(1_800_000_000.0)
    svc = build_services(SETTINGS, asyncio.Event(), open_store(None, store_settings(SETTINGS)), clock=clock)
    try:
        seats = (SeatSpec("ana", player_id="ana"), SeatSpec("cpu", bot_level=1))
        made = await svc.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p", seats=seats))
        mid, token = made.match.match_id, made.seat_tokens[0]
        rng = random.Random(7)
        awaited: list[int] = []  # the decisions awaited from ana, as she saw them
        bot_moves = 0
        for _ in range(3000):
            view = await view_of(svc, mid, token)
            if view.match_state is not MatchStatus.ACTIVE:
                break
            if view.observation.awaited == (0,):
                if not awaited or awaited[-1] != view.observation.decision:
                    awaited.append(view.observation.decision)
                await act(svc, mid, token, rng.choice(view.observation.legal_actions))
                continue
            nxt = await svc.steps.wake_match(mid)
            bot_moves += 1
            clock.now = max(clock.now, (nxt or 0) / 1000)
        assert view.match_state is MatchStatus.FINISHED and bot_moves > 5
        turns = _turns(await _events(svc, operator.name), mid)
        assert [ev.turn.seat for _, ev in turns if ev.turn] == [0] * len(awaited)
        assert [ev.turn.decision for _, ev in turns if ev.turn] == awaited

        # a seat taken over: its decisions are the bot's, until its player takes it back
        lifecycle = Lifecycle(disconnect_grace=5000, takeover=True, takeover_level=1)
        two = (SeatSpec(player_id="ana"), SeatSpec(player_id="bia"))
        made = await svc.steps.create_match(
            operator, T.CreateMatchRequest(preset="paulista-2p", seats=two, lifecycle=lifecycle)
        )
        mid, tokens = made.match.match_id, made.seat_tokens
        away = (await view_of(svc, mid, tokens[0])).observation.awaited[0]
        await svc.matches.touch(await svc.matches.load(mid), 1 - away)
        clock.now += 5.1
        await svc.steps.wake_match(mid)  # taken over
        for _ in range(60):  # play on until the away seat is awaited again, the bot playing it
            view = await view_of(svc, mid, tokens[1 - away])
            if view.observation.awaited == (1 - away,):
                await act(svc, mid, tokens[1 - away], view.observation.legal_actions[0])
                if (await view_of(svc, mid, tokens[1 - away])).observation.awaited == (away,):
                    break
            else:
                nxt = await svc.steps.wake_match(mid)
                clock.now = max(clock.now, (nxt or 0) / 1000)
        record = (await svc.reads.get_match_record(operator, T.GetMatchRecordRequest(mid))).record
        assert any(s.cause is StepCause.BOT and s.seat == away for s in record.steps)
        await svc.matches.join_match(cred(tokens[away]), T.JoinMatchRequest(mid))  # back, awaited
        seats_told = [ev.turn.seat for _, ev in _turns(await _events(svc, operator.name), mid) if ev.turn]
        # the first decision (its player's), none while the bot played it, one now it is his again
        assert seats_told[0] == away and seats_told[-1] == away
        assert seats_told[1:-1] and set(seats_told[1:-1]) == {1 - away}
    finally:
        await svc.bots.close()
        await svc.relay.done()
        svc.streams.close()
        await svc.store.close()
