"""Forming tables from waiting tickets (truco_match.matchmaking), checked by properties:

- every pair of tickets at a formed table is within the narrower of their two rating windows
  at the moment of forming, shares no player and agrees on the properties both give;
- no ticket is at two tables; every table is full, each party in one team;
- in a pool of single players for two seats, no two tickets left waiting could have sat
  together (forming leaves no possible table behind);
- the window widens as documented: ``initial + per_second * waited``, never past the
  maximum, never narrower for a longer wait, so a pair compatible once stays compatible.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from truco_match.create import MatchSpec, SpecError
from truco_match.matchmaking import (
    BotFill,
    Pool,
    PoolSpec,
    RatingWindow,
    Waiting,
    check_pool,
    compatible,
    fill,
    fill_due,
    form,
    pack,
    seat,
)

NOW = 1_800_000_000.0

windows = st.builds(
    RatingWindow,
    initial_width=st.floats(0, 20, allow_nan=False),
    widen_per_second=st.floats(0, 5, allow_nan=False),
    max_width=st.one_of(st.just(0.0), st.floats(20, 60, allow_nan=False)),
)


def pool_of(preset: str, players: int, window: RatingWindow | None) -> Pool:
    return check_pool(PoolSpec("p", MatchSpec(preset=preset, players=players), window), 60_000)


@st.composite
def tickets(draw: st.DrawFn, team_size: int, most: int = 40) -> list[Waiting]:
    n = draw(st.integers(0, most))
    out = []
    players = 0
    for i in range(n):
        size = draw(st.integers(1, team_size))
        props = draw(
            st.dictionaries(st.sampled_from(["region", "lang"]), st.sampled_from(["a", "b"]), max_size=2)
        )
        out.append(
            Waiting(
                ticket_id=f"t{i:03d}",
                players=tuple(f"p{players + k}" for k in range(size)),
                rating=draw(st.floats(-10, 60, allow_nan=False)),
                created=NOW - draw(st.floats(0, 120, allow_nan=False)),
                properties=props,
            )
        )
        players += size
    return out


def check_tables(pool: Pool, waiting: list[Waiting], now: float) -> list[list[Waiting]]:
    tables = form(pool, waiting, now)
    seen = Counter(t.ticket_id for table in tables for t in table.tickets)
    assert all(n == 1 for n in seen.values()), "a ticket at two tables"
    by_id = {t.ticket_id: t for t in waiting}
    out = []
    for table in tables:
        members = list(table.tickets)
        assert sum(t.size for t in members) == pool.players
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                assert compatible(pool, a, b, now)
                w = pool.spec.window
                if w is not None:
                    narrower = min(w.width(now - a.created), w.width(now - b.created))
                    assert abs(a.rating - b.rating) <= narrower  # no pair outside the window
                assert not set(a.players) & set(b.players)
        # each party in one team, each seat once, every player of the table seated
        team_of_ticket: dict[str, set[int]] = {}
        for s, (ticket_id, player) in enumerate(table.seats):
            assert player in by_id[ticket_id].players
            team_of_ticket.setdefault(ticket_id, set()).add(pool.seat_teams[s])
        assert all(len(teams) == 1 for teams in team_of_ticket.values())
        assert sorted(p for _, p in table.seats) == sorted(p for t in members for p in t.players)
        out.append(members)
    return out


@settings(max_examples=150, deadline=None)
@given(window=st.one_of(st.none(), windows), waiting=tickets(1))
def test_two_seat_tables_keep_the_window_and_leave_no_possible_pair(
    window: RatingWindow | None, waiting: list[Waiting]
) -> None:
    pool = pool_of("paulista", 2, window)
    tables = check_tables(pool, waiting, NOW)
    seated = {t.ticket_id for table in tables for t in table}
    left = [t for t in waiting if t.ticket_id not in seated]
    for i, a in enumerate(left):
        for b in left[i + 1 :]:
            assert not compatible(pool, a, b, NOW), (a, b)


@settings(max_examples=150, deadline=None)
@given(window=st.one_of(st.none(), windows), waiting=tickets(2))
def test_four_seat_tables_seat_parties_as_partners_within_the_window(
    window: RatingWindow | None, waiting: list[Waiting]
) -> None:
    check_tables(pool_of("paulista", 4, window), waiting, NOW)


@settings(max_examples=100, deadline=None)
@given(window=st.one_of(st.none(), windows), waiting=tickets(3, 30))
def test_six_seat_tables_pack_parties_of_one_to_three(
    window: RatingWindow | None, waiting: list[Waiting]
) -> None:
    check_tables(pool_of("paulista", 6, window), waiting, NOW)


@settings(max_examples=60, deadline=None)
@given(waiting=tickets(1, 24))
def test_three_players_each_for_himself(waiting: list[Waiting]) -> None:
    check_tables(pool_of("argentine", 3, RatingWindow(5, 1, 0)), waiting, NOW)


@settings(max_examples=300, deadline=None)
@given(window=windows, a=st.floats(0, 1e5, allow_nan=False), b=st.floats(0, 1e5, allow_nan=False))
def test_the_window_widens_as_documented(window: RatingWindow, a: float, b: float) -> None:
    early, late = sorted((a, b))
    assert window.width(0) == pytest.approx(min(window.initial_width, window.max_width or float("inf")))
    expected = window.initial_width + window.widen_per_second * late
    if window.max_width:
        expected = min(expected, window.max_width)
        assert window.width(late) <= window.max_width
    assert window.width(late) == pytest.approx(expected)
    assert window.width(late) >= window.width(early)


@settings(max_examples=200, deadline=None)
@given(
    window=windows,
    ra=st.floats(0, 50, allow_nan=False),
    rb=st.floats(0, 50, allow_nan=False),
    later=st.floats(0, 600, allow_nan=False),
)
def test_a_pair_compatible_once_stays_compatible_as_it_waits(
    window: RatingWindow, ra: float, rb: float, later: float
) -> None:
    pool = pool_of("paulista", 2, window)
    a = Waiting("ta", ("a",), ra, NOW - 5)
    b = Waiting("tb", ("b",), rb, NOW - 1)
    if compatible(pool, a, b, NOW):
        assert compatible(pool, a, b, NOW + later)


def test_a_pair_far_apart_waits_until_both_windows_reach_it() -> None:
    pool = pool_of("paulista", 2, RatingWindow(initial_width=2, widen_per_second=1, max_width=0))
    old = Waiting("t-old", ("ana",), 20.0, NOW - 30)  # window 32
    new = Waiting("t-new", ("bia",), 30.0, NOW)  # window 2, then 2 + s
    assert form(pool, [old, new], NOW) == []  # 10 apart: the newcomer's window is 2
    assert form(pool, [old, new], NOW + 7.9) == []
    (table,) = form(pool, [old, new], NOW + 8)  # both windows are at least 10
    assert {t.ticket_id for t in table.tickets} == {"t-old", "t-new"}


def test_the_oldest_ticket_takes_its_closest_rated_partner() -> None:
    pool = pool_of("paulista", 2, None)
    waiting = [
        Waiting("t1", ("a",), 10, NOW - 50),
        Waiting("t2", ("b",), 30, NOW - 40),
        Waiting("t3", ("c",), 12, NOW - 1),
        Waiting("t4", ("d",), 29, NOW - 2),
    ]
    pairs = [{t.ticket_id for t in table.tickets} for table in form(pool, waiting, NOW)]
    assert pairs == [{"t1", "t3"}, {"t2", "t4"}]


def test_properties_must_agree_where_both_give_one() -> None:
    pool = pool_of("paulista", 2, None)
    eu = Waiting("t1", ("a",), 0, NOW, {"region": "eu"})
    us = Waiting("t2", ("b",), 0, NOW, {"region": "us"})
    anywhere = Waiting("t3", ("c",), 0, NOW)
    assert not compatible(pool, eu, us, NOW)
    assert compatible(pool, eu, anywhere, NOW) and compatible(pool, us, anywhere, NOW)


def test_a_party_of_two_sits_together_across_the_table() -> None:
    pool = pool_of("paulista", 4, None)
    party = Waiting("tp", ("ana", "bia"), 25, NOW - 9)
    singles = [Waiting(f"t{i}", (f"s{i}",), 25, NOW - i) for i in range(2)]
    (table,) = form(pool, [party, *singles], NOW)
    seats = [p for _, p in table.seats]
    assert pool.seat_teams[seats.index("ana")] == pool.seat_teams[seats.index("bia")]
    assert pool.seat_teams[seats.index("s0")] == pool.seat_teams[seats.index("s1")]
    with pytest.raises(ValueError):
        seat(pool, [party, singles[0]])  # three players do not fill four seats


def test_packing_parties_into_teams() -> None:
    assert pack([2, 2, 2], 2, 3) is None  # six players in teams of three: 2+2+2 does not split
    assert pack([3, 2, 1], 2, 3) is not None
    assert pack([2, 1, 1], 2, 2) == [0, 1, 1]


def test_a_pool_checks_its_template_and_window() -> None:
    with pytest.raises(SpecError):
        check_pool(PoolSpec("bad id!", MatchSpec()), 60_000)
    with pytest.raises(SpecError):
        check_pool(PoolSpec("p", MatchSpec(preset="nope")), 60_000)
    with pytest.raises(SpecError):
        check_pool(PoolSpec("p", MatchSpec(), RatingWindow(10, 1, 5)), 60_000)
    with pytest.raises(SpecError):
        carancho = MatchSpec(preset="argentine", players=3, overrides={"play_mode": "carancho"}, rated=True)
        check_pool(PoolSpec("p", carancho), 60_000)


@settings(max_examples=150, deadline=None)
@given(
    players=st.sampled_from([2, 4, 6]),
    partners=st.booleans(),
    after=st.integers(1000, 30_000),
    data=st.data(),
)
def test_bot_fill_takes_only_tickets_past_the_wait_and_seats_bots_as_opponents(
    players: int, partners: bool, after: int, data: st.DataObject
) -> None:
    """:func:`fill`: a table per ticket that has waited ``after`` (ms), its party on one team,
    bots in every other seat; a party smaller than a team only when bots may be partners.
    :func:`fill_due` is when the first of the others will be."""
    spec = PoolSpec("p", MatchSpec(preset="paulista", players=players), bot_fill=BotFill(after, 2, partners))
    pool = check_pool(spec, 60_000)
    waiting = data.draw(tickets(pool.team_size, 12))
    tables = fill(pool, waiting, NOW)
    for t in tables:
        (ticket,) = t.tickets
        assert (NOW - ticket.created) * 1000 >= after
        assert partners or ticket.size == pool.team_size
        humans = [s for s, (tid, _) in enumerate(t.seats) if tid]
        assert [t.seats[s][1] for s in humans] == list(ticket.players)
        assert {pool.seat_teams[s] for s in humans} == {0}
        assert t.bots == pool.players - ticket.size
    filled = {t.tickets[0].ticket_id for t in tables}
    eligible = [w for w in waiting if partners or w.size == pool.team_size]
    assert filled == {w.ticket_id for w in eligible if (NOW - w.created) * 1000 >= after}
    due = fill_due(pool, [w for w in waiting if w.ticket_id not in filled])
    later = [w.created + after / 1000 for w in eligible if w.ticket_id not in filled]
    assert due == (min(later) if later else None)
