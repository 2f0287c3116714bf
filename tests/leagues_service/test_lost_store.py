"""A league lost while its job is under way -- a Redis restarted without persistence comes
back empty -- gets nothing written back: no league, rating book, bot assignment or match of
it re-created by the work that was in flight. Real ``redis-server``.

* The store is wiped (FLUSHALL) before each store call of a pass in turn, for every call of
  a pass that creates a round's matches and hands bots their seats, and of one that collects
  results, rates them and pairs the next round; the pass then runs on to its end (as it
  would against a Redis that restarted empty: its calls retry until the server answers).
* A pass held in the middle of creating a round's matches while the test restarts a
  redis-server of its own, without persistence, and then let go.

After each, the keyspace is scanned: the only key allowed is the operator's event stream
(an operator is not a document of the store, and events relayed after the wipe are its).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.leagues_service.conftest import OPERATOR, SETTINGS, Stack, make_stack, play_round, spec
from truco_server.app.wiring import store_settings
from truco_server.core import errors as E
from truco_server.core import metrics
from truco_server.core.caller import Operator
from truco_server.ports import Store
from truco_server.services.leagues import EntrantDoc, State
from truco_server.stores import open_store
from truco_tools.redis_proc import RedisProcess, start_redis

pytestmark = pytest.mark.timeout(600)


class _WipingPort:
    """Delegates to one port of a real store; before the ``at``-th awaited call of any port
    of the store, the whole Redis is flushed."""

    def __init__(self, port: Any, store: WipingStore) -> None:
        self._port = port
        self._store = store

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._port, name)
        if not callable(value) or name in ("shards", "subscribe"):
            return value

        async def call(*args: Any, **kwargs: Any) -> Any:
            self._store.calls += 1
            if self._store.calls == self._store.at:
                self._store.wipe()
            return await value(*args, **kwargs)

        return call


class WipingStore:
    """A real store whose Redis loses everything just before the ``at``-th awaited call."""

    def __init__(self, store: Store, client: redis.Redis, at: int) -> None:
        self.at = at
        self.calls = 0
        self.wiped = False
        self._client = client
        self.matches = _WipingPort(store.matches, self)
        self.queues = _WipingPort(store.queues, self)
        self.operators = _WipingPort(store.operators, self)
        self.documents = _WipingPort(store.documents, self)
        self.description = store.description

    def wipe(self) -> None:
        self._client.flushall()
        self.wiped = True


def leftovers(client: redis.Redis, owner: str) -> list[str]:
    """Every key of the keyspace but the operator's event stream."""
    allowed = {f"truco:{{op:{owner}}}:events"}
    return sorted(k.decode() for k in client.scan_iter(count=1000) if k.decode() not in allowed)


def dropped(parent: str) -> float:
    return metrics.REGISTRY.get_sample_value("truco_orphaned_work_dropped_total", {"parent": parent}) or 0.0


async def _league(stack: Stack, operator: Operator, phase: str, seed: int) -> str:
    """A started swiss of two players and two bots, seeded so that each bot meets a player in
    the first round (every table has a bot seat): before its first pass ("pairing"), or with
    its first round played ("results")."""
    bots = [(await stack.leagues.bots.create(operator, f"b{i}", 2))[0].bot_id for i in range(2)]
    sp = spec("swiss", 4, rounds=2)
    entrants = (*sp.entrants[:2], *(EntrantDoc(b, 3 + i) for i, b in enumerate(bots)))
    doc = await stack.leagues.create_league(operator, dataclasses.replace(sp, entrants=entrants))
    await stack.leagues.start(operator, doc.league_id)
    if phase == "results":
        await stack.leagues.job.advance(doc.league_id)
        await play_round(stack, await stack.leagues.get_league(operator, doc.league_id), random.Random(seed))
    return doc.league_id


async def _pass(worker: Stack, league_id: str) -> int | None:
    """One pass as the league queue's reader runs it: a pass that fails (a match read in the
    middle of the wipe) is tried again, as the reader would."""
    for _ in range(3):
        try:
            return await worker.leagues.job.advance(league_id)
        except E.ServiceError:
            continue
        finally:
            await worker.relay.done()
    raise AssertionError("the pass failed three times")


@pytest.fixture
def flush_client(clean_redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(clean_redis_url) as client:
        yield client


@pytest.mark.parametrize("phase", ["pairing", "results"])
async def test_a_wipe_at_any_point_of_a_pass_gets_nothing_written_back(
    stack: Stack, flush_client: redis.Redis, phase: str
) -> None:
    k = 0
    while True:
        k += 1
        operator = Operator(f"acme-{phase}-{k}")
        league_id = await _league(stack, operator, phase, k)
        wiping = WipingStore(stack.store, flush_client, k)
        worker = make_stack(wiping)  # type: ignore[arg-type]
        await _pass(worker, league_id)
        if not wiping.wiped:  # the pass made fewer than k calls: every point was tried
            assert k > 10
            return
        assert leftovers(flush_client, operator.name) == [], f"wiped before call {k} of the {phase} pass"
        assert await _pass(worker, league_id) is None  # the job is dropped: nothing left to do
        assert leftovers(flush_client, operator.name) == []


@pytest.fixture
def own_redis() -> Iterator[RedisProcess]:
    """A redis-server without persistence of this test's own (it restarts it)."""
    proc = start_redis()
    try:
        yield proc
    finally:
        proc.stop()


async def test_a_pass_held_while_redis_restarts_empty_creates_no_match_and_writes_no_record(
    own_redis: RedisProcess,
) -> None:
    store = open_store(own_redis.url, store_settings(SETTINGS))
    try:
        stack = make_stack(store)
        league_id = await _league(stack, OPERATOR, "pairing", 1)
        job = stack.leagues.job
        create = job.create_match
        first_made, go_on = asyncio.Event(), asyncio.Event()

        async def held(operator: Operator, req: Any, **kw: Any) -> Any:
            if first_made.is_set():
                await go_on.wait()  # the second table's match waits for the restart
            made = await create(operator, req, **kw)
            first_made.set()
            return made

        job.create_match = held
        before = dropped("league")
        running = asyncio.create_task(job.advance(league_id))
        await asyncio.wait_for(first_made.wait(), 30)
        own_redis.kill()  # no persistence: it starts again empty
        own_redis.restart()
        go_on.set()
        assert await asyncio.wait_for(running, 60) is None
        await stack.relay.done()
        with own_redis.client() as client:
            assert leftovers(client, OPERATOR.name) == []
        assert dropped("league") == before + 1
        with pytest.raises(Exception, match="no league"):
            await stack.leagues.get_league(OPERATOR, league_id)
    finally:
        await store.close()


async def test_a_league_whose_state_is_left_alone_still_finishes(stack: Stack) -> None:
    """The guards change nothing for a league that is there: it runs to its end."""
    from tests.leagues_service.conftest import run_league

    league_id = await _league(stack, OPERATOR, "pairing", 3)
    await stack.leagues.job.advance(league_id)
    first = await stack.leagues.get_league(OPERATOR, league_id)
    bots = {p for t in first.tables.values() for _, p, _ in t.seats if p.startswith("bot_")}
    assert len(bots) == 2 and len(first.tables) == 2  # each table has a bot seat
    for bot in bots:
        assert len(await stack.store.documents.assignments(bot)) == 1
    doc = await run_league(stack, league_id, seed=3)
    assert doc.state == State.FINISHED
    assert all(t.rated or t.forfeit or t.winner_side is None for t in doc.tables.values())
