"""Groups then knockout: a group stage of round robins, then a single-elimination bracket.

The entrants (in seed order) are dealt into G groups by **snake seeding**: seeds 1..G go
to groups A..G, seeds G+1..2G back from the last group to A, and so on, so every group gets
one of the top G seeds and the groups' seed totals stay level. Each group is a round robin
(Berger tables, :mod:`truco_server.leagues.round_robin`; double with ``double``), and the
groups play their round r in the event's round r, in parallel. Group tables come first in
group order (labelled ``A``, ``B``...), their byes after them.

After the last group round, the top K of each group (by the league's tie-breaks; a withdrawn
entrant ranks after those still in) go to a single-elimination bracket of G·K
(:mod:`truco_server.leagues.brackets`), played in the rounds after the group stage. Its
seeds come in tiers: the group winners first (in group order), then the runners-up, and so
on. Within a tier after the first, each entrant in group order takes the free seed whose
bracket line is furthest from its own group's entrants already placed (the round they could
first meet, as late as possible; the lowest seed on a tie). So a group's winner and runner-up
are in opposite halves, and with K = 2 and G a power of two every first-round match is a
group winner against another group's runner-up.

Final ranking: the knockout's places for those who advanced (the bracket's rules: the
champion, the final's loser, then by the round each went out in), then the others by their
place in their group (all the groups' (K+1)-th share the next rank, and so on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from truco_server.leagues.brackets import Elimination, bracket_size, build_bracket, seed_order
from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import InvalidOptionError, RoundOrderError
from truco_server.leagues.results import Pairing, Result, Scoring
from truco_server.leagues.round_robin import RoundRobin
from truco_server.leagues.rounds import check_round_number, check_withdrawn, number_tables
from truco_server.leagues.tiebreaks import Standing, TieBreak, standings

#: Group labels, in order (at most 26 groups).
GROUP_LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class GroupStage:
    """The group stage's options."""

    groups: int
    """How many groups (2 to 26)."""
    advance: int = 2
    """How many of each group go to the knockout."""
    double: bool = False
    """Each group a double round robin."""

    def __post_init__(self) -> None:
        for name, low, high in (("groups", 2, len(GROUP_LABELS)), ("advance", 1, 64)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidOptionError(f"group_stage.{name}", f"must be {low} to {high}; got {value!r}")

    def check_entrants(self, n: int) -> None:
        """Every group needs more entrants than advance from it."""
        if n // self.groups <= self.advance:
            raise InvalidOptionError(
                "group_stage",
                f"{n} entrants in {self.groups} groups leave {n // self.groups} in the smallest; "
                f"more than the {self.advance} advancing are needed",
            )


@dataclass(frozen=True)
class GroupTable:
    """One group's standings (group-stage results only)."""

    label: str
    standings: tuple[Standing, ...]


def snake_groups(entrants: Sequence[Entrant], groups: int) -> tuple[tuple[Entrant, ...], ...]:
    """``entrants`` (seed order) dealt into ``groups`` groups by snake seeding."""
    out: list[list[Entrant]] = [[] for _ in range(groups)]
    for i, e in enumerate(entrants):
        row, col = divmod(i, groups)
        out[col if row % 2 == 0 else groups - 1 - col].append(e)
    return tuple(tuple(g) for g in out)


def meeting_round(line_a: int, line_b: int) -> int:
    """The knockout round in which bracket lines ``line_a`` and ``line_b`` (from 0) can first meet."""
    return (line_a ^ line_b).bit_length()


def knockout_seeds(advancers: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The knockout's entrants in seed order, from each group's advancers (best first; every
    group the same count): the tier and separation rule of the module doc."""
    groups = len(advancers)
    per_group = len(advancers[0]) if advancers else 0
    line = {s: i for i, s in enumerate(seed_order(bracket_size(groups * per_group)))}
    seat: dict[int, str] = {}
    lines_of: dict[int, list[int]] = {g: [] for g in range(groups)}
    for tier in range(per_group):
        free = list(range(tier * groups + 1, (tier + 1) * groups + 1))
        for g in range(groups):
            placed = lines_of[g]

            def apart(s: int, placed: list[int] = placed) -> tuple[int, int]:
                return (min((meeting_round(line[s], x) for x in placed), default=0), -s)

            best = max(free, key=apart)
            free.remove(best)
            seat[best] = advancers[g][tier]
            placed.append(line[best])
    return tuple(seat[s] for s in sorted(seat))


@dataclass(frozen=True)
class GroupsKnockout:
    """The group stage, then a single elimination of the top ``stage.advance`` of each group."""

    entrants: tuple[Entrant, ...]
    """Validated, ordered by seed."""
    stage: GroupStage
    scoring: Scoring
    tie_breaks: tuple[TieBreak, ...]
    third_place: bool = False

    def groups(self) -> tuple[tuple[Entrant, ...], ...]:
        return snake_groups(self.entrants, self.stage.groups)

    def _robins(self) -> list[RoundRobin]:
        cycles = 2 if self.stage.double else 1
        return [RoundRobin(g, cycles) for g in self.groups() if len(g) >= 2]

    def group_rounds(self) -> int:
        return max((rr.total_rounds() for rr in self._robins()), default=0)

    def total_rounds(self) -> int:
        size = self.stage.groups * self.stage.advance
        return self.group_rounds() + max(
            m.round for m in build_bracket(size, False, third_place=self.third_place)
        )

    def is_knockout_round(self, round_no: int) -> bool:
        return round_no > self.group_rounds()

    def _group_results(self, group: Sequence[Entrant], results: Sequence[Result]) -> list[Result]:
        ids = {e.id for e in group}
        last = self.group_rounds()
        return [r for r in results if r.round <= last and r.first in ids]

    def group_tables(self, results: Sequence[Result]) -> tuple[GroupTable, ...]:
        """Each group's standings from its group-stage results."""
        return tuple(
            GroupTable(
                GROUP_LABELS[i], standings(g, self._group_results(g, results), self.scoring, self.tie_breaks)
            )
            for i, g in enumerate(self.groups())
        )

    def group_stage_done(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        """Every group's last round has its results (tables are matched by their sides: the
        event numbers a round's tables across the groups)."""
        out = check_withdrawn(withdrawn, self.entrants)
        for rr in self._robins():
            ids = {e.id for e in rr.entrants}
            last = rr.total_rounds()
            group_results = self._group_results(rr.entrants, results)
            try:
                tables = rr.pairings(last, group_results, out & ids)
            except RoundOrderError:
                return False
            done = {(r.first, r.second) for r in group_results if r.round == last}
            seen = {e for r in group_results if r.round == last for e in r.entrants}
            # a bye left by an opponent who withdrew after playing is done with that result
            if any((p.first, p.second) not in done and not (p.is_bye and p.first in seen) for p in tables):
                return False
        return True

    def _group_places(self, results: Sequence[Result], withdrawn: frozenset[str]) -> list[list[str]]:
        """Each group's entrants in group order: the tie-break order, withdrawn entrants last."""
        return [
            [s.entrant_id for s in sorted(t.standings, key=lambda s: (s.entrant_id in withdrawn, s.rank))]
            for t in self.group_tables(results)
        ]

    def knockout(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> Elimination:
        """The knockout bracket; :class:`RoundOrderError` while the group stage is not over."""
        out = check_withdrawn(withdrawn, self.entrants)
        if not self.group_stage_done(results, out):
            raise RoundOrderError("round", "the group stage is not over: the knockout is not seeded yet")
        places = self._group_places(results, out)
        ids = knockout_seeds([p[: self.stage.advance] for p in places])
        by_id = {e.id: e for e in self.entrants}
        field = tuple(dataclasses.replace(by_id[x], seed=k) for k, x in enumerate(ids, 1))
        return Elimination(field, False, third_place=self.third_place)

    def _knockout_results(self, results: Sequence[Result]) -> list[Result]:
        last = self.group_rounds()
        return [dataclasses.replace(r, round=r.round - last) for r in results if r.round > last]

    def pairings(
        self, round_no: int, results: Sequence[Result], withdrawn: Collection[str] = ()
    ) -> tuple[Pairing, ...]:
        check_round_number(round_no, self.total_rounds())
        out = check_withdrawn(withdrawn, self.entrants)
        last = self.group_rounds()
        if round_no > last:
            ko = self.knockout(results, out)
            ko_out = out & {e.id for e in ko.entrants}
            tables = ko.pairings(round_no - last, self._knockout_results(results), ko_out)
            return tuple(dataclasses.replace(p, round=round_no) for p in tables)
        pairs: list[tuple[str, str | None]] = []
        labels: list[str] = []
        for i, group in enumerate(self.groups()):
            if len(group) < 2:
                continue
            rr = RoundRobin(group, 2 if self.stage.double else 1)
            if round_no > rr.total_rounds():
                continue
            ids = {e.id for e in group}
            for p in rr.pairings(round_no, self._group_results(group, results), out & ids):
                pairs.append((p.first, p.second))
                labels.append(GROUP_LABELS[i])
        return number_tables(round_no, pairs, labels)

    def is_finished(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        if not self.group_stage_done(results, withdrawn):
            return False
        out = check_withdrawn(withdrawn, self.entrants)
        ko = self.knockout(results, out)
        return ko.is_finished(self._knockout_results(results), out & {e.id for e in ko.entrants})

    def placements(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> list[tuple[int, str]]:
        """(place, entrant id) for everyone, best first (the module doc's final ranking;
        before the knockout is seeded, everyone by group place)."""
        out = check_withdrawn(withdrawn, self.entrants)
        places = self._group_places(results, out)
        top: list[tuple[int, str]] = []
        first_open = 1
        if self.group_stage_done(results, out):
            ko = self.knockout(results, out)
            ko_out = out & {e.id for e in ko.entrants}
            top = ko.placements(self._knockout_results(results), ko_out)
            places = [p[self.stage.advance :] for p in places]
            first_open = len(top) + 1
        rest: list[tuple[int, str]] = []
        for q in range(max((len(p) for p in places), default=0)):
            tier = [p[q] for p in places if q < len(p)]
            rest += [(first_open, x) for x in tier]
            first_open += len(tier)
        return top + rest
