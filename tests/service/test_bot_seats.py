"""Seats the server plays, through the service (no transport; a clock the test moves): the
bots' decisions are wakeups of the match committed like any step, a bot seat's credential
cannot act, a bot takes an away seat over and its player takes it back, and the bot's input
is the seat's observation, whatever the cards it cannot see."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator

import pytest

import truco_engine as te
from tests.service.conftest import SETTINGS
from tests.service.test_service import act, cred, view_of
from truco_bots.levels import LEVELS, decide
from truco_kit.observation import Observation
from truco_match.create import SeatSpec
from truco_match.events import MatchStatus, SeatReclaimed, SeatTakenOver
from truco_match.lifecycle import Lifecycle
from truco_match.records import StepCause
from truco_server.app.wiring import Services, build_services, store_settings
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.stores import open_store

pytestmark = pytest.mark.timeout(300)


class Clock:
    """The services' time, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def bots() -> AsyncIterator[tuple[Services, Clock]]:
    clock = Clock()
    svc = build_services(SETTINGS, asyncio.Event(), open_store(None, store_settings(SETTINGS)), clock=clock)
    try:
        yield svc, clock
    finally:
        await svc.bots.close()
        await svc.relay.done()
        svc.streams.close()
        await svc.store.close()


async def wake_until_over(svc: Services, clock: Clock, match_id: str, limit: int = 2000) -> None:
    """Move the clock to each wakeup of the match and do what is due, until it is over."""
    for _ in range(limit):
        nxt = await svc.steps.wake_match(match_id)
        if nxt is None:
            return
        clock.now = max(clock.now, nxt / 1000)
    raise AssertionError("the match did not end")


async def test_bot_seats_play_a_match_to_its_end_each_decision_once(
    bots: tuple[Services, Clock], operator: Operator
) -> None:
    svc, clock = bots
    seats = (SeatSpec("low", bot_level=1), SeatSpec("high", bot_level=4))
    created = await svc.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p", seats=seats))
    info = created.match
    assert [(s.kind.value, s.bot_level) for s in info.seats] == [("bot", 1), ("bot", 4)]
    assert info.lifecycle.bot_think == SETTINGS.bot_think_ms
    # nothing is decided before the bot has thought
    first = await svc.matches.load(info.match_id)
    assert await svc.steps.wake_match(info.match_id) is not None
    assert (await svc.matches.load(info.match_id)).version == first.version
    await wake_until_over(svc, clock, info.match_id)
    done = await svc.matches.load(info.match_id, fresh=True)
    assert done.status is MatchStatus.FINISHED
    record = (await svc.reads.get_match_record(operator, T.GetMatchRecordRequest(info.match_id))).record
    decisions = [(s.seat, s.version) for s in record.steps]
    assert record.steps and all(s.cause is StepCause.BOT for s in record.steps)
    assert len(set(decisions)) == len(decisions)


async def test_a_bot_seats_credential_cannot_act(bots: tuple[Services, Clock], operator: Operator) -> None:
    svc, _ = bots
    seats = (SeatSpec("ana"), SeatSpec("cpu", bot_level=2))
    created = await svc.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p", seats=seats))
    view = await view_of(svc, created.match.match_id, created.seat_tokens[1])
    assert view.observation.legal_actions  # it sees what it may do...
    with pytest.raises(E.PermissionDenied, match="played by the server"):  # ...but the server plays it
        await act(svc, created.match.match_id, created.seat_tokens[1], view.observation.legal_actions[0])


async def test_a_human_against_a_bot_plays_to_the_end(
    bots: tuple[Services, Clock], operator: Operator
) -> None:
    svc, clock = bots
    seats = (SeatSpec("ana"), SeatSpec("cpu", bot_level=5))
    req = T.CreateMatchRequest(preset="argentine", players=2, seats=seats)
    created = await svc.steps.create_match(operator, req)
    match_id, token = created.match.match_id, created.seat_tokens[0]
    rng = random.Random(3)
    for _ in range(2000):
        view = await view_of(svc, match_id, token)
        if view.match_state is not MatchStatus.ACTIVE:
            break
        if view.observation.awaited == (0,):
            await act(svc, match_id, token, rng.choice(view.observation.legal_actions))
            continue
        nxt = await svc.steps.wake_match(match_id)  # None once the bot's move ended the match
        clock.now = max(clock.now, (nxt or 0) / 1000)
    assert view.match_state is MatchStatus.FINISHED


async def test_a_bot_takes_an_away_seat_over_and_its_player_takes_it_back(
    bots: tuple[Services, Clock], operator: Operator
) -> None:
    svc, clock = bots
    lifecycle = Lifecycle(disconnect_grace=5000, takeover=True, takeover_level=1)
    created = await svc.steps.create_match(
        operator, T.CreateMatchRequest(preset="paulista-2p", lifecycle=lifecycle)
    )
    match_id, tokens = created.match.match_id, created.seat_tokens
    assert created.match.lifecycle.takeover and created.match.lifecycle.takeover_level == 1
    view = await view_of(svc, match_id, tokens[0])
    away = view.observation.awaited[0]
    # the other seat is here; the awaited one is never seen: after the grace a bot takes it
    await svc.matches.touch(await svc.matches.load(match_id), 1 - away)
    clock.now += 5.1
    await svc.steps.wake_match(match_id)
    match = await svc.matches.load(match_id, fresh=True)
    assert match.life.taken_over(away) == 1
    events = await svc.matches.events(match, 0, match.version, 1 - away)
    assert [e.payload for e in events if isinstance(e.payload, SeatTakenOver)] == [
        SeatTakenOver(seat=away, bot_level=1)
    ]
    # the bot plays that seat when the game awaits it; the other seat plays itself
    for _ in range(40):
        view = await view_of(svc, match_id, tokens[1 - away])
        if view.observation.awaited == (1 - away,):
            await act(svc, match_id, tokens[1 - away], view.observation.legal_actions[0])
        else:
            nxt = await svc.steps.wake_match(match_id)
            assert nxt is not None
            clock.now = max(clock.now, nxt / 1000)
    record = (await svc.reads.get_match_record(operator, T.GetMatchRecordRequest(match_id))).record
    assert any(s.cause is StepCause.BOT and s.seat == away for s in record.steps)
    # its player is back: joining again takes the seat back, every seat sees it
    await svc.matches.join_match(cred(tokens[away]), T.JoinMatchRequest(match_id))
    match = await svc.matches.load(match_id, fresh=True)
    assert not match.life.taken_over(away)
    last = await svc.matches.events(match, match.version - 1, match.version, 1 - away)
    assert last[-1].payload == SeatReclaimed(seat=away)
    assert (await view_of(svc, match_id, tokens[away])).taken_over == ()


async def test_the_bots_input_is_the_seats_observation_whatever_it_cannot_see(
    bots: tuple[Services, Clock], operator: Operator
) -> None:
    """Two matches whose deals differ only in the cards the bot's seat does not see (the other
    seat's hand, the rest of the deck) give the bot the same input, and every level the same
    decision with the same seed."""
    svc, _ = bots
    rules = te.get_rules("argentine", players=2)
    deck = list(rules.deck_cards)
    random.Random(9).shuffle(deck)
    dealt, _ = te.deal(te.new_match(rules, 0), deck)
    assert dealt.hand is not None
    mine = set(dealt.hand.dealt[1])
    unseen = [i for i, c in enumerate(deck) if c not in mine]
    moved = [deck[i] for i in unseen]
    random.Random(10).shuffle(moved)
    mixed = list(deck)
    for i, c in zip(unseen, moved, strict=True):
        mixed[i] = c
    views = []
    hands = []
    for d in (deck, mixed):
        req = T.CreateMatchRequest(
            preset="argentine", players=2, deck_orders=(tuple(d),), first_dealer=0,
            seats=(SeatSpec("you"), SeatSpec("cpu", bot_level=6)),
        )  # fmt: skip
        created = await svc.steps.create_match(operator, req)
        match = await svc.matches.load(created.match.match_id)
        assert match.state.hand is not None
        hands.append(match.state.hand.dealt)
        views.append(await svc.bots.observation(match, 1))
    assert hands[0][1] == hands[1][1] and hands[0][0] != hands[1][0]  # only what seat 1 cannot see
    a, b = views

    def public(o: Observation) -> Observation:
        """The observation without the deck's commitment (a hash of the whole deck, which
        tells nothing about a card until the seed is revealed)."""
        assert o.hand_events is not None
        start = o.hand_events[0]
        assert isinstance(start.payload, te.HandStarted)
        blank = dataclasses.replace(start, payload=dataclasses.replace(start.payload, deck_commitment=""))
        return dataclasses.replace(o, hand_events=(blank, *o.hand_events[1:]))

    assert public(a) == public(b)
    for level in LEVELS:
        assert decide(level, a, 1234, 2000)[0] == decide(level, b, 1234, 2000)[0]
