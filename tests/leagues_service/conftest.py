"""Fixtures of the league service tests: the service on a real ``redis-server`` (and on the
in-memory store where the store does not matter), and functions that play a league's matches
through the match service only."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from truco_contract.pb import match_pb2, match_service_pb2
from truco_match.events import MatchStatus
from truco_server.app.wiring import Services, build_services, store_settings
from truco_server.core import requests as T
from truco_server.core.caller import MatchCredential, Operator, parse_token
from truco_server.core.config import Settings
from truco_server.ports import Store
from truco_server.services.leagues import EntrantDoc, LeagueDoc, LeagueSpec, State
from truco_server.stores import open_store

OPERATOR = Operator("acme")
SETTINGS = Settings(heartbeat_interval_seconds=0.2)

Stack = Services
"""A worker's services (the league service and the match services under it), no transport."""


def make_stack(store: Store) -> Stack:
    stack = build_services(SETTINGS, asyncio.Event(), store)
    stack.leagues.bots.lobby_poll_seconds = 0.05
    return stack


@pytest.fixture
async def stack(clean_redis_url: str) -> AsyncIterator[Stack]:
    store = open_store(clean_redis_url, store_settings(SETTINGS))
    try:
        yield make_stack(store)
    finally:
        await store.close()


@pytest.fixture(params=["memory", "redis"])
async def any_stack(request: pytest.FixtureRequest) -> AsyncIterator[Stack]:
    url = None if request.param == "memory" else request.getfixturevalue("clean_redis_url")
    store = open_store(url, store_settings(SETTINGS))
    try:
        yield make_stack(store)
    finally:
        await store.close()


def template(
    preset: str = "argentine", target: int = 3, **settings: object
) -> match_service_pb2.CreateMatchRequest:
    req = match_service_pb2.CreateMatchRequest(rules=match_pb2.RuleSet(preset=preset))
    req.rules.overrides.update({"target_points": target})
    for k, v in settings.items():
        getattr(req.settings, k).CopyFrom(v)
    return req


def spec(fmt: str, n: int, *, rounds: int | None = None, duplicate: str = "", **kw: object) -> LeagueSpec:
    return LeagueSpec(
        name=f"{fmt} of {n}",
        format=fmt,
        template=kw.pop("template", None) or template(),  # type: ignore[arg-type]
        rounds=rounds,
        duplicate=(duplicate, "", ""),
        entrants=tuple(EntrantDoc(f"p{i:02d}", i) for i in range(1, n + 1)),
        **kw,  # type: ignore[arg-type]
    )


def cred(token: str) -> MatchCredential:
    parsed = parse_token(token)
    assert parsed is not None
    return parsed


async def play_match(s: Stack, match_id: str, tokens: list[str], rng: random.Random) -> None:
    """Random legal actions through the service until the match is over."""
    view = (await s.reads.get_match(cred(tokens[0]), T.GetMatchRequest(match_id))).view
    n = 0
    while view.match_state is MatchStatus.ACTIVE and n < 5000:
        seat = view.observation.awaited[0]
        view = (await s.reads.get_match(cred(tokens[seat]), T.GetMatchRequest(match_id))).view
        action = rng.choice(view.observation.legal_actions)
        res = await s.matches.submit_action(
            cred(tokens[seat]), T.SubmitActionRequest(match_id, action, f"r{n}", view.version)
        )
        view = res.view
        n += 1


async def play_round(s: Stack, doc: LeagueDoc, rng: random.Random) -> None:
    """Play every match of the league that is under way."""
    for t in doc.tables.values():
        if t.match_id and not t.done:
            snap = await s.store.matches.load(t.match_id)
            assert snap is not None
            if snap.status == "active":
                await play_match(s, t.match_id, [tok for _, _, tok in t.seats], rng)


async def run_league(
    s: Stack, league_id: str, seed: int = 1, max_passes: int = 500, operator: Operator = OPERATOR
) -> LeagueDoc:
    """Advance the league and play every match it creates until it is finished."""
    rng = random.Random(seed)
    for _ in range(max_passes):
        await s.leagues.job.advance(league_id)
        doc = await s.leagues.get_league(operator, league_id)
        if doc.state == State.FINISHED:
            return doc
        await play_round(s, doc, rng)
    raise AssertionError("the league did not finish")
