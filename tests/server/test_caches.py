"""The worker's bounded caches: `Lru` and the per-viewer proto views."""

from __future__ import annotations

import pytest

import truco_engine as te
from truco_contract import codec
from truco_match.events import EventView, MatchStatus
from truco_match.views import SeatView, view
from truco_server.api.matches import Protos
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


def _view(seat: int, version: int) -> SeatView:
    rules = te.get_rules("paulista", players=2)
    state = te.new_match(rules)
    state, _ = te.deal(state, list(rules.deck_cards))
    return view(state, seat, version, MatchStatus.ACTIVE)


def test_observation_protos_are_shared_for_the_same_view_object_only() -> None:
    rules = te.get_rules("paulista", players=2)
    protos = Protos(size=8)
    shared = _view(0, 5)
    first = protos.observation(shared, rules)
    assert protos.observation(shared, rules) is first  # the actor's stream reuses the reply's
    equal_but_other = _view(0, 5)
    again = protos.observation(equal_but_other, rules)
    assert again is not first and again == first  # another object is encoded, to the same message
    assert protos.observation(_view(1, 5), rules).seat == 1


def test_event_protos_are_built_once_per_event_object() -> None:
    protos = Protos(size=8)
    public = EventView(7, te.CardPlayed(seat=0, card="4C", face_down=False, trick_index=0))
    (first,) = protos.events((public,))
    (second,) = protos.events((public,))
    assert second is first and first == codec.event_to_proto(public)
    lookalike = EventView(7, te.CardPlayed(seat=0, card="5C", face_down=False, trick_index=0))
    (other,) = protos.events((lookalike,))
    assert other.card_played.card == "5C"  # another object is never mistaken for the first
