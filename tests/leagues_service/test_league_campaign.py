"""The league campaign in its short form (``python -m truco_tools.league_campaign``; the long
form, 1,000 entrants, is in docs/leagues.md, "Campaign"): a Swiss of 24 bots through the
lobby on two workers and a redis-server of its own, a worker SIGKILLed when round 2 is paired
and Redis restarted when round 3 is; an arena of 10 bots for 30 s through the same two faults;
and the campaign's checks, shown to fail on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from truco_contract.pb import league_service_pb2 as LPB
from truco_tools.league_arena import ArenaFormat
from truco_tools.league_campaign import Options, SwissFormat, forfeits_untold, run
from truco_tools.league_feed import FeedEvent, league_sequence, round_times

LEAGUE = "lg1"


def ev(n: int, kind: str, t: float, **labels: object) -> FeedEvent:
    return FeedEvent(
        f"{LEAGUE}:e{n}", kind, t, "", {"league": LEAGUE, **{k: str(v) for k, v in labels.items()}}
    )


def ended(match: str, rnd: int, t: float) -> FeedEvent:
    return FeedEvent(
        f"{match}:9", "match.ended", t, match, {"league": LEAGUE, "round": str(rnd), "table": "x"}
    )


def created(match: str, rnd: int, t: float) -> FeedEvent:
    return FeedEvent(f"{match}:1", "match.created", t, match, {"league": LEAGUE, "round": str(rnd)})


STARTED = ev(1, "league.started", 10.0)
PAIRED_1 = ev(2, "round.paired", 10.5, round=1, pairings=2)
FORFEITED = ev(3, "entrant.forfeited", 12.5, round=1, table=2, entrant="b")
PAIRED_2 = ev(4, "round.paired", 13.25, round=2, pairings=2)
FINISHED = ev(5, "league.finished", 16.5)
GOOD = [
    STARTED,
    PAIRED_1,
    created("m1", 1, 10.75),
    created("m2", 1, 11.0),
    ended("m1", 1, 12.0),
    FORFEITED,
    ended("m2", 1, 13.0),
    PAIRED_2,
    created("m3", 2, 13.5),
    created("m4", 2, 13.75),
    ended("m3", 2, 15.0),
    ended("m4", 2, 16.0),
    FINISHED,
]


def test_the_league_sequence_check_passes_a_good_feed_and_names_what_is_wrong() -> None:
    good = league_sequence([*GOOD, PAIRED_1], LEAGUE)  # a delivery again: at least once
    assert good.problems == [] and good.redelivered == 1 and len(good.events) == 5
    times = round_times(GOOD, good.events, LEAGUE)
    assert [(t.round, t.matches, t.pairing, t.created, t.half, t.wall) for t in times] == [
        (1, 2, 0.5, 1.0, 1.5, 2.5),
        (2, 2, 0.25, 0.75, 1.75, 2.75),
    ]

    def problems(events: list[FeedEvent]) -> str:
        return " / ".join(league_sequence(events, LEAGUE).problems)

    assert "missing [3]" in problems([e for e in GOOD if e is not FORFEITED])
    assert "out of order" in problems([STARTED, PAIRED_2, PAIRED_1, FORFEITED, FINISHED])
    assert "twice under two ids" in problems(
        [
            STARTED,
            PAIRED_1,
            FORFEITED,
            PAIRED_2,
            ev(5, "round.paired", 17, round=2),
            ev(6, "league.finished", 18),
        ]
    )
    assert "round.paired 3 after round 1" in problems(
        [STARTED, PAIRED_1, FORFEITED, ev(4, "round.paired", 13, round=3), FINISHED]
    )
    late = ev(4, "entrant.forfeited", 14, round=1, entrant="b")
    assert "entrant.forfeited of round 1 during round 2" in problems(
        [STARTED, PAIRED_1, ev(3, "round.paired", 13, round=2), late, ev(5, "league.finished", 18)]
    )
    arena = [STARTED, PAIRED_1, ev(3, "round.paired", 13, round=2), late, ev(5, "league.finished", 18)]
    assert league_sequence(arena, LEAGUE, forfeits_in_round=False).problems == []  # waves overlap
    assert "league.finished is not last" in problems(GOOD[:-1])
    assert "the first league event is ['round.paired']" in problems(GOOD[1:])


def test_the_swiss_check_finds_a_rematch_an_entrant_twice_and_two_byes() -> None:
    def p(r: int, t: int, a: str, b: str = "") -> LPB.LeaguePairing:
        return LPB.LeaguePairing(round=r, table=t, first=a, second=b)

    league = LPB.League(current_round=2)
    good = [
        p(1, 1, "a", "b"),
        p(1, 2, "c", "d"),
        p(1, 3, "e"),
        p(2, 1, "a", "c"),
        p(2, 2, "b", "e"),
        p(2, 3, "d"),
    ]
    assert not any(SwissFormat().check(good, league, Options(rounds=2), [], []).values())
    bad = [p(1, 1, "a", "b"), p(1, 2, "c", "a"), p(1, 3, "e"), p(1, 4, "d"), p(2, 1, "b", "a"), p(2, 2, "e")]
    found = SwissFormat().check(bad, league, Options(rounds=2), [], [])
    assert found["entrants twice in a round"] == ["round 1: a"]
    assert found["rematches"] == ["round 2: b v a"]
    assert found["byes"] == ["round 1: more than one bye", "e: 2 byes"]


def test_every_forfeit_has_its_entrant_forfeited_event_and_no_other() -> None:
    def p(a: str, b: str, winner: str, forfeit: bool) -> LPB.LeaguePairing:
        result = LPB.PairingResult(winner=winner, forfeit=forfeit)
        return LPB.LeaguePairing(round=1, table=1, first=a, second=b, result=result)

    pairings = [p("a", "b", "a", True), p("c", "d", "", True), p("e", "f", "e", False)]
    told = [ev(2 + i, "entrant.forfeited", 1.0, round=1, entrant=e) for i, e in enumerate("bcd")]
    assert forfeits_untold(pairings, told) == []
    assert forfeits_untold(pairings, told[:2]) == ["round 1: d"]
    assert forfeits_untold(pairings, [*told, ev(9, "entrant.forfeited", 2.0, round=1, entrant="f")]) == [
        "round 1: f"
    ]


@pytest.mark.timeout(300)
def test_a_swiss_of_24_bots_through_a_worker_kill_and_a_redis_restart(tmp_path: Path) -> None:
    # a seat that does not join (a join lost to the kill, or too slow on a loaded machine) is a
    # forfeit after 15 s: a result like any other, and a round never waits long for it
    opts = Options(
        entrants=24, rounds=3, kill_round=2, restart_round=3, fault_at=0.0, join_window=15.0, timeout=240.0
    )
    report = run(opts, tmp_path, progress=lambda line: None)
    assert report.failures() == {}, report.summary()
    assert len(report.faults) == 2 and "SIGKILLed" in report.faults[0] and "restarted" in report.faults[1]
    assert [(t.round, t.matches) for t in report.rounds] == [(1, 12), (2, 12), (3, 12)], report.summary()
    assert report.matches == 36 and report.lobby_restarts == 0
    assert report.feed_connects >= 2  # the feed began on the killed worker and resumed on the other
    # every process it started (redis-server twice, the workers, the restarted one, the lobbies) is gone
    assert len(report.pids) == 1 + 2 + 1 + 1 + opts.lobbies
    assert not [pid for pid in report.pids if Path(f"/proc/{pid}").exists()]


def test_the_arena_check_finds_an_entrant_in_two_matches_and_play_after_the_end_time() -> None:
    def p(w: int, t: int, a: str, b: str, match: str) -> LPB.LeaguePairing:
        return LPB.LeaguePairing(
            round=w, table=t, first=a, second=b, tables=[LPB.LeagueTable(match_id=match)]
        )

    league = LPB.League(current_round=2)
    events = [
        ev(1, "league.started", 10.0, ends_at=20.0),
        ev(2, "round.paired", 10.0, round=1, pairings=2),
        ev(3, "round.paired", 13.0, round=2, pairings=1),
        ev(4, "league.finished", 21.0),
    ]
    feed = [created("m1", 1, 10.5), created("m2", 1, 10.5), ended("m1", 1, 12.0), ended("m2", 1, 12.5)]
    feed += [created("m3", 2, 13.5), ended("m3", 2, 19.0)]
    good = [p(1, 1, "a", "b", "m1"), p(1, 2, "c", "d", "m2"), p(2, 1, "a", "c", "m3")]
    arena = ArenaFormat()
    opts = Options(format="arena", duration=10.0)
    assert not any(arena.check(good, league, opts, feed, events).values())
    assert arena.figures is not None and arena.figures.waves == 2 and arena.figures.matches == 3
    assert (arena.figures.gaps, arena.figures.gap_median, arena.figures.finished_after_end) == (2, 0.75, 1.0)
    # c is paired in wave 2 before its match of wave 1 ended; d twice in wave 2; m4 made after
    # 20.0, its wave paired 7 s before; m5 after 20.0 too, its wave paired 1 s before (allowed)
    late = [ended("m2", 1, 13.5), created("m4", 2, 20.5), ended("m4", 2, 21.0)]
    late += [created("m5", 3, 20.2), ended("m5", 3, 20.9)]
    bad = [*good, p(2, 2, "d", "b", "m4"), p(2, 3, "d", "e", "m4"), p(3, 1, "f", "g", "m5")]
    wave3 = ev(5, "round.paired", 19.0, round=3, pairings=1)
    found = arena.check(
        bad, league, opts, [*late, *feed], [*events[:3], wave3, ev(4, "league.finished", 19.5)]
    )
    assert found["entrants in two matches at once"] == [
        "c: in wave 2 0.50 s before wave 1 ended",
        "d: in wave 2 0.50 s before wave 1 ended",
        "d: two tables in wave 2",
    ]
    assert found["matches created after the end time"] == ["m4"]
    assert found["finished before the end time"] == ["0.50 s before"]


@pytest.mark.timeout(300)
def test_an_arena_of_10_bots_for_30_s_through_a_worker_kill_and_a_redis_restart(tmp_path: Path) -> None:
    opts = Options(
        format="arena",
        entrants=10,
        duration=30.0,
        kill_at=0.3,
        restart_at=0.6,
        join_window=15.0,
        timeout=240.0,
    )
    report = run(opts, tmp_path, progress=lambda line: None)
    assert report.failures() == {}, report.summary()
    assert len(report.faults) == 2 and "SIGKILLed" in report.faults[0] and "restarted" in report.faults[1]
    assert report.arena is not None and report.arena.waves >= 2, report.summary()
    assert report.arena.finished_after_end >= 0 and report.matches == report.arena.matches >= 5
    assert report.feed_connects >= 2
    assert len(report.pids) == 1 + 2 + 1 + 1 + opts.lobbies
    assert not [pid for pid in report.pids if Path(f"/proc/{pid}").exists()]
