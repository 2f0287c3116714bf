"""The transport-neutral service over both stores: full matches, idempotency, versions,
credentials, streams and resume (typed requests and callers, no transport)."""

from __future__ import annotations

import asyncio
import gc
import random
import time

import pytest

import truco_engine as te
from tests.service.conftest import SETTINGS, services
from truco_match.events import MatchStatus
from truco_match.views import SeatView
from truco_server.app.wiring import Services, build_services
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import MatchCredential, Operator, parse_token
from truco_server.ports.queues import CLOCK
from truco_server.services.live import ServiceSettings
from truco_server.services.scheduler import MISSING_MATCH_RETRY_MS, MISSING_MATCH_TRIES, clock_reader
from truco_server.services.stored import entry_of


def cred(token: str) -> MatchCredential:
    parsed = parse_token(token)
    assert parsed is not None
    return parsed


async def view_of(svc: Services, match_id: str, token: str) -> SeatView:
    return (await svc.reads.get_match(cred(token), T.GetMatchRequest(match_id))).view


async def act(
    svc: Services,
    match_id: str,
    token: str,
    action: te.Action,
    *,
    request_id: str | None = None,
    expected_version: int | None = None,
) -> T.SubmitActionResponse:
    return await svc.matches.submit_action(
        cred(token), T.SubmitActionRequest(match_id, action, request_id, expected_version)
    )


async def play_out(
    svc: Services,
    match_id: str,
    tokens: tuple[str, ...],
    rng: random.Random,
    limit: int = 5000,
    request_prefix: str = "r",
) -> int:
    """Drive a match to its end through the service only; return the number of actions."""
    n = 0
    view = await view_of(svc, match_id, tokens[0])
    while view.match_state is MatchStatus.ACTIVE and n < limit:
        seat = view.observation.awaited[0]
        view = await view_of(svc, match_id, tokens[seat])
        action = rng.choice(view.observation.legal_actions)
        res = await act(
            svc,
            match_id,
            tokens[seat],
            action,
            request_id=f"{request_prefix}{n}",
            expected_version=view.version,
        )
        view = res.view
        n += 1
    return n


@pytest.mark.parametrize(
    "preset", ["paulista-2p", "paulista-4p", "mineiro-2p", "argentine-2p", "argentine-4p"]
)
async def test_full_match_through_service(service: Services, operator: Operator, preset: str) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset=preset))
    mid = created.match.match_id
    n = await play_out(service, mid, created.seat_tokens, random.Random(7))
    got = await service.reads.get_match(cred(created.spectator_token), T.GetMatchRequest(mid))
    assert got.match.state is MatchStatus.FINISHED
    assert got.match.result is not None and got.match.result.winner_team in (0, 1)
    assert got.view.observation.hand == () and n > 0
    assert got.match.updated_at >= got.match.created_at


async def test_retry_with_same_request_id_applies_once(service: Services, operator: Operator) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    seat = (await view_of(service, mid, tokens[0])).observation.awaited[0]
    action = (await view_of(service, mid, tokens[seat])).observation.legal_actions[0]
    first = await act(service, mid, tokens[seat], action, request_id="once")
    again = await act(service, mid, tokens[seat], action, request_id="once")
    assert again.duplicate and again.version == first.version and again.events == first.events
    assert (await view_of(service, mid, tokens[0])).version == first.version
    with pytest.raises(E.RequestIdReused):
        await act(service, mid, tokens[seat], te.Action("truco"), request_id="once")


async def test_stale_expected_version_is_refused(service: Services, operator: Operator) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    view = await view_of(service, mid, tokens[0])
    seat = view.observation.awaited[0]
    with pytest.raises(E.StaleVersion):
        await act(service, mid, tokens[seat], te.Action("truco"), expected_version=view.version - 1)
    assert (await view_of(service, mid, tokens[0])).version == view.version


async def test_seat_credential_cannot_act_for_another_seat(service: Services, operator: Operator) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    other = 1 - (await view_of(service, mid, tokens[0])).observation.awaited[0]
    # Paulista lets a seat call truco out of turn, but never play a card out of turn.
    card = (await view_of(service, mid, tokens[other])).observation.hand[0]
    with pytest.raises(E.NotYourTurn):
        await act(service, mid, tokens[other], te.Action("play", card=card))
    with pytest.raises(E.PermissionDenied):
        await act(service, mid, created.spectator_token, te.Action("truco"))
    with pytest.raises(E.Unauthenticated):
        forged = tokens[0][:-2] + ("00" if not tokens[0].endswith("00") else "11")  # well formed
        await act(service, mid, forged, te.Action("truco"))
    other_match = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    with pytest.raises(E.Unauthenticated):
        await act(service, mid, other_match.seat_tokens[0], te.Action("truco"))


async def test_observations_show_only_own_cards(service: Services, operator: Operator) -> None:
    created = await service.steps.create_match(
        operator, T.CreateMatchRequest(preset="paulista-4p", seed=b"s" * 32)
    )
    mid, tokens = created.match.match_id, created.seat_tokens
    state = (await service.matches.load(mid)).state  # the server's view, to know every hand
    assert state.hand is not None
    for seat, token in enumerate(tokens):
        obs = (await view_of(service, mid, token)).observation
        assert list(obs.hand) == state.hand.cards[seat]
        others = {c for s, cards in enumerate(state.hand.cards) if s != seat for c in cards}
        assert not others & set(str(obs.to_dict()).split("'"))
    assert (await view_of(service, mid, created.spectator_token)).observation.hand == ()


async def test_stream_resume_receives_exactly_the_missing_events(
    service: Services, operator: Operator
) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    rng = random.Random(3)
    for i in range(6):
        seat = (await view_of(service, mid, tokens[0])).observation.awaited[0]
        view = await view_of(service, mid, tokens[seat])
        if view.match_state is not MatchStatus.ACTIVE:
            break
        await act(service, mid, tokens[seat], rng.choice(view.observation.legal_actions), request_id=f"a{i}")
    current = (await view_of(service, mid, tokens[0])).version
    stream = service.streams.stream(cred(tokens[0]), T.StreamRequest(mid, from_version=2))
    first = await stream.__anext__()
    await stream.aclose()
    assert first.version == current
    assert [e.version for e in first.events] == list(range(3, current + 1))
    all_events = await service.store.matches.read_events(mid, 0, 1000)
    assert isinstance(all_events, list)
    assert [e.kind for e in first.events] == [entry_of(b)[0].kind for _, b in all_events[2:]]
    assert all(e.time is not None and e.time >= created.match.created_at for e in first.events)


def _reaches(start: object, target: object) -> bool:
    """Whether ``target`` is reachable from ``start`` by references (what the garbage
    collector follows)."""
    seen, todo = {id(start)}, [start]
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if ref is target:
                return True
            if id(ref) not in seen and not isinstance(ref, type):
                seen.add(id(ref))
                todo.append(ref)
    return False


async def test_events_read_back_from_the_log_leave_no_cycle_through_the_match(
    service: Services, operator: Operator
) -> None:
    """Events decoded from the log are kept in the memo of the match they were read for; what
    is kept there must not lead back to the match, or every such match (its state, views and
    encodings) waits for the garbage collector instead of going when it is replaced."""
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    await play_out(service, mid, tokens, random.Random(5), limit=4)
    match = await service.matches.load(mid, fresh=True)
    seen = await service.matches.events(match, 1, match.version, 0)
    assert [e.version for e in seen] == list(range(2, match.version + 1))
    assert ("log", 1, match.version) in match.memo  # decoded once, kept for the next reader
    assert not _reaches(match.memo, match)


async def test_stream_delivers_new_commits_and_heartbeats(service: Services, operator: Operator) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    got: list[T.StreamUpdate] = []

    async def reader() -> None:
        async for upd in service.streams.stream(cred(created.spectator_token), T.StreamRequest(mid)):
            got.append(upd)
            if len([u for u in got if not u.heartbeat]) >= 2 and any(u.heartbeat for u in got):
                return

    task = asyncio.create_task(reader())
    await asyncio.sleep(0.3)  # let a heartbeat pass
    seat = (await view_of(service, mid, tokens[0])).observation.awaited[0]
    res = await act(service, mid, tokens[seat], te.Action("truco"))
    await asyncio.wait_for(task, 5)
    live = [u for u in got if not u.heartbeat]
    assert live[0].snapshot and live[1].version == res.version
    assert live[1].events[0].kind == "call_made"
    assert live[1].view is not None and live[1].view.observation.hand == ()


async def test_cancel_only_by_owner_and_stream_ends(service: Services, operator: Operator) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="argentine-2p"))
    mid = created.match.match_id
    with pytest.raises(E.MatchNotFound):  # another operator's match: as an unknown one
        await service.steps.cancel_match(Operator("other"), T.CancelMatchRequest(mid))
    done = await service.steps.cancel_match(operator, T.CancelMatchRequest(mid, "test"))
    assert done.match.state is MatchStatus.CANCELLED and done.match.result is None
    ups = [
        u
        async for u in service.streams.stream(
            cred(created.seat_tokens[0]), T.StreamRequest(mid, from_version=0)
        )
    ]
    kinds = [e.kind for e in ups[-1].events]
    assert kinds[-2:] == ["match_cancelled", "match_revealed"]
    with pytest.raises(E.MatchNotActive):
        await act(service, mid, created.seat_tokens[0], te.Action("truco"))


async def test_create_match_retry_returns_same_credentials(service: Services, operator: Operator) -> None:
    a = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista", request_id="x1"))
    b = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista", request_id="x1"))
    assert a.match.match_id == b.match.match_id and a.seat_tokens == b.seat_tokens
    listed = await service.reads.list_matches(operator, T.ListMatchesRequest(page_size=10))
    assert [m.match_id for m in listed.matches] == [a.match.match_id] and listed.next_page_token is None


async def test_listing_shows_what_get_match_shows_without_loading(
    service: Services, operator: Operator
) -> None:
    overrides = {"target_points": 24, "fold": True}
    created = await service.steps.create_match(
        operator,
        T.CreateMatchRequest(preset="mineiro", players=2, overrides=overrides, labels={"table": "7"}),
    )
    mid = created.match.match_id
    await play_out(service, mid, created.seat_tokens, random.Random(2))
    got = await service.reads.get_match(operator, T.GetMatchRequest(mid))
    listed = await service.reads.list_matches(operator, T.ListMatchesRequest())
    assert listed.matches == (got.match,)
    assert got.match.rules == te.get_rules("mineiro", players=2, **overrides)
    assert got.match.result is not None and got.match.labels == {"table": "7"}


async def test_bad_rules_are_invalid_argument(service: Services, operator: Operator) -> None:
    with pytest.raises(E.InvalidArgument) as exc:
        await service.steps.create_match(
            operator, T.CreateMatchRequest(preset="paulista", overrides={"players": 5})
        )
    assert "players" in str(exc.value)
    with pytest.raises(E.InvalidArgument):
        await service.steps.create_match(operator, T.CreateMatchRequest(preset="no-such-game"))


async def test_cancel_is_idempotent_but_a_finished_match_stays_finished(
    service: Services, operator: Operator
) -> None:
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    first = await service.steps.cancel_match(operator, T.CancelMatchRequest(mid))
    again = await service.steps.cancel_match(operator, T.CancelMatchRequest(mid))
    assert first.match.state == again.match.state == MatchStatus.CANCELLED
    assert again.match.version == first.match.version
    done = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    await play_out(service, done.match.match_id, done.seat_tokens, random.Random(5))
    with pytest.raises(E.MatchNotActive):
        await service.steps.cancel_match(operator, T.CancelMatchRequest(done.match.match_id))


async def test_a_wakeup_claimed_before_its_match_exists_is_tried_again(service: Services) -> None:
    """A match's wakeup is queued before its creation commits, so a reader can claim it first
    (seen on a loaded Redis Cluster, where a clock then never ran): the wakeup is tried again a
    second later, not dropped; a wakeup of a match that never comes is dropped after a few tries."""
    store = service.store.queues
    reader = clock_reader(service.steps, store)
    now = round(time.time() * 1000)
    await store.add(CLOCK, "m-not-yet", now)
    assert await reader.run_once() == 1
    later = round(time.time() * 1000) + MISSING_MATCH_RETRY_MS + 50  # after the retry's due time
    shard_claims = [
        c for s in await store.due(CLOCK, later) for c in await store.claim(CLOCK, s, later, 1, 10)
    ]
    assert [(c.item, c.data) for c in shard_claims] == [("m-not-yet", b"1")]
    # ... and a wakeup whose match never appears is dropped after MISSING_MATCH_TRIES tries
    for c in shard_claims:
        await store.finish(CLOCK, c.item, c.lease, None, b"", owned=False)
    await store.add(CLOCK, "m-never", now, str(MISSING_MATCH_TRIES).encode())
    assert await reader.run_once() == 1
    far = now + 10 * MISSING_MATCH_RETRY_MS
    assert await store.due(CLOCK, far) == []


async def test_a_worker_keeps_every_live_match_and_only_the_latest_ended_ones(
    service: Services, operator: Operator
) -> None:
    """Memory follows the matches in play: ended matches leave the live cache for a small one
    of their own, and one evicted from it is read from the store again when asked for."""
    ENDED_CACHE_SIZE = ServiceSettings().ended_matches

    created = [
        await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
        for _ in range(ENDED_CACHE_SIZE + 13)
    ]
    live, ended = created[:3], created[3:]
    for c in ended:
        await service.steps.cancel_match(operator, T.CancelMatchRequest(c.match.match_id))
    assert {m for m in (c.match.match_id for c in created) if m in service.matches.cache.live} == {
        c.match.match_id for c in live
    }
    assert len(service.matches.cache.ended) == ENDED_CACHE_SIZE
    first = ended[0].match.match_id
    assert first not in service.matches.cache.ended  # the oldest ended match was evicted...
    got = await service.reads.get_match(cred(ended[0].spectator_token), T.GetMatchRequest(first))
    assert got.match.state is MatchStatus.CANCELLED  # ...and is read from the store again
    assert first in service.matches.cache.ended and first not in service.matches.cache.live


async def test_a_match_that_ended_on_another_worker_leaves_the_live_cache_once_unused(
    operator: Operator,
) -> None:
    """A worker learns of an end only by serving the match: one that served a few actions and
    then nothing while another worker ended the match keeps it as live, until it has not
    used it for CACHE_IDLE_SECONDS (so under a steady load the live cache holds the last
    minute's matches, not the last 4,096)."""
    CACHE_IDLE_SECONDS = ServiceSettings().live_idle_seconds
    now = [1_000_000.0]
    a = services(clock=lambda: now[0])
    b = build_services(SETTINGS, asyncio.Event(), a.store, clock=lambda: now[0])
    created = await a.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    await play_out(b, mid, created.seat_tokens, random.Random(1), limit=2)  # b serves two actions
    await play_out(a, mid, created.seat_tokens, random.Random(2), request_prefix="a")  # a ends it
    assert mid in b.matches.cache.live  # b has not heard of the end
    now[0] += CACHE_IDLE_SECONDS / 2
    other = await b.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    assert mid in b.matches.cache.live  # used half a minute ago: kept
    now[0] += CACHE_IDLE_SECONDS
    await b.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    assert (
        mid not in b.matches.cache.live and other.match.match_id not in b.matches.cache.live
    )  # both a minute unused
    got = await b.reads.get_match(cred(created.spectator_token), T.GetMatchRequest(mid))
    assert got.match.state is MatchStatus.FINISHED  # read from the store again
