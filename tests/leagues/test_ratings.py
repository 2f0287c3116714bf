"""Ratings per rule-set family: exactly once per match id, teams and tables of any size,
plain-data state, leaderboards."""

from __future__ import annotations

import json

import pytest
from openskill.models import PlackettLuce

from truco_server.leagues import (
    InvalidOptionError,
    InvalidResultError,
    PlayerRating,
    RatedMatch,
    RatingBook,
    RatingModel,
    ranks_from_winner,
    rate,
)


def one_v_one(match_id: str, winner: str, loser: str, family: str = "argentine-2p") -> RatedMatch:
    return RatedMatch(match_id, family, ((winner,), (loser,)), (1, 2))


def test_a_match_is_applied_exactly_once() -> None:
    book = RatingBook()
    assert book.apply(one_v_one("m1", "ana", "beto"))
    after = (book.rating("argentine-2p", "ana"), book.rating("argentine-2p", "beto"))
    assert after[0].mu > 25 > after[1].mu and after[0].games == after[1].games == 1
    assert not book.apply(one_v_one("m1", "ana", "beto"))  # the same match again: ignored
    assert (book.rating("argentine-2p", "ana"), book.rating("argentine-2p", "beto")) == after
    assert book.applied("m1") and not book.applied("m2")


def test_the_update_is_openskills_plackett_luce() -> None:
    model = PlackettLuce()
    [[a], [b]] = model.rate([[model.rating()], [model.rating()]], ranks=[1.0, 2.0])
    new = rate(RatingModel(), {}, one_v_one("m1", "ana", "beto"))
    assert new["ana"].mu == pytest.approx(a.mu) and new["beto"].sigma == pytest.approx(b.sigma)


def test_rate_is_pure() -> None:
    current = {"ana": PlayerRating(30.0, 5.0, 7)}
    new = rate(RatingModel(), current, one_v_one("m1", "ana", "beto"))
    assert current == {"ana": PlayerRating(30.0, 5.0, 7)}
    assert new["ana"].games == 8 and new["beto"].games == 1


def test_teams_of_two_and_three_and_a_three_sided_table() -> None:
    book = RatingBook()
    book.apply(RatedMatch("m1", "paulista-4p", (("a", "b"), ("c", "d")), (1, 2)))
    assert all(book.rating("paulista-4p", p).mu > 25 for p in "ab")
    assert all(book.rating("paulista-4p", p).mu < 25 for p in "cd")
    book.apply(RatedMatch("m2", "argentine-6p", (("a", "b", "c"), ("d", "e", "f")), (2, 1)))
    assert book.rating("argentine-6p", "d").mu > 25 > book.rating("argentine-6p", "a").mu
    book.apply(RatedMatch("m3", "argentine-3p", (("x",), ("y",), ("z",)), (1, 2, 3)))
    x, y, z = (book.rating("argentine-3p", p).mu for p in "xyz")
    assert x > y > z


def test_a_draw_moves_the_favourite_down() -> None:
    book = RatingBook()
    for i in range(5):
        book.apply(one_v_one(f"w{i}", "strong", f"weak{i}"))
    before = book.rating("argentine-2p", "strong").mu
    book.apply(
        RatedMatch("d", "argentine-2p", (("strong",), ("newcomer",)), ranks_from_winner([["s"], ["n"]], None))
    )
    assert book.rating("argentine-2p", "strong").mu < before


def test_families_are_separate_and_leaderboards_are_ordered() -> None:
    book = RatingBook()
    book.apply(one_v_one("m1", "ana", "beto"))
    book.apply(one_v_one("m2", "ana", "caro"))
    book.apply(one_v_one("m3", "caro", "beto"))
    book.apply(one_v_one("m4", "beto", "ana", family="paulista-2p"))
    board = book.leaderboard("argentine-2p")
    assert [e.player_id for e in board] == ["ana", "caro", "beto"]
    assert [e.rank for e in board] == [1, 2, 3]
    ordinals = [e.rating.ordinal for e in board]
    assert ordinals == sorted(ordinals, reverse=True)
    assert [e.player_id for e in book.leaderboard("paulista-2p")] == ["beto", "ana"]
    assert [e.player_id for e in book.leaderboard("argentine-2p", limit=1)] == ["ana"]
    assert book.families() == ("argentine-2p", "paulista-2p")
    assert book.leaderboard("unknown") == ()


def test_state_round_trips_through_plain_json() -> None:
    book = RatingBook(RatingModel(mu=1500.0, sigma=500.0, beta=250.0, tau=5.0))
    book.apply(one_v_one("m1", "ana", "beto"))
    book.apply(RatedMatch("m2", "paulista-4p", (("a", "b"), ("c", "d")), (1, 2)))
    data = json.loads(json.dumps(book.to_dict()))
    again = RatingBook.from_dict(data)
    assert again.to_dict() == book.to_dict()
    assert again.model == book.model
    assert not again.apply(one_v_one("m1", "ana", "beto")), "applied ids survive the round trip"
    assert again.apply(one_v_one("m3", "ana", "beto"))
    with pytest.raises(InvalidOptionError):
        RatingBook.from_dict({**data, "version": 99})


@pytest.mark.parametrize(
    "match",
    [
        RatedMatch("", "f", (("a",), ("b",)), (1, 2)),
        RatedMatch("m", "f", (("a",),), (1,)),
        RatedMatch("m", "f", (("a",), ("a",)), (1, 2)),
        RatedMatch("m", "f", (("a",), ()), (1, 2)),
        RatedMatch("m", "f", (("a",), ("b",)), (1,)),
        RatedMatch("m", "f", (("a",), ("b",)), (0, 1)),
    ],
)
def test_malformed_matches_are_refused(match: RatedMatch) -> None:
    book = RatingBook()
    with pytest.raises(InvalidResultError):
        book.apply(match)
    assert book.families() == () and not book.applied(match.match_id)


def test_a_corrected_result_is_rated_again_as_if_it_had_always_been_so() -> None:
    """Three matches; the second's result is corrected: the book equals one that applied
    the corrected result from the start, in the same order; removing a match equals never
    having applied it; the corrected book survives its round trip."""
    first, second, third = (
        one_v_one("m1", "ana", "beto"),
        one_v_one("m2", "ana", "cris"),
        one_v_one("m3", "beto", "cris"),
    )
    corrected = one_v_one("m2", "cris", "ana")
    book = RatingBook()
    for m in (first, second, third):
        book.apply(m)
    assert book.apply(corrected)
    assert not book.apply(corrected)  # once
    straight = RatingBook()
    for m in (first, corrected, third):
        straight.apply(m)
    assert book.to_dict() == straight.to_dict()
    assert book.remove("m2") and not book.remove("m2")
    without = RatingBook()
    for m in (first, third):
        without.apply(m)
    assert book.to_dict() == without.to_dict()
    assert RatingBook.from_dict(book.to_dict()).to_dict() == without.to_dict()


def test_a_version_1_book_is_read_and_corrections_replay_from_its_ratings() -> None:
    """A book stored before matches were kept (version 1: the applied ids only) loads with
    its ratings; its ids stay applied (never rated again), and a later match corrected is
    rated again from the ratings the old book held."""
    old = RatingBook()
    old.apply(one_v_one("m1", "ana", "beto"))
    v1 = {**old.to_dict(), "version": 1, "applied": ["m1"]}
    del v1["matches"]
    book = RatingBook.from_dict(v1)
    assert book.applied("m1") and not book.apply(one_v_one("m1", "beto", "ana"))
    assert book.rating("argentine-2p", "ana") == old.rating("argentine-2p", "ana")
    book.apply(one_v_one("m2", "ana", "cris"))
    assert book.apply(one_v_one("m2", "cris", "ana"))  # corrected
    straight = RatingBook.from_dict(old.to_dict())
    straight.apply(one_v_one("m2", "cris", "ana"))
    assert book.to_dict()["families"] == straight.to_dict()["families"]
    again = RatingBook.from_dict(book.to_dict())
    assert again.applied("m1") and again.to_dict() == book.to_dict()
    assert again.remove("m2") and again.to_dict()["families"] == old.to_dict()["families"]
