"""Leagues end to end: two ``truco serve`` workers on one real ``redis-server``, built-in bots
that get their matches through the bot lobby (``StreamAssignments``), the operator through
the SDK. Matches are short (argentine to 3 points) so a whole league takes seconds."""

from __future__ import annotations

import collections
import time
from pathlib import Path

from tests.leagues_service.workers import Lobby, every_match, make_bots, two_workers
from truco_client import TrucoClient
from truco_client.leagues import LeagueClient
from truco_contract.pb import league_service_pb2 as lpb
from truco_server.leagues import Entrant, EventSpec, FormatKind, Result, create_event
from truco_server.services.leagues.outcomes import outcome_of

LEAGUE_TIMEOUT = 240.0


def results_of(pairings: lpb.ListPairingsResponse) -> list[Result]:
    out = []
    for p in pairings.pairings:
        assert p.HasField("result"), f"round {p.round} table {p.table} has no result"
        r = p.result
        out.append(
            Result(p.round, p.table, p.first, p.second or None, r.winner or None,
                   r.first_points, r.second_points, r.forfeit)
        )  # fmt: skip
    return out


def test_swiss_of_16_bots_through_the_lobby(clean_redis_url: str, tmp_path: Path) -> None:
    with two_workers(clean_redis_url, tmp_path) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 16)
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            lg = ops.create_league(
                "friday swiss", "swiss", preset="argentine", overrides={"target_points": 3}, rounds=4,
                entrants=[bot.bot_id for bot in bots], join_window=60,
            )  # fmt: skip
            lg = ops.start(lg.league_id)
            # pause after round 1 is paired, withdraw the 16th seed, resume: 15 left, so byes
            deadline = time.monotonic() + 30
            while ops.get_league(lg.league_id).current_round < 1:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            ops.pause(lg.league_id)
            ops.withdraw(lg.league_id, bots[15].bot_id)
            ops.resume(lg.league_id)
            done = ops.wait_finished(lg.league_id, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        assert done.current_round == 4 and done.total_rounds == 4
        pairings = ops.pairings(lg.league_id)
        results = results_of(pairings)
        met: set[frozenset[str]] = set()
        byes: collections.Counter[str] = collections.Counter()
        withdrawn = bots[15].bot_id
        for r in range(1, 5):
            rnd = [p for p in pairings.pairings if p.round == r]
            paired = [e for p in rnd for e in (p.first, p.second) if e]
            assert len(paired) == len(set(paired))  # nobody twice in a round
            got_bye = [p.first for p in rnd if not p.second]
            if withdrawn in paired:
                assert len(paired) == 16 and not got_bye
            else:
                assert len(paired) == 15 and len(got_bye) == 1  # one bye when 15 are left
            byes.update(got_bye)
            for p in rnd:
                if p.second:
                    pair = frozenset((p.first, p.second))
                    assert pair not in met, f"rematch {sorted(pair)} in round {r}"
                    met.add(pair)
                    (table,) = p.tables
                    assert table.match_id and table.done
            # the pairing is the library's for the results before the round (deterministic)
            event = create_event(
                EventSpec(FormatKind.SWISS, rounds=4),
                [Entrant(bot.bot_id, i) for i, bot in enumerate(bots, 1)],
            )
            expected = event.pairings(r, [x for x in results if x.round < r], {withdrawn} if r > 1 else set())
            if withdrawn not in paired:
                assert [(p.first, p.second or None) for p in rnd] == [(e.first, e.second) for e in expected]
        assert byes and max(byes.values()) == 1  # nobody has two byes
        assert sum(byes.values()) >= 3
        # the standings are the library's, and Buchholz is the sum of the opponents' scores
        standings = ops.standings(lg.league_id)
        assert list(standings.tie_breaks)[:3] == ["buchholz", "median_buchholz", "sonneborn_berger"]
        score = {s.entrant_id: s.score for s in standings.standings}
        opponents: dict[str, list[str]] = collections.defaultdict(list)
        for x in results:
            if x.second:
                opponents[x.first].append(x.second)
                opponents[x.second].append(x.first)
        for s in standings.standings:
            assert s.tie_breaks[0] == sum(score[o] for o in opponents[s.entrant_id])
        ranked = [(s.score, *s.tie_breaks) for s in standings.standings]
        assert ranked == sorted(ranked, reverse=True)
        assert [s.rank for s in standings.standings] == list(range(1, 17))
        # every match once, rated once
        tables = [t.match_id for p in pairings.pairings for t in p.tables]
        assert sorted(every_match(a.address)) == sorted(tables)
        board = ops.leaderboard(done.rating_family, 100)
        rated = collections.Counter(
            e for p in pairings.pairings if p.second and not p.result.forfeit for e in (p.first, p.second)
        )
        assert {e.player_id: e.games for e in board} == dict(rated)


def test_double_round_robin_with_duplicate_deals(clean_redis_url: str, tmp_path: Path) -> None:
    """Every deal is played exactly twice, seats swapped, and the standings compare the two
    tables deal by deal."""
    with two_workers(clean_redis_url, tmp_path) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 4, max_concurrent=2)  # both tables of a pairing at once
        lobby = Lobby(bots)
        lobby.start([b.address, a.address])
        try:
            lg = ops.create_league(
                "duplicate", "double_round_robin", preset="argentine", overrides={"target_points": 3},
                entrants=[bot.bot_id for bot in bots], duplicate="tables", join_window=60,
            )  # fmt: skip
            ops.start(lg.league_id)
            done = ops.wait_finished(lg.league_id, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        pairings = ops.pairings(lg.league_id)
        assert done.total_rounds == 6 and len(pairings.pairings) == 12  # every pair twice
        with TrucoClient(a.address) as c:  # open mode: each table's spectator token reads its record
            deal_sets: collections.Counter[str] = collections.Counter()
            for p in pairings.pairings:
                ta, tb = p.tables
                assert ta.deal_set == tb.deal_set and list(ta.sides) == [p.first, p.second]
                assert list(tb.sides) == [p.second, p.first]  # the seats swapped
                deal_sets.update([ta.deal_set, tb.deal_set])
                ra = c.get_match_record(ta.match_id, token=ta.spectator_token)
                rb = c.get_match_record(tb.match_id, token=tb.spectator_token)
                assert [s.player_id for s in ta.seats] == [p.first, p.second]
                assert [s.player_id for s in tb.seats] == [p.second, p.first]
                assert ra.reveal is not None and rb.reveal is not None
                both = min(len(ra.reveal.deals), len(rb.reveal.deals))
                assert both >= 1
                for k in range(both):  # the same deck order for every deal played at both tables
                    assert ra.reveal.deals[k].cards == rb.reveal.deals[k].cards
                    assert ra.reveal.deals[k].operator_deck and rb.reveal.deals[k].operator_deck
                assert [h.dealer for h in ra.hands[:both]] == [h.dealer for h in rb.hands[:both]]
                # the comparison: the first entrant's net on each deal, from the two records
                da, db = outcome_of(ra).deals, outcome_of(rb).deals
                assert sum(x for x, _ in da) == ra.match.result.scores[0]  # type: ignore[union-attr]
                nets = [(da[k][0] - da[k][1]) + (db[k][1] - db[k][0]) for k in range(both)]
                assert [d.net for d in p.result.deals] == nets
                assert [d.deal for d in p.result.deals] == list(range(both))
                assert p.result.net == sum(nets)
                winner = p.first if sum(nets) > 0 else p.second if sum(nets) < 0 else ""
                assert p.result.winner == winner
                assert p.result.first_points - p.result.second_points == sum(nets)
            assert set(deal_sets.values()) == {2}  # each deal set at exactly two tables
        standings = ops.standings(lg.league_id)
        results = results_of(pairings)
        expected = create_event(
            EventSpec(FormatKind.DOUBLE_ROUND_ROBIN),
            [Entrant(bot.bot_id, i) for i, bot in enumerate(bots, 1)],
        ).standings(results)
        assert [(s.entrant_id, s.score) for s in standings.standings] == [
            (e.entrant_id, e.score) for e in expected
        ]
        tables = [t.match_id for p in pairings.pairings for t in p.tables]
        assert sorted(every_match(a.address)) == sorted(tables) and len(tables) == 24


def test_knockout_of_11_with_byes_and_a_worker_killed(clean_redis_url: str, tmp_path: Path) -> None:
    """The top five seeds get the byes of a 16-line bracket; one worker is SIGKILLed right
    after the start (when it may be pairing or creating the first round; test_worker_death.py
    kills at every point of it deterministically): the other finishes the tournament, with
    every match created once and rated once."""
    with two_workers(clean_redis_url, tmp_path) as (a, b), LeagueClient(b.address) as ops:
        bots = make_bots(ops, 11)
        lobby = Lobby(bots)
        lobby.start([b.address, a.address])
        try:
            lg = ops.create_league(
                "cup", "single_elimination", preset="argentine", overrides={"target_points": 3},
                entrants=[bot.bot_id for bot in bots], join_window=60,
            )  # fmt: skip
            ops.start(lg.league_id)
            a.kill()
            done = ops.wait_finished(lg.league_id, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        assert done.total_rounds == 4
        pairings = ops.pairings(lg.league_id)
        first = [p for p in pairings.pairings if p.round == 1]
        seeds = {bot.bot_id: i for i, bot in enumerate(bots, 1)}
        assert sorted(seeds[p.first] for p in first if not p.second) == [1, 2, 3, 4, 5]
        assert len([p for p in first if p.second]) == 3  # seeds 6..11 play
        assert [len([p for p in pairings.pairings if p.round == r]) for r in (1, 2, 3, 4)] == [8, 4, 2, 1]
        for p in pairings.pairings:
            assert p.result.winner in (p.first, p.second or p.first)
        final = next(p for p in pairings.pairings if p.round == 4)
        standings = ops.standings(lg.league_id)
        assert standings.standings[0].entrant_id == final.result.winner and standings.standings[0].rank == 1
        tables = [t.match_id for p in pairings.pairings for t in p.tables]
        assert len(tables) == 10 and sorted(every_match(b.address)) == sorted(tables)  # n - 1 matches
        board = ops.leaderboard(done.rating_family, 100)
        assert sum(e.games for e in board) == 2 * len(
            [p for p in pairings.pairings if p.second and not p.result.forfeit]
        )
