"""The transport-neutral service over both stores: full matches, idempotency, versions,
credentials, streams and resume."""

from __future__ import annotations

import asyncio
import random

import pytest

import truco_engine as te
from truco_server import errors as E
from truco_server.service import CreateMatchRequest, MatchService, Operator, Update, unpack_event


async def play_out(
    svc: MatchService, match_id: str, tokens: list[str], rng: random.Random, limit: int = 5000
) -> int:
    """Drive a match to its end through the service only; return the number of actions."""
    n = 0
    token = tokens[0]
    _, obs = await svc.get_match(match_id, token, None)
    while obs["status"] == "active" and n < limit:
        seat = obs["to_act"][0]
        _, obs = await svc.get_match(match_id, tokens[seat], None)
        action = te.Action.from_dict(rng.choice(obs["legal_actions"]))
        res = await svc.submit_action(
            match_id, tokens[seat], action, request_id=f"r{n}", expected_version=obs["version"]
        )
        obs = res.observation
        n += 1
    return n


@pytest.mark.parametrize(
    "preset", ["paulista-2p", "paulista-4p", "mineiro-2p", "argentine-2p", "argentine-4p"]
)
async def test_full_match_through_service(service: MatchService, operator: Operator, preset: str) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset=preset))
    mid = created.match.match_id
    n = await play_out(service, mid, created.seat_tokens, random.Random(7))
    info, obs = await service.get_match(mid, created.spectator_token, None)
    assert info.status == "finished" and info.winner in (0, 1)
    assert obs["hand"] == [] and n > 0


async def test_retry_with_same_request_id_applies_once(service: MatchService, operator: Operator) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    _, obs = await service.get_match(mid, tokens[0], None)
    seat = obs["to_act"][0]
    _, obs = await service.get_match(mid, tokens[seat], None)
    action = te.Action.from_dict(obs["legal_actions"][0])
    first = await service.submit_action(mid, tokens[seat], action, request_id="once")
    again = await service.submit_action(mid, tokens[seat], action, request_id="once")
    assert again.duplicate and again.version == first.version and again.events == first.events
    info, _ = await service.get_match(mid, tokens[0], None)
    assert info.version == first.version
    with pytest.raises(E.RequestIdReused):
        await service.submit_action(mid, tokens[seat], te.Action("truco"), request_id="once")


async def test_stale_expected_version_is_refused(service: MatchService, operator: Operator) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    info, obs = await service.get_match(mid, tokens[0], None)
    seat = obs["to_act"][0]
    with pytest.raises(E.StaleVersion):
        await service.submit_action(mid, tokens[seat], te.Action("truco"), expected_version=info.version - 1)
    after, _ = await service.get_match(mid, tokens[0], None)
    assert after.version == info.version


async def test_seat_credential_cannot_act_for_another_seat(service: MatchService, operator: Operator) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    _, obs = await service.get_match(mid, tokens[0], None)
    other = 1 - obs["to_act"][0]
    with pytest.raises(E.NotYourTurn):
        await service.submit_action(mid, tokens[other], te.Action("truco"))
    with pytest.raises(E.PermissionDenied):
        await service.submit_action(mid, created.spectator_token, te.Action("truco"))
    with pytest.raises(E.Unauthenticated):
        await service.submit_action(mid, tokens[0][:-2] + "xx", te.Action("truco"))
    other_match = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    with pytest.raises(E.Unauthenticated):
        await service.submit_action(mid, other_match.seat_tokens[0], te.Action("truco"))


async def test_observations_show_only_own_cards(service: MatchService, operator: Operator) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="paulista-4p", seed=b"s" * 32))
    mid, tokens = created.match.match_id, created.seat_tokens
    state = (await service._load(mid)).state  # the server's view, to know every hand
    assert state.hand is not None
    for seat, token in enumerate(tokens):
        _, obs = await service.get_match(mid, token, None)
        assert obs["hand"] == state.hand.cards[seat]
        others = {c for s, cards in enumerate(state.hand.cards) if s != seat for c in cards}
        assert not others & set(str(obs).split("'"))
    _, spect = await service.get_match(mid, created.spectator_token, None)
    assert spect["hand"] == []


async def test_stream_resume_receives_exactly_the_missing_events(
    service: MatchService, operator: Operator
) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    rng = random.Random(3)
    versions: list[int] = []
    for i in range(6):
        info, obs = await service.get_match(mid, tokens[0], None)
        seat = obs["to_act"][0]
        _, obs = await service.get_match(mid, tokens[seat], None)
        if obs["status"] != "active":
            break
        res = await service.submit_action(
            mid, tokens[seat], te.Action.from_dict(rng.choice(obs["legal_actions"])), request_id=f"a{i}"
        )
        versions.append(res.version)
    info, _ = await service.get_match(mid, tokens[0], None)
    stream = service.stream(mid, tokens[0], None, from_version=2)
    first: Update = await stream.__anext__()
    await stream.aclose()
    assert first.version == info.version
    assert len(first.events) == info.version - 2
    all_events = await service.store.read_events(mid, 0, 1000)
    assert isinstance(all_events, list)
    assert [e["kind"] for e in first.events] == [unpack_event(b)["kind"] for _, b in all_events[2:]]


async def test_stream_delivers_new_commits_and_heartbeats(service: MatchService, operator: Operator) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    got: list[Update] = []

    async def reader() -> None:
        async for upd in service.stream(mid, created.spectator_token):
            got.append(upd)
            if len([u for u in got if not u.heartbeat]) >= 2 and any(u.heartbeat for u in got):
                return

    task = asyncio.create_task(reader())
    await asyncio.sleep(0.3)  # let a heartbeat pass
    _, obs = await service.get_match(mid, tokens[0], None)
    seat = obs["to_act"][0]
    res = await service.submit_action(mid, tokens[seat], te.Action("truco"))
    await asyncio.wait_for(task, 5)
    live = [u for u in got if not u.heartbeat]
    assert live[0].snapshot and live[1].version == res.version
    assert live[1].events[0]["kind"] == "called"
    assert live[1].observation is not None and live[1].observation["hand"] == []


async def test_cancel_only_by_owner_and_stream_ends(service: MatchService, operator: Operator) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="argentine-2p"))
    mid = created.match.match_id
    with pytest.raises(E.PermissionDenied):
        await service.cancel_match(Operator("other"), mid)
    info = await service.cancel_match(operator, mid, "test")
    assert info.status == "cancelled"
    ups = [u async for u in service.stream(mid, created.seat_tokens[0], None, from_version=0)]
    kinds = [e["kind"] for e in ups[-1].events]
    assert "match_cancelled" in kinds and "match_revealed" in kinds
    with pytest.raises(E.MatchNotActive):
        await service.submit_action(mid, created.seat_tokens[0], te.Action("truco"))


async def test_create_match_retry_returns_same_credentials(service: MatchService, operator: Operator) -> None:
    a = await service.create_match(operator, CreateMatchRequest(preset="paulista", request_id="x1"))
    b = await service.create_match(operator, CreateMatchRequest(preset="paulista", request_id="x1"))
    assert a.match.match_id == b.match.match_id and a.seat_tokens == b.seat_tokens
    page, token = await service.list_matches(operator, None, 10, None)
    assert [e.match_id for e in page] == [a.match.match_id] and token is None


async def test_bad_rules_are_invalid_argument(service: MatchService, operator: Operator) -> None:
    with pytest.raises(E.InvalidArgument) as exc:
        await service.create_match(operator, CreateMatchRequest(preset="paulista", overrides={"players": 5}))
    assert "players" in str(exc.value)
    with pytest.raises(E.InvalidArgument):
        await service.create_match(operator, CreateMatchRequest(preset="no-such-game"))


async def test_cancel_is_idempotent_but_a_finished_match_stays_finished(
    service: MatchService, operator: Operator
) -> None:
    created = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    first = await service.cancel_match(operator, mid)
    again = await service.cancel_match(operator, mid)
    assert first.status == again.status == "cancelled" and again.version == first.version
    done = await service.create_match(operator, CreateMatchRequest(preset="paulista-2p"))
    await play_out(service, done.match.match_id, done.seat_tokens, random.Random(5))
    with pytest.raises(E.MatchNotActive):
        await service.cancel_match(operator, done.match.match_id)
