"""Single and double elimination with seeded brackets.

The bracket has B = the smallest power of two >= n lines. Seeds are placed in the standard
order (1 v B, then B/2 v B/2+1, ...: built by replacing each seed s of the bracket of size
b by the pair (s, 2b + 1 - s)), so seeds 1 and 2 can only meet in the final, 1 to 4 only
in the semi-finals, and so on. Lines B, B-1, ... above n are empty, and each empty line faces
one of the top B - n seeds: the top seeds get the byes.

A match whose two lines are known is played; a match with one empty line is a walkover
(shown as a bye of the present side); a match with two empty lines is empty.

Double elimination adds a losers' bracket of 2(k - 1) rounds for B = 2**k: its odd rounds
pair its survivors among themselves (the first pairs the losers of winners' round 1), its
even rounds 2j pair its survivors with the losers of winners' round j+1, who drop in reverse
order when j is odd and in order when j is even (so two entrants who met in the winners'
bracket do not meet again at once). The grand final is the winners' champion against the
losers' champion; with ``grand_final_reset`` a win of the losers' champion (the winners'
champion's first loss) forces a second grand final.

With ``third_place`` (single elimination only) the two semi-final losers play a match
for third place (``3P``) in the final's round; the standings then place its winner 3rd
and its loser 4th instead of both sharing 3rd.

Every match is played in round 1 + the latest round of the matches that feed it: the
winners' round r is round r, losers' round m is round m + 1, the grand final is round 2k
and its reset round 2k + 1. In each match the better-seeded entrant is mano in the first
hand, except in the reset, where the other side is.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import InvalidResultError, RoundOrderError
from truco_server.leagues.results import Pairing, Result
from truco_server.leagues.rounds import check_round_number, check_withdrawn, earlier, number_tables

#: A line with nobody on it (a bye, or the loser of a walkover).
EMPTY = ""


@dataclass(frozen=True)
class Source:
    """Where one line of a match comes from: a seed, or a match's winner or loser."""

    kind: str
    """``seed``, ``winner`` or ``loser``."""
    ref: int | str
    """The seed number, or the feeding match's label."""


@dataclass(frozen=True)
class BracketMatch:
    label: str
    """``W<r>.<i>`` (winners' round r, match i), ``L<r>.<i>``, ``GF``, ``GF2`` (the reset),
    ``3P`` (the match for third place)."""
    round: int
    top: Source
    bottom: Source
    reset: bool = False


def bracket_size(n: int) -> int:
    """The smallest power of two >= ``n`` (at least 2)."""
    size = 2
    while size < n:
        size *= 2
    return size


def seed_order(size: int) -> list[int]:
    """Seeds in bracket line order for a power-of-two ``size`` (1, 8, 4, 5, 2, 7, 3, 6 for 8)."""
    order = [1]
    while len(order) < size:
        b = 2 * len(order)
        order = [x for s in order for x in (s, b + 1 - s)]
    return order


#: Label of the match for third place.
THIRD_PLACE = "3P"


def build_bracket(
    n: int, double: bool, grand_final_reset: bool = True, third_place: bool = False
) -> list[BracketMatch]:
    """Every match of the bracket for ``n`` entrants, in scheduling order; with
    ``third_place`` (single elimination, at least two rounds) the semi-final losers' match
    for third place comes last, in the final's round."""
    size = bracket_size(n)
    k = size.bit_length() - 1
    order = seed_order(size)
    matches: list[BracketMatch] = []
    for i in range(size // 2):
        matches.append(
            BracketMatch(f"W1.{i + 1}", 1, Source("seed", order[2 * i]), Source("seed", order[2 * i + 1]))
        )
    for r in range(2, k + 1):
        for i in range(size >> r):
            matches.append(
                BracketMatch(
                    f"W{r}.{i + 1}",
                    r,
                    Source("winner", f"W{r - 1}.{2 * i + 1}"),
                    Source("winner", f"W{r - 1}.{2 * i + 2}"),
                )
            )
    if not double:
        if third_place and k >= 2:
            semis = (Source("loser", f"W{k - 1}.1"), Source("loser", f"W{k - 1}.2"))
            matches.append(BracketMatch(THIRD_PLACE, k, *semis))
        return matches
    for i in range(size // 4):
        matches.append(
            BracketMatch(
                f"L1.{i + 1}", 2, Source("loser", f"W1.{2 * i + 1}"), Source("loser", f"W1.{2 * i + 2}")
            )
        )
    for j in range(1, k):
        count = size >> (j + 1)
        for i in range(count):
            drop = count - i if j % 2 == 1 else i + 1
            matches.append(
                BracketMatch(
                    f"L{2 * j}.{i + 1}",
                    2 * j + 1,
                    Source("winner", f"L{2 * j - 1}.{i + 1}"),
                    Source("loser", f"W{j + 1}.{drop}"),
                )
            )
        if j < k - 1:
            for i in range(size >> (j + 2)):
                matches.append(
                    BracketMatch(
                        f"L{2 * j + 1}.{i + 1}",
                        2 * j + 2,
                        Source("winner", f"L{2 * j}.{2 * i + 1}"),
                        Source("winner", f"L{2 * j}.{2 * i + 2}"),
                    )
                )
    lb_champion = Source("winner", f"L{2 * (k - 1)}.1") if k > 1 else Source("loser", "W1.1")
    matches.append(BracketMatch("GF", 2 * k, Source("winner", f"W{k}.1"), lb_champion))
    if grand_final_reset:
        matches.append(
            BracketMatch("GF2", 2 * k + 1, Source("winner", "GF"), Source("loser", "GF"), reset=True)
        )
    return matches


@dataclass(frozen=True)
class Outcome:
    """A resolved match: who played and who won (EMPTY lines for byes)."""

    match: BracketMatch
    top: str
    bottom: str
    winner: str
    loser: str
    played: bool
    """False for walkovers and empty matches."""


@dataclass(frozen=True)
class Elimination:
    """Single (``double=False``) or double elimination."""

    entrants: tuple[Entrant, ...]
    """Validated, ordered by seed."""
    double: bool = False
    grand_final_reset: bool = True
    third_place: bool = False
    """Single elimination: the semi-final losers play for third place."""

    def matches(self) -> list[BracketMatch]:
        return build_bracket(len(self.entrants), self.double, self.grand_final_reset, self.third_place)

    def total_rounds(self) -> int:
        return max(m.round for m in self.matches())

    def _seed_rank(self) -> dict[str, int]:
        return {e.id: e.seed for e in self.entrants}

    def resolve(
        self, upto_round: int, results: Sequence[Result], withdrawn: Collection[str] = ()
    ) -> tuple[dict[str, Outcome], list[tuple[BracketMatch, str, str]]]:
        """Outcomes of every match before ``upto_round`` and the lines of that round's matches.

        A match of an earlier round without a result is a walkover when a side withdrew,
        otherwise the round is incomplete (:class:`RoundOrderError`).
        """
        out = check_withdrawn(withdrawn, self.entrants)
        seeds = [e.id for e in self.entrants]
        by_round: dict[int, dict[frozenset[str], Result]] = {}
        for res in earlier(results, upto_round):
            if res.second is None:
                continue
            by_round.setdefault(res.round, {})[frozenset((res.first, res.second))] = res
        outcomes: dict[str, Outcome] = {}
        current: list[tuple[BracketMatch, str, str]] = []
        used: set[tuple[int, frozenset[str]]] = set()

        def line(src: Source) -> str | None:
            if src.kind == "seed":
                assert isinstance(src.ref, int)
                return seeds[src.ref - 1] if src.ref <= len(seeds) else EMPTY
            o = outcomes.get(str(src.ref))
            if o is None:
                return None
            return o.winner if src.kind == "winner" else o.loser

        for m in sorted(self.matches(), key=lambda m: m.round):
            if m.round > upto_round:
                break
            top, bottom = line(m.top), line(m.bottom)
            if top is None or bottom is None:
                raise RoundOrderError("round", f"match {m.label} is not decided yet")  # pragma: no cover
            if m.reset and not _reset_needed(outcomes["GF"]):
                continue  # the winners' champion won the grand final: no reset
            if m.round == upto_round:
                current.append((m, top, bottom))
                continue
            if top and bottom:
                found = by_round.get(m.round, {}).get(frozenset((top, bottom)))
                if found is not None:
                    if found.winner is None:
                        raise InvalidResultError(
                            f"results[round {found.round}, table {found.table}].winner",
                            "an elimination match needs a winner (break a drawn duplicate first)",
                        )
                    used.add((m.round, frozenset((top, bottom))))
                    loser = bottom if found.winner == top else top
                    outcomes[m.label] = Outcome(m, top, bottom, found.winner, loser, True)
                    continue
                if top in out or bottom in out:
                    winner = bottom if top in out else top
                    if winner in out:
                        outcomes[m.label] = Outcome(m, top, bottom, EMPTY, EMPTY, False)
                    else:
                        outcomes[m.label] = Outcome(m, top, bottom, winner, EMPTY, False)
                    continue
                for key, res in by_round.get(m.round, {}).items():
                    if key & {top, bottom}:
                        raise InvalidResultError(
                            f"results[round {res.round}, table {res.table}]",
                            f"{res.first!r} v {res.second!r} is not a match of round {m.round} "
                            f"({m.label} is {top!r} v {bottom!r})",
                        )
                raise RoundOrderError(
                    "round",
                    f"round {m.round} is not complete: no result for {m.label} ({top!r} v {bottom!r})",
                )
            winner = top or bottom
            outcomes[m.label] = Outcome(m, top, bottom, winner, EMPTY, False)
        for rnd, table_results in by_round.items():
            for key, res in table_results.items():
                if (rnd, key) not in used:
                    raise InvalidResultError(
                        f"results[round {rnd}, table {res.table}]",
                        f"{res.first!r} v {res.second!r} is not a match of round {rnd}",
                    )
        return outcomes, current

    def pairings(
        self, round_no: int, results: Sequence[Result], withdrawn: Collection[str] = ()
    ) -> tuple[Pairing, ...]:
        check_round_number(round_no, self.total_rounds())
        out = check_withdrawn(withdrawn, self.entrants)
        _, current = self.resolve(round_no, results, out)
        if not current:
            raise RoundOrderError("round", f"round {round_no} is not played: the event is over")
        seed = self._seed_rank()
        pairs: list[tuple[str, str | None]] = []
        labels: list[str] = []
        for m, top, bottom in current:
            present = [x for x in (top, bottom) if x and x not in out]
            if len(present) == 2:
                a, b = sorted(present, key=lambda x: seed[x])
                if m.reset:
                    a, b = b, a
                pairs.append((a, b))
            elif len(present) == 1:
                pairs.append((present[0], None))
            else:
                continue
            labels.append(m.label)
        return number_tables(round_no, pairs, labels)

    def champion(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> str | None:
        """The winner of the event, or ``None`` while it is not decided."""
        last = self.total_rounds()
        try:
            outcomes, _ = self.resolve(last + 1, results, withdrawn)
        except RoundOrderError:
            return None
        if "GF2" in outcomes:
            return outcomes["GF2"].winner or None
        final = "GF" if self.double else f"W{bracket_size(len(self.entrants)).bit_length() - 1}.1"
        return outcomes[final].winner or None

    def is_finished(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        return self.champion(results, withdrawn) is not None

    def placements(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> list[tuple[int, str]]:
        """(place, entrant id) for everyone, best first.

        An entrant is out at its first loss (single elimination) or its second (double;
        without a reset the grand final's loser is out at once); a withdrawn entrant is
        out at its first walkover. The champion is 1st and the others are placed by the
        round they went out in, later first; entrants out in the same round share the
        place, listed by seed. With a match for third place its winner is placed between
        the final's loser and its own loser. Entrants still in the event share the best
        place open.
        """
        outcomes: dict[str, Outcome] = {}
        for r in range(self.total_rounds() + 1, 0, -1):
            try:
                outcomes, _ = self.resolve(r, results, withdrawn)
                break
            except RoundOrderError:
                continue
        losses: dict[str, int] = {}
        out_round: dict[str, int] = {}
        third = outcomes.get(THIRD_PLACE)
        for o in sorted(outcomes.values(), key=lambda o: o.match.round):
            if o is third:
                continue  # both sides went out in the semi-finals; the match orders them
            if o.played:
                losses[o.loser] = losses.get(o.loser, 0) + 1
                final_no_reset = o.match.label == "GF" and not self.grand_final_reset
                if not self.double or losses[o.loser] >= 2 or final_no_reset:
                    out_round[o.loser] = o.match.round
            else:
                for side in (o.top, o.bottom):
                    if side and side != o.winner:
                        out_round.setdefault(side, o.match.round)
        never = self.total_rounds() + 2
        # twice the round went out in, so the third-place winner fits between two rounds
        key: dict[str, int] = {e.id: 2 * out_round.get(e.id, never) for e in self.entrants}
        if third is not None and third.winner:
            key[third.winner] += 1
        ordered = sorted(self.entrants, key=lambda e: (-key[e.id], e.seed))
        return [(1 + sum(1 for x in self.entrants if key[x.id] > key[e.id]), e.id) for e in ordered]


def _reset_needed(grand_final: Outcome) -> bool:
    """A reset is played only when the losers' champion won a played grand final."""
    return grand_final.played and grand_final.winner == grand_final.bottom
