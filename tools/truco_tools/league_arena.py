"""The arena of the league campaign (``--format arena``; :mod:`truco_tools.league_campaign`).

An arena pairs its waiting entrants in waves for ``--duration`` from its start, then lets the
matches in play finish (docs/leagues.md, "Arena"). Its faults fall at a share of the duration
(``--kill-at``, ``--restart-at``), and its checks, beside the campaign's own (every pairing a
result, every table one match, created once and ended, the league events once each in order):

* the league finished, and not before its end time (``league.started``'s ``ends_at``);
* no wave paired after the end time, and no match created after it unless its wave was paired
  less than :data:`CREATE_GRACE` before it (both by the times on the feed): pairing a wave
  and creating its matches are two steps of the league's job, so the matches of a wave paired
  just before the end are created just after it;
* **no entrant in two matches at once**, from the waves and the feed: an entrant's waves
  increase strictly (never two tables in one wave), and the terminal event of its match of
  one wave comes no later than the ``round.paired`` of its next wave. Both times are the
  server's, and the job collects a result before it pairs the entrant again, so this holds
  whatever the load; the matches' own created and ended times are not compared, as a match
  created late (a slow pass) would only widen the gap;
* ``round.paired`` for waves 1..W in order between ``league.started`` and
  ``league.finished``. Waves overlap (a wave is paired while the matches of earlier ones are
  in play), so an ``entrant.forfeited`` of wave w may come after ``round.paired`` w+1: the
  Swiss's "each ``entrant.forfeited`` within its round" does not apply; that each forfeit has
  its event and no other does still does.

Its figures: the waves, the matches, the forfeits, the matches per minute of the duration,
and the time from a match's end to its entrants' next pairing (median and p95, over every
entrant that was paired again).
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from truco_contract.pb import league_service_pb2 as LPB
from truco_tools.league_feed import RESULT_TYPES, FeedEvent

if TYPE_CHECKING:
    from truco_client.leagues import LeagueClient
    from truco_tools.league_campaign import Options


CREATE_GRACE = 5.0
"""Seconds before the end time after which a wave's matches may be created after it."""


def duration(text: str) -> float:
    """Seconds from ``600``, ``90s``, ``10m`` or ``1h`` (``--duration``)."""
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(text[-1:], 0.0)
    try:
        return float(text[:-1]) * scale if scale else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r}") from None


def ends_at(events: list[FeedEvent]) -> float:
    """The end time ``league.started`` gave (0 before it)."""
    started = next((e for e in events if e.type == "league.started"), None)
    return float(started.labels.get("ends_at", "0") or 0) if started else 0.0


def first_times(deliveries: list[FeedEvent], types: tuple[str, ...]) -> dict[str, float]:
    """Each match's first delivery of one of ``types``: its time."""
    out: dict[str, float] = {}
    for e in deliveries:
        if e.type in types and e.match_id:
            out.setdefault(e.match_id, e.time)
    return out


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else 0.0


@dataclass(frozen=True)
class ArenaFigures:
    """What the arena's final table shows."""

    waves: int
    matches: int
    forfeits: int
    per_minute: float
    gaps: int
    """Matches followed by a next pairing of the same entrant (each side counts)."""
    gap_median: float
    gap_p95: float
    finished_after_end: float

    def table(self) -> str:
        return "\n".join(
            [
                "| waves | matches | forfeits | matches / min | end to next pairing, median (s) "
                "| p95 (s) | finished after the end time (s) |",
                "|---|---|---|---|---|---|---|",
                f"| {self.waves} | {self.matches} | {self.forfeits} | {self.per_minute:.1f} "
                f"| {self.gap_median:.2f} | {self.gap_p95:.2f} | {self.finished_after_end:.2f} |",
            ]
        )


def entrant_overlaps(
    pairings: list[LPB.LeaguePairing], paired_at: dict[int, float], ended: dict[str, float]
) -> tuple[list[str], list[float]]:
    """The entrants found in two matches at once (see the module docstring), and every gap
    from a match's end to its entrant's next ``round.paired``."""
    waves: dict[str, list[LPB.LeaguePairing]] = {}
    for p in pairings:
        for side in (p.first, p.second):
            if side:
                waves.setdefault(side, []).append(p)
    found: list[str] = []
    gaps: list[float] = []
    for entrant, mine in sorted(waves.items()):
        mine.sort(key=lambda p: p.round)
        for a, b in itertools.pairwise(mine):
            if a.round == b.round:
                found.append(f"{entrant}: two tables in wave {a.round}")
                continue
            end = ended.get(a.tables[0].match_id if a.tables else "")
            nxt = paired_at.get(b.round)
            if end is None or nxt is None:
                found.append(f"{entrant}: wave {a.round} or {b.round} without its times on the feed")
            elif end > nxt:
                found.append(f"{entrant}: in wave {b.round} {end - nxt:.2f} s before wave {a.round} ended")
            else:
                gaps.append(nxt - end)
    return found, gaps


class ArenaFormat:
    """An arena of ``opts.duration`` seconds."""

    name = "arena"
    rounds_wait = False
    """Waves overlap: no "entrant.forfeited within its round" check."""

    def __init__(self) -> None:
        self.minutes = 0
        self.figures: ArenaFigures | None = None

    def create(self, ops: LeagueClient, bots: list[str], opts: Options) -> LPB.League:
        from truco_tools.league_campaign import create_with

        name = f"campaign arena {opts.entrants} x {opts.duration:g} s"
        return create_with(ops, bots, opts, name, "arena", arena_duration=opts.duration)

    def faults(self, opts: Options) -> dict[str, float]:
        return {"kill": opts.kill_at, "restart": opts.restart_at}

    def fault_due(self, at: float, opts: Options, events: list[FeedEvent], results: Counter[int]) -> bool:
        """Once ``at`` of the duration has gone by since ``league.started``."""
        end = ends_at(events)
        return bool(end) and time.time() >= end - (1.0 - at) * opts.duration

    def fault_place(self, at: float, results: Counter[int]) -> str:
        return f"at {at:.0%} of the duration ({sum(results.values())} results in)"

    def progress(self, deliveries: list[FeedEvent], events: list[FeedEvent], opts: Options) -> list[str]:
        """A line a minute: the waves paired, the matches created and ended so far."""
        end = ends_at(events)
        if not end:
            return []
        minute = int((time.time() - (end - opts.duration)) // 60)
        if minute <= self.minutes:
            return []
        self.minutes = minute
        waves = sum(1 for e in events if e.type == "round.paired")
        made = len(first_times(deliveries, ("match.created",)))
        done = len(first_times(deliveries, RESULT_TYPES))
        return [f"minute {minute}: {waves} waves, {made} matches made, {done} ended, {made - done} in play"]

    def check(
        self,
        pairings: list[LPB.LeaguePairing],
        league: LPB.League,
        opts: Options,
        deliveries: list[FeedEvent],
        events: list[FeedEvent],
    ) -> dict[str, list[str]]:
        end = ends_at(events)
        paired_at = {e.round: e.time for e in events if e.type == "round.paired"}
        wave_of = {t.match_id: p.round for p in pairings for t in p.tables}
        ended = first_times(deliveries, RESULT_TYPES)
        created = first_times(deliveries, ("match.created",))
        finished = next((e.time for e in events if e.type == "league.finished"), 0.0)
        overlaps, gaps = entrant_overlaps(pairings, paired_at, ended)
        waves = sorted(paired_at)
        self.figures = ArenaFigures(
            waves=len(waves),
            matches=sum(1 for p in pairings if p.second),
            forfeits=sum(1 for p in pairings if p.HasField("result") and p.result.forfeit),
            per_minute=sum(1 for p in pairings if p.second) / (opts.duration / 60.0),
            gaps=len(gaps),
            gap_median=statistics.median(gaps) if gaps else 0.0,
            gap_p95=percentile(gaps, 0.95),
            finished_after_end=finished - end if finished and end else 0.0,
        )
        return {
            "finished before the end time": [f"{end - finished:.2f} s before"] if finished < end else [],
            "waves paired after the end time": [f"wave {w}" for w, t in paired_at.items() if t > end],
            "matches created after the end time": sorted(
                m
                for m, t in created.items()
                if t > end and paired_at.get(wave_of.get(m, 0), end) < end - CREATE_GRACE
            ),
            "entrants in two matches at once": overlaps,
            "waves not 1..W": [] if waves == list(range(1, league.current_round + 1)) else [str(waves[:20])],
            "byes": [f"{p.round}.{p.table}" for p in pairings if not p.second],
        }
