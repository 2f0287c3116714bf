"""A match's whole history, rebuilt from its record: every log entry with its version and time,
and the states after every step.

The stream's log in the store keeps only the last events (``StoreSettings.max_events``); the
record keeps every step. Replaying the record through :mod:`truco_match.table` gives back exactly
the same log (the same versions, the same events), so a server serves from it what the log no
longer holds: a stream resumed from long ago, a spectator who watches some actions late, a
match's record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import truco_engine as te
from truco_match import records
from truco_match.events import LogEntry
from truco_match.lifecycle import Life
from truco_match.match import Match
from truco_match.matches import MatchInfo


@dataclass(frozen=True, slots=True)
class Point:
    """The match after one step (the creation included, with ``step`` its placeholder)."""

    version: int
    state: te.MatchState
    life: Life
    step: records.RecordStep
    actions: int
    """Action steps (a seat's action or a move made for it) up to this point."""


@dataclass(frozen=True, slots=True)
class History:
    """Every log entry (version, entry, time) and every point, oldest first."""

    entries: tuple[tuple[int, LogEntry, float], ...]
    points: tuple[Point, ...]

    def entry(self, version: int) -> tuple[LogEntry, float]:
        _, entry, at = self.entries[version - 1]
        return entry, at

    def info_at(self, match: Match, version: int) -> MatchInfo:
        """``match``'s description as a viewer who sees it at ``version`` sees it (a delayed
        spectator): that version, the time it was reached and what was public then -- nothing
        of what came after, not even how fast it came."""
        point = self.points[0]
        for p in self.points:
            if p.version > version:
                break
            point = p
        at = self.entry(point.version)[1] if point.version else match.meta.created_at
        return dataclasses.replace(
            match.info(), version=point.version, updated_at=at, fairness=match.setup.fairness(point.life)
        )

    def delayed(self, actions_behind: int) -> Point:
        """The latest point at least ``actions_behind`` actions before the last one."""
        last = self.points[-1].actions
        target = last - actions_behind
        found = self.points[0]
        for p in self.points:
            if p.actions > target:
                break
            found = p
        return found


def creator_seed(life: Life) -> bytes:
    """The creator's client seed (the first seed, given without a seat), if any."""
    return next((bytes.fromhex(h) for seat, h in life.client_seeds if seat is None), b"")


def build(match: Match, raw_steps: Sequence[bytes]) -> History:
    """Replay the record of a match (its stored steps) into its history up to
    ``match.version``: a record read after more commits holds more steps than that version,
    which are left out, so the history is the match's exactly at the version asked for,
    however fast the match moves."""
    meta = match.meta
    steps = [records.unpack_step(raw, meta.created_at) for raw in raw_steps]
    steps = [s for s in steps if s.version <= match.version]
    entries: list[tuple[int, LogEntry, float]] = []
    points: list[Point] = []
    actions = 0
    for r in records.replay(match.setup, match.seats, steps, meta.created_at, creator_seed(match.life)):
        at = r.step.time
        for v, entry in enumerate(r.entries, r.first_version):
            entries.append((v, entry, at))
        if r.step.action is not None:
            actions += 1
        points.append(Point(entries[-1][0] if entries else 0, r.state, r.life, r.step, actions))
    return History(tuple(entries), tuple(points))
