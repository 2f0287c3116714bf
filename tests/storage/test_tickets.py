"""The matchmaking tickets' contract (truco_server.ports.tickets): every test runs on every
adapter -- memory, one Redis server, a Redis Cluster and a Sentinel group."""

from __future__ import annotations

import asyncio

import pytest

from truco_server.ports import Store
from truco_server.ports.tickets import CANCELLED, EXPIRED, FORMING, MATCHED, WAITING, Formation, NewTicket

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

POOL = "0123456789abcdef01234567"


def ticket(i: int, *players: str, created: int = 1000, expires: int = 10**12) -> NewTicket:
    return NewTicket(f"t{i:020d}", players or (f"p{i}",), f"data-{i}".encode(), created + i, expires)


async def states(store: Store, *ids: str) -> list[str | None]:
    return [None if t is None else t.state for t in await store.tickets.get(POOL, list(ids))]


async def test_a_ticket_is_added_once_and_a_player_waits_once_per_pool(store: Store) -> None:
    t1 = ticket(1, "ana", "bia")
    assert (await store.tickets.add(POOL, t1, 100)).added
    again = await store.tickets.add(POOL, t1, 100)  # a retry of the same creation
    assert not again.added and again.existing is not None
    assert again.existing.state == WAITING and again.existing.data == b"data-1"
    busy = await store.tickets.add(POOL, ticket(2, "bia"), 100)
    assert not busy.added and busy.busy == ("bia", t1.ticket_id)
    assert (await store.tickets.add("another pool key 000000", ticket(2, "bia"), 100)).added  # per pool
    assert (await store.tickets.add(POOL, ticket(3, "caio"), 100)).added
    full = await store.tickets.add(POOL, ticket(4, "duda"), 2)
    assert not full.added and full.full
    assert [t.ticket_id for t in await store.tickets.waiting(POOL, 10)] == [t1.ticket_id, ticket(3).ticket_id]
    assert await states(store, t1.ticket_id, "t-none") == [WAITING, None]


async def test_forming_takes_every_ticket_or_none_and_only_once(two_workers: tuple[Store, Store]) -> None:
    a, b = two_workers
    ids = []
    for i in range(4):
        t = ticket(i)
        ids.append(t.ticket_id)
        assert (await a.tickets.add(POOL, t, 100)).added
    f1 = Formation("f1", b"table-1", 5000)
    f2 = Formation("f2", b"table-2", 5000)
    # two workers race for overlapping tables: exactly one wins, the other changes nothing
    got = await asyncio.gather(
        a.tickets.form(POOL, f1, ids[:2], 5000), b.tickets.form(POOL, f2, ids[1:3], 5000)
    )
    winners = [bad == [] for bad in got]
    assert winners.count(True) == 1
    won = ids[:2] if winners[0] else ids[1:3]
    lost_left = ids[2] if winners[0] else ids[0]
    assert await states(a, *won) == [FORMING, FORMING]
    assert await states(a, lost_left) == [WAITING]
    assert [f.formation_id for f in await b.tickets.pending(POOL, 10)] == ["f1" if winners[0] else "f2"]
    # a repeated call of the winning formation (a lost reply, retried) is still a success
    winner = f1 if winners[0] else f2
    assert await a.tickets.form(POOL, winner, won, 5000) == []
    assert len(await a.tickets.pending(POOL, 10)) == 1
    assert {t.ticket_id for t in await a.tickets.waiting(POOL, 10)} == set(ids) - set(won)


async def test_a_formation_is_pending_until_settled_once_and_frees_its_players(store: Store) -> None:
    t1, t2 = ticket(1, "ana"), ticket(2, "bia")
    for t in (t1, t2):
        await store.tickets.add(POOL, t, 100)
    assert (
        await store.tickets.form(POOL, Formation("f", b"table", 7000), [t1.ticket_id, t2.ticket_id], 7000)
        == []
    )
    (pending,) = await store.tickets.pending(POOL, 10)
    assert (pending.formation_id, pending.data, pending.formed) == ("f", b"table", 7000)
    assert not (await store.tickets.add(POOL, ticket(3, "ana"), 100)).added  # still forming
    results = {t1.ticket_id: b"seat 0", t2.ticket_id: b"seat 1"}
    assert await store.tickets.settle(POOL, "f", results)
    assert not await store.tickets.settle(POOL, "f", results)  # settled once
    assert await store.tickets.pending(POOL, 10) == []
    got = await store.tickets.get(POOL, [t1.ticket_id, t2.ticket_id])
    assert [(t.state, t.result, t.formation) for t in got if t] == [
        (MATCHED, b"seat 0", "f"),
        (MATCHED, b"seat 1", "f"),
    ]
    assert (await store.tickets.add(POOL, ticket(3, "ana"), 100)).added  # ana may queue again


async def test_cancel_and_expiry_end_only_a_waiting_ticket(store: Store) -> None:
    t1, t2, t3 = ticket(1, created=0, expires=5000), ticket(2, created=0, expires=9000), ticket(3)
    for t in (t1, t2, t3):
        await store.tickets.add(POOL, t, 100)
    assert await store.tickets.expiring(POOL, 6000, 10) == [t1.ticket_id]
    early = await store.tickets.end(POOL, t2.ticket_id, EXPIRED, now=6000)  # not due yet
    assert early is not None and early.state == WAITING
    ended = await store.tickets.end(POOL, t1.ticket_id, EXPIRED, now=6000)
    assert ended is not None and ended.state == EXPIRED and ended.data == b"data-1"
    assert await store.tickets.form(POOL, Formation("f", b"x", 9500), [t2.ticket_id, t3.ticket_id], 9500) == [
        t2.ticket_id  # expired by then: not taken, and nothing else either
    ]
    assert await states(store, t3.ticket_id) == [WAITING]
    cancelled = await store.tickets.end(POOL, t3.ticket_id, CANCELLED)
    assert cancelled is not None and cancelled.state == CANCELLED
    assert (await store.tickets.add(POOL, ticket(4, "p3"), 100)).added  # its player is free again
    await store.tickets.add(POOL, ticket(5, "eve"), 100)
    await store.tickets.add(POOL, ticket(6, "fred"), 100)
    await store.tickets.form(
        POOL, Formation("g", b"y", 7000), [ticket(5).ticket_id, ticket(6).ticket_id], 7000
    )
    forming = await store.tickets.end(POOL, ticket(5).ticket_id, CANCELLED)  # too late to cancel
    assert forming is not None and forming.state == FORMING
    assert await store.tickets.end(POOL, "t-none", CANCELLED) is None
    assert [t.ticket_id for t in await store.tickets.waiting(POOL, 10)] == [t2.ticket_id, ticket(4).ticket_id]
