"""The worker's bounded caches (`Lru`) and the encodings kept on a match version and a moment."""

from __future__ import annotations

import asyncio

import pytest

import truco_engine as te
from truco_contract import codec
from truco_contract.pb import event_pb2, observation_pb2
from truco_match import table
from truco_match.events import EventView, MatchStatus, seat_to_dict
from truco_match.match import Match, Meta, Moment
from truco_server.api.matches import events, observation
from truco_server.core.lru import Lru
from truco_server.services.operators import Operators, WebhookInfo


def test_lru_evicts_the_least_recently_used() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2
    assert cache.pop("a") == 1 and cache.pop("a") is None
    with pytest.raises(ValueError):
        Lru(0)


def test_lru_with_idle_forgets_entries_not_used_lately() -> None:
    """A stream of new keys (match ids) keeps only those used within ``idle`` seconds, far
    below ``size``; an entry still in use stays however old it is."""
    now = [0.0]
    cache: Lru[str, int] = Lru(10_000, idle=60, clock=lambda: now[0])
    cache.put("kept", 0)
    for i in range(3_000):  # ten new keys a second for five minutes
        cache.put(f"m{i}", i)
        if i % 100 == 0:
            assert cache.get("kept") == 0  # used every ten seconds
        now[0] += 0.1
    assert len(cache) <= 602  # the last minute's keys, and "kept"
    assert cache.get("kept") == 0 and cache.get("m2999") == 2999 and "m0" not in cache
    cache.pop("kept")
    assert "kept" not in cache
    with pytest.raises(ValueError):
        Lru(1, idle=0)


def _match() -> Match:
    rules = te.get_rules("paulista", players=2)
    meta = Meta(
        match_id="m1", owner="acme", created_at=0.0, rules=rules.to_dict(),
        seats=[seat_to_dict(s) for s in table.seats_of(rules)], seed="00" * 32, cred_key="11" * 32,
        deck_orders=[], first_dealer=None,
    )  # fmt: skip
    setup = meta.setup()
    step = table.start(setup, meta.seat_infos())
    return Match(meta, setup, step.state, step.life, len(step.entries), MatchStatus.ACTIVE, 0.0)


def test_an_observation_is_encoded_once_per_match_version_and_viewer() -> None:
    """The reply to an action and the actor's next stream message share one encoding (its
    bytes): it is kept on the match version it is of, by viewer."""
    match = _match()
    first = observation(match.view(0, 0.0), match.rules, 0, match)
    assert observation(match.view(0, 0.0), match.rules, 0, match) is first
    other = observation(match.view(1, 0.0), match.rules, 1, match)
    assert other is not first and observation_pb2.Observation.FromString(other).seat == 1
    unkept = observation(match.view(0, 0.0), match.rules, 0, None)  # a view of no current version
    assert unkept is not first and unkept == first


def test_an_event_is_encoded_once_per_event_object_of_a_moment() -> None:
    match = _match()
    public = EventView(7, te.CardPlayed(seat=0, card="4C", face_down=False, trick_index=0))
    moment = Moment(match, [], 7, [0.0])
    (first,) = events((public,), moment)
    (second,) = events((public,), moment)
    assert second is first and first == codec.event_to_proto(public).SerializeToString()
    lookalike = EventView(7, te.CardPlayed(seat=0, card="5C", face_down=False, trick_index=0))
    (other,) = events((lookalike,), moment)
    assert event_pb2.Event.FromString(other).card_played.card == "5C"  # never mistaken for the first


async def test_the_commits_that_find_an_owners_webhooks_expired_wait_for_one_read() -> None:
    """Every commit asks for its owner's webhooks; when the second of cache has run out, the
    commits in flight share one read of the store, and a read that began before a webhook
    was created or deleted fills no cache."""
    gate = asyncio.Event()
    reads: list[str] = []

    class Feed:
        async def webhook_list(self, owner: str) -> dict[str, bytes]:
            reads.append(owner)
            await gate.wait()
            return {"w1": WebhookInfo(webhook_id="w1", url="https://example.test/h").to_bytes()}

    ops = Operators(Feed(), None, None)  # type: ignore[arg-type]  # only the webhook reads
    asking = [asyncio.ensure_future(ops._webhooks_of("acme")) for _ in range(50)]
    await _settle()
    assert reads == ["acme"]
    gate.set()
    assert all([h.webhook_id for h in got] == ["w1"] for got in await asyncio.gather(*asking))
    await ops._webhooks_of("acme")
    assert reads == ["acme"]  # from the cache
    ops._forget_webhooks("acme")
    gate.clear()
    first = asyncio.ensure_future(ops._webhooks_of("acme"))
    await _settle()
    ops._forget_webhooks("acme")  # a webhook changed while the read was in flight
    second = asyncio.ensure_future(ops._webhooks_of("acme"))
    await _settle()
    gate.set()
    await asyncio.gather(first, second)
    assert reads == ["acme"] * 3
    await ops._webhooks_of("acme")
    assert len(reads) == 3  # the later read filled the cache


async def _settle() -> None:
    """Let every task that is ready run until it waits on something (the gate)."""
    for _ in range(10):
        await asyncio.sleep(0)
