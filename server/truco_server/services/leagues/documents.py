"""What the league service stores: a league document, a bot account, an assignment.

A league is one versioned document of parts (``Documents.get_parts`` / ``put_parts``,
compare-and-set on the version): ``head`` (its settings and state), ``entrants``, and one
part per pairing, ``p:<round>.<table>``, holding the pairing, its result and its tables
(one match each, which are rated). Every change is a new version written only if nobody
wrote in between, so two workers that both advance a league cannot both record a round or
a result: the loser of the race reloads and finds it done. A write carries only the parts
whose bytes changed (:func:`save_league` compares them with what :func:`load_league`
read): recording ten results writes ten pairing parts and the head, whatever the size of
the league.

The documents are plain JSON (orjson) so an operator can read them in Redis; their shape is
private to this package.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from truco_server.leagues import (
    ARENA_TIE_BREAKS,
    NO_OVERRIDES,
    CheckInWindow,
    DealSets,
    DuplicateMode,
    DuplicateOptions,
    Entrant,
    Event,
    EventSpec,
    GroupStage,
    Pairing,
    PairScoring,
    Result,
    RoundOverrides,
    create_event,
    parse_format,
    parse_late_entry_bye,
    parse_tie_breaks,
)
from truco_server.leagues.tiebreaks import DEFAULT_TIE_BREAKS
from truco_server.ports.documents import Documents

LEAGUE = "league"
"""Document kind of a league."""
BOT = "bot"
"""Document kind of a bot account."""

ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
"""The form of a league's or a bot account's id (anything else is not looked up)."""
MAX_NAME = 100
"""The longest name of a league or a bot account."""
CAS_ATTEMPTS = 20
"""How often a write that lost the compare-and-set is recomputed before it gives up."""
DEFAULT_COUNTED = ("played", "adjudicated")
"""The endings rated when a league's policy names none (``outcomes.ENDINGS``)."""


class State:
    REGISTRATION = "registration"
    RUNNING = "running"
    PAUSED = "paused"
    FINISHED = "finished"


@dataclass(slots=True)
class EntrantDoc:
    id: str
    seed: int
    members: list[str] = field(default_factory=list)
    joined_round: int = 1
    withdrawn: bool = False
    display_name: str = ""
    """The name shown beside the id (the operator's, or its bot account's); may be empty."""
    checked_in: bool = False
    """Checked in during the league's check-in window."""
    withdrawn_reason: str = ""
    """Why the league withdrew it (``no_check_in``); empty otherwise."""

    def entrant(self) -> Entrant:
        return Entrant(self.id, self.seed, tuple(self.members), joined_round=self.joined_round)

    @property
    def players(self) -> list[str]:
        return self.members or [self.id]


@dataclass(slots=True)
class TableDoc:
    """One match of a pairing."""

    key: str
    deal_set: str
    sides: list[str]
    """Entrant ids in direction 0 and 1."""
    match_id: str = ""
    seats: list[list[Any]] = field(default_factory=list)
    """[seat, player id, token] per seat."""
    spectator: str = ""
    """The match's spectator credential (empty until created, and in documents stored before
    it was kept)."""
    assigned: bool = False
    """The bot seats were handed to their bots (the lobby)."""
    done: bool = False
    winner_side: int | None = None
    """0 or 1 (the direction that won the match); None: no winner (aborted, cancelled)."""
    forfeit: bool = False
    points: list[int] = field(default_factory=lambda: [0, 0])
    """Final points of direction 0 and 1."""
    deals: list[list[int]] = field(default_factory=list)
    """Points direction 0 and 1 made on each deal (hand) of the match, in order."""
    ending: str = ""
    """How the match ended (``outcomes.ENDINGS``; what the rating policy counts)."""
    rated: bool = False
    """Rated (or un-rated) under the policy; a correction clears it so the job rates again."""
    released: bool = False
    """Bot assignments of this table removed."""


@dataclass(slots=True)
class PairingDoc:
    round: int
    table: int
    first: str
    second: str | None
    label: str = ""
    tables: list[str] = field(default_factory=list)
    """Keys of its tables (none for a bye)."""
    result: dict[str, Any] | None = None
    """The recorded :class:`Result` (its fields), plus ``deals``/``net``/``imps`` under duplicate."""
    corrections: list[dict[str, Any]] = field(default_factory=list)
    """The operator's corrections: ``time``, ``by``, ``reason``, ``before``, ``after``."""

    def pairing(self) -> Pairing:
        return Pairing(self.round, self.table, self.first, self.second, self.label)


def result_of(d: dict[str, Any]) -> Result:
    return Result(
        d["round"], d["table"], d["first"], d["second"], d["winner"],
        d["first_points"], d["second_points"], d["forfeit"],
    )  # fmt: skip


def result_dict(r: Result) -> dict[str, Any]:
    return {
        "round": r.round,
        "table": r.table,
        "first": r.first,
        "second": r.second,
        "winner": r.winner,
        "first_points": r.first_points,
        "second_points": r.second_points,
        "forfeit": r.forfeit,
    }


@dataclass(slots=True)
class LeagueDoc:
    league_id: str
    owner: str
    name: str
    format: str
    template: str
    """The CreateMatchRequest every match starts from (rules, settings), hex of its bytes."""
    preset: str
    players: int
    """Seats of the rule set."""
    family: str
    deal_key: str
    """Hex secret the duplicate deals are drawn from (never leaves the server)."""
    created_at: float
    rounds: int | None = None
    duplicate: dict[str, str] = field(default_factory=dict)
    tie_breaks: list[str] = field(default_factory=list)
    state: str = State.REGISTRATION
    finish_reason: str = ""
    entrants: list[EntrantDoc] = field(default_factory=list)
    round: int = 0
    """The last round paired."""
    pairings: list[PairingDoc] = field(default_factory=list)
    tables: dict[str, TableDoc] = field(default_factory=dict)
    request_id: str = ""
    forbidden: list[list[str]] = field(default_factory=list)
    """Pairs a Swiss never pairs."""
    overrides: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    """The operator's ``pairs`` and ``byes`` of rounds not paired yet, by round (a string)."""
    rating: dict[str, Any] = field(default_factory=lambda: {"rated": True, "count": list(DEFAULT_COUNTED)})
    """The rating policy: ``rated``, and ``count``: the endings it rates."""
    starts_at: float = 0.0
    """When the job starts the league by itself (seconds since the epoch; 0: never)."""
    round_interval: float = 0.0
    """Seconds between a round's last result and the next round's pairing."""
    round_done_at: float = 0.0
    """When the current round's last result was seen (0: not yet); the interval runs from it."""
    outbox: list[dict[str, Any]] = field(default_factory=list)
    """League events written with the change they report, not yet on the operator's feed
    (``id``, ``type``, ``time``, ``match_id``, ``labels``); the job publishes them."""
    third_place: bool = False
    """Single elimination: the semi-final losers play for third place."""
    check_in: float = 0.0
    """Seconds before ``starts_at`` the check-in window opens (0: no check-in)."""
    series_best_of: int = 1
    """Each pairing is a series of up to this many matches (its tables, one per game)."""
    swiss_pairing: str = "weighted"
    """A swiss's pairing system: ``weighted`` or ``dutch``."""
    arena_duration: float = 0.0
    """An arena's duration (seconds; 0 for the other formats)."""
    ends_at: float = 0.0
    """When an arena stops pairing (its start plus its duration; 0 before the start)."""
    group_stage: dict[str, Any] | None = None
    """Groups then knockout: ``groups``, ``advance``, ``double``."""
    late_entry_bye: str = "full"
    """Swiss: what a late entrant's bye for round 1 is worth (``full``, ``half``, ``none``)."""
    events: int = 0
    """League events made so far (the next one's id is ``<league_id>:e<events + 1>``)."""
    public_id: str = ""
    """The id its public view is read with (:mod:`.public`); empty in a league stored before
    public ids until its operator's next ``GetLeague``."""

    def emit(self, kind: str, now: float, match_id: str = "", **labels: object) -> None:
        """Record a league event (``league.started``, ``round.paired``...) with this change."""
        self.events += 1
        self.outbox.append(
            {
                "id": f"{self.league_id}:e{self.events}",
                "type": kind,
                "time": now,
                "match_id": match_id,
                "labels": {"league": self.league_id} | {k: str(v) for k, v in labels.items()},
            }
        )

    # -------------------------------------------------------------- the library's view
    @property
    def players_per_side(self) -> int:
        return max(1, self.players // 2)

    def duplicate_options(self) -> DuplicateOptions:
        d = self.duplicate
        return DuplicateOptions(
            mode=DuplicateMode(d.get("mode") or "off"),
            deal_sets=DealSets(d.get("deal_sets") or "pairing"),
            scoring=PairScoring(d.get("scoring") or "net"),
        )

    def spec(self) -> EventSpec:
        return EventSpec(
            parse_format(self.format),
            players_per_side=self.players_per_side,
            rounds=self.rounds,
            tie_breaks=parse_tie_breaks(self.tie_breaks) if self.tie_breaks else DEFAULT_TIE_BREAKS,
            duplicate=self.duplicate_options(),
            third_place=self.third_place,
            series_best_of=self.series_best_of,
            swiss_pairing=self.swiss_pairing,
            arena_duration=self.arena_duration if self.arena_duration or self.is_arena else None,
            group_stage=GroupStage(**self.group_stage) if self.group_stage else None,
            late_entry_bye=parse_late_entry_bye(self.late_entry_bye),
        )

    @property
    def is_arena(self) -> bool:
        return self.format == "arena"

    def tie_break_names(self) -> list[str]:
        """The tie-breaks its standings show, in order (an arena's are fixed)."""
        if self.is_arena:
            return [t.value for t in ARENA_TIE_BREAKS]
        return self.tie_breaks or [t.value for t in DEFAULT_TIE_BREAKS]

    def event(self, *, min_entrants: bool = True) -> Event:
        entrants = [e.entrant() for e in self.entrants]
        if min_entrants:
            return create_event(self.spec(), entrants)
        # registration: shape checks only (the minimum is checked at the start)
        from truco_server.leagues.entrants import validate_entrants

        return Event(self.spec(), validate_entrants(entrants, self.players_per_side, 1))

    def check_in_window(self) -> CheckInWindow | None:
        return CheckInWindow(self.starts_at, self.check_in) if self.check_in else None

    def forbidden_pairs(self) -> frozenset[frozenset[str]]:
        return frozenset(frozenset(p) for p in self.forbidden)

    def round_overrides(self, round_no: int) -> RoundOverrides:
        got = self.overrides.get(str(round_no))
        if not got:
            return NO_OVERRIDES
        return RoundOverrides(tuple((a, b) for a, b in got["pairs"]), tuple(got["byes"]))

    def counts(self, t: TableDoc) -> bool:
        """Whether the rating policy rates this finished table."""
        ending = t.ending or ("no_show" if t.forfeit else "played")  # a table stored before endings
        return bool(self.rating["rated"]) and t.winner_side is not None and ending in self.rating["count"]

    def withdrawn(self) -> set[str]:
        return {e.id for e in self.entrants if e.withdrawn}

    def results(self) -> list[Result]:
        return [result_of(p.result) for p in self.pairings if p.result is not None]

    def round_pairings(self, round_no: int) -> list[PairingDoc]:
        return [p for p in self.pairings if p.round == round_no]

    def live_pairings(self) -> list[PairingDoc]:
        """The pairings without a result (an arena's matches in play, of any wave)."""
        return [p for p in self.pairings if p.result is None]

    def round_complete(self, round_no: int) -> bool:
        return all(p.result is not None for p in self.round_pairings(round_no))

    def entrant(self, entrant_id: str) -> EntrantDoc | None:
        return next((e for e in self.entrants if e.id == entrant_id), None)

    def entrant_players(self) -> dict[str, list[str]]:
        return {e.id: e.players for e in self.entrants}

    # -------------------------------------------------------------- stored form
    def to_parts(self) -> dict[str, bytes]:
        """The league's parts (see the module docstring)."""
        head = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _SPLIT}
        parts = {HEAD: orjson.dumps(head), ENTRANTS: orjson.dumps(self.entrants)}
        for p in self.pairings:
            tables = [self.tables[k] for k in p.tables]
            # orjson writes dataclasses natively (a tenth of asdict's time)
            parts[f"{PAIRING}{p.round}.{p.table}"] = orjson.dumps({"pairing": p, "tables": tables})
        return parts

    @classmethod
    def from_parts(cls, parts: dict[str, bytes]) -> LeagueDoc:
        d = orjson.loads(parts[HEAD])
        d["entrants"] = [EntrantDoc(**e) for e in orjson.loads(parts[ENTRANTS])]
        pairings: list[PairingDoc] = []
        tables: dict[str, TableDoc] = {}
        for name, raw in parts.items():
            if name.startswith(PAIRING):
                got = orjson.loads(raw)
                pairings.append(PairingDoc(**got["pairing"]))
                tables.update((t["key"], TableDoc(**t)) for t in got["tables"])
        pairings.sort(key=lambda p: (p.round, p.table))
        d["pairings"], d["tables"] = pairings, tables
        return cls(**d)

    def size(self) -> int:
        """Bytes of the stored form."""
        return sum(len(v) for v in self.to_parts().values())


HEAD, ENTRANTS, PAIRING = "head", "entrants", "p:"
"""The league's part names (``p:<round>.<table>`` per pairing)."""
_SPLIT = {"entrants", "pairings", "tables"}
"""Fields kept in parts of their own, not in the head."""


@dataclass(slots=True)
class StoredLeague:
    """A league as read: its version, the document, and the parts it was read from (what
    :func:`save_league` compares with)."""

    version: int
    doc: LeagueDoc
    parts: dict[str, bytes]


async def load_league(documents: Documents, league_id: str) -> StoredLeague | None:
    got = await documents.get_parts(LEAGUE, league_id)
    if got is None:
        return None
    return StoredLeague(got[0], LeagueDoc.from_parts(got[1]), got[1])


async def save_league(documents: Documents, stored: StoredLeague) -> bool:
    """Write ``stored.doc`` over the version it was read at (0: create it), with only the
    parts that changed; ``False`` when another write came first."""
    parts = stored.doc.to_parts()
    changed = {k: v for k, v in parts.items() if stored.parts.get(k) != v}
    removed = [k for k in stored.parts if k not in parts]
    if not await documents.put_parts(LEAGUE, stored.doc.league_id, stored.version, changed, removed):
        return False
    stored.version, stored.parts = stored.version + 1, parts
    return True


@dataclass(slots=True)
class BotDoc:
    """A bot account: its owner, its name, the SHA-256 of its credential."""

    bot_id: str
    owner: str
    name: str
    max_concurrent: int
    token_hash: str
    created_at: float

    def to_bytes(self) -> bytes:
        return orjson.dumps(dataclasses.asdict(self))

    @classmethod
    def from_bytes(cls, raw: bytes) -> BotDoc:
        return cls(**orjson.loads(raw))
