"""Swiss pairing by maximum-weight matching.

Hard constraints: nobody meets the same opponent twice, nobody gets a second bye, every
present entrant is paired (or gets the round's one bye). Soft constraints, in strict
priority order, are folded into one integer weight per allowed pair and handed to a
maximum-weight matching of maximum cardinality (:mod:`truco_server.leagues.matching`,
Edmonds' blossom algorithm); see :func:`edge_weight`, :func:`float_weight` and
docs/leagues.md for the formula.

Ranking used for pairing: score (from the results), then seed. Score groups are the runs
of equal score in that order.

**The bye** (odd number of present entrants) goes to the lowest-ranked entrant without a
bye for whom the others can still be paired without a rematch.

**Brackets.** The matching is cubic in the number of players, so a large field is not
paired in one graph. The ranked field is cut into brackets of at most ``bracket_size``
entrants along score-group boundaries (small neighbouring groups share one bracket; a group
larger than the limit is split into sub-brackets that each take a slice of its top half and
the matching slice of its bottom half, so "top half meets bottom half" survives). Brackets
are matched top-down; whoever a bracket leaves unpaired floats into the next one. If the
last bracket cannot be completed, the last two brackets are matched as one, then the last
three, and so on up to the whole field, so a rematch-free pairing is always found when one
exists. A field no larger than ``bracket_size`` is matched in one graph and gets the global
optimum of the weights; a larger one gets the optimum of each bracket given the floaters
above it (the same trade the FIDE Dutch system makes by pairing bracket by bracket).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from truco_server.leagues.dutch import dutch_pairings
from truco_server.leagues.entrants import Entrant
from truco_server.leagues.errors import (
    InvalidOptionError,
    NoValidPairingError,
    RoundOrderError,
    UnknownEntrantError,
)
from truco_server.leagues.matching import max_weight_matching
from truco_server.leagues.results import DEFAULT_SCORING, History, Pairing, Result, Scoring, build_history
from truco_server.leagues.rounds import check_round_number, check_withdrawn, earlier, tables_done

#: Default largest number of entrants matched in one graph.
DEFAULT_BRACKET_SIZE = 48

#: The pairing systems a Swiss offers: this module's maximum-weight matching (the default),
#: or the FIDE Dutch system (:mod:`truco_server.leagues.dutch`).
WEIGHTED, DUTCH = "weighted", "dutch"
PAIRING_SYSTEMS = (WEIGHTED, DUTCH)

#: Mano preference strengths (how much a player minds being given the other role).
NO_PREFERENCE, MILD, STRONG, ABSOLUTE = 0, 1, 2, 3
#: Largest mano cost of one pair (both players given their unwanted role, absolutely).
MAX_MANO_COST = 2 * ABSOLUTE


@dataclass(frozen=True)
class ManoPreference:
    """Whether an entrant should be mano in the first hand of its next match.

    ``wants_first`` is the wanted role (``None``: no preference), ``strength`` how much:
    ABSOLUTE after two matches in a row in the same role or a balance of 2 or more, STRONG
    with a balance of one (more matches as mano than not, or the reverse), MILD with an
    even balance (alternate from the last match), NO_PREFERENCE before any match.
    """

    wants_first: bool | None
    strength: int

    def cost(self, first: bool) -> int:
        if self.wants_first is None or self.wants_first == first:
            return 0
        return self.strength


def mano_preference(history: History, entrant_id: str) -> ManoPreference:
    """The entrant's :class:`ManoPreference` from its played matches (byes do not count)."""
    seq = [g.mano for g in history.of(entrant_id) if g.opponent is not None]
    if not seq:
        return ManoPreference(None, NO_PREFERENCE)
    balance = sum(1 if m else -1 for m in seq)
    if len(seq) >= 2 and seq[-1] == seq[-2]:
        return ManoPreference(not seq[-1], ABSOLUTE)
    if abs(balance) >= 2:
        return ManoPreference(balance < 0, ABSOLUTE)
    if balance != 0:
        return ManoPreference(balance < 0, STRONG)
    return ManoPreference(not seq[-1], MILD)


def pair_mano_cost(a: ManoPreference, b: ManoPreference) -> int:
    """The cheaper of the two ways to seat a pair: a first, or b first."""
    return min(a.cost(True) + b.cost(False), b.cost(True) + a.cost(False))


def _pref_key(pref: ManoPreference) -> int:
    """A small number per preference (0: none; 1..3 wants first; 4..6 wants second)."""
    if pref.wants_first is None:
        return 0
    return pref.strength if pref.wants_first else ABSOLUTE + pref.strength


_PREFS = [ManoPreference(None, NO_PREFERENCE)] + [
    ManoPreference(first, s) for first in (True, False) for s in (MILD, STRONG, ABSOLUTE)
]
#: ``pair_mano_cost`` of every two preferences, by :func:`_pref_key`.
_MANO_COSTS = [[pair_mano_cost(a, b) for b in _PREFS] for a in _PREFS]


@dataclass(frozen=True)
class _Player:
    id: str
    rank: int
    """0 = best, in (score desc, seed asc) order among the players being paired."""
    group: int
    """Score group index, 0 = highest score."""
    pos: int
    """Position inside the score group."""
    group_size: int
    pref: ManoPreference
    pref_key: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pref_key", _pref_key(self.pref))


@dataclass(frozen=True)
class Weights:
    """The scale of each level of the lexicographic weight for a graph of ``n`` players.

    Each scale is larger than the largest total any whole matching can reach on all the
    levels below it, so a higher level is never traded for any amount of a lower one.
    """

    n: int
    groups: int
    pairs: int = field(init=False)
    mano: int = field(init=False)
    floater: int = field(init=False)
    gap: int = field(init=False)
    base: int = field(init=False)

    def __post_init__(self) -> None:
        pairs = self.n // 2 + 1
        mano = pairs * self.n + 1
        floater = pairs * (MAX_MANO_COST * mano + self.n) + 1
        gap = floater * (2 * pairs * self.n + 1)
        for name, value in (
            ("pairs", pairs),
            ("mano", mano),
            ("floater", floater),
            ("gap", gap),
            ("base", gap * (self.groups**2 + 1)),
        ):
            object.__setattr__(self, name, value)


def edge_weight(a: _Player, b: _Player, scale: Weights) -> int:
    """The weight of pairing ``a`` with ``b`` (larger is better), in priority order:

    1. score-group gap: ``-(group_a - group_b)**2`` (pair within score groups; one float
       of two groups costs more than two floats of one group);
    2. (who floats: carried by the float node's edges, see :func:`float_weight`);
    3. mano balance: ``-`` the cheaper seating's preference cost (0..6);
    4. top half v bottom half: ``-abs(abs(pos_a - pos_b) - size // 2)`` within a score
       group (the group's k-th player meets its (k + size/2)-th), 0 across groups.
    """
    return _row_weights(a, [b], scale)[0]


def _row_weights(a: _Player, others: Sequence[_Player], scale: Weights) -> list[int]:
    """:func:`edge_weight` of ``a`` with each of ``others`` (one loop, no calls per pair:
    a bracket has about a thousand pairs)."""
    base, gap_w, mano_w = scale.base, scale.gap, scale.mano
    costs = _MANO_COSTS[a.pref_key]
    group, pos, half = a.group, a.pos, a.group_size // 2
    out = []
    for b in others:
        gap = group - b.group
        if gap:
            out.append(base - gap * gap * gap_w - costs[b.pref_key] * mano_w)
        else:
            out.append(base - costs[b.pref_key] * mano_w - abs(abs(pos - b.pos) - half))
    return out


def float_weight(a: _Player, next_group: int, scale: Weights) -> int:
    """The weight of leaving ``a`` unpaired in a bracket of odd size, so that he floats
    into the next bracket, whose best score group is ``next_group``:

    1. the float's own gap: ``-(next_group - group_a)**2`` (he will meet someone of that
       group or lower, so a leader who has met the whole next group is paired lower in
       this bracket rather than floated further away);
    2. who floats: ``+ rank_a`` (among equal gaps, the lowest-ranked member floats).

    A bracket of odd size gets one extra float node joined to every member by these
    edges, so the matching is perfect and the float node's partner is the floater."""
    gap = next_group - a.group
    return scale.base - gap * gap * scale.gap + a.rank * scale.floater


def _match(
    nodes: Sequence[_Player], met: Mapping[str, Collection[str]], groups: int, next_group: int
) -> tuple[list[tuple[_Player, _Player]], list[_Player]]:
    """Max-weight max-cardinality matching of ``nodes``; returns pairs and the unpaired.
    ``met`` gives each player's earlier opponents; ``next_group`` is the best score group
    of the bracket below (for the float cost)."""
    k = len(nodes)
    scale = Weights(k, groups)
    size = k + k % 2
    weights: list[list[int | None]] = [[None] * size for _ in range(size)]
    for i, a in enumerate(nodes):
        before = met.get(a.id, ())
        later = range(i + 1, k)
        allowed = [j for j in later if nodes[j].id not in before]
        row = weights[i]
        for j, w in zip(allowed, _row_weights(a, [nodes[j] for j in allowed], scale), strict=True):
            row[j] = weights[j][i] = w
    if k % 2:
        for i, a in enumerate(nodes):
            weights[i][k] = weights[k][i] = float_weight(a, next_group, scale)
    mate = max_weight_matching(weights)
    pairs = [(nodes[i], nodes[j]) for i, j in enumerate(mate[:k]) if i < j < k]
    left = [p for i, p in enumerate(nodes) if not 0 <= mate[i] < k]
    return pairs, left


def brackets(players: Sequence[_Player], size: int) -> list[list[_Player]]:
    """Cut the ranked players into brackets of at most ``size`` (see the module doc)."""
    if len(players) <= size:
        return [list(players)]
    groups: list[list[_Player]] = []
    for p in players:
        if groups and groups[-1][0].group == p.group:
            groups[-1].append(p)
        else:
            groups.append([p])
    out: list[list[_Player]] = []
    current: list[_Player] = []
    for g in groups:
        if len(g) > size:
            if current:
                out.append(current)
                current = []
            pieces = -(-len(g) // size)
            half = len(g) // 2
            top, bottom = g[:half], g[half:]
            for k in range(pieces):
                t = top[k * len(top) // pieces : (k + 1) * len(top) // pieces]
                b = bottom[k * len(bottom) // pieces : (k + 1) * len(bottom) // pieces]
                out.append(t + b)
        elif len(current) + len(g) > size:
            out.append(current)
            current = list(g)
        else:
            current.extend(g)
    if current:
        out.append(current)
    return out


def pair_players(
    players: Sequence[_Player], met: Mapping[str, Collection[str]], bracket_size: int
) -> list[tuple[_Player, _Player]] | None:
    """Pair every player (an even count) without a rematch (``met``: each player's earlier
    opponents), or ``None`` if impossible."""
    if not players:
        return []
    groups = max(p.group for p in players) + 1
    parts = brackets(players, bracket_size)
    matched: list[list[tuple[_Player, _Player]]] = []
    """The pairs of each bracket in turn."""
    carried: list[list[_Player]] = [[]]
    """Who floated into each bracket from the one above."""
    for k, part in enumerate(parts):
        next_group = parts[k + 1][0].group if k + 1 < len(parts) else groups
        pairs, left = _match(carried[-1] + part, met, groups, next_group)
        matched.append(pairs)
        carried.append(left)
    if not carried[-1]:
        return [pair for pairs in matched for pair in pairs]
    for start in range(len(parts) - 2, -1, -1):
        nodes = carried[start] + [p for part in parts[start:] for p in part]
        pairs, left = _match(nodes, met, groups, groups)
        if not left:
            return [pair for done in matched[:start] for pair in done] + pairs
    return None


def _seat(a: _Player, b: _Player, table: int) -> tuple[_Player, _Player]:
    """Who is mano: the cheaper seating; on a tie the better-ranked player gets his
    preference, and with no preference at all he is mano on odd tables."""
    a_first = a.pref.cost(True) + b.pref.cost(False)
    b_first = b.pref.cost(True) + a.pref.cost(False)
    if a_first != b_first:
        return (a, b) if a_first < b_first else (b, a)
    if a.pref.wants_first is not None:
        return (a, b) if a.pref.wants_first else (b, a)
    if b.pref.wants_first is not None:
        return (b, a) if b.pref.wants_first else (a, b)
    return (a, b) if table % 2 == 1 else (b, a)


@dataclass(frozen=True)
class RoundOverrides:
    """The operator's decisions for one round of a Swiss: tables it pairs itself (``first``
    is mano) and entrants it gives a bye (each scores the bye's points). Everyone else
    present is paired by the system."""

    pairs: tuple[tuple[str, str], ...] = ()
    byes: tuple[str, ...] = ()

    def check(self, present: Collection[str], forbidden: Collection[frozenset[str]]) -> set[str]:
        """The entrants these overrides place; typed errors for an entrant that is not
        present this round, placed twice, paired with itself, or a forbidden pair."""
        placed: set[str] = set()
        named = [(f"pairs[{i}]", x) for i, pair in enumerate(self.pairs) for x in pair]
        named += [(f"byes[{i}]", x) for i, x in enumerate(self.byes)]
        for where, entrant in named:
            if entrant not in present:
                raise UnknownEntrantError(where, f"{entrant!r} is not an entrant present in this round")
            if entrant in placed:
                raise InvalidOptionError(where, f"{entrant!r} is placed twice in this round")
            placed.add(entrant)
        for i, (a, b) in enumerate(self.pairs):
            if frozenset((a, b)) in forbidden:
                raise InvalidOptionError(f"pairs[{i}]", f"{a!r} v {b!r} is a forbidden pairing")
        return placed


NO_OVERRIDES = RoundOverrides()


@dataclass(frozen=True)
class Swiss:
    """A Swiss event of a fixed number of rounds."""

    entrants: tuple[Entrant, ...]
    rounds: int
    scoring: Scoring = DEFAULT_SCORING
    bracket_size: int = DEFAULT_BRACKET_SIZE
    system: str = WEIGHTED
    """:data:`WEIGHTED` or :data:`DUTCH`."""

    def total_rounds(self) -> int:
        return self.rounds

    def ranking(self, history: History, present: Collection[str]) -> list[Entrant]:
        """Present entrants in pairing order: score (desc), then seed."""
        return sorted(
            (e for e in self.entrants if e.id in present), key=lambda e: (-history.score(e.id), e.seed)
        )

    def pairings(
        self,
        round_no: int,
        results: Sequence[Result],
        withdrawn: Collection[str] = (),
        *,
        forbidden: Collection[frozenset[str]] = (),
        overrides: RoundOverrides = NO_OVERRIDES,
    ) -> tuple[Pairing, ...]:
        """The round's tables. ``forbidden`` pairs are never paired (like a rematch);
        ``overrides`` are the operator's pairings and byes for this round, placed as given
        (the operator's tables first, their byes last); the others are paired as usual."""
        out = check_withdrawn(withdrawn, self.entrants)
        check_round_number(round_no, self.rounds)
        past = earlier(results, round_no)
        history = build_history(past, (e.id for e in self.entrants), self.scoring)
        played_rounds = {r.round for r in past}
        for r in range(1, round_no):
            if r not in played_rounds:
                raise RoundOrderError("round", f"round {r} has no results yet; pair rounds in order")
        present = {e.id for e in self.entrants if e.joined_round <= round_no and e.id not in out}
        placed = overrides.check(present, forbidden)
        ranked = self.ranking(history, present - placed)
        if not placed and len(ranked) < 2:
            raise NoValidPairingError("round", f"round {round_no} has {len(ranked)} entrant(s) present")
        if self.system == DUTCH:
            return self._dutch(round_no, ranked, history, forbidden, overrides)
        if len(ranked) % 2 == 0:
            pairs = self._pair(ranked, history, forbidden)
            if pairs is None:
                raise NoValidPairingError(
                    "round", f"no pairing of round {round_no} avoids a rematch; the event should end"
                )
            return self._tables(round_no, pairs, None, overrides)
        candidates = [e for e in reversed(ranked) if history.byes(e.id) == 0]
        if not candidates:
            raise NoValidPairingError("round", f"round {round_no} needs a bye and every entrant has had one")
        for bye in candidates:
            pairs = self._pair([e for e in ranked if e.id != bye.id], history, forbidden)
            if pairs is not None:
                return self._tables(round_no, pairs, bye.id, overrides)
        raise NoValidPairingError(
            "round", f"no pairing of round {round_no} avoids a rematch and a second bye; the event should end"
        )

    def _dutch(
        self,
        round_no: int,
        ranked: Sequence[Entrant],
        history: History,
        forbidden: Collection[frozenset[str]],
        overrides: RoundOverrides,
    ) -> tuple[Pairing, ...]:
        """The round by the Dutch system: the operator's tables first, the system's in its
        own table order, then the byes (the operator's, the system's)."""
        pairs: list[tuple[str, str]] = []
        bye: str | None = None
        if ranked:
            pairs, bye = dutch_pairings(self.entrants, ranked, history, round_no, self.rounds, forbidden)
        out = [Pairing(round_no, t, a, b) for t, (a, b) in enumerate((*overrides.pairs, *pairs), start=1)]
        for entrant in (*overrides.byes, *([bye] if bye is not None else [])):
            out.append(Pairing(round_no, len(out) + 1, entrant, None))
        return tuple(out)

    def _pair(
        self, ranked: Sequence[Entrant], history: History, forbidden: Collection[frozenset[str]] = ()
    ) -> list[tuple[_Player, _Player]] | None:
        scores = [history.score(e.id) for e in ranked]
        players: list[_Player] = []
        runs = itertools.groupby(range(len(ranked)), key=lambda i: scores[i])
        for group, (_, members) in enumerate(runs):
            indexes = list(members)
            for pos, i in enumerate(indexes):
                pref = mano_preference(history, ranked[i].id)
                players.append(_Player(ranked[i].id, i, group, pos, len(indexes), pref))
        met = {e.id: set(history.opponents(e.id)) for e in ranked}
        for pair in forbidden:
            a, b = tuple(pair)
            if a in met and b in met:
                met[a].add(b)
                met[b].add(a)
        return pair_players(players, met, self.bracket_size)

    @staticmethod
    def _tables(
        round_no: int, pairs: list[tuple[_Player, _Player]], bye: str | None, overrides: RoundOverrides
    ) -> tuple[Pairing, ...]:
        out = [Pairing(round_no, table, a, b) for table, (a, b) in enumerate(overrides.pairs, start=1)]
        ordered = sorted(pairs, key=lambda ab: min(ab[0].rank, ab[1].rank))
        for table, (a, b) in enumerate(ordered, start=len(out) + 1):
            hi, lo = (a, b) if a.rank < b.rank else (b, a)
            first, second = _seat(hi, lo, table)
            out.append(Pairing(round_no, table, first.id, second.id))
        for entrant in (*overrides.byes, *([bye] if bye is not None else [])):
            out.append(Pairing(round_no, len(out) + 1, entrant, None))
        return tuple(out)

    def is_finished(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        return tables_done(self, self.rounds, results, withdrawn)
