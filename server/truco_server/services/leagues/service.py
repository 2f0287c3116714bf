"""The league service: leagues of an operator run across workers through Redis.

**Operations** (``truco.v1.LeagueService``, through :mod:`truco_server.api.leagues`):
create a league, register and withdraw entrants, start, pause and resume it, read its
standings and pairings; create bot accounts; read a family's leaderboard.

**The league job.** Everything that moves a league on is one job, :meth:`LeagueService.advance`,
run by whichever worker claims the league's item on the ``league`` queue
(:data:`~truco_server.ports.queues.LEAGUE`; the clock's sharded-queue machinery, so a dead
worker's claim expires and another takes it). A pass loads the league document and, each
step written with a compare-and-set on the document's version:

1. creates the current round's matches that have no match id yet -- each with the request
   id ``league:<league id>:<table key>``, so a creation retried by another worker after a
   death returns the same match (CreateMatch's request-id idempotence) -- and records their
   ids;
2. hands each bot seat to its bot account (the bot lobby's assignment, an idempotent write);
3. collects the result of every match that is over (read from its record), and decides each
   pairing whose matches are all over (a duplicate pairing deal by deal);
4. removes the bot assignments of finished matches, rates each finished match once (the
   rating book skips a match id it has applied), and marks them so;
5. when the round is complete and the league runs: ends the league, or pairs the next round
   (the library's pairing is a pure function of the results, so a second worker computes
   the same round) and goes back to 1.

A pass ends with the next time it is due: the fallback poll while matches are under way,
nothing once the league is finished or waits for its operator. The match-ended events of a
league's matches (relayed by :class:`~truco_server.services.operators.Operators`) wake it at once.

Writes that lost the compare-and-set are recomputed from the newer document, so a round is
paired once, a result is recorded once and a match is rated once, whichever worker does it
and wherever it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

import truco_engine as te
from truco_contract import codec
from truco_contract.leagues import Assignment, assignment_from_proto, assignment_to_proto
from truco_contract.pb import league_service_pb2, match_service_pb2
from truco_match import create
from truco_match.create import SeatSpec
from truco_match.events import MatchStatus, SeatKind
from truco_match.fairness import deck_for_hand
from truco_match.operator_events import OperatorEvent, OperatorEventType
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.leagues import (
    DealScore,
    DealSets,
    DuplicateMode,
    DuplicateOptions,
    Event,
    LeaderboardEntry,
    LeagueError,
    NoValidPairingError,
    PairScoring,
    RatedMatch,
    RatingBook,
    RegistrationClosedError,
    Result,
    Standing,
    compare_pair,
    parse_format,
    parse_tie_breaks,
    ranks_from_winner,
)
from truco_server.leagues.formats import ELIMINATION
from truco_server.ports.documents import Documents
from truco_server.ports.queues import LEAGUE as LEAGUE_QUEUE
from truco_server.ports.queues import Claim, Queues
from truco_server.services.leagues.documents import (
    BOT,
    LEAGUE,
    RATINGS,
    BotDoc,
    EntrantDoc,
    LeagueDoc,
    PairingDoc,
    State,
    TableDoc,
    result_dict,
)
from truco_server.services.leagues.outcomes import outcome_of
from truco_server.services.matches import MatchService
from truco_server.services.reads import MatchReads
from truco_server.services.scheduler import QueueReader
from truco_server.services.steps import MatchSteps, spec_error

log = structlog.get_logger("truco.leagues")

BOT_PREFIX = "bot_"
BOT_TOKEN_PREFIX = "tb1"
DUPLICATE_DEALS = 64
"""Deck orders drawn per deal set: hands beyond them are shuffled from each match's own seed
and not compared (a match to 30 points rarely lasts 40 hands)."""
MAX_NAME = 100
MAX_LEAGUES_LISTED = 200
MAX_CONCURRENT = 64
POLL_MS = 5_000
"""While matches are under way, a league is looked at again after this long even if no
match-ended event woke it (the events are the fast path)."""
LEASE_MS = 10_000
"""How long a worker holds a league's job; another worker takes it over after a death."""
CAS_ATTEMPTS = 20
COLLECT_CONCURRENCY = 16
"""Matches looked at (and their records read) at once when collecting a round's results."""
TERMINAL = {MatchStatus.FINISHED.value, MatchStatus.ABORTED.value, MatchStatus.CANCELLED.value}
_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")


# ------------------------------------------------------------------------- errors
class LeagueNotFound(E.ServiceError):
    default_code = E.Code.NOT_FOUND
    default_reason = "LEAGUE_NOT_FOUND"  # type: ignore[assignment]


class LeagueStateError(E.ServiceError):
    """The league is not in a state that allows this (already started, not paused...)."""

    default_code = E.Code.FAILED_PRECONDITION
    default_reason = "LEAGUE_STATE"  # type: ignore[assignment]


def _invalid(field: str, message: str) -> E.InvalidArgument:
    return E.InvalidArgument(f"{field}: {message}", field_violations=[E.FieldViolation(field, message)])


def league_error(exc: LeagueError) -> E.ServiceError:
    """The service error of a library error (the field it names, its message)."""
    if isinstance(exc, RegistrationClosedError):
        return LeagueStateError(exc.message, reason="REGISTRATION_CLOSED")
    return _invalid(exc.field, exc.message)


# ------------------------------------------------------------------------- requests
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


def _ms() -> int:
    return round(time.time() * 1000)


def bot_token_parts(token: str) -> tuple[str, str] | None:
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != BOT_TOKEN_PREFIX or not parts[1].startswith(BOT_PREFIX):
        return None
    return parts[1], parts[2]


class LeagueService:
    """Leagues, bot accounts and ratings (see the module docstring)."""

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
        lobby_poll_seconds: float = 0.25,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.documents = documents
        self.queues = queues
        self.matches = matches
        self.reads = reads
        self.heartbeat_seconds = heartbeat_seconds
        self.stopping = stopping or asyncio.Event()
        self.poll_ms = poll_ms
        self.lobby_poll_seconds = lobby_poll_seconds
        self.now = clock
        self.create_match: Callable[[Operator, T.CreateMatchRequest], Awaitable[T.CreateMatchResponse]] = (
            steps.create_match
        )
        """How a table's match is created (tests wrap it to stop a pass half-way)."""

    # =================================================================== documents
    async def _load(self, league_id: str) -> tuple[int, LeagueDoc]:
        got = await self.documents.get(LEAGUE, league_id) if _ID.match(league_id) else None
        if got is None:
            raise LeagueNotFound(f"no league {league_id[:64]!r}")
        return got[0], LeagueDoc.from_bytes(got[1])

    async def _owned(self, operator: Operator, league_id: str) -> tuple[int, LeagueDoc]:
        if not league_id:
            raise _invalid("league_id", "required")
        version, doc = await self._load(league_id)
        if doc.owner != operator.name:
            raise LeagueNotFound(f"no league {league_id[:64]!r}")
        return version, doc

    async def _update(
        self, operator: Operator, league_id: str, change: Callable[[LeagueDoc], None]
    ) -> LeagueDoc:
        """Apply ``change`` to the league and store it (compare-and-set, retried on a race)."""
        for _ in range(CAS_ATTEMPTS):
            version, doc = await self._owned(operator, league_id)
            change(doc)
            if await self.documents.put(LEAGUE, league_id, version, doc.to_bytes()):
                return doc
        raise E.ServiceError("the league changed too often; try again", code=E.Code.ABORTED, reason="ABORTED")

    # =================================================================== operator side
    async def create_league(self, operator: Operator, spec: LeagueSpec) -> LeagueDoc:
        if not spec.name or len(spec.name) > MAX_NAME:
            raise _invalid("name", f"1 to {MAX_NAME} characters")
        try:
            kind = parse_format(spec.format)
        except LeagueError as exc:
            raise league_error(exc) from exc
        base = _spec(spec.template)
        try:
            rules = create.rules_of(base.preset, dict(base.overrides))
            # the match service's own check of match settings (every match is created with them)
            create.check_lifecycle(base.lifecycle, self.matches.settings.idle_timeout_ms)
        except create.SpecError as exc:
            raise spec_error(exc) from None
        if rules.play_mode != "teams" or rules.players % 2:
            raise _invalid("rules", f"{rules.name} is not played by two sides; a league needs two sides")
        mode, deal_sets, scoring = spec.duplicate
        try:
            dup = DuplicateOptions(
                mode=DuplicateMode(mode or "off"),
                deal_sets=DealSets(deal_sets or "pairing"),
                scoring=PairScoring(scoring or "net"),
            )
        except ValueError as exc:
            raise _invalid(
                "duplicate", f"{exc}; mode off|tables|boards, deal_sets pairing|round, scoring net|imps"
            ) from exc
        if dup.mode is DuplicateMode.BOARDS:
            raise _invalid(
                "duplicate.mode",
                "the boards form needs matches that start from a fixed score, which CreateMatch does "
                "not offer yet; use 'tables' (the library scores boards: docs/leagues.md)",
            )
        try:
            parse_tie_breaks(spec.tie_breaks)
        except LeagueError as exc:
            raise league_error(exc) from exc
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
        )
        entrants = self._numbered(list(spec.entrants))
        await self._check_bots(operator, entrants)
        doc.entrants = entrants
        try:
            doc.event(min_entrants=False)
            if kind.value == "swiss" and spec.rounds is None:
                raise _invalid("rounds", "a swiss needs a number of rounds")
            if kind.value != "swiss" and spec.rounds is not None:
                raise _invalid("rounds", f"only a swiss takes a number of rounds; a {kind.value} has its own")
        except LeagueError as exc:
            raise league_error(exc) from exc
        if not await self.documents.put(LEAGUE, league_id, 0, doc.to_bytes()):
            _, existing = await self._owned(operator, league_id)
            return existing
        await self.documents.index_add(operator.name, LEAGUE, league_id, round(doc.created_at * 1000))
        log.info("league created", league_id=league_id, format=kind.value, entrants=len(entrants))
        return doc

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
        for i, e in enumerate(entrants):
            for j, player in enumerate(e.players):
                if not player.startswith(BOT_PREFIX):
                    continue
                bot = await self._bot(player)
                if bot is None or bot.owner != operator.name:
                    where = f"entrants[{i}]" + (f".members[{j}]" if e.members else ".entrant_id")
                    raise _invalid(where, f"{player[:64]!r} is not one of your bot accounts")

    async def get_league(self, operator: Operator, league_id: str) -> LeagueDoc:
        return (await self._owned(operator, league_id))[1]

    async def list_leagues(self, operator: Operator) -> list[LeagueDoc]:
        ids = await self.documents.index(operator.name, LEAGUE, MAX_LEAGUES_LISTED)
        out = []
        for league_id in ids:
            got = await self.documents.get(LEAGUE, league_id)
            if got is not None:
                out.append(LeagueDoc.from_bytes(got[1]))
        return out

    async def register(self, operator: Operator, league_id: str, entrant: EntrantDoc) -> LeagueDoc:
        _, current = await self._owned(operator, league_id)
        if current.state == State.FINISHED:
            raise LeagueStateError("the league is finished", reason="REGISTRATION_CLOSED")
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

        return await self._update(operator, league_id, change)

    async def withdraw(self, operator: Operator, league_id: str, entrant_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            e = doc.entrant(entrant_id)
            if e is None:
                raise LeagueNotFound(f"no entrant {entrant_id[:64]!r} in this league")
            if doc.state == State.REGISTRATION:
                doc.entrants.remove(e)
            else:
                e.withdrawn = True

        return await self._update(operator, league_id, change)

    async def start(self, operator: Operator, league_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            if doc.state != State.REGISTRATION:
                raise LeagueStateError(f"the league is {doc.state}; only a league in registration starts")
            try:
                doc.event()
            except LeagueError as exc:
                raise league_error(exc) from exc
            doc.state = State.RUNNING

        doc = await self._update(operator, league_id, change)
        await self.queues.add(LEAGUE_QUEUE, league_id, _ms())
        log.info("league started", league_id=league_id)
        return doc

    async def pause(self, operator: Operator, league_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            if doc.state != State.RUNNING:
                raise LeagueStateError(f"the league is {doc.state}; only a running league pauses")
            doc.state = State.PAUSED

        return await self._update(operator, league_id, change)

    async def resume(self, operator: Operator, league_id: str) -> LeagueDoc:
        def change(doc: LeagueDoc) -> None:
            if doc.state != State.PAUSED:
                raise LeagueStateError(f"the league is {doc.state}; only a paused league resumes")
            doc.state = State.RUNNING

        doc = await self._update(operator, league_id, change)
        await self.queues.add(LEAGUE_QUEUE, league_id, _ms())
        return doc

    async def standings(self, operator: Operator, league_id: str) -> tuple[LeagueDoc, tuple[Standing, ...]]:
        _, doc = await self._owned(operator, league_id)
        try:
            event = doc.event(min_entrants=False)
            return doc, event.standings(doc.results(), doc.withdrawn())
        except LeagueError as exc:
            raise league_error(exc) from exc

    async def pairings(
        self, operator: Operator, league_id: str, round_no: int
    ) -> tuple[LeagueDoc, list[PairingDoc]]:
        if round_no < 0:
            raise _invalid("round", "must not be negative")
        _, doc = await self._owned(operator, league_id)
        return doc, [p for p in doc.pairings if round_no in (0, p.round)]

    # =================================================================== ratings
    def _ratings_id(self, owner: str, family: str) -> str:
        return f"{owner}/{family}"

    async def leaderboard(self, operator: Operator, family: str, limit: int) -> tuple[LeaderboardEntry, ...]:
        if not family or len(family) > 64:
            raise _invalid("family", "a rating family, e.g. argentine-2p (League.rating_family)")
        if limit < 0:
            raise _invalid("page_size", "must not be negative")
        got = await self.documents.get(RATINGS, self._ratings_id(operator.name, family))
        if got is None:
            return ()
        book = RatingBook.from_dict(_json(got[1]))
        return book.leaderboard(family, min(limit or 50, 500))

    async def _rate(self, owner: str, family: str, played: Sequence[RatedMatch]) -> list[str]:
        """Apply finished matches of one family to the owner's book in one write, each once (a
        match id the book has applied is skipped); returns the ids applied now."""
        doc_id = self._ratings_id(owner, family)
        for _ in range(CAS_ATTEMPTS):
            got = await self.documents.get(RATINGS, doc_id)
            version, book = (
                (0, RatingBook()) if got is None else (got[0], RatingBook.from_dict(_json(got[1])))
            )
            applied = [m.match_id for m in played if book.apply(m)]
            if not applied:
                return []
            if await self.documents.put(RATINGS, doc_id, version, _dumps(book.to_dict())):
                return applied
        raise E.ServiceError("the rating book changed too often", code=E.Code.ABORTED, reason="ABORTED")

    # =================================================================== bot accounts
    async def _bot(self, bot_id: str) -> BotDoc | None:
        if not _ID.match(bot_id):
            return None
        got = await self.documents.get(BOT, bot_id)
        return None if got is None else BotDoc.from_bytes(got[1])

    async def create_bot(self, operator: Operator, name: str, max_concurrent: int) -> tuple[BotDoc, str]:
        if not name or len(name) > MAX_NAME:
            raise _invalid("name", f"1 to {MAX_NAME} characters")
        if not 0 <= max_concurrent <= MAX_CONCURRENT:
            raise _invalid("max_concurrent", f"1 to {MAX_CONCURRENT} (0: 1)")
        bot_id = BOT_PREFIX + secrets.token_hex(8)
        token = f"{BOT_TOKEN_PREFIX}.{bot_id}.{secrets.token_urlsafe(24)}"
        bot = BotDoc(
            bot_id=bot_id,
            owner=operator.name,
            name=name,
            max_concurrent=max_concurrent or 1,
            token_hash=hashlib.sha256(token.encode()).hexdigest(),
            created_at=self.now(),
        )
        await self.documents.put(BOT, bot_id, 0, bot.to_bytes())
        await self.documents.index_add(operator.name, BOT, bot_id, round(bot.created_at * 1000))
        log.info("bot account created", bot_id=bot_id)
        return bot, token

    async def list_bots(self, operator: Operator) -> list[BotDoc]:
        out = []
        for bot_id in await self.documents.index(operator.name, BOT, 1000):
            bot = await self._bot(bot_id)
            if bot is not None:
                out.append(bot)
        return out

    async def authenticate_bot(self, token: str | None, bot_id: str) -> BotDoc:
        """The bot account of a bot credential (``tb1.<bot id>.<secret>``)."""
        parts = bot_token_parts(token or "")
        if parts is None:
            raise E.Unauthenticated("a bot credential is required: 'authorization: Bearer tb1....'")
        bot = await self._bot(parts[0])
        digest = hashlib.sha256((token or "").encode()).hexdigest()
        if bot is None or not hmac.compare_digest(bot.token_hash, digest):
            raise E.Unauthenticated("invalid bot credential")
        if bot_id and bot_id != bot.bot_id:
            raise E.PermissionDenied("this credential is another bot's")
        return bot

    async def assignment_stream(
        self, bot: BotDoc, max_concurrent: int = 0
    ) -> AsyncIterator[Assignment | str | None]:
        """The bot lobby (see ``StreamAssignments``): yields an :class:`Assignment` to play, a
        match id whose assignment ended, or ``None`` (a heartbeat), until the worker stops.

        The assignments live in the store (written by the league job), so a bot that
        reconnects, to any worker, is sent its current assignments again. The seam for a
        bidirectional player connection: that connection can iterate this same generator."""
        if not 0 <= max_concurrent <= MAX_CONCURRENT:
            raise _invalid("max_concurrent", f"0 to {MAX_CONCURRENT}")
        limit = max_concurrent or bot.max_concurrent
        sent: dict[str, Assignment] = {}
        quiet_since = time.monotonic()
        while True:
            if self.stopping.is_set():
                raise E.ShuttingDown()
            raw = await self.documents.assignments(bot.bot_id)
            current = {
                mid: assignment_from_proto(league_service_pb2.Assignment.FromString(v))
                for mid, v in raw.items()
            }
            for mid in [m for m in sent if m not in current]:
                del sent[mid]
                quiet_since = time.monotonic()
                yield mid
            waiting = sorted(
                (a for mid, a in current.items() if mid not in sent),
                key=lambda a: (a.assigned_at, a.match_id),
            )
            for a in waiting[: max(0, limit - len(sent))]:
                sent[a.match_id] = a
                quiet_since = time.monotonic()
                yield a
            if time.monotonic() - quiet_since >= self.heartbeat_seconds:
                quiet_since = time.monotonic()
                yield None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.lobby_poll_seconds)

    # =================================================================== the league job
    def reader(self, *, tick: float = 0.25) -> QueueReader:
        """The reader of the league queue (one per worker)."""

        async def handle(claim: Claim) -> tuple[int | None, bytes]:
            return await self.advance(claim.item), b""

        return QueueReader(self.queues, LEAGUE_QUEUE, handle, owned=False, tick=tick, lease_ms=LEASE_MS)

    async def on_events(self, owner: str, events: Sequence[OperatorEvent]) -> None:
        """Wake the leagues whose matches ended (an operator-events listener)."""
        ended = (OperatorEventType.ENDED, OperatorEventType.ABORTED, OperatorEventType.CANCELLED)
        for league_id in {ev.labels.get("league", "") for ev in events if ev.type in ended}:
            if league_id:
                await self.queues.add(LEAGUE_QUEUE, league_id, _ms())

    async def advance(self, league_id: str) -> int | None:
        """One pass of the league job (see the module docstring); returns when it is due
        next (ms since the epoch), or ``None``."""
        for _ in range(CAS_ATTEMPTS * 10):
            got = await self.documents.get(LEAGUE, league_id)
            if got is None:
                return None
            version, doc = got[0], LeagueDoc.from_bytes(got[1])
            if not await self._step(doc):  # nothing to write
                return self._next_due(doc)
            # stored only if nobody wrote meanwhile; either way, look again (the next step may
            # follow at once, or another worker's document is the one to go on from)
            await self.documents.put(LEAGUE, league_id, version, doc.to_bytes())
        return _ms() + 1000

    def _next_due(self, doc: LeagueDoc) -> int | None:
        if doc.state in (State.FINISHED, State.REGISTRATION):
            return None
        if doc.state == State.PAUSED and all(t.done and t.released and t.rated for t in doc.tables.values()):
            return None
        return _ms() + self.poll_ms

    async def _step(self, doc: LeagueDoc) -> bool:
        """Change ``doc`` by the next step; ``False`` when there is nothing to do now. The
        side effects of a step (creating matches, assignments, ratings) are made before the
        step is stored and are idempotent, so a step that is lost (a death, a lost race) is
        simply done again."""
        if doc.state in (State.FINISHED, State.REGISTRATION):
            return False
        current = doc.round_pairings(doc.round)
        tables = [doc.tables[k] for p in current for k in p.tables]
        # 1. the matches of the round
        missing = [t for t in tables if not t.match_id]
        if missing:
            for t in missing:
                await self._create_table(doc, t)
            return True
        # 2. bot seats to their bots (idempotent; done again after a death)
        unassigned = [t for t in tables if not t.assigned]
        if unassigned:
            await self._assign(doc, [t for t in unassigned if not t.done])
            for t in unassigned:
                t.assigned = True
            return True
        # 3. results of finished matches
        changed = False
        limit = asyncio.Semaphore(COLLECT_CONCURRENCY)

        async def collect(t: TableDoc) -> bool:
            async with limit:
                snap = await self.matches.log.load(t.match_id)
                if snap is None or snap.status not in TERMINAL:
                    return False
                record = await self.reads.get_match_record(
                    Operator(doc.owner), T.GetMatchRecordRequest(t.match_id)
                )
            out = outcome_of(record.record)
            t.done, t.winner_side, t.forfeit = True, out.winner_side, out.forfeit
            t.points, t.deals = list(out.points), [list(d) for d in out.deals]
            return True

        if any(await asyncio.gather(*(collect(t) for t in tables if not t.done))):
            changed = True
        for p in current:
            if p.result is None and p.tables and all(doc.tables[k].done for k in p.tables):
                p.result = self._decide(doc, p)
                changed = True
        if changed:
            return True
        # 4. release and rate finished matches
        pending = [t for t in tables if t.done and not (t.released and t.rated)]
        if pending:
            await self._finish_tables(doc, pending)
            for t in pending:
                t.released = t.rated = True
            return True
        # 5. the next round, or the end
        if doc.state != State.RUNNING or not doc.round_complete(doc.round):
            return False
        event = doc.event()
        results = doc.results()
        if doc.round > 0 and self._finished(doc, event, results):
            doc.state = State.FINISHED
            log.info("league finished", league_id=doc.league_id, rounds=doc.round)
            return True
        try:
            paired = event.pairings(doc.round + 1, results, doc.withdrawn())
        except NoValidPairingError as exc:
            doc.state, doc.finish_reason = State.FINISHED, exc.message
            log.info("league finished: no valid pairing", league_id=doc.league_id, round=doc.round + 1)
            return True
        doc.round += 1
        for pairing in paired:
            pd = PairingDoc(pairing.round, pairing.table, pairing.first, pairing.second, pairing.label)
            if pairing.is_bye:
                pd.result = result_dict(pairing.bye_result())
            for dt in event.tables(pairing):
                doc.tables[dt.key] = TableDoc(dt.key, dt.deal_set, list(dt.sides))
                pd.tables.append(dt.key)
            doc.pairings.append(pd)
        log.info("league round paired", league_id=doc.league_id, round=doc.round, pairings=len(paired))
        return True

    @staticmethod
    def _finished(doc: LeagueDoc, event: Event, results: Sequence[Result]) -> bool:
        """Every round played: a round robin's and a Swiss's count is fixed (asking the Swiss
        would pair a round again to see whether it has tables); a knockout's depends on the
        results (the grand final's reset)."""
        if parse_format(doc.format) in ELIMINATION:
            return event.is_finished(results, doc.withdrawn())
        return doc.round >= event.total_rounds()

    # ------------------------------------------------------------------- tables
    def _deals(self, doc: LeagueDoc, rules: te.RuleSet, deal_set: str) -> tuple[tuple[str, ...], ...]:
        """The deck orders of a deal set: the same for every table of the set, drawn from the
        league's secret with the fairness module's shuffle."""
        seed = hmac.new(bytes.fromhex(doc.deal_key), deal_set.encode(), hashlib.sha256).digest()
        return tuple(tuple(deck_for_hand(seed, k, rules.deck_cards)) for k in range(1, DUPLICATE_DEALS + 1))

    async def _create_table(self, doc: LeagueDoc, t: TableDoc) -> None:
        base = _spec(match_service_pb2.CreateMatchRequest.FromString(bytes.fromhex(doc.template)))
        rules = te.get_rules(base.preset, **dict(base.overrides))
        players = doc.entrant_players()
        seats: list[str] = [""] * doc.players
        for direction, entrant_id in enumerate(t.sides):
            for j, player in enumerate(players[entrant_id]):
                seats[direction + 2 * j] = player
        duplicate = doc.duplicate_options().mode is not DuplicateMode.OFF
        req = dataclasses.replace(
            base,
            seats=tuple(
                SeatSpec(p, SeatKind.BOT if p.startswith(BOT_PREFIX) else SeatKind.HUMAN) for p in seats
            ),
            labels={**base.labels, "league": doc.league_id, "round": str(doc.round), "table": t.key},
            deck_orders=self._deals(doc, rules, t.deal_set) if duplicate else (),
            request_id=f"league:{doc.league_id}:{t.key}",
            first_dealer=None,  # the last seat deals: seat 0 (direction 0) is mano in the first hand
        )
        created = await self.create_match(Operator(doc.owner), req)
        t.match_id = created.match.match_id
        t.seats = [[i, p, created.seat_tokens[i]] for i, p in enumerate(seats)]

    async def _assign(self, doc: LeagueDoc, tables: Sequence[TableDoc]) -> None:
        now = self.now()
        round_of = {k: p.round for p in doc.pairings for k in p.tables}
        for t in tables:
            for seat, player, token in t.seats:
                if player.startswith(BOT_PREFIX):
                    a = Assignment(t.match_id, seat, token, doc.league_id, round_of[t.key], t.key, now)
                    await self.documents.assignment_put(
                        player, t.match_id, assignment_to_proto(a).SerializeToString()
                    )

    async def _finish_tables(self, doc: LeagueDoc, tables: Sequence[TableDoc]) -> None:
        players = doc.entrant_players()
        played = []
        for t in tables:
            for _seat, player, _token in t.seats:
                if player.startswith(BOT_PREFIX) and not t.released:
                    await self.documents.assignment_delete(player, t.match_id)
            if t.rated or t.winner_side is None or t.forfeit:
                continue  # forfeits and matches without a winner are not rated
            sides = tuple(tuple(players[e]) for e in t.sides)
            played.append(RatedMatch(t.match_id, doc.family, sides, ranks_from_winner(sides, t.winner_side)))
        if played:
            applied = await self._rate(doc.owner, doc.family, played)
            log.info("matches rated", league_id=doc.league_id, matches=len(applied))

    def _decide(self, doc: LeagueDoc, p: PairingDoc) -> dict[str, Any]:
        """The result of a pairing whose matches are all over."""
        pairing = p.pairing()
        tables = [doc.tables[k] for k in p.tables]
        knockout = parse_format(doc.format) in ELIMINATION
        if len(tables) == 1:
            t = tables[0]
            winner = None if t.winner_side is None else t.sides[t.winner_side]
            if winner is None and knockout:
                winner = pairing.first  # nobody won (both absent): the better seed goes through
            return result_dict(pairing.result(winner, (t.points[0], t.points[1]), t.forfeit))
        if any(t.forfeit for t in tables):
            wins = {pairing.first: 0, pairing.second: 0}
            for t in tables:
                if t.winner_side is not None:
                    wins[t.sides[t.winner_side]] += 1
            a, b = wins[pairing.first], wins[pairing.second or ""]
            winner = pairing.first if a > b else pairing.second if b > a else None
            if winner is None and knockout:
                winner = pairing.first
            return result_dict(pairing.result(winner, (0, 0), True))
        ta, tb = doc.event(min_entrants=False).tables(pairing)
        scores = [
            DealScore(t.key, k, (pts[0], pts[1]))
            for t in tables
            for k, pts in enumerate(t.deals[:DUPLICATE_DEALS])
        ]
        options = doc.duplicate_options()
        comparison = compare_pair((ta, tb), scores, options.imp_scale)
        result = comparison.result(pairing, options.scoring)
        if result.winner is None and knockout:
            # a level comparison: the matches won decide, then the better seed
            won = [t.sides[t.winner_side] for t in tables if t.winner_side is not None]
            a, b = won.count(pairing.first), won.count(pairing.second or "")
            result = dataclasses.replace(result, winner=pairing.second if b > a else pairing.first)
        out = result_dict(result)
        sign = 1 if comparison.a == pairing.first else -1
        out["deals"] = [
            [d.deal, sign * d.net_table_a, sign * d.net_table_b, sign * d.net, sign * d.imps]
            for d in comparison.deals
        ]
        out["net"], out["imps"] = sign * comparison.net, sign * comparison.imps
        return out


def _spec(template: match_service_pb2.CreateMatchRequest) -> T.CreateMatchRequest:
    """The match every table of a league starts from (its template); a malformed one is
    INVALID_ARGUMENT naming the field."""
    try:
        spec = codec.match_spec_from_proto(template)
    except codec.DecodeError as exc:
        raise _invalid(exc.field, exc.message) from None
    return T.CreateMatchRequest(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)})


def _json(raw: bytes) -> dict[str, Any]:
    import orjson

    value = orjson.loads(raw)
    assert isinstance(value, dict)
    return value


def _dumps(value: dict[str, Any]) -> bytes:
    import orjson

    return orjson.dumps(value)
