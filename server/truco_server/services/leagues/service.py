"""The league service: leagues of an operator run across workers through Redis.

**Operations** (``truco.v1.LeagueService``, through :mod:`truco_server.api.leagues`):
create a league, register and withdraw entrants, start, pause and resume it, read its
standings and pairings (here); create bot accounts and stream a bot its matches
(:attr:`LeagueService.bots`, :mod:`.bots`); read a family's leaderboard
(:attr:`LeagueService.ratings`, :mod:`truco_server.services.ratings`).

What moves a league on once it is started is the league job (:attr:`LeagueService.job`,
:mod:`.job`), run by whichever worker claims the league; starting or resuming a league
queues it for the job.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

import truco_engine as te
from truco_contract.pb import match_service_pb2
from truco_match import create
from truco_server.core import errors as E
from truco_server.core.caller import Operator
from truco_server.leagues import (
    DealSets,
    DuplicateMode,
    DuplicateOptions,
    FormatKind,
    GroupTable,
    LeagueError,
    PairScoring,
    Standing,
    parse_format,
    parse_tie_breaks,
)
from truco_server.ports.documents import Documents
from truco_server.ports.queues import Queues
from truco_server.services.leagues import control
from truco_server.services.leagues.bots import BOT_PREFIX, BotAccounts
from truco_server.services.leagues.documents import (
    CAS_ATTEMPTS,
    ID,
    LEAGUE,
    MAX_NAME,
    BotDoc,
    EntrantDoc,
    LeagueDoc,
    PairingDoc,
    State,
    StoredLeague,
    load_league,
    result_dict,
    save_league,
)
from truco_server.services.leagues.errors import LeagueNotFound, LeagueStateError, invalid, league_error
from truco_server.services.leagues.job import POLL_MS, LeagueJob, Publish, match_template
from truco_server.services.leagues.public import ensure_public_id, find_public, index_public_id
from truco_server.services.matches import MatchService
from truco_server.services.ratings import RatingBooks
from truco_server.services.reads import MatchReads
from truco_server.services.steps import MatchSteps, spec_error

log = structlog.get_logger("truco.leagues")

MAX_LEAGUES_LISTED = 200


@dataclass(frozen=True, slots=True)
class LeagueSpec:
    """What CreateLeague asks for (decoded by the API layer)."""

    name: str
    format: str
    template: match_service_pb2.CreateMatchRequest
    """Rules and settings of every match."""
    rounds: int | None = None
    duplicate: tuple[str, str, str] = ("", "", "")
    """mode, deal_sets, scoring"""
    tie_breaks: tuple[str, ...] = ()
    entrants: tuple[EntrantDoc, ...] = ()
    request_id: str = ""
    rating: tuple[bool, tuple[str, ...]] = (False, ())
    """The rating policy: unrated, and the endings rated (none: the default ones)."""
    schedule: tuple[float, float] = (0.0, 0.0)
    """When it starts by itself (seconds since the epoch; 0: never), and the seconds between
    rounds."""
    check_in: float = 0.0
    """Seconds before the start time its check-in window opens (0: none)."""
    third_place: bool = False
    """Single elimination: a match for third place."""
    series_best_of: int = 1
    """Each pairing a series of up to this many matches."""
    swiss_pairing: str = ""
    """A swiss's pairing system (empty: ``weighted``)."""
    arena_duration: float = 0.0
    """An arena's duration (seconds; required for an arena, refused for the others)."""
    group_stage: tuple[int, int, bool] | None = None
    """Groups then knockout: groups, advancing per group, double round robin."""
    late_entry_bye: str = ""
    """Swiss: a late entrant's bye (``full``, ``half``, ``none``; empty: full)."""


class LeagueService:
    """Leagues (the operations above), with the bot accounts, the rating books and the league
    job it builds (``bots``, ``ratings``, ``job``)."""

    def __init__(
        self,
        documents: Documents,
        queues: Queues,
        matches: MatchService,
        steps: MatchSteps,
        reads: MatchReads,
        *,
        heartbeat_seconds: float = 5.0,
        stopping: asyncio.Event | None = None,
        poll_ms: int = POLL_MS,
        publish: Publish | None = None,
        lobby_poll_seconds: float = 0.25,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.documents = documents
        self.matches = matches
        self.now = clock
        self.bots = BotAccounts(
            documents,
            heartbeat_seconds=heartbeat_seconds,
            stopping=stopping,
            lobby_poll_seconds=lobby_poll_seconds,
            clock=clock,
        )
        """Bot accounts and the bot lobby."""
        self.ratings = RatingBooks(documents)
        """The operators' rating books (the leaderboards)."""
        self.job = LeagueJob(
            documents,
            queues,
            matches,
            reads,
            create_match=steps.create_match,
            ratings=self.ratings,
            publish=publish,
            poll_ms=poll_ms,
            clock=clock,
        )
        """The league job (its queue's reader, the pass, the wakeups)."""

    # =================================================================== documents
    async def _load(self, league_id: str) -> StoredLeague:
        got = await load_league(self.documents, league_id) if ID.match(league_id) else None
        if got is None:
            raise LeagueNotFound(f"no league {league_id[:64]!r}")
        return got

    async def _owned(self, operator: Operator, league_id: str) -> StoredLeague:
        if not league_id:
            raise invalid("league_id", "required")
        stored = await self._load(league_id)
        if stored.doc.owner != operator.name:
            raise LeagueNotFound(f"no league {league_id[:64]!r}")
        return stored

    async def _update(
        self, operator: Operator, league_id: str, change: Callable[[LeagueDoc], None]
    ) -> LeagueDoc:
        """Apply ``change`` to the league and store it (compare-and-set, retried on a race)."""
        for _ in range(CAS_ATTEMPTS):
            stored = await self._owned(operator, league_id)
            change(stored.doc)
            if await save_league(self.documents, stored):
                return stored.doc
        raise E.ServiceError("the league changed too often; try again", code=E.Code.ABORTED, reason="ABORTED")

    # =================================================================== creation
    async def create_league(self, operator: Operator, spec: LeagueSpec) -> LeagueDoc:
        kind, rules, dup = self._check(spec)
        if spec.request_id:
            digest = hashlib.sha256(f"{operator.name}\n{spec.request_id}".encode()).hexdigest()
            league_id = "lg" + digest[:18]
        else:
            league_id = "lg" + secrets.token_hex(9)
        template = match_service_pb2.CreateMatchRequest()
        template.rules.CopyFrom(spec.template.rules)
        template.settings.CopyFrom(spec.template.settings)
        template.players = spec.template.players
        doc = LeagueDoc(
            league_id=league_id,
            owner=operator.name,
            name=spec.name,
            format=kind.value,
            template=template.SerializeToString().hex(),
            preset=rules.name,
            players=rules.players,
            family=f"{rules.name}-{rules.players}p",
            deal_key=secrets.token_hex(32),
            created_at=self.now(),
            rounds=spec.rounds,
            duplicate={
                "mode": dup.mode.value,
                "deal_sets": dup.deal_sets.value,
                "scoring": dup.scoring.value,
            },
            tie_breaks=list(spec.tie_breaks),
            request_id=spec.request_id,
            rating=control.rating_policy(*spec.rating),
            starts_at=spec.schedule[0],
            round_interval=control.round_interval(spec.schedule[1]),
            check_in=control.check_in_window(spec.schedule[0], spec.check_in),
            third_place=spec.third_place,
            series_best_of=spec.series_best_of,
            swiss_pairing=spec.swiss_pairing or "weighted",
            arena_duration=spec.arena_duration,
            group_stage=dict(zip(("groups", "advance", "double"), spec.group_stage, strict=True))
            if spec.group_stage
            else None,
            late_entry_bye=spec.late_entry_bye or "full",
        )
        if doc.is_arena and doc.round_interval:
            raise invalid("schedule.round_interval", "an arena has no rounds: it pairs entrants as they wait")
        entrants = self._numbered(list(spec.entrants))
        await self._check_bots(operator, entrants)
        doc.entrants = entrants
        try:
            doc.event(min_entrants=False)
            if kind.value == "swiss" and spec.rounds is None:
                raise invalid("rounds", "a swiss needs a number of rounds")
            if kind.value != "swiss" and spec.rounds is not None:
                raise invalid("rounds", f"only a swiss takes a number of rounds; a {kind.value} has its own")
        except LeagueError as exc:
            raise league_error(exc) from exc
        await index_public_id(self.documents, doc)
        if not await save_league(self.documents, StoredLeague(0, doc, {})):
            return (await self._owned(operator, league_id)).doc
        await self.documents.index_add(operator.name, LEAGUE, league_id, round(doc.created_at * 1000))
        if doc.starts_at:
            await self.job.wake(league_id, at_ms=round(doc.starts_at * 1000))
        log.info("league created", league_id=league_id, format=kind.value, entrants=len(entrants))
        return doc

    def _check(self, spec: LeagueSpec) -> tuple[FormatKind, te.RuleSet, DuplicateOptions]:
        """A league's format, its matches' rules and its duplicate options, checked (its
        entrants and rounds are checked with its document)."""
        if not spec.name or len(spec.name) > MAX_NAME:
            raise invalid("name", f"1 to {MAX_NAME} characters")
        try:
            kind = parse_format(spec.format)
        except LeagueError as exc:
            raise league_error(exc) from exc
        base = match_template(spec.template)
        try:
            rules = create.rules_of(base.preset, dict(base.overrides))
            # the match service's own check of match settings (every match is created with them)
            create.check_lifecycle(base.lifecycle, self.matches.settings.idle_timeout_ms)
        except create.SpecError as exc:
            raise spec_error(exc) from None
        if rules.play_mode != "teams" or rules.players % 2:
            raise invalid("rules", f"{rules.name} is not played by two sides; a league needs two sides")
        mode, deal_sets, scoring = spec.duplicate
        try:
            dup = DuplicateOptions(
                mode=DuplicateMode(mode or "off"),
                deal_sets=DealSets(deal_sets or "pairing"),
                scoring=PairScoring(scoring or "net"),
            )
        except ValueError as exc:
            raise invalid(
                "duplicate", f"{exc}; mode off|tables|boards, deal_sets pairing|round, scoring net|imps"
            ) from exc
        if dup.mode is DuplicateMode.BOARDS:
            raise invalid(
                "duplicate.mode",
                "the boards form needs matches that start from a fixed score, which CreateMatch does "
                "not offer yet; use 'tables' (the library scores boards: docs/leagues.md)",
            )
        try:
            parse_tie_breaks(spec.tie_breaks)
        except LeagueError as exc:
            raise league_error(exc) from exc
        return kind, rules, dup

    @staticmethod
    def _numbered(entrants: list[EntrantDoc], taken: Sequence[EntrantDoc] = ()) -> list[EntrantDoc]:
        """Entrants with seed 0 get the next free seeds, in order."""
        used = {e.seed for e in taken} | {e.seed for e in entrants if e.seed > 0}
        nxt = 1
        out = []
        for e in entrants:
            if e.seed <= 0:
                while nxt in used:
                    nxt += 1
                e = dataclasses.replace(e, seed=nxt)
                used.add(nxt)
            out.append(e)
        return out

    async def _check_bots(self, operator: Operator, entrants: Sequence[EntrantDoc]) -> None:
        """Every bot among the entrants is one of the operator's; a bot entrant without a
        display name gets its account's name."""
        for i, e in enumerate(entrants):
            for j, player in enumerate(e.players):
                if not player.startswith(BOT_PREFIX):
                    continue
                bot = await self.bots.get(player)
                if bot is None or bot.owner != operator.name:
                    where = f"entrants[{i}]" + (f".members[{j}]" if e.members else ".entrant_id")
                    raise invalid(where, f"{player[:64]!r} is not one of your bot accounts")
                if not e.members and not e.display_name:
                    e.display_name = bot.name

    # =================================================================== the operator's leagues
    async def get_league(self, operator: Operator, league_id: str) -> LeagueDoc:
        # a league stored before public ids gets its id here (public.ensure_public_id)
        return await ensure_public_id(self.documents, await self._owned(operator, league_id))

    async def public_view(self, public_id: str) -> tuple[int, LeagueDoc, tuple[Standing, ...]]:
        """A league by its public id (no credential): its version, document and standings."""
        stored = await find_public(self.documents, public_id)
        doc, standings, _ = self._standings(stored.doc)
        return stored.version, doc, standings

    async def list_leagues(self, operator: Operator) -> list[LeagueDoc]:
        ids = await self.documents.index(operator.name, LEAGUE, MAX_LEAGUES_LISTED)
        out = []
        for league_id in ids:
            got = await load_league(self.documents, league_id)
            if got is not None:
                out.append(got.doc)
        return out

    async def register(self, operator: Operator, league_id: str, entrant: EntrantDoc) -> LeagueDoc:
        current = (await self._owned(operator, league_id)).doc
        if current.state == State.FINISHED:
            raise LeagueStateError("the league is finished", reason="REGISTRATION_CLOSED")
        if current.is_arena and current.ends_at and self.now() >= current.ends_at:
            raise LeagueStateError("the arena's time is up", reason="REGISTRATION_CLOSED")
        (entrant,) = self._numbered([entrant], current.entrants)
        await self._check_bots(operator, [entrant])

        def change(doc: LeagueDoc) -> None:
            try:
                event = doc.event(min_entrants=False)
                added = event.register(entrant.entrant(), doc.round)
            except LeagueError as exc:
                raise league_error(exc) from exc
            joined = next(e for e in added.entrants if e.id == entrant.id).joined_round
            doc.entrants.append(dataclasses.replace(entrant, joined_round=joined))
            bye = added.late_entry_bye(entrant.id, [p.pairing() for p in doc.round_pairings(1)])
            if bye is not None:  # joined after round 1: one bye, for round 1 (Lichess's rule)
                late = PairingDoc(bye.round, bye.table, bye.first, None, bye.label)
                late.result = result_dict(added.late_entry_result(bye))
                doc.pairings.append(late)
                doc.pairings.sort(key=lambda p: (p.round, p.table))

        doc = await self._update(operator, league_id, change)
        if doc.is_arena and doc.state == State.RUNNING:  # into the pool at once
            await self.job.wake(league_id)
        return doc

    async def withdraw(self, operator: Operator, league_id: str, entrant_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            e = doc.entrant(entrant_id)
            if e is None:
                raise LeagueNotFound(f"no entrant {entrant_id[:64]!r} in this league")
            if doc.state == State.REGISTRATION:
                doc.entrants.remove(e)
            elif not e.withdrawn:
                e.withdrawn = True
                doc.emit("entrant.withdrawn", self.now(), entrant=entrant_id, reason="WithdrawEntrant")
            control.drop_from_overrides(doc, entrant_id)

        return await self._update(operator, league_id, change)

    async def check_in(
        self, caller: Operator | BotDoc, league_id: str, entrant_id: str
    ) -> tuple[LeagueDoc, EntrantDoc]:
        """Check an entrant in (:func:`.control.check_in`): the operator, or a bot account
        of the league's operator that plays for the entrant."""
        bot_id, operator = "", caller
        if isinstance(caller, BotDoc):
            bot_id, operator = caller.bot_id, Operator(caller.owner)
        assert isinstance(operator, Operator)
        now = self.now()
        done: list[EntrantDoc] = []

        def change(doc: LeagueDoc) -> None:
            done[:] = [control.check_in(doc, entrant_id, now, bot_id)]

        doc = await self._update(operator, league_id, change)
        return doc, done[0]

    async def start(self, operator: Operator, league_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            if doc.state != State.REGISTRATION:
                raise LeagueStateError(f"the league is {doc.state}; only a league in registration starts")
            try:
                control.start(doc, self.now())
            except LeagueError as exc:
                raise league_error(exc) from exc

        doc = await self._update(operator, league_id, change)
        await self.job.wake(league_id)
        log.info("league started", league_id=league_id)
        return doc

    async def pause(self, operator: Operator, league_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            if doc.state != State.RUNNING:
                raise LeagueStateError(f"the league is {doc.state}; only a running league pauses")
            doc.state = State.PAUSED
            doc.emit("league.paused", self.now(), round=doc.round, reason="PauseLeague")

        return await self._update(operator, league_id, change)

    async def resume(self, operator: Operator, league_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            if doc.state != State.PAUSED:
                raise LeagueStateError(f"the league is {doc.state}; only a paused league resumes")
            doc.state = State.RUNNING
            doc.emit("league.resumed", self.now(), round=doc.round)

        doc = await self._update(operator, league_id, change)
        await self.job.wake(league_id)
        return doc

    async def standings(
        self, operator: Operator, league_id: str
    ) -> tuple[LeagueDoc, tuple[Standing, ...], tuple[GroupTable, ...]]:
        """The league's standings and, groups then knockout, each group's table."""
        return self._standings((await self._owned(operator, league_id)).doc)

    @staticmethod
    def _standings(doc: LeagueDoc) -> tuple[LeagueDoc, tuple[Standing, ...], tuple[GroupTable, ...]]:
        try:
            event = doc.event(min_entrants=False)
            results = doc.results()
            return doc, event.standings(results, doc.withdrawn()), event.group_tables(results)
        except LeagueError as exc:
            raise league_error(exc) from exc

    # =================================================================== manual control
    async def set_forbidden(
        self, operator: Operator, league_id: str, pairs: Sequence[tuple[str, str]]
    ) -> LeagueDoc:
        return await self._update(operator, league_id, lambda doc: control.set_forbidden(doc, pairs))

    async def set_round(
        self,
        operator: Operator,
        league_id: str,
        round_no: int,
        pairs: Sequence[tuple[str, str]],
        byes: Sequence[str],
    ) -> LeagueDoc:
        return await self._update(
            operator, league_id, lambda doc: control.set_round(doc, round_no, pairs, byes)
        )

    async def correct(
        self,
        operator: Operator,
        league_id: str,
        round_no: int,
        table: int,
        outcome: tuple[str, int, int, bool],
        reason: str,
    ) -> tuple[LeagueDoc, PairingDoc]:
        """Correct a recorded result (:func:`.control.correct`); the job rates it again."""
        now = self.now()
        corrected: list[PairingDoc] = []

        def change(doc: LeagueDoc) -> None:
            corrected[:] = [control.correct(doc, round_no, table, outcome, reason, now, operator.name)]

        doc = await self._update(operator, league_id, change)
        await self.job.wake(league_id)
        log.info("league result corrected", league_id=league_id, round=round_no, table=table)
        return doc, corrected[0]

    async def pairings(
        self, operator: Operator, league_id: str, round_no: int
    ) -> tuple[LeagueDoc, list[PairingDoc]]:
        if round_no < 0:
            raise invalid("round", "must not be negative")
        doc = (await self._owned(operator, league_id)).doc
        return doc, [p for p in doc.pairings if round_no in (0, p.round)]
