"""An event: a format, its options and its entrants, validated together.

:func:`create_event` is the one entry point the league service needs: it checks the
options and the entrants against the format and returns an :class:`Event` that answers
pairings, rounds, standings and late registrations.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from truco_server.leagues.arena import Arena, arena_pairs, arena_scores, arena_standings, check_duration
from truco_server.leagues.brackets import Elimination
from truco_server.leagues.duplicate import (
    NO_DUPLICATE,
    DuplicateMode,
    DuplicateOptions,
    DuplicateTable,
    tables_for,
)
from truco_server.leagues.dutch import MAX_DUTCH_ENTRANTS
from truco_server.leagues.entrants import Entrant, validate_entrants
from truco_server.leagues.errors import (
    InvalidOptionError,
    RegistrationClosedError,
    UnknownEntrantError,
    UnknownFormatError,
)
from truco_server.leagues.groups import GroupsKnockout, GroupStage, GroupTable
from truco_server.leagues.results import DEFAULT_SCORING, Pairing, Result, Scoring, build_history
from truco_server.leagues.round_robin import RoundRobin
from truco_server.leagues.rounds import Format
from truco_server.leagues.series import SeriesGame, check_best_of, game_sides, series_result
from truco_server.leagues.swiss import (
    DEFAULT_BRACKET_SIZE,
    DUTCH,
    NO_OVERRIDES,
    PAIRING_SYSTEMS,
    WEIGHTED,
    RoundOverrides,
    Swiss,
)
from truco_server.leagues.tiebreaks import DEFAULT_TIE_BREAKS, Standing, TieBreak, standings


class FormatKind(enum.StrEnum):
    ROUND_ROBIN = "round_robin"
    DOUBLE_ROUND_ROBIN = "double_round_robin"
    SWISS = "swiss"
    SINGLE_ELIMINATION = "single_elimination"
    DOUBLE_ELIMINATION = "double_elimination"
    ARENA = "arena"
    GROUPS_KNOCKOUT = "groups_knockout"


#: Fewest entrants each format accepts.
MIN_ENTRANTS: dict[FormatKind, int] = {
    FormatKind.ROUND_ROBIN: 2,
    FormatKind.DOUBLE_ROUND_ROBIN: 2,
    FormatKind.SWISS: 4,
    FormatKind.SINGLE_ELIMINATION: 2,
    FormatKind.DOUBLE_ELIMINATION: 3,
    FormatKind.ARENA: 2,
    FormatKind.GROUPS_KNOCKOUT: 4,
}

#: Label of the bye a late Swiss entrant gets for the first round it missed.
LATE_ENTRY = "late entry"


class LateEntryBye(enum.StrEnum):
    """What a late Swiss entrant's bye for the first round it missed is worth."""

    FULL = "full"
    """A bye's points (``Scoring.bye``; the TRF writes ``F``). The default."""
    HALF = "half"
    """A draw's points (``Scoring.draw``): Lichess's half-point bye (TRF ``H``)."""
    NONE = "none"
    """No bye: every round it missed scores nothing."""


def parse_late_entry_bye(name: str) -> LateEntryBye:
    """The policy called ``name`` (empty: full), or :class:`InvalidOptionError`."""
    try:
        return LateEntryBye(name or LateEntryBye.FULL)
    except ValueError:
        allowed = ", ".join(v.value for v in LateEntryBye)
        raise InvalidOptionError("late_entry_bye", f"unknown {name!r}; allowed: {allowed}") from None


#: Formats that accept entrants after the start (a Swiss until more than half the rounds have
#: started; an arena until its time is up, which the caller knows).
LATE_REGISTRATION: frozenset[FormatKind] = frozenset({FormatKind.SWISS, FormatKind.ARENA})

ELIMINATION: frozenset[FormatKind] = frozenset({FormatKind.SINGLE_ELIMINATION, FormatKind.DOUBLE_ELIMINATION})


def parse_format(name: str) -> FormatKind:
    """The format called ``name``, or :class:`UnknownFormatError` naming the allowed ones."""
    try:
        return FormatKind(name)
    except ValueError:
        allowed = ", ".join(f.value for f in FormatKind)
        raise UnknownFormatError("format", f"unknown format {name!r}; allowed: {allowed}") from None


def max_swiss_rounds(entrants: int) -> int:
    """Most rounds a Swiss of this size can have without a rematch or a second bye."""
    return entrants - 1 if entrants % 2 == 0 else entrants


@dataclass(frozen=True)
class EventSpec:
    """What the operator chose."""

    format: FormatKind
    players_per_side: int = 1
    """The rule set's players a side: 1, or 2 and 3 for team rule sets."""
    rounds: int | None = None
    """Swiss only, and required there."""
    scoring: Scoring = DEFAULT_SCORING
    tie_breaks: tuple[TieBreak, ...] = DEFAULT_TIE_BREAKS
    duplicate: DuplicateOptions = NO_DUPLICATE
    grand_final_reset: bool = True
    """Double elimination: a second grand final when the losers' champion wins the first."""
    bracket_size: int = DEFAULT_BRACKET_SIZE
    """Swiss: the most entrants matched in one graph (see :mod:`truco_server.leagues.swiss`)."""
    third_place: bool = False
    """Single elimination: the semi-final losers play a match for third place (off: they
    share third)."""
    series_best_of: int = 1
    """Each pairing is a series of up to this many matches (an odd number; 1: one match);
    see :mod:`truco_server.leagues.series`."""
    swiss_pairing: str = WEIGHTED
    """Swiss: the pairing system, ``"weighted"`` (:mod:`~truco_server.leagues.swiss`) or
    ``"dutch"`` (the FIDE Dutch system, :mod:`~truco_server.leagues.dutch`)."""
    arena_duration: float | None = None
    """Arena only, and required there: how long it runs from its start (seconds)."""
    late_entry_bye: LateEntryBye = LateEntryBye.FULL
    """Swiss: what a late entrant's bye for round 1 is worth (:meth:`Event.late_entry_bye`)."""
    group_stage: GroupStage | None = None
    """Groups then knockout (required there, refused elsewhere): the groups, how many of
    each advance, single or double round robin (:mod:`truco_server.leagues.groups`)."""

    def __post_init__(self) -> None:
        check_best_of(self.series_best_of)
        if self.swiss_pairing not in PAIRING_SYSTEMS:
            raise InvalidOptionError(
                "swiss_pairing",
                f"unknown pairing system {self.swiss_pairing!r}; allowed: {', '.join(PAIRING_SYSTEMS)}",
            )
        if self.swiss_pairing != WEIGHTED and self.format != FormatKind.SWISS:
            raise InvalidOptionError(
                "swiss_pairing", f"only a swiss has a pairing system, not a {self.format}"
            )
        if self.format == FormatKind.ARENA:
            check_duration(self.arena_duration)
            if self.series_best_of > 1 or self.duplicate.mode is not DuplicateMode.OFF:
                raise InvalidOptionError(
                    "format", "an arena is one match a pairing: no series or duplicate deals"
                )
            if self.tie_breaks != DEFAULT_TIE_BREAKS:
                raise InvalidOptionError(
                    "tie_breaks", "an arena's order is fixed: score, points difference, fewer games, seed"
                )
        elif self.arena_duration is not None:
            raise InvalidOptionError("arena.duration", f"only an arena has a duration, not a {self.format}")
        if self.series_best_of > 1 and self.duplicate.mode is not DuplicateMode.OFF:
            raise InvalidOptionError(
                "series_best_of",
                "a series is played without duplicate deals (a duplicate pairing is its own pair of matches)",
            )
        knockout_only = (FormatKind.SINGLE_ELIMINATION, FormatKind.GROUPS_KNOCKOUT)
        if self.third_place and self.format not in knockout_only:
            raise InvalidOptionError(
                "third_place",
                f"only a knockout (single_elimination, groups_knockout) has a match for third place, "
                f"not a {self.format}",
            )
        if self.late_entry_bye is not LateEntryBye.FULL and self.format is not FormatKind.SWISS:
            raise InvalidOptionError(
                "late_entry_bye",
                f"only a swiss takes late entrants (and gives them a bye), not a {self.format}",
            )
        if (self.group_stage is None) == (self.format == FormatKind.GROUPS_KNOCKOUT):
            raise InvalidOptionError(
                "group_stage", "a groups_knockout needs its group stage; no other format takes one"
            )


@dataclass(frozen=True)
class Event:
    spec: EventSpec
    entrants: tuple[Entrant, ...]
    """Validated, ordered by seed."""

    @property
    def format(self) -> Format:
        kind = self.spec.format
        if kind is FormatKind.ROUND_ROBIN:
            return RoundRobin(self.entrants, 1)
        if kind is FormatKind.DOUBLE_ROUND_ROBIN:
            return RoundRobin(self.entrants, 2)
        if kind is FormatKind.SWISS:
            spec = self.spec
            assert spec.rounds is not None
            return Swiss(self.entrants, spec.rounds, spec.scoring, spec.bracket_size, spec.swiss_pairing)
        if kind is FormatKind.ARENA:
            return Arena(self.entrants)
        if kind is FormatKind.GROUPS_KNOCKOUT:
            stage = self.spec.group_stage
            assert stage is not None
            return GroupsKnockout(
                self.entrants, stage, self.spec.scoring, self.spec.tie_breaks, self.spec.third_place
            )
        double = kind is FormatKind.DOUBLE_ELIMINATION
        return Elimination(self.entrants, double, self.spec.grand_final_reset, self.spec.third_place)

    def total_rounds(self) -> int:
        return self.format.total_rounds()

    def pairings(
        self,
        round_no: int,
        results: Sequence[Result],
        withdrawn: Collection[str] = (),
        *,
        forbidden: Collection[frozenset[str]] = (),
        overrides: RoundOverrides = NO_OVERRIDES,
    ) -> tuple[Pairing, ...]:
        """The round's tables; ``forbidden`` pairs and the operator's ``overrides`` (its
        own pairings and byes) are for a Swiss (:meth:`Swiss.pairings`): every other format
        has a fixed schedule and refuses them (:class:`InvalidOptionError`)."""
        fmt = self.format
        if isinstance(fmt, Swiss):
            return fmt.pairings(round_no, results, withdrawn, forbidden=forbidden, overrides=overrides)
        check_fixed_schedule(self.spec.format, forbidden, overrides)
        return fmt.pairings(round_no, results, withdrawn)

    def is_finished(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> bool:
        return self.format.is_finished(results, withdrawn)

    def tables(self, pairing: Pairing) -> tuple[DuplicateTable, ...]:
        """The tables a pairing is played at: one (keyed ``r<round>.t<table>``) without
        duplicate, two with the seats swapped under duplicate; none for a bye."""
        if pairing.second is None:
            return ()
        if self.spec.duplicate.mode is DuplicateMode.OFF:
            key = f"r{pairing.round}.t{pairing.table}"
            return (DuplicateTable(key, key, (pairing.first, pairing.second)),)
        return tables_for(pairing, self.spec.duplicate.deal_sets)

    def series_table(self, pairing: Pairing, game: int) -> DuplicateTable:
        """The table of game ``game`` (from 1) of a pairing's series: game 1 is the table
        :meth:`tables` gives (``r<round>.t<table>``), game ``g`` > 1 is keyed
        ``r<round>.t<table>.g<g>``, with the seats alternating
        (:func:`~truco_server.leagues.series.game_sides`)."""
        if game > self.spec.series_best_of:
            raise InvalidOptionError("game", f"a best of {self.spec.series_best_of} has no game {game}")
        key = f"r{pairing.round}.t{pairing.table}"
        return DuplicateTable(key if game == 1 else f"{key}.g{game}", key, game_sides(pairing, game))

    def series_result(self, pairing: Pairing, games: Sequence[SeriesGame]) -> Result | None:
        """The result of a pairing's series once decided (``None`` while a game is to be
        played; :func:`~truco_server.leagues.series.series_result`)."""
        knockout = self.is_knockout_round(pairing.round)
        return series_result(self.spec.series_best_of, pairing, games, knockout=knockout)

    def is_knockout_round(self, round_no: int) -> bool:
        """True when round ``round_no``'s pairings are knockout matches (they need a winner,
        and a winner sent through is fixed once the next round is paired)."""
        fmt = self.format
        if isinstance(fmt, GroupsKnockout):
            return fmt.is_knockout_round(round_no)
        return self.spec.format in ELIMINATION

    def result_locked_by(self, round_no: int) -> int | None:
        """The round whose pairing fixes who round ``round_no`` sent on, so that its winner
        (a knockout's) or its result (a group stage's: the groups' order seeds the
        knockout) can no longer be corrected once it is paired; ``None``: never."""
        fmt = self.format
        if isinstance(fmt, GroupsKnockout) and not fmt.is_knockout_round(round_no):
            return fmt.group_rounds() + 1
        return round_no + 1 if self.is_knockout_round(round_no) else None

    def group_tables(self, results: Sequence[Result]) -> tuple[GroupTable, ...]:
        """Each group's standings (groups then knockout; empty for other formats)."""
        fmt = self.format
        return fmt.group_tables(results) if isinstance(fmt, GroupsKnockout) else ()

    def standings(self, results: Sequence[Result], withdrawn: Collection[str] = ()) -> tuple[Standing, ...]:
        """Score order with the tie-breaks; in elimination formats, the bracket places
        (:meth:`Elimination.placements`; entrants out in the same round share a rank); in
        an arena, the arena score (:func:`~truco_server.leagues.arena.arena_standings`)."""
        if self.spec.format is FormatKind.ARENA:
            return arena_standings(self.entrants, results)
        table = standings(self.entrants, results, self.spec.scoring, self.spec.tie_breaks)
        fmt = self.format
        if not isinstance(fmt, Elimination | GroupsKnockout):
            return table
        rows = {s.entrant_id: s for s in table}
        placed = fmt.placements(results, withdrawn)
        return tuple(dataclasses.replace(rows[e], rank=place) for place, e in placed)

    def register(self, entrant: Entrant, rounds_started: int) -> Event:
        """This event with ``entrant`` added, after ``rounds_started`` rounds were paired.

        Before the start every format accepts it; after, only a Swiss does, until more
        than half its rounds have started; the entrant is then paired from the next round
        and gets one bye for the rounds it missed (:meth:`late_entry_bye`).
        """
        kind = self.spec.format
        if rounds_started > 0 and kind is FormatKind.ARENA:  # the pool, from the next wave
            entrant = dataclasses.replace(entrant, joined_round=rounds_started + 1)
        elif rounds_started > 0:
            if kind not in LATE_REGISTRATION:
                raise RegistrationClosedError(
                    "entrant", f"a {kind.value} does not accept entrants after its start (only a swiss does)"
                )
            rounds = self.spec.rounds or 0
            if rounds_started * 2 > rounds:
                raise RegistrationClosedError(
                    "entrant",
                    f"registration closes once more than half the rounds have started "
                    f"({rounds_started} of {rounds} have)",
                )
            entrant = dataclasses.replace(entrant, joined_round=rounds_started + 1)
        field = validate_entrants((*self.entrants, entrant), self.spec.players_per_side, 1)
        check_field_size(self.spec, len(field))
        return Event(self.spec, field)

    def late_entry_bye(self, entrant_id: str, round_one: Sequence[Pairing]) -> Pairing | None:
        """The bye of an entrant who joined a Swiss after its first round was paired
        (Lichess's late-join rule): one bye, for the first round it missed (round 1), worth
        what ``spec.late_entry_bye`` says (:meth:`late_entry_result`; ``none``: no bye, this
        returns ``None``); the other rounds it missed score nothing. It takes the table after
        ``round_one``'s (the round's pairings so far, late byes included) and is labelled
        :data:`LATE_ENTRY`. ``None`` for an entrant paired from round 1.

        The caller records its :meth:`Pairing.bye_result` with the other results: it counts
        as the entrant's bye (a Swiss gives nobody two), like any other.
        """
        entrant = next((e for e in self.entrants if e.id == entrant_id), None)
        if entrant is None:
            raise UnknownEntrantError("entrant", f"{entrant_id!r} is not a registered entrant")
        if (
            entrant.joined_round <= 1
            or self.spec.format is FormatKind.ARENA  # an arena: the pool
            or self.spec.late_entry_bye is LateEntryBye.NONE
        ):
            return None
        table = max((p.table for p in round_one if p.round == 1), default=0) + 1
        return Pairing(1, table, entrant.id, None, LATE_ENTRY)

    def arena_pairings(
        self, wave: int, results: Sequence[Result], waiting: Collection[str], *, others_playing: bool
    ) -> tuple[Pairing, ...]:
        """An arena's next wave among its ``waiting`` entrants
        (:func:`~truco_server.leagues.arena.arena_pairs`)."""
        if self.spec.format is not FormatKind.ARENA:
            raise InvalidOptionError("format", f"a {self.spec.format.value} pairs rounds, not waves")
        return arena_pairs(self.entrants, results, waiting, others_playing=others_playing, wave=wave)

    def late_entry_result(self, bye: Pairing) -> Result:
        """The result of a :meth:`late_entry_bye`, worth what ``spec.late_entry_bye`` says: a
        bye's points, or with ``half`` a half-point bye (:meth:`Pairing.bye_result`)."""
        return bye.bye_result(half=self.spec.late_entry_bye is LateEntryBye.HALF)

    def scores(self, results: Sequence[Result]) -> dict[str, float]:
        """Each entrant's score (no tie-breaks; an arena's: its arena score)."""
        if self.spec.format is FormatKind.ARENA:
            got = arena_scores((e.id for e in self.entrants), results)
            return {k: float(v.score) for k, v in got.items()}
        history = build_history(results, (e.id for e in self.entrants), self.spec.scoring)
        return {e.id: history.score(e.id) for e in self.entrants}


def check_fixed_schedule(
    kind: FormatKind, forbidden: Collection[frozenset[str]], overrides: RoundOverrides = NO_OVERRIDES
) -> None:
    """:class:`InvalidOptionError` when a format other than a Swiss is given forbidden
    pairs or the operator's pairings or byes."""
    if kind is FormatKind.SWISS:
        return
    if forbidden:
        raise InvalidOptionError("forbidden_pairs", f"{_schedule_of(kind)}: only a swiss avoids pairs")
    if overrides.pairs or overrides.byes:
        raise InvalidOptionError(
            "pairs",
            f"{_schedule_of(kind)}: only a swiss takes the operator's pairings and byes",
        )


def check_field_size(spec: EventSpec, entrants: int) -> None:
    """:class:`InvalidOptionError` for a Dutch-paired Swiss of more than
    :data:`~truco_server.leagues.dutch.MAX_DUTCH_ENTRANTS` entrants."""
    if spec.swiss_pairing == DUTCH and entrants > MAX_DUTCH_ENTRANTS:
        raise InvalidOptionError(
            "swiss_pairing",
            f"the Dutch system pairs at most {MAX_DUTCH_ENTRANTS} entrants (its cost grows steeply "
            f"with the field); this swiss would have {entrants}: use the default pairing",
        )


def _schedule_of(kind: FormatKind) -> str:
    if kind is FormatKind.ARENA:
        return "an arena pairs its entrants as they wait"
    return f"a {kind.value} has a fixed schedule"


def create_event(spec: EventSpec, entrants: Iterable[Entrant]) -> Event:
    """Validate ``spec`` and ``entrants`` together (typed errors) and return the event."""
    if not isinstance(spec.format, FormatKind):
        spec = dataclasses.replace(spec, format=parse_format(str(spec.format)))
    field = validate_entrants(entrants, spec.players_per_side, MIN_ENTRANTS[spec.format])
    if spec.format is FormatKind.SWISS:
        top = max_swiss_rounds(len(field))
        if spec.rounds is None or isinstance(spec.rounds, bool) or not 1 <= spec.rounds <= top:
            raise InvalidOptionError(
                "rounds", f"a swiss of {len(field)} entrants has 1 to {top} rounds; got {spec.rounds!r}"
            )
        if spec.bracket_size < 4:
            raise InvalidOptionError("bracket_size", f"must be >= 4; got {spec.bracket_size}")
        check_field_size(spec, len(field))
    elif spec.rounds is not None:
        raise InvalidOptionError(
            "rounds", f"only a swiss takes a number of rounds; a {spec.format.value} has its own"
        )
    if spec.group_stage is not None:
        spec.group_stage.check_entrants(len(field))
    if len(set(spec.tie_breaks)) != len(spec.tie_breaks):
        raise InvalidOptionError("tie_breaks", "a tie-break is listed twice")
    return Event(spec, field)
