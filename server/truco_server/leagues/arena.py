"""Arena: continuous pairing for a fixed time (Lichess's arena tournaments).

An arena has no rounds that wait for each other. It runs for a fixed duration from its
start; whenever an entrant's match ends (and at the start) the entrant is **waiting**, and
waiting entrants are paired with each other at once. The caller (the league job) keeps who
is playing; this module answers, as pure functions of the results so far:

- :func:`arena_pairs`: who plays whom among the waiting entrants (**a wave**: the service
  numbers waves like rounds, so a result is keyed ``(wave, table)`` as any other);
- :func:`arena_scores`: each entrant's arena score, with Lichess's streak rule;
- :func:`arena_standings`: the standings (score, then Truco points difference, then fewer
  games, then seed);
- :func:`arena_over`: whether the duration is over (no new pairing after it).

**Pairing rule.** The waiting entrants are ranked by the arena standings (the whole field's
rank, so "close in rank" means close in score) and matched, in groups of at most
:data:`GROUP` consecutive ranks, by a maximum-cardinality matching of least total rank
distance (the library's blossom matcher, :mod:`.matching`): as many as possible are paired,
each as close in rank as the others allow; among equally close pairings, the better ranked
are paired and the lowest ranked waits. An entrant's last opponent is not an allowed
partner; two entrants who just played each other are paired again only when nobody else is
waiting **and** nobody else is still playing (somebody will come back soon: they wait for
him). Lichess's arena does the same kind of thing: a weighted maximum matching whose cost
is mostly the rank distance, plus a penalty for recent opponents (``AntmaPairing`` in the
lichess source). An odd entrant out waits for the next match to end. ``first`` (mano in
the first hand) is the side that was mano less often in its arena games; on a tie the
better ranked.

**Scoring** (Lichess's ``ScoringSystem``): a win 2, a draw 1, a loss 0. After two wins in a
row an entrant is **on fire**: its results score double (a win 4, a draw 2) until a result
that is not a win ends the streak. A loss by forfeit (a no-show, a loss on time under the
clock) scores 0 and ends the streak like any loss; a win by forfeit scores as a win. A
double forfeit scores nothing for either side.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import InvalidOptionError, RoundOrderError
from truco_server.leagues.matching import max_weight_matching
from truco_server.leagues.results import Pairing, Result
from truco_server.leagues.tiebreaks import Standing, TieBreak, standings

ARENA_WIN = 2
ARENA_DRAW = 1
STREAK = 2
"""Wins in a row after which results score double (Lichess's "on fire")."""
GROUP = 64
"""Most waiting entrants matched in one graph (by rank; Lichess caps its groups at 100): the
matching is cubic in the group's size, and waves after the start are small."""
ARENA_TIE_BREAKS: tuple[TieBreak, ...] = (TieBreak.POINTS_DIFFERENCE,)
"""The tie-break an arena's standings show (``Standing.tie_breaks``); fewer games and the seed
come after it."""
MAX_DURATION = 7 * 24 * 3600.0
"""The longest arena (seconds)."""
MIN_DURATION = 1.0
"""The shortest arena (seconds)."""


def check_duration(seconds: float | None) -> float:
    """An arena's duration in seconds, checked (:class:`InvalidOptionError` on
    ``arena.duration``)."""
    if not seconds or isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise InvalidOptionError("arena.duration", "an arena needs a duration (e.g. 1800s)")
    if not math.isfinite(seconds) or not MIN_DURATION <= seconds <= MAX_DURATION:
        raise InvalidOptionError("arena.duration", f"from {MIN_DURATION:g} s to 7 days; got {seconds!r}")
    return float(seconds)


def arena_over(now: float, ends_at: float) -> bool:
    """True once the arena's time is up: no new pairing is made (matches in play finish)."""
    return now >= ends_at


@dataclass(frozen=True)
class ArenaScore:
    """One entrant's arena score so far."""

    score: int
    streak: int
    """Wins in a row at the end of its games (``>= STREAK``: on fire)."""

    @property
    def on_fire(self) -> bool:
        return self.streak >= STREAK


def _games(results: Iterable[Result]) -> dict[str, list[tuple[Result, str | None]]]:
    """Each entrant's played results in wave order, with its opponent."""
    out: dict[str, list[tuple[Result, str | None]]] = {}
    for r in sorted(results, key=lambda r: (r.round, r.table)):
        if r.second is None:
            continue  # an arena has no byes; a stored one scores nothing
        out.setdefault(r.first, []).append((r, r.second))
        out.setdefault(r.second, []).append((r, r.first))
    return out


def arena_scores(entrants: Iterable[str], results: Sequence[Result]) -> dict[str, ArenaScore]:
    """Each entrant's arena score (the module docstring's scoring)."""
    games = _games(results)
    out: dict[str, ArenaScore] = {}
    for entrant in entrants:
        score = streak = 0
        for r, _opponent in games.get(entrant, ()):
            double = 2 if streak >= STREAK else 1
            if r.winner == entrant:
                score += ARENA_WIN * double
                streak += 1
            elif r.winner is None and not r.forfeit:
                score += ARENA_DRAW * double
                streak = 0
            else:  # a loss, a forfeit lost, a double forfeit
                streak = 0
        out[entrant] = ArenaScore(score, streak)
    return out


def arena_standings(entrants: Sequence[Entrant], results: Sequence[Result]) -> tuple[Standing, ...]:
    """The standings: arena score, then Truco points difference (higher first), then fewer
    games (the same score from fewer games), then seed. ``Standing.score`` is the arena
    score and ``tie_breaks`` holds the points difference."""
    played = [r for r in results if r.second is not None]
    rows = {s.entrant_id: s for s in standings(entrants, played, tie_breaks=ARENA_TIE_BREAKS)}
    scores = arena_scores(rows, played)
    seed = {e.id: e.seed for e in entrants}

    def key(entrant_id: str) -> tuple[float, ...]:
        s = rows[entrant_id]
        return (-scores[entrant_id].score, -s.tie_breaks[0], s.played, seed[entrant_id])

    order = sorted(rows, key=key)
    return tuple(
        replace(rows[e], rank=rank, score=float(scores[e].score)) for rank, e in enumerate(order, start=1)
    )


def arena_pairs(
    entrants: Sequence[Entrant],
    results: Sequence[Result],
    waiting: Collection[str],
    *,
    others_playing: bool,
    wave: int,
) -> tuple[Pairing, ...]:
    """The tables of a new wave among the ``waiting`` entrants (the module docstring's rule);
    ``others_playing``: some entrant not waiting is in a match now. Empty when nobody can be
    paired (fewer than two waiting, or only two who just met while others play)."""
    rank = {s.entrant_id: s.rank for s in arena_standings(entrants, results)}
    pool = sorted((e for e in waiting if e in rank), key=rank.__getitem__)
    last, mano = _last_opponents_and_mano(results)
    rematch_ok = len(pool) == 2 and not others_playing
    pairs: list[tuple[str, str]] = []
    carried: list[str] = []
    for start in range(0, len(pool), GROUP):
        group = carried + pool[start : start + GROUP]
        allowed = [[a != b and (rematch_ok or last.get(a) != b) for b in group] for a in group]
        weights = _weights(group, rank, allowed)
        mate = max_weight_matching(weights)
        carried = [group[i] for i, m in enumerate(mate) if m < 0]
        for i, m in enumerate(mate):
            if i < m:
                a, b = group[i], group[m]
                pairs.append((a, b) if mano.get(a, 0) <= mano.get(b, 0) else (b, a))
    pairs.sort(key=lambda p: min(rank[p[0]], rank[p[1]]))
    return tuple(Pairing(wave, t, a, b) for t, (a, b) in enumerate(pairs, start=1))


def _weights(group: Sequence[str], rank: dict[str, int], allowed: list[list[bool]]) -> list[list[int | None]]:
    """The matching's weights: least rank distance first; then, among equally close
    pairings, the better ranked are paired (the lowest waits)."""
    top = len(rank) + 1  # keeps every weight positive
    scale = 2 * top * len(group) + 1  # above any total of the second term
    return [
        [
            (top - abs(rank[a] - rank[b])) * scale + (2 * top - rank[a] - rank[b]) if allowed[i][j] else None
            for j, b in enumerate(group)
        ]
        for i, a in enumerate(group)
    ]


def _last_opponents_and_mano(results: Sequence[Result]) -> tuple[dict[str, str], dict[str, int]]:
    last: dict[str, str] = {}
    mano: dict[str, int] = {}
    for r in sorted(results, key=lambda r: (r.round, r.table)):
        if r.second is None:
            continue
        last[r.first], last[r.second] = r.second, r.first
        mano[r.first] = mano.get(r.first, 0) + 1
    return last, mano


def busy(live: Iterable[Pairing]) -> frozenset[str]:
    """The entrants in a pairing that has no result yet (playing, or about to)."""
    return frozenset(e for p in live for e in p.entrants)


def waiting_entrants(
    entrants: Sequence[Entrant], withdrawn: Collection[str], playing: Collection[str]
) -> tuple[str, ...]:
    """Who is in the pool: every entrant not withdrawn and not playing."""
    return tuple(e.id for e in entrants if e.id not in withdrawn and e.id not in playing)


@dataclass(frozen=True)
class Arena:
    """An arena as a :class:`~truco_server.leagues.rounds.Format`: it has no schedule of
    rounds (``total_rounds`` 0) and is never finished by its results (its time ends it);
    its waves come from :func:`arena_pairs`."""

    entrants: tuple[Entrant, ...]

    def total_rounds(self) -> int:
        return 0

    def pairings(
        self, round_no: int, results: Sequence[Result], withdrawn: Collection[str] = ()
    ) -> tuple[Pairing, ...]:
        raise RoundOrderError(
            "round", "an arena has no rounds: it pairs its waiting entrants (Event.arena_pairings)"
        )

    def is_finished(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        return False
