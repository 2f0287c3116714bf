"""Round robin by Berger tables, single or double.

Entrant with seed rank k gets Berger number k. With an odd count a dummy takes the last
number and whoever meets it has a bye. The Berger rotation (FIDE Handbook C.05, Annex 1):
for n numbers (n even) and round r = 1..n-1, let s = 1 + ((r-1) * n/2 mod (n-1)). Table 1
is s against n (s is first in odd rounds, n in even rounds); table k = 2..n/2 is
s+(k-1) (first) against s-(k-1), both counted cyclically in 1..n-1. A double round robin
plays the same rounds again with first and second swapped, so every pair meets twice and
each side is mano in the first hand of one of the two matches.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import InvalidResultError, RoundOrderError
from truco_server.leagues.results import Pairing, Result
from truco_server.leagues.rounds import (
    check_round_number,
    check_withdrawn,
    earlier,
    number_tables,
    tables_done,
)


def berger_round(n: int, r: int) -> list[tuple[int, int]]:
    """The (first, second) Berger numbers of round ``r`` (1-based) for an even ``n``."""
    if n < 2 or n % 2:
        raise ValueError("Berger tables need an even count (add a dummy for the bye)")
    m = n - 1

    def wrap(x: int) -> int:
        return (x - 1) % m + 1

    s = 1 + ((r - 1) * (n // 2)) % m
    tables = [(s, n) if r % 2 == 1 else (n, s)]
    for k in range(2, n // 2 + 1):
        tables.append((wrap(s + (k - 1)), wrap(s - (k - 1))))
    return tables


@dataclass(frozen=True)
class RoundRobin:
    """Single (``cycles=1``) or double (``cycles=2``) round robin."""

    entrants: tuple[Entrant, ...]
    """Validated, ordered by seed (Berger number = position + 1)."""
    cycles: int = 1

    @property
    def _numbers(self) -> int:
        n = len(self.entrants)
        return n + (n % 2)

    def rounds_per_cycle(self) -> int:
        return self._numbers - 1

    def total_rounds(self) -> int:
        return self.rounds_per_cycle() * self.cycles

    def scheduled(self, round_no: int) -> list[tuple[str, str | None]]:
        """Round ``round_no`` of the fixed schedule in Berger table order, byes included."""
        check_round_number(round_no, self.total_rounds())
        per_cycle = self.rounds_per_cycle()
        cycle, r = divmod(round_no - 1, per_cycle)
        n = len(self.entrants)
        pairs: list[tuple[str, str | None]] = []
        for a, b in berger_round(self._numbers, r + 1):
            if cycle % 2 == 1:
                a, b = b, a
            if a > n:
                pairs.append((self.entrants[b - 1].id, None))
            elif b > n:
                pairs.append((self.entrants[a - 1].id, None))
            else:
                pairs.append((self.entrants[a - 1].id, self.entrants[b - 1].id))
        return pairs

    def _check_history(self, round_no: int, results: Sequence[Result], withdrawn: frozenset[str]) -> None:
        by_round: dict[int, list[Result]] = {}
        for res in earlier(results, round_no):
            by_round.setdefault(res.round, []).append(res)
        for r in range(1, round_no):
            got = by_round.get(r, [])
            expected = self.scheduled(r)
            where = f"results[round {r}]"
            pairs = {frozenset(p for p in pair if p is not None): pair for pair in expected}
            covered: set[str] = set()
            for res in got:
                if res.second is not None:
                    want = pairs.get(frozenset((res.first, res.second)))
                    if want != (res.first, res.second):
                        raise InvalidResultError(
                            where, f"{res.first!r} (first) v {res.second!r} is not a table of round {r}"
                        )
                covered.update(res.pairing.entrants)
            for first, second in expected:
                if second is None or {first, second} & withdrawn:
                    continue
                if first not in covered or second not in covered:
                    raise RoundOrderError(
                        "round", f"round {r} is not complete: no result for {first!r} v {second!r}"
                    )

    def pairings(
        self, round_no: int, results: Sequence[Result], withdrawn: Collection[str] = ()
    ) -> tuple[Pairing, ...]:
        out = check_withdrawn(withdrawn, self.entrants)
        check_round_number(round_no, self.total_rounds())
        self._check_history(round_no, results, out)
        pairs: list[tuple[str, str | None]] = []
        for first, second in self.scheduled(round_no):
            present = [e for e in (first, second) if e is not None and e not in out]
            if len(present) == 2:
                pairs.append((first, second))
            elif len(present) == 1:
                pairs.append((present[0], None))
        return number_tables(round_no, pairs)

    def is_finished(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        return tables_done(self, self.total_rounds(), results, withdrawn)
