"""Leagues end to end: two ``truco serve`` workers on one real ``redis-server``, built-in bots
that get their matches through the bot lobby (``StreamAssignments``), the operator through
the SDK. Matches are short (argentine to 3 points) so a whole league takes seconds."""

from __future__ import annotations

import collections
import time
from pathlib import Path

from tests.leagues_service.workers import Lobby, every_match, make_bots, two_workers
from truco_client.leagues import LeagueClient
from truco_contract.pb import league_service_pb2 as lpb
from truco_server.leagues import Entrant, EventSpec, FormatKind, Result, create_event

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
