"""What the league service stores: a league document, a bot account, an assignment.

A league is one versioned document (``MatchStore.doc_get`` / ``doc_put``, compare-and-set on
the version): its settings, its entrants, the pairings made so far with their tables (one
match each), the results recorded, and which matches are rated. Every change is a new
version written only if nobody wrote in between, so two workers that both advance a league
cannot both record a round or a result: the loser of the race reloads and finds it done.

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
    DealSets,
    DuplicateMode,
    DuplicateOptions,
    Entrant,
    Event,
    EventSpec,
    Pairing,
    PairScoring,
    Result,
    create_event,
    parse_format,
    parse_tie_breaks,
)
from truco_server.leagues.tiebreaks import DEFAULT_TIE_BREAKS

LEAGUE = "league"
"""Document kind of a league."""
BOT = "bot"
"""Document kind of a bot account."""
RATINGS = "ratings"
"""Document kind of an operator's rating book of one family."""

ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
"""The form of a league's or a bot account's id (anything else is not looked up)."""
MAX_NAME = 100
"""The longest name of a league or a bot account."""
CAS_ATTEMPTS = 20
"""How often a write that lost the compare-and-set is recomputed before it gives up."""


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
    rated: bool = False
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
        )

    def event(self, *, min_entrants: bool = True) -> Event:
        entrants = [e.entrant() for e in self.entrants]
        if min_entrants:
            return create_event(self.spec(), entrants)
        # registration: shape checks only (the minimum is checked at the start)
        from truco_server.leagues.entrants import validate_entrants

        return Event(self.spec(), validate_entrants(entrants, self.players_per_side, 1))

    def withdrawn(self) -> set[str]:
        return {e.id for e in self.entrants if e.withdrawn}

    def results(self) -> list[Result]:
        return [result_of(p.result) for p in self.pairings if p.result is not None]

    def round_pairings(self, round_no: int) -> list[PairingDoc]:
        return [p for p in self.pairings if p.round == round_no]

    def round_complete(self, round_no: int) -> bool:
        return all(p.result is not None for p in self.round_pairings(round_no))

    def entrant(self, entrant_id: str) -> EntrantDoc | None:
        return next((e for e in self.entrants if e.id == entrant_id), None)

    def entrant_players(self) -> dict[str, list[str]]:
        return {e.id: e.players for e in self.entrants}

    # -------------------------------------------------------------- bytes
    def to_bytes(self) -> bytes:
        return orjson.dumps(self)  # orjson writes dataclasses natively (a tenth of asdict's time)

    @classmethod
    def from_bytes(cls, raw: bytes) -> LeagueDoc:
        d = orjson.loads(raw)
        d["entrants"] = [EntrantDoc(**e) for e in d["entrants"]]
        d["pairings"] = [PairingDoc(**p) for p in d["pairings"]]
        d["tables"] = {k: TableDoc(**t) for k, t in d["tables"].items()}
        return cls(**d)


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
