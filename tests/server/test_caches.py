"""The worker's bounded caches: `Lru` and the per-viewer proto views."""

from __future__ import annotations

import pytest

import truco_engine as te
from truco_server.convert import ViewProtos
from truco_server.lru import Lru


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


def _observation(seat: int, version: int) -> dict[str, object]:
    rules = te.get_rules("paulista", players=2)
    state = te.new_match(rules)
    state, _ = te.deal(state, list(rules.deck_cards))
    obs = te.observe(state, seat).to_dict()
    obs.update(version=version, status="active")
    return obs


def test_view_protos_are_shared_for_the_same_view_only() -> None:
    rules = te.get_rules("paulista", players=2).to_dict()
    views = ViewProtos(size=8)
    events = [{"kind": "card_played", "seat": 0, "card": "4C", "face_down": False, "trick": 1}]
    first = views.get("m1", events, 5, _observation(0, 5), rules)
    again = views.get("m1", events, 5, _observation(0, 5), rules)
    assert again is first  # the actor's stream message reuses the reply's protos
    other_seat = views.get("m1", events, 5, _observation(1, 5), rules)
    other_match = views.get("m2", events, 5, _observation(0, 5), rules)
    later = views.get("m1", [], 6, _observation(0, 6), rules)
    assert other_seat is not first and other_match is not first and later is not first
    assert first[1].seat == 0 and other_seat[1].seat == 1
    assert [e.version for e in first[0]] == [5]


def test_event_protos_copy_a_shared_event_with_each_message_position() -> None:
    from truco_server.convert import EventProtos, event_to_proto

    built = EventProtos(size=8)
    public = {"kind": "card_played", "seat": 0, "card": "4C", "face_down": False, "trick": 1}
    first = built.get(public, 7, 0)
    second = built.get(public, 7, 2)  # the same event, third in another viewer's message
    assert second is not first and second.index == 2 and first.index == 0
    expected = event_to_proto(public, 7, 2)
    assert second == expected
    lookalike = dict(public, card="5C")  # another dict is never mistaken for the first
    assert built.get(lookalike, 7, 0).card_played.card == "5C"
