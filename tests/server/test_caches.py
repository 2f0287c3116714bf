"""The worker's bounded caches (`Lru`) and the encodings kept on a match version and a moment."""

from __future__ import annotations

import pytest

import truco_engine as te
from truco_contract import codec
from truco_match import table
from truco_match.events import EventView, MatchStatus, seat_to_dict
from truco_match.match import Match, Meta, Moment
from truco_server.api.matches import events, observation
from truco_server.core.lru import Lru


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
    """The reply to an action and the actor's next stream message share one encoding: it is
    kept on the match version it is of, by viewer."""
    match = _match()
    first = observation(match.view(0, 0.0), match.rules, 0, match)
    assert observation(match.view(0, 0.0), match.rules, 0, match) is first
    other = observation(match.view(1, 0.0), match.rules, 1, match)
    assert other is not first and other.seat == 1
    unkept = observation(match.view(0, 0.0), match.rules, 0, None)  # a view of no current version
    assert unkept is not first and unkept == first


def test_an_event_is_encoded_once_per_event_object_of_a_moment() -> None:
    match = _match()
    public = EventView(7, te.CardPlayed(seat=0, card="4C", face_down=False, trick_index=0))
    moment = Moment(match, [], 7, [0.0])
    (first,) = events((public,), moment)
    (second,) = events((public,), moment)
    assert second is first and first == codec.event_to_proto(public)
    lookalike = EventView(7, te.CardPlayed(seat=0, card="5C", face_down=False, trick_index=0))
    (other,) = events((lookalike,), moment)
    assert other.card_played.card == "5C"  # another object is never mistaken for the first
