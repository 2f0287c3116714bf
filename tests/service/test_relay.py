"""Operator events leave a match through its commit and its outbox: on a store that can, the
commit appends every event to the owner's stream and the outbox keeps only those a listener
or webhook asks for; elsewhere (a Redis Cluster, :func:`_outbox_only` here) every event goes
through the outbox: the relay right after each commit, and the relay queue for a worker that
died before relaying (over both stores)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import pytest

from tests.service.test_service import act, play_out
from truco_contract.pb import operator_service_pb2
from truco_engine import Action
from truco_match.create import SeatSpec
from truco_match.operator_events import OperatorEventType
from truco_server.app.wiring import Services
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.ports.queues import RELAY, RelayWake
from truco_server.services.relay import Relay
from truco_server.services.scheduler import relay_reader

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

FAR = 10**14


async def _relayed(service: Services) -> None:
    await service.relay.done()


async def _stream_ids(service: Services, owner: str) -> list[str]:
    got = await service.store.operators.read(owner, "", 1000)
    return [operator_service_pb2.OperatorEvent.FromString(raw).id for _, raw in got]


def _outbox_only(service: Services) -> None:
    """Every event through the outbox, as on a Redis Cluster, whose commits cannot append to
    the owner's stream."""
    service.relay.wanted = None


async def _stream_types(service: Services, owner: str) -> list[str]:
    got = await service.store.operators.read(owner, "", 1000)
    return [operator_service_pb2.OperatorEvent.FromString(raw).type for _, raw in got]


async def test_the_relay_after_each_commit_releases_its_safety_net(
    service: Services, operator: Operator
) -> None:
    """The committing worker relays every event and releases the relay queue's item: a whole
    match leaves nothing for the relay queue to wake up for."""
    _outbox_only(service)
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    await _relayed(service)
    assert await service.store.queues.due(RELAY, FAR) == []
    await play_out(service, mid, created.seat_tokens, random.Random(3))
    await _relayed(service)
    types = await _stream_types(service, operator.name)
    assert types[0] == "match.created" and types[-1] == "match.ended"
    assert "match.hand_ended" in types
    assert await service.store.queues.due(RELAY, FAR) == []
    assert await service.store.operators.outbox_take([mid], "check", 1000, 10) == [[]]


async def test_events_a_worker_did_not_relay_are_relayed_by_the_queue_after_the_grace(
    service: Services, operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies between its commit and its relay (here: one with no relay at all)
    leaves the events in the outbox and the match in the relay queue: any worker's relay
    reader moves them once the grace is over, and not before."""
    _outbox_only(service)
    reader = relay_reader(service.operators.relay, service.store.queues)
    service.relay.move = None  # a worker that dies before it relays
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    assert await reader.run_once() == 0  # within the grace: the committing worker's to relay
    assert await _stream_types(service, operator.name) == []
    service.relay.grace_ms = -1  # due at once from here on
    await service.steps.cancel_match(operator, T.CancelMatchRequest(mid))
    assert await reader.run_once() == 1
    assert await _stream_types(service, operator.name) == [
        "match.created",
        "match.started",
        "match.turn",
        "match.cancelled",
    ]
    assert await service.store.operators.outbox_take([mid], "check", 1000, 10) == [[]]
    assert await service.store.queues.due(RELAY, FAR) == []


async def test_a_reader_that_finds_the_outbox_locked_looks_again(
    service: Services, operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another relay holds a match's outbox, the relay queue keeps the item (a second
    later), so the events are relayed even if that relay dies with its lock."""
    _outbox_only(service)
    reader = relay_reader(service.operators.relay, service.store.queues)
    service.relay.move = None  # a worker that dies before it relays
    service.relay.grace_ms = -1
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    assert await service.store.operators.outbox_take([mid], "a-relay-that-dies", 1000, 10) != [None]
    assert await reader.run_once() == 1
    assert await _stream_types(service, operator.name) == []
    assert await service.store.queues.due(RELAY, FAR) != []  # kept for later
    await asyncio.sleep(1.1)  # the dead relay's lock (1 s) and the retry (1 s) run out
    assert await reader.run_once() == 1
    assert await _stream_types(service, operator.name) == ["match.created", "match.started", "match.turn"]
    assert await service.store.queues.due(RELAY, FAR) == []


async def test_the_relay_after_a_commit_waits_out_a_relay_that_is_finishing(
    service: Services, operator: Operator
) -> None:
    """Two relays of one match overlap (the second commit came while the first relay held the
    outbox): the second tries again a moment later instead of leaving its events to the relay
    queue's next look, two seconds on."""
    _outbox_only(service)
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    await _relayed(service)
    await service.steps.cancel_match(operator, T.CancelMatchRequest(mid))
    # another relay takes the outbox first (on the in-memory store always: no await in between)
    await service.store.operators.outbox_take([mid], "a-relay-finishing", 80, 10)
    await _relayed(service)  # its tries: 20 ms, then 100 ms later, when the 80 ms lock is gone
    assert (await _stream_types(service, operator.name))[-1] == "match.cancelled"
    assert await service.store.queues.due(RELAY, FAR) == []


async def test_commits_of_a_few_milliseconds_are_relayed_together(
    service: Services, operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay after a commit waits ``Relay.gather_seconds`` for other commits' outboxes:
    matches created within that time are relayed by one call (one take, one append per
    operator, one trim and one release for all of them), and every event still arrives."""
    _outbox_only(service)
    operators = service.operators
    calls: list[list[str]] = []

    async def relay(match_ids: Sequence[str]) -> list[str]:
        calls.append(list(match_ids))
        return await operators.relay(match_ids)

    service.relay.move = relay
    service.relay.gather_seconds = 1.0  # ample on a loaded machine
    created = [
        await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
        for _ in range(3)
    ]
    await _relayed(service)
    ids = [c.match.match_id for c in created]
    assert calls == [ids]
    types = await _stream_types(service, operator.name)
    assert types == ["match.created", "match.started", "match.turn"] * 3
    assert await service.store.queues.due(RELAY, FAR) == []  # every safety net released
    for mid in ids:
        assert await service.store.operators.outbox_take([mid], "check", 1000, 10) == [[]]


async def test_commits_append_every_event_to_the_stream_and_leave_nothing_to_relay(
    service: Services, operator: Operator
) -> None:
    """On a store that can (memory, one Redis server), a whole match's events reach the
    owner's stream with its commits, in order and once each, and with no webhook, and no
    listener concerned with the match (the league job's are a league's matches, the ratings'
    rated ones), the relay has nothing to do: no call, no safety net, an empty outbox."""
    assert service.store.matches.appends_feed and service.relay.wanted is not None
    calls: list[list[str]] = []

    async def relay(match_ids: Sequence[str]) -> list[str]:
        calls.append(list(match_ids))
        return []

    service.relay.move = relay
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid = created.match.match_id
    assert await _stream_types(service, operator.name) == ["match.created", "match.started", "match.turn"]
    await play_out(service, mid, created.seat_tokens, random.Random(3))
    await _relayed(service)
    types = await _stream_types(service, operator.name)
    assert types[0] == "match.created" and types[-1] == "match.ended" and types.count("match.ended") == 1
    assert types.count("match.turn") > 10
    assert calls == []
    assert await service.store.queues.due(RELAY, FAR) == []
    assert await service.store.operators.outbox_take([mid], "check", 1000, 10) == [[]]


async def test_events_a_listener_asks_for_are_relayed_to_it_and_not_appended_twice(
    service: Services, operator: Operator
) -> None:
    """With the commits appending to the stream, the events of the types a listener asks
    for still go through the outbox: the listener gets them (after they are in the stream),
    the stream holds each event once, and the safety nets are released."""
    told: list[str] = []

    async def listener(owner: str, events: Sequence[object]) -> None:
        told.extend(ev.type.value for ev in events)  # type: ignore[attr-defined]

    service.operators.listen([OperatorEventType.HAND_ENDED], listener)
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    await play_out(service, created.match.match_id, created.seat_tokens, random.Random(4))
    await _relayed(service)
    types = await _stream_types(service, operator.name)
    assert told.count("match.hand_ended") == types.count("match.hand_ended") > 0
    assert "match.turn" not in told  # not asked for by anyone: never relayed
    assert "match.ended" not in told  # the league and rating listeners': not their match
    assert len(types) == len(set(await _stream_ids(service, operator.name)))
    assert await service.store.queues.due(RELAY, FAR) == []


@pytest.mark.parametrize(
    ("spec", "relayed"),
    [
        ({}, False),
        ({"rated": True}, True),  # the ratings' listener
        ({"labels": {"league": "L1"}}, True),  # the league job's
        ({"labels": {"league": ""}}, False),
    ],
)
async def test_a_match_s_end_goes_to_the_relay_only_for_a_listener_concerned_with_it(
    service: Services, operator: Operator, spec: dict[str, object], relayed: bool
) -> None:
    """The end of a rated match, or of a league's, goes through the outbox to the listeners
    that act on it; the end of any other match only to the owner's stream (no webhook here)."""
    calls: list[str] = []

    async def relay(match_ids: Sequence[str]) -> list[str]:
        calls.extend(match_ids)
        return []

    service.relay.move = relay
    seats = (SeatSpec(player_id="ana"), SeatSpec(player_id="bia"))
    made = await service.steps.create_match(
        operator,
        T.CreateMatchRequest(preset="paulista-2p", seats=seats, **spec),  # type: ignore[arg-type]
    )
    mid = made.match.match_id
    await act(service, mid, made.seat_tokens[0], Action("resign"))
    await _relayed(service)
    assert (await _stream_types(service, operator.name))[-1] == "match.ended"
    assert calls == ([mid] if relayed else [])
    assert await service.store.queues.due(RELAY, FAR) == []


class _Queues:
    """The relay queue's release, recorded."""

    def __init__(self) -> None:
        self.released: list[str] = []

    async def release(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        self.released += [m for m, _ in items]
        return [True] * len(items)


async def test_closing_lets_a_relay_under_way_finish_and_cancels_one_that_hangs() -> None:
    """At shutdown (before the store closes) the relay a commit just started finishes and
    releases its safety net; one that hangs (the store unreachable) is cancelled after the
    timeout instead of being dropped half-run with the event loop -- the relay queue moves
    its events later."""
    moved: list[list[str]] = []

    async def quick(ids: list[str]) -> list[str]:
        moved.append(ids)
        return []

    queues = _Queues()
    relay = Relay(quick, queues)  # type: ignore[arg-type]
    relay.soon("m1", RelayWake(0, b"t1"))
    await relay.close()
    assert moved == [["m1"]] and queues.released == ["m1"] and not relay._tasks

    hung = asyncio.Event()

    async def hangs(ids: list[str]) -> list[str]:
        hung.set()
        await asyncio.Event().wait()
        return []

    relay = Relay(hangs, queues)  # type: ignore[arg-type]
    relay.soon("m2", RelayWake(0, b"t2"))
    await relay.close(timeout=0.2)
    assert hung.is_set() and not relay._tasks and queues.released == ["m1"]
