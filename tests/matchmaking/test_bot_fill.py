"""Bot fill: a ticket that waited the pool's ``bot_fill_after`` with no table formed gets a
match whose other seats the server's bots play (they move with no other client), a ticket
arriving before that pairs with it instead, a party in a four-seat pool gets two bots as its
opponents (never as partners, unless the pool allows it), the match is unrated, and two
workers racing over Redis fill a ticket once. The clock is the test's."""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import pytest

from tests.helpers.clock import FakeClock
from tests.matchmaking.conftest import SETTINGS, services_over
from tests.matchmaking.test_service import feed, spec
from tests.service.test_service import act, view_of
from truco_match.create import MatchSpec
from truco_match.events import MatchStatus
from truco_match.matchmaking import BotFill, PoolSpec, TicketState
from truco_match.records import StepCause
from truco_server.app.wiring import Services, store_settings
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.stores import open_store

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(180)]

WAIT_MS = 5000


async def bot_pool(
    svc: Services, operator: Operator, players: int = 2, partners: bool = False, **kw: Any
) -> str:
    made = await svc.matchmaking.pools.create(
        operator,
        PoolSpec(
            "quick",
            MatchSpec(preset="paulista", players=players, **kw),
            bot_fill=BotFill(WAIT_MS, level=2, partners=partners),
        ),
    )
    return made.key


async def test_a_lone_ticket_gets_a_bot_that_plays_after_the_wait(
    svc: Services, operator: Operator, clock: FakeClock
) -> None:
    key = await bot_pool(svc, operator, rated=True)
    ana, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), None)
    due = await svc.matchmaking.tables.run(key)
    assert due is not None and due <= round((clock.now + WAIT_MS / 1000) * 1000)
    assert (await svc.matchmaking.get_ticket(operator, "quick", ana.ticket_id)).state is TicketState.WAITING
    clock.advance(WAIT_MS / 1000 - 0.5)
    await svc.matchmaking.tables.run(key)  # not yet
    assert (await svc.matchmaking.get_ticket(operator, "quick", ana.ticket_id)).state is TicketState.WAITING
    clock.advance(0.5)
    await svc.matchmaking.tables.run(key)
    done = await svc.matchmaking.get_ticket(operator, "quick", ana.ticket_id)
    assert done.state is TicketState.MATCHED and [s.player_id for s in done.seats] == ["ana"]
    match = await svc.matches.load(done.match_id)
    assert [(s.player_id, s.bot_level) for s in match.seats] == [("ana", 0), ("", 2)]
    assert not match.meta.rated  # a rated pool's bot-filled match is not rated
    assert [e.id for e in await feed(svc, operator.name)] == [f"{ana.ticket_id}:matched"]
    # the bot plays: the match moves on with ana's credential alone
    try:
        token = done.seats[0].token
        for _ in range(400):
            view = await view_of(svc, done.match_id, token)
            if view.match_state is not MatchStatus.ACTIVE:
                break
            if view.observation.awaited == (0,):
                await act(svc, done.match_id, token, view.observation.legal_actions[0])
                continue
            nxt = await svc.steps.wake_match(done.match_id)
            clock.now = max(clock.now, (nxt or 0) / 1000)
        record = (await svc.reads.get_match_record(operator, T.GetMatchRecordRequest(done.match_id))).record
        bot_steps = [s for s in record.steps if s.cause is StepCause.BOT and s.seat == 1]
        assert len(bot_steps) >= 3
    finally:
        await svc.bots.close()


async def test_a_ticket_arriving_before_the_wait_pairs_with_the_first(
    svc: Services, operator: Operator, clock: FakeClock
) -> None:
    key = await bot_pool(svc, operator)
    ana, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), None)
    await svc.matchmaking.tables.run(key)
    clock.advance(WAIT_MS / 1000 - 1)
    bia, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("bia"), None)
    clock.advance(2)  # ana's wait is over, but a person is there
    await svc.matchmaking.tables.run(key)
    got = [await svc.matchmaking.get_ticket(operator, "quick", t.ticket_id) for t in (ana, bia)]
    assert [t.state for t in got] == [TicketState.MATCHED] * 2 and got[0].match_id == got[1].match_id
    match = await svc.matches.load(got[0].match_id)
    assert sorted(s.player_id for s in match.seats) == ["ana", "bia"]
    assert all(s.bot_level == 0 for s in match.seats)


async def test_a_party_gets_two_bots_as_opponents_and_a_single_waits_for_people(
    svc: Services, operator: Operator, clock: FakeClock
) -> None:
    key = await bot_pool(svc, operator, players=4)
    party, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("ana", "bia"), None)
    single, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("caio"), None)
    clock.advance(WAIT_MS / 1000)
    await svc.matchmaking.tables.run(key)
    done = await svc.matchmaking.get_ticket(operator, "quick", party.ticket_id)
    assert done.state is TicketState.MATCHED and len(done.seats) == 2
    match = await svc.matches.load(done.match_id)
    team = {s.seat: s.team for s in match.seats}
    humans = [s for s in match.seats if s.player_id]
    bots = [s for s in match.seats if s.bot_level]
    assert sorted(s.player_id for s in humans) == ["ana", "bia"] and len(bots) == 2
    assert len({team[s.seat] for s in humans}) == 1 and {team[s.seat] for s in bots} == {
        1 - team[humans[0].seat]
    }  # the party together, the bots the other team
    # caio alone would need a bot partner, which this pool does not allow: he waits
    left = await svc.matchmaking.get_ticket(operator, "quick", single.ticket_id)
    assert left.state is TicketState.WAITING


async def test_a_pool_with_bot_partners_fills_a_single_in_a_four_seat_pool(
    svc: Services, operator: Operator, clock: FakeClock
) -> None:
    key = await bot_pool(svc, operator, players=4, partners=True)
    single, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("caio"), None)
    clock.advance(WAIT_MS / 1000)
    await svc.matchmaking.tables.run(key)
    done = await svc.matchmaking.get_ticket(operator, "quick", single.ticket_id)
    match = await svc.matches.load(done.match_id)
    assert [s.player_id for s in match.seats].count("caio") == 1
    assert sum(1 for s in match.seats if s.bot_level == 2) == 3


async def test_a_bot_fill_pool_is_checked(svc: Services, operator: Operator) -> None:
    for fill in (BotFill(500), BotFill(600_000), BotFill(5000, level=7)):
        with pytest.raises(E.InvalidArgument):
            await svc.matchmaking.pools.create(
                operator, PoolSpec("bad", MatchSpec(preset="paulista", players=2), bot_fill=fill)
            )


async def test_two_workers_on_redis_fill_each_ticket_once_and_never_beside_a_pairing(
    request: pytest.FixtureRequest, clock: FakeClock, operator: Operator
) -> None:
    """Two workers (two stores on one Redis) run their passes at once while people keep
    arriving: every ticket is matched once, by bots or with a person, never both."""
    url = request.getfixturevalue("clean_redis_url")
    workers = [services_over(open_store(url, store_settings(SETTINGS)), clock) for _ in range(2)]
    one, two = workers
    try:
        key = await bot_pool(one, operator)
        made = []
        for i in range(30):
            lone, _ = await one.matchmaking.create_ticket(operator, "quick", spec(f"p{i}"), None)
            made.append(lone)
            clock.advance(WAIT_MS / 1000)  # it is due for bots...
            arriving = two.matchmaking.create_ticket(operator, "quick", spec(f"q{i}"), None)
            # ...while a person arrives and both workers run a pass
            got = await asyncio.gather(
                arriving, one.matchmaking.tables.run(key), two.matchmaking.tables.run(key)
            )
            made.append(got[0][0])
            clock.advance(WAIT_MS / 1000)
            for _ in range(5):
                await asyncio.gather(one.matchmaking.tables.run(key), two.matchmaking.tables.run(key))
        tickets = [await one.matchmaking.get_ticket(operator, "quick", t.ticket_id) for t in made]
        assert all(t.state is TicketState.MATCHED for t in tickets)
        per_match = collections.Counter(t.match_id for t in tickets)
        owned, token = [], None
        while True:
            page, token = await one.store.matches.list_matches(operator.name, None, 100, token)
            owned += [e.match_id for e in page]
            if token is None:
                break
        assert sorted(owned) == sorted(per_match)  # one match per formation, none made twice
        for match_id, n in per_match.items():
            match = await one.matches.load(match_id)
            humans = sorted(s.player_id for s in match.seats if s.player_id)
            bots = [s for s in match.seats if s.bot_level]
            mine = sorted(p.player_id for t in tickets if t.match_id == match_id for p in t.players)
            assert humans == mine and len(humans) + len(bots) == 2 and n == len(humans)
        announced = collections.Counter(e.id for e in await feed(one, operator.name))
        assert set(announced) == {f"{t.ticket_id}:matched" for t in made}
        filled = sum(1 for n in per_match.values() if n == 1)
        assert 0 < filled < len(made)  # both happened: bots for some, people for others
    finally:
        for w in workers:
            await w.relay.done()
            await w.matchmaking.close()
            w.streams.close()
            await w.store.close()
