"""The matchmaking service over both stores: pools, tickets, parties, the ticket stream,
cancel and expiry, ``ticket.matched`` on the operator feed, and a worker that dies at every
point of a pass (another pass finishes its work: every ticket seated once)."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from typing import Any

import pytest

from tests.helpers.clock import FakeClock
from tests.matchmaking.conftest import services_over
from tests.service.test_service import act
from truco_contract import codec
from truco_contract.pb import operator_service_pb2
from truco_engine import Action
from truco_match.create import MatchSpec
from truco_match.matchmaking import (
    PoolSpec,
    RatingWindow,
    Ticket,
    TicketPlayer,
    TicketSpec,
    TicketState,
)
from truco_match.operator_events import OperatorEvent
from truco_server.app.wiring import Services
from truco_server.core import errors as E
from truco_server.core.caller import Operator, parse_ticket_token, parse_token
from truco_server.leagues import RatedMatch
from truco_server.ports import Store

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]


def spec(*players: str) -> TicketSpec:
    return TicketSpec(tuple(TicketPlayer(p, p.upper()) for p in players))


async def pool(svc: Services, operator: Operator, pool_id: str = "quick", players: int = 2, **kw: Any) -> str:
    made = await svc.matchmaking.pools.create(
        operator, PoolSpec(pool_id, MatchSpec(preset="paulista", players=players), **kw)
    )
    return made.key


async def feed(svc: Services, owner: str, kind: str = "ticket.matched") -> list[OperatorEvent]:
    await svc.relay.done()
    got = await svc.store.operators.read(owner, "", 10_000)
    events = [
        codec.operator_event_from_proto(operator_service_pb2.OperatorEvent.FromString(raw)) for _, raw in got
    ]
    return [e for e in events if e.type.value == kind]


async def test_a_pool_is_made_once_and_another_definition_is_refused(
    svc: Services, operator: Operator
) -> None:
    spec_ = PoolSpec("quick", MatchSpec(preset="paulista", players=2), RatingWindow(5, 1, 50))
    first = await svc.matchmaking.pools.create(operator, spec_)
    again = await svc.matchmaking.pools.create(operator, spec_)
    assert (first.secret, first.created_at) == (again.secret, again.created_at)
    with pytest.raises(E.ServiceError) as exc:
        await svc.matchmaking.pools.create(operator, dataclasses.replace(spec_, ticket_ttl_ms=5000))
    assert exc.value.code is E.Code.ALREADY_EXISTS and exc.value.reason == "POOL_EXISTS"
    with pytest.raises(E.InvalidArgument):
        await svc.matchmaking.pools.create(operator, PoolSpec("bad", MatchSpec(preset="nope")))
    assert [p.pool.pool_id for p in await svc.matchmaking.pools.list(operator)] == ["quick"]
    with pytest.raises(E.ServiceError) as missing:
        await svc.matchmaking.pools.get("other operator", "quick")
    assert missing.value.code is E.Code.NOT_FOUND


async def test_two_tickets_get_one_match_their_seats_and_the_operator_is_told(
    svc: Services, operator: Operator
) -> None:
    key = await pool(svc, operator)
    (ana, ana_token), (bia, _) = [
        await svc.matchmaking.create_ticket(operator, "quick", spec(p), None) for p in ("ana", "bia")
    ]
    assert ana.state is TicketState.WAITING and ana_token.startswith("tk1.")
    assert await svc.matchmaking.tables.run(key) is not None
    got = [await svc.matchmaking.get_ticket(operator, "quick", t.ticket_id) for t in (ana, bia)]
    assert [t.state for t in got] == [TicketState.MATCHED] * 2
    assert got[0].match_id == got[1].match_id != ""
    seats = {s.player_id: s for t in got for s in t.seats}
    assert sorted(s.seat for s in seats.values()) == [0, 1]
    match = await svc.matches.load(got[0].match_id)
    assert {s.player_id: s.seat for s in match.seats} == {p: s.seat for p, s in seats.items()}
    assert {s.display_name for s in match.seats} == {"ANA", "BIA"}
    assert match.meta.labels["pool"] == "quick" and match.meta.labels["formation"].startswith("f")
    for s in seats.values():  # each credential plays its seat
        cred = parse_token(s.token)
        assert cred is not None and svc.matches.seat_of(match, cred) == s.seat
    events = await feed(svc, operator.name)
    assert sorted(e.id for e in events) == sorted(f"{t.ticket_id}:matched" for t in got)
    for e in events:
        assert e.ticket is not None and e.match_id == got[0].match_id
        assert [(s.player_id, s.seat, s.token) for s in e.ticket.seats] == [
            (s.player_id, s.seat, s.token) for t in got if t.ticket_id == e.ticket.ticket_id for s in t.seats
        ]
    assert await svc.matchmaking.tables.run(key) is None  # nothing waits any more


async def test_a_party_sits_as_partners_in_a_four_seat_pool(svc: Services, operator: Operator) -> None:
    key = await pool(svc, operator, players=4)
    party, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("ana", "bia"), None)
    for p in ("caio", "duda"):
        await svc.matchmaking.create_ticket(operator, "quick", spec(p), None)
    await svc.matchmaking.tables.run(key)
    done = await svc.matchmaking.get_ticket(operator, "quick", party.ticket_id)
    match = await svc.matches.load(done.match_id)
    team = {s.player_id: s.team for s in match.seats}
    assert team["ana"] == team["bia"] != team["caio"] == team["duda"]
    assert len(done.seats) == 2  # the party's ticket carries both seats
    with pytest.raises(E.InvalidArgument):  # a party larger than a team
        await svc.matchmaking.create_ticket(operator, "quick", spec("x", "y", "z"), None)


async def test_a_retry_returns_the_same_ticket_and_a_player_waits_once(
    svc: Services, operator: Operator
) -> None:
    await pool(svc, operator)
    first = await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), "req-1")
    assert await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), "req-1") == first
    with pytest.raises(E.RequestIdReused):
        await svc.matchmaking.create_ticket(operator, "quick", spec("bia"), "req-1")
    with pytest.raises(E.ServiceError) as busy:
        await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), "req-2")
    assert busy.value.reason == "PLAYER_WAITING" and busy.value.metadata["ticket_id"] == first[0].ticket_id


async def test_cancel_a_waiting_ticket_but_not_a_matched_one(svc: Services, operator: Operator) -> None:
    key = await pool(svc, operator)
    ana, token = await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), None)
    holder = parse_ticket_token(token)
    assert holder is not None
    cancelled = await svc.matchmaking.cancel_ticket(holder, "quick", ana.ticket_id)
    assert cancelled.state is TicketState.CANCELLED
    assert (
        await svc.matchmaking.cancel_ticket(operator, "quick", ana.ticket_id)
    ).state is TicketState.CANCELLED
    bia, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("bia"), None)
    await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), None)  # ana may queue again
    await svc.matchmaking.tables.run(key)
    with pytest.raises(E.ServiceError) as late:
        await svc.matchmaking.cancel_ticket(operator, "quick", bia.ticket_id)
    assert late.value.reason == "TICKET_NOT_WAITING" and late.value.metadata["match_id"]


async def test_a_ticket_credential_stands_for_its_own_ticket_only(svc: Services, operator: Operator) -> None:
    await pool(svc, operator)
    ana, ana_token = await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), None)
    bia, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("bia"), None)
    holder = parse_ticket_token(ana_token)
    assert holder is not None
    assert (await svc.matchmaking.get_ticket(holder, "quick", ana.ticket_id)).ticket_id == ana.ticket_id
    with pytest.raises(E.PermissionDenied):
        await svc.matchmaking.get_ticket(holder, "quick", bia.ticket_id)
    forged = parse_ticket_token(ana_token[:-4] + "0000")
    assert forged is not None
    with pytest.raises(E.Unauthenticated):
        await svc.matchmaking.get_ticket(forged, "quick", ana.ticket_id)


async def test_an_unmatched_ticket_expires(svc: Services, operator: Operator, clock: FakeClock) -> None:
    key = await pool(svc, operator, ticket_ttl_ms=60_000)
    ana, _ = await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), None)
    assert await svc.matchmaking.tables.run(key) == round((clock.now + 1) * 1000)  # waits: look again
    clock.advance(61)
    assert await svc.matchmaking.tables.run(key) is None
    assert (await svc.matchmaking.get_ticket(operator, "quick", ana.ticket_id)).state is TicketState.EXPIRED


async def test_the_ticket_stream_ends_with_the_seats(svc: Services, operator: Operator) -> None:
    key = await pool(svc, operator)
    ana, token = await svc.matchmaking.create_ticket(operator, "quick", spec("ana"), None)
    holder = parse_ticket_token(token)
    assert holder is not None
    seen: list[Ticket | None] = []

    async def follow() -> None:
        async for t in svc.matchmaking.follow(holder, "quick", ana.ticket_id):
            seen.append(t)

    task = asyncio.create_task(follow())
    while not seen:
        await asyncio.sleep(0.01)
    await svc.matchmaking.create_ticket(operator, "quick", spec("bia"), None)
    await svc.matchmaking.tables.run(key)
    await asyncio.wait_for(task, 10)
    tickets = [t for t in seen if t is not None]
    assert [t.state for t in tickets] == [TicketState.WAITING, TicketState.MATCHED]
    assert tickets[-1].seats and tickets[-1].seats[0].player_id == "ana"


async def test_a_rating_window_pairs_the_closest_and_waits_for_the_far(
    svc: Services, operator: Operator, clock: FakeClock
) -> None:
    key = await pool(svc, operator, window=RatingWindow(initial_width=3, widen_per_second=1))
    for i, loser in enumerate(("s2", "s3")):  # s1 won twice: its rating is well above a newcomer's
        played = RatedMatch(f"m{i}", "paulista-2p", (("s1",), (loser,)), (1, 2))
        await svc.ratings.rate(operator.name, "paulista-2p", [played])
    made = {
        p: (await svc.matchmaking.create_ticket(operator, "quick", spec(p), None))[0]
        for p in ("s1", "new1", "new2")
    }

    async def state(player: str) -> Ticket:
        return await svc.matchmaking.get_ticket(operator, "quick", made[player].ticket_id)

    await svc.matchmaking.tables.run(key)
    new1, new2, s1 = await state("new1"), await state("new2"), await state("s1")
    assert new1.state is TicketState.MATCHED and new1.match_id == new2.match_id  # the two closest
    assert s1.state is TicketState.WAITING and s1.rating > 25 + 3
    gap = s1.rating - 25.0  # to a newcomer's prior
    clock.advance(gap)  # s1's window is 3 + gap by now
    made["new3"] = (await svc.matchmaking.create_ticket(operator, "quick", spec("new3"), None))[0]
    await svc.matchmaking.tables.run(key)
    assert (await state("s1")).state is TicketState.WAITING  # the newcomer's window is 3
    clock.advance(gap - 3 - 0.1)
    await svc.matchmaking.tables.run(key)
    assert (await state("s1")).state is TicketState.WAITING  # the newcomer's is just short of the gap
    clock.advance(0.2)  # now both windows reach
    await svc.matchmaking.tables.run(key)
    assert (await state("s1")).match_id == (await state("new3")).match_id != ""


async def test_a_rated_pool_makes_rated_matches_that_move_its_players_ratings(
    svc: Services, operator: Operator
) -> None:
    """A rated pool is checked as its matches will be (every seat with a player), and the
    match a table gets is rated into the pool's family when it ends."""
    made = await svc.matchmaking.pools.create(
        operator,
        PoolSpec("ranked", MatchSpec(preset="paulista", players=2, rated=True), RatingWindow(5, 1, 50)),
    )
    assert made.pool.family == "paulista-2p"
    tickets = [
        (await svc.matchmaking.create_ticket(operator, "ranked", spec(p), None))[0] for p in ("ana", "bia")
    ]
    await svc.matchmaking.tables.run(made.key)
    done = await svc.matchmaking.get_ticket(operator, "ranked", tickets[0].ticket_id)
    match = await svc.matches.load(done.match_id)
    assert match.meta.rated
    await act(svc, done.match_id, done.seats[0].token, Action("resign"))
    await svc.relay.done()
    after = {p: await svc.matchmaking.player_rating(operator, p, "paulista-2p") for p in ("ana", "bia")}
    assert after["ana"].games == after["bia"].games == 1
    assert after["bia"].mu > after["ana"].mu  # ana resigned


class Died(BaseException):
    """The worker's process is gone."""


class _Dying:
    def __init__(self, port: Any, store: DyingStore) -> None:
        self._port, self._store = port, store

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._port, name)
        if not callable(value) or name in ("shards", "subscribe"):
            return value

        async def call(*args: Any, **kwargs: Any) -> Any:
            self._store.calls += 1
            if self._store.calls == self._store.at:
                raise Died(name)
            return await value(*args, **kwargs)

        return call


class DyingStore:
    """A real store whose ``at``-th awaited call (of any port) raises :class:`Died`."""

    def __init__(self, store: Store, at: int) -> None:
        self.at, self.calls = at, 0
        for port in ("matches", "queues", "operators", "documents", "tickets", "quotas"):
            setattr(self, port, _Dying(getattr(store, port), self))
        self.description = store.description


async def test_a_worker_dying_at_any_point_of_a_pass_loses_and_doubles_nothing(
    svc: Services, clock: FakeClock
) -> None:
    """For every k: a worker runs a pass over a four-seat pool (a party and singles) and dies
    at its k-th store call; a healthy worker's passes then finish. Every ticket is matched
    once, each formation made one match, every party sits together, and each ticket was
    announced on the feed (at least once, one id)."""
    k = 0
    while True:
        k += 1
        operator = Operator(f"acme-{k}")
        key = await pool(svc, operator, players=4)
        made = [
            (await svc.matchmaking.create_ticket(operator, "quick", spec(*players), None))[0]
            for players in (("a", "b"), ("c",), ("d",), ("e", "f"), ("g", "h"))
        ]
        dying = services_over(DyingStore(svc.store, k), clock)  # type: ignore[arg-type]
        try:
            await dying.matchmaking.tables.run(key)
            survived = True
        except Died:
            survived = False
        for _ in range(10):  # the healthy worker's passes, until nothing waits
            if await svc.matchmaking.tables.run(key) is None:
                break
        got = [await svc.matchmaking.get_ticket(operator, "quick", t.ticket_id) for t in made]
        assert [t.state for t in got] == [TicketState.MATCHED] * 5, (k, got)
        matches = collections.Counter(t.match_id for t in got)
        assert sorted(matches.values()) == [2, 3]  # two tables: 2 parties | a party and two singles
        for t in got:
            m = await svc.matches.load(t.match_id)
            team = {s.player_id: s.team for s in m.seats}
            assert len({team[p.player_id] for p in t.players}) == 1  # the party together
            assert {s.player_id for s in t.seats} == {p.player_id for p in t.players}
        owned, token = [], None
        while True:
            page, token = await svc.store.matches.list_matches(operator.name, None, 100, token)
            owned += [e.match_id for e in page]
            if token is None:
                break
        assert sorted(owned) == sorted(matches)  # no match made twice
        announced = {e.id for e in await feed(svc, operator.name)}
        assert announced == {f"{t.ticket_id}:matched" for t in made}
        await dying.relay.done()
        if survived:
            break
    assert k > 8
