"""The arena in the league service in process (typed calls, no transport) with a clock the
test moves: waiting entrants are paired as matches end, nobody is in two matches at once,
late entrants join the pool, withdrawn ones leave it, nothing is paired after the end, and
the league finishes once the last match in play is over."""

from __future__ import annotations

import dataclasses
import random
import time

import pytest

from tests.leagues_service.conftest import OPERATOR, Stack, make_stack, play_match, run_league, spec
from tests.leagues_service.test_worker_death import Died, DyingStore
from tests.leagues_service.test_worker_death import _check as check_no_loss
from truco_server.core import errors as E
from truco_server.core.caller import Operator
from truco_server.leagues import arena_scores
from truco_server.services.leagues import EntrantDoc, LeagueDoc, State


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def _clocked(s: Stack) -> Clock:
    clock = Clock()
    s.leagues.now = clock
    s.leagues.job.now = clock
    return clock


def _live(doc: LeagueDoc) -> list[set[str]]:
    return [{p.first, p.second or ""} for p in doc.pairings if p.result is None]


def _no_one_twice(doc: LeagueDoc) -> None:
    busy = [e for pair in _live(doc) for e in pair]
    assert len(busy) == len(set(busy)), busy


async def _play_one(s: Stack, doc: LeagueDoc, rng: random.Random) -> None:
    """Play the oldest match in play to its end."""
    p = next(p for p in doc.pairings if p.result is None)
    t = doc.tables[p.tables[0]]
    await play_match(s, t.match_id, [tok for _, _, tok in t.seats], rng)


async def test_an_arena_pairs_as_matches_end_and_finishes_after_its_time(any_stack: Stack) -> None:
    s = any_stack
    clock = _clocked(s)
    rng = random.Random(3)
    with pytest.raises(E.ServiceError) as err:  # an arena needs a duration
        await s.leagues.create_league(OPERATOR, spec("arena", 4))
    assert err.value.code == E.Code.INVALID_ARGUMENT and "arena.duration" in str(err.value)
    doc = await s.leagues.create_league(OPERATOR, spec("arena", 5, arena_duration=600.0))
    lid = doc.league_id
    await s.leagues.start(OPERATOR, lid)
    await s.leagues.job.advance(lid)
    doc = await s.leagues.get_league(OPERATOR, lid)
    assert doc.ends_at == clock.t + 600.0
    assert doc.round == 1 and len(_live(doc)) == 2  # five: two tables, one waits
    waiting = {e.id for e in doc.entrants} - set().union(*_live(doc))
    assert len(waiting) == 1
    # a late entrant joins the pool: paired at once with the one waiting
    await s.leagues.register(OPERATOR, lid, EntrantDoc("late", 0))
    await s.leagues.job.advance(lid)
    doc = await s.leagues.get_league(OPERATOR, lid)
    assert doc.round == 2 and _live(doc)[-1] == waiting | {"late"}
    _no_one_twice(doc)
    # matches end one by one: each time the two who finished wait; they are paired with
    # each other only when nobody else is waiting or playing
    for _ in range(12):
        await _play_one(s, doc, rng)
        await s.leagues.job.advance(lid)
        doc = await s.leagues.get_league(OPERATOR, lid)
        _no_one_twice(doc)
        assert doc.state == State.RUNNING
    for p in doc.pairings:
        assert p.second is not None and len(p.tables) == 1  # no byes in an arena
    # p05 withdraws: never paired again once its match is over
    await s.leagues.withdraw(OPERATOR, lid, "p05")
    waves_before = doc.round
    # the time is up: nothing new is paired; the matches in play finish and count
    clock.t = doc.ends_at
    while True:
        await s.leagues.job.advance(lid)
        doc = await s.leagues.get_league(OPERATOR, lid)
        if not _live(doc):
            break
        await _play_one(s, doc, rng)
    await s.leagues.job.advance(lid)
    doc = await s.leagues.get_league(OPERATOR, lid)
    assert doc.state == State.FINISHED and doc.round == waves_before
    assert all(p.result is not None for p in doc.pairings)
    late_waves = [p.round for p in doc.pairings if "p05" in (p.first, p.second)]
    assert late_waves and max(late_waves) <= waves_before
    _, table, _ = await s.leagues.standings(OPERATOR, lid)
    scores = arena_scores([e.id for e in doc.entrants], doc.results())
    assert [r.score for r in table] == sorted((float(v.score) for v in scores.values()), reverse=True)
    assert {r.entrant_id for r in table} == {e.id for e in doc.entrants}
    # every match rated once (its winner known), one per played table
    board = await s.leagues.ratings.leaderboard(OPERATOR, doc.family, 0)
    games = {e.player_id: e.rating.games for e in board}
    decided = [p for p in doc.pairings if p.result and p.result["winner"]]
    assert sum(games.values()) == 2 * len(decided)
    with pytest.raises(E.ServiceError) as err:  # the arena's time is up: no late entry
        await s.leagues.register(OPERATOR, lid, EntrantDoc("later", 0))
    assert err.value.code == E.Code.FAILED_PRECONDITION


async def test_an_arena_refuses_rounds_series_and_a_round_interval(any_stack: Stack) -> None:
    s = any_stack
    for kw, field in (
        ({"rounds": 3}, "rounds"),
        ({"series_best_of": 3}, "format"),
        ({"schedule": (0.0, 60.0)}, "schedule.round_interval"),
        ({"tie_breaks": ("buchholz",)}, "tie_breaks"),
    ):
        with pytest.raises(E.ServiceError) as err:
            await s.leagues.create_league(OPERATOR, spec("arena", 4, arena_duration=60.0, **kw))  # type: ignore[arg-type]
        assert err.value.code == E.Code.INVALID_ARGUMENT and field in str(err.value), (kw, err.value)
    with pytest.raises(E.ServiceError) as err:
        await s.leagues.create_league(OPERATOR, spec("swiss", 4, rounds=2, arena_duration=60.0))
    assert "arena.duration" in str(err.value)


async def _arena_death_run(stack: Stack, phase: str) -> int:
    """Kill a worker at every store call of one arena pass (the one that pairs the first
    wave, or the one that collects a result and pairs the next wave); another worker goes
    on: every table one match, nobody in two live pairings, every match rated once."""
    k = 0
    while True:
        k += 1
        operator = Operator(f"acme-arena-{phase}-{k}")
        bots = [(await stack.leagues.bots.create(operator, f"b{i}", 2))[0].bot_id for i in range(2)]
        sp = spec("arena", 5, arena_duration=3600.0)
        entrants = (*sp.entrants[:3], *(EntrantDoc(b, 4 + i) for i, b in enumerate(bots)))
        doc = await stack.leagues.create_league(operator, dataclasses.replace(sp, entrants=entrants))
        lid = doc.league_id
        await stack.leagues.start(operator, lid)
        rng = random.Random(k)
        if phase == "results":  # the pass that collects one result and pairs the next wave
            await stack.leagues.job.advance(lid)
            await _play_one(stack, await stack.leagues.get_league(operator, lid), rng)
        dying = DyingStore(stack.store, k)
        worker = make_stack(dying)  # type: ignore[arg-type]
        try:
            await worker.leagues.job.advance(lid)
            survived = True
        except Died:
            survived = False
        for _ in range(4):  # a few more waves, then the time is up
            await stack.leagues.job.advance(lid)
            doc = await stack.leagues.get_league(operator, lid)
            _no_one_twice(doc)
            await _play_one(stack, doc, rng)
        late = Clock()
        late.t = doc.ends_at + 1
        stack.leagues.job.now = late
        try:
            await run_league(stack, lid, seed=k, operator=operator)
        finally:
            stack.leagues.job.now = time.time
        await check_no_loss(stack, operator, lid)
        if survived and dying.calls < dying.at:
            return k


async def test_an_arena_survives_a_death_at_every_point_of_a_pass(stack: Stack) -> None:
    assert await _arena_death_run(stack, "pairing") >= 5
    assert await _arena_death_run(stack, "results") >= 5
