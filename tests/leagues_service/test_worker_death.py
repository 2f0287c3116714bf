"""A worker that dies at any point of the league job (between any two store calls, in the
middle of creating a match) loses nothing and doubles nothing: another worker goes on, every
table gets exactly one match, every match is rated once. Real ``redis-server``.

The dying worker is a league service and a match service over a store that raises at its
k-th call (a BaseException, so nothing catches it), for every k of a pass."""

from __future__ import annotations

import collections
import dataclasses
import random
from typing import Any

from tests.leagues_service.conftest import Stack, make_stack, play_round, run_league, spec
from truco_server.core.caller import Operator
from truco_server.leagues import RatingBook
from truco_server.ports import Store
from truco_server.services.leagues import EntrantDoc, State
from truco_server.services.ratings import RATINGS


class Died(BaseException):
    """The worker's process is gone."""


class _DyingPort:
    """Delegates to one port of a real store; the ``at``-th awaited call of any port of the
    store raises :class:`Died`."""

    def __init__(self, port: Any, store: DyingStore) -> None:
        self._port = port
        self._store = store

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
    """A real store whose ``at``-th awaited call (of any of its ports) raises :class:`Died`."""

    def __init__(self, store: Store, at: int) -> None:
        self.at = at
        self.calls = 0
        self.matches = _DyingPort(store.matches, self)
        self.queues = _DyingPort(store.queues, self)
        self.operators = _DyingPort(store.operators, self)
        self.documents = _DyingPort(store.documents, self)
        self.tickets = _DyingPort(store.tickets, self)
        self.quotas = _DyingPort(store.quotas, self)
        self.description = store.description


async def _matches_of(store: Store, owner: str) -> list[str]:
    out, token = [], None
    while True:
        page, token = await store.matches.list_matches(owner, None, 100, token)
        out += [e.match_id for e in page]
        if token is None:
            return out


async def _check(s: Stack, operator: Operator, league_id: str) -> None:
    doc = await s.leagues.get_league(operator, league_id)
    assert doc.state == State.FINISHED
    tables = [doc.tables[k] for p in doc.pairings for k in p.tables]
    ids = [t.match_id for t in tables]
    assert all(ids) and len(set(ids)) == len(ids)
    assert sorted(await _matches_of(s.store, operator.name)) == sorted(ids)  # none lost, none doubled
    for p in doc.pairings:
        assert p.result is not None
    got = await s.store.documents.get(RATINGS, f"{operator.name}/{doc.family}")
    assert got is not None
    import orjson

    book = RatingBook.from_dict(orjson.loads(got[1]))
    rated = collections.Counter(
        player
        for t in tables
        if t.winner_side is not None and not t.forfeit
        for e in t.sides
        for player in doc.entrant_players()[e]
    )
    assert {p: book.rating(doc.family, p).games for p in rated} == dict(rated)


async def _run(stack: Stack, phase: str) -> int:
    """Kill a worker at every store call of one pass; return the number of points tried."""
    k = 0
    while True:
        k += 1
        operator = Operator(f"acme-{phase}-{k}")
        bots = [(await stack.leagues.bots.create(operator, f"b{i}", 2))[0].bot_id for i in range(2)]
        sp = spec("swiss", 5, rounds=2)
        entrants = (*sp.entrants[:3], *(EntrantDoc(b, 4 + i) for i, b in enumerate(bots)))
        doc = await stack.leagues.create_league(operator, dataclasses.replace(sp, entrants=entrants))
        await stack.leagues.start(operator, doc.league_id)
        if phase == "results":  # the pass that collects round 1, rates it and pairs round 2
            await stack.leagues.job.advance(doc.league_id)
            await play_round(stack, await stack.leagues.get_league(operator, doc.league_id), random.Random(k))
        dying = DyingStore(stack.store, k)
        worker = make_stack(dying)  # type: ignore[arg-type]
        try:
            await worker.leagues.job.advance(doc.league_id)
            survived = True
        except Died:
            survived = False
        await run_league(stack, doc.league_id, seed=k, operator=operator)
        await _check(stack, operator, doc.league_id)
        if survived and dying.calls < dying.at:  # no call died, the pass's nor a relay's beside it
            return k


async def test_death_at_every_point_of_pairing_and_creation(stack: Stack) -> None:
    # the pass: load, pair round 1 and write it, create the two matches (each one guarded
    # script; their relays run beside), write them, hand the bot its seat, write that: 7
    # points, then the relays' calls, which the pass does not wait for
    assert await _run(stack, "pairing") >= 8


async def test_death_at_every_point_of_collecting_and_rating(stack: Stack) -> None:
    assert await _run(stack, "results") > 10
