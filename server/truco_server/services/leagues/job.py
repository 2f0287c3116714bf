"""The league job: everything that moves a league on.

The job is one pass, :meth:`LeagueJob.advance`, run by whichever worker claims the league's
item on the ``league`` queue (:data:`~truco_server.ports.queues.LEAGUE`; the clock's
sharded-queue machinery, so a dead worker's claim expires and another takes it). A pass
loads the league document and, each step written with a compare-and-set on the document's
version:

1. creates the current round's matches that have no match id yet -- each with the request
   id ``league:<league id>:<table key>``, so a creation retried by another worker after a
   death returns the same match (CreateMatch's request-id idempotence) -- and records their
   ids;
2. hands each bot seat to its bot account (the bot lobby's assignment, an idempotent write);
3. collects the result of every match that is over (read from its record), and decides each
   pairing whose matches are all over (a duplicate pairing deal by deal); a best-of-N series
   not decided yet gets its next game's table instead, whose match step 1 creates
   (:mod:`.series`);
4. removes the bot assignments of finished matches, rates each finished match once (the
   rating book skips a match id it has applied), and marks them so;
5. when the round is complete and the league runs: ends the league, or pairs the next round
   (the library's pairing is a pure function of the results, so a second worker computes
   the same round) and goes back to 1.

Steps 1, 2 and 4 take at most :data:`TABLES_PER_STEP` tables each, and a pass takes no new
step after :data:`PASS_BUDGET_S` (half its claim) and is due again at once: a round of
hundreds of matches is made over several stored steps and passes, each pass well within the
claim, so the claim does not expire under a pass that is still running. Passes can still
overlap: a match-ended event makes the league due at once (:meth:`LeagueJob.wake`), also while
a pass runs. Every write of the document is a compare-and-set and the side effects are
idempotent, with one exception the lobby covers: an assignment a late pass writes again after
its table was released is let go by the bot's lobby stream once it blocks the bot
(:meth:`~truco_server.services.leagues.bots.BotAccounts.assignment_stream`).

A pass ends with the next time it is due: the fallback poll while matches are under way,
nothing once the league is finished or waits for its operator. The match-ended events of a
league's matches (relayed by :class:`~truco_server.services.operators.Operators`) wake it at once.

Writes that lost the compare-and-set are recomputed from the newer document, so a round is
paired once, a result is recorded once and a match is rated once, whichever worker does it
and wherever it dies.

A pass writes nothing for a league that is gone (lost with a Redis that restarted without
persistence while the pass was under way): its matches, its bots' assignments and its
ratings each require the league document (``requires``, :mod:`truco_server.ports.documents`),
checked by the store in the write itself, and the league document is written only over the
version read; a wakeup of the league requires it too, and a pass ends its claim on the
queue only while the claim holds (``owned``). A refused write ends the pass and drops the
league's job, with a warning and ``truco_orphaned_work_dropped_total{parent="league"}``. An
assignment whose bot account is gone is skipped the same way (``parent="bot"``); the league
goes on without it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import structlog

import truco_engine as te
from truco_contract import codec
from truco_contract.leagues import Assignment, assignment_to_proto
from truco_contract.pb import match_service_pb2
from truco_match.create import SeatSpec
from truco_match.events import MatchStatus, SeatKind
from truco_match.fairness import deck_for_hand
from truco_match.match import Match
from truco_match.operator_events import OperatorEvent, OperatorEventType
from truco_server.core import metrics
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.leagues import (
    DealScore,
    DuplicateMode,
    Event,
    LeagueError,
    NoValidPairingError,
    RatedMatch,
    Result,
    compare_pair,
    parse_format,
    ranks_from_winner,
)
from truco_server.leagues.formats import ELIMINATION
from truco_server.ports.documents import DocRef, Documents
from truco_server.ports.errors import ParentMissing
from truco_server.ports.queues import LEAGUE as LEAGUE_QUEUE
from truco_server.ports.queues import Claim, Queues
from truco_server.services.leagues import arena, control
from truco_server.services.leagues.bots import BOT_PREFIX
from truco_server.services.leagues.documents import (
    BOT,
    CAS_ATTEMPTS,
    LEAGUE,
    LeagueDoc,
    PairingDoc,
    State,
    TableDoc,
    load_league,
    result_dict,
    save_league,
)
from truco_server.services.leagues.errors import invalid
from truco_server.services.leagues.outcomes import NO_SHOW, TIME_FORFEIT, outcome_of
from truco_server.services.leagues.series import advance_series, is_series, series_rating
from truco_server.services.matches import MatchService
from truco_server.services.ratings import RatingBooks
from truco_server.services.reads import MatchReads
from truco_server.services.scheduler import QueueReader

log = structlog.get_logger("truco.leagues")

DUPLICATE_DEALS = 64
"""Deck orders drawn per deal set: hands beyond them are shuffled from each match's own seed
and not compared (a match to 30 points rarely lasts 40 hands)."""
POLL_MS = 5_000
"""While matches are under way, a league is looked at again after this long even if no
match-ended event woke it (the events are the fast path)."""
LEASE_MS = 10_000
"""How long a worker holds a league's job; another worker takes it over after a death."""
PASS_BUDGET_S = LEASE_MS / 2000
"""A pass stops taking new steps after this long and is due again at once: it ends well
within its claim, so the claim's expiry does not let another worker start the same steps
while it runs (and publish the same league events again)."""
TABLES_PER_STEP = 32
"""Matches a step creates, tables whose bots it assigns, or finished tables it releases and
rates, before it is stored: a round of 500 tables is several steps, each within the pass's
budget."""
COLLECT_CONCURRENCY = 16
"""Matches looked at (and their records read) at once when collecting a round's results."""
TERMINAL = {MatchStatus.FINISHED.value, MatchStatus.ABORTED.value, MatchStatus.CANCELLED.value}


Publish = Callable[[str, Sequence[OperatorEvent]], Awaitable[None]]
"""How the job puts an owner's league events on its feed (``Operators.publish``)."""


class CreateMatch(Protocol):
    """How the job creates a table's match (:meth:`~truco_server.services.steps.MatchSteps.create_match`)."""

    def __call__(
        self, operator: Operator, req: T.CreateMatchRequest, *, requires: Sequence[DocRef] = ...
    ) -> Awaitable[T.CreateMatchResponse]: ...


def _ms() -> int:
    return round(time.time() * 1000)


class LeagueJob:
    """The league job of one worker (see the module docstring)."""

    listens = (OperatorEventType.ENDED, OperatorEventType.ABORTED, OperatorEventType.CANCELLED)
    """The operator events :meth:`on_events` acts on."""

    def __init__(
        self,
        documents: Documents,
        queues: Queues,
        matches: MatchService,
        reads: MatchReads,
        *,
        create_match: CreateMatch,
        ratings: RatingBooks,
        publish: Publish | None = None,
        poll_ms: int = POLL_MS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.documents = documents
        self.queues = queues
        self.matches = matches
        self.reads = reads
        self.ratings = ratings
        self.poll_ms = poll_ms
        self.now = clock
        self.create_match = create_match
        """How a table's match is created (tests wrap it to stop a pass half-way)."""
        self.publish = publish
        """How league events reach the operator's feed and webhooks (none: they are dropped)."""
        self.pass_budget_s = PASS_BUDGET_S

    def reader(self, *, tick: float = 0.25) -> QueueReader:
        """The reader of the league queue (one per worker)."""

        async def handle(claim: Claim) -> tuple[int | None, bytes]:
            return await self.advance(claim.item), b""

        # owned: a pass ends its claim only while the claim holds, so a league whose queue was
        # lost under it (a Redis restarted empty) is not queued again by it
        return QueueReader(self.queues, LEAGUE_QUEUE, handle, owned=True, tick=tick, lease_ms=LEASE_MS)

    async def wake(self, league_id: str, *, at_ms: int | None = None) -> None:
        """Queue a pass of the league now, or at ``at_ms`` unless it is due earlier (nothing
        when the league is gone)."""
        due = _ms() if at_ms is None else at_ms
        try:
            await self.queues.add(LEAGUE_QUEUE, league_id, due, requires=(DocRef(LEAGUE, league_id),))
        except ParentMissing:
            metrics.ORPHANED_WORK.labels("league").inc()
            log.warning("league not woken: the league no longer exists", league_id=league_id)

    @staticmethod
    def concerns(match: Match) -> bool:
        """Only a league's matches' events are for it."""
        return bool(match.meta.labels.get("league"))

    async def on_events(self, owner: str, events: Sequence[OperatorEvent]) -> None:
        """Wake the leagues whose matches ended (an operator-events listener)."""
        for league_id in {ev.labels.get("league", "") for ev in events if ev.type in self.listens}:
            if league_id:
                await self.wake(league_id)

    async def advance(self, league_id: str) -> int | None:
        """One pass of the league job (see the module docstring); returns when it is due
        next (ms since the epoch), or ``None``: nothing to do until something wakes it, or
        the league is gone."""
        try:
            return await self._advance(league_id)
        except ParentMissing as exc:  # the league went while the pass ran: nothing written
            metrics.ORPHANED_WORK.labels("league").inc()
            log.warning(
                "league job dropped: the league no longer exists", league_id=league_id, refused=str(exc)
            )
            return None

    async def _advance(self, league_id: str) -> int | None:
        stored = None
        budget_ends = time.monotonic() + self.pass_budget_s
        for _ in range(CAS_ATTEMPTS * 10):
            if stored is None:
                stored = await load_league(self.documents, league_id)
                if stored is None:
                    return None
            if not await self._step(stored.doc):  # nothing to write
                return self._next_due(stored.doc)
            # stored only if nobody wrote meanwhile: then the next step may follow at once
            # from this document; otherwise another worker's document is the one to go on from
            if not await save_league(self.documents, stored):
                stored = None
            elif time.monotonic() >= budget_ends:  # the rest in a new pass, due now
                return _ms()
        return _ms() + 1000

    def _next_due(self, doc: LeagueDoc) -> int | None:
        if doc.state == State.REGISTRATION and doc.starts_at:
            return round(doc.starts_at * 1000)
        if doc.state in (State.FINISHED, State.REGISTRATION):
            return None
        if doc.state == State.RUNNING and doc.round_done_at:  # the pause between rounds
            return min(_ms() + self.poll_ms, round((doc.round_done_at + doc.round_interval) * 1000))
        if doc.state == State.PAUSED and all(t.done and t.released and t.rated for t in doc.tables.values()):
            return None
        if doc.is_arena:
            return arena.next_due_ms(doc, _ms(), self.poll_ms)
        return _ms() + self.poll_ms

    async def _step(self, doc: LeagueDoc) -> bool:
        """Change ``doc`` by the next step; ``False`` when there is nothing to do now. The
        side effects of a step (creating matches, assignments, ratings) are made before the
        step is stored and are idempotent, so a step that is lost (a death, a lost race) is
        simply done again."""
        # 0. league events stored by an earlier step (or call) to the operator's feed: at
        # least once, in order, each with its stable id
        if doc.outbox:
            if self.publish is not None:
                await self.publish(doc.owner, [league_event(e) for e in doc.outbox])
            doc.outbox = []
            return True
        if doc.state == State.REGISTRATION and doc.starts_at and self.now() >= doc.starts_at:
            _scheduled_start(doc, self.now())
            return True
        if doc.state == State.REGISTRATION:
            return False
        # a finished league goes through steps 1-4 too: they find its matches made and
        # collected, and rate again a result corrected after the end (step 4)
        # (an arena: every pairing still in play, of any wave)
        current = doc.live_pairings() if doc.is_arena else doc.round_pairings(doc.round)
        tables = [doc.tables[k] for p in current for k in p.tables]
        # 1. the matches of the round
        missing = [t for t in tables if not t.match_id]
        if missing:
            for t in missing[:TABLES_PER_STEP]:
                await self._create_table(doc, t)
            return True
        # 2. bot seats to their bots (idempotent; done again after a death)
        unassigned = [t for t in tables if not t.assigned][:TABLES_PER_STEP]
        if unassigned:
            await self._assign(doc, [t for t in unassigned if not t.done])
            for t in unassigned:
                t.assigned = True
            return True
        # 3. results of finished matches
        if await self._collect(doc, current, tables):
            return True
        # 4. release and rate finished matches (of any round: a corrected result is rated again)
        pending = [t for t in doc.tables.values() if t.done and not (t.released and t.rated)]
        pending = pending[:TABLES_PER_STEP]
        if pending:
            await self._finish_tables(doc, pending)
            for t in pending:
                t.released = t.rated = True
            return True
        # 5. the next round, or the end (an arena: the waiting entrants' wave, or its end)
        if doc.is_arena:
            return arena.arena_step(doc, self.now())
        if doc.state != State.RUNNING or not doc.round_complete(doc.round):
            return False
        if doc.round and doc.round_interval:  # the pause between rounds, from the last result
            if not doc.round_done_at:
                doc.round_done_at = self.now()
                return True
            if self.now() < doc.round_done_at + doc.round_interval:
                return False
        doc.round_done_at = 0.0
        # pairing a large field (or by the Dutch system) takes CPU seconds: off the event
        # loop, so the worker's matches and streams go on meanwhile (the doc is this pass's own)
        await asyncio.to_thread(_next_round, doc, self.now())
        return True

    # ------------------------------------------------------------------- tables
    async def _create_table(self, doc: LeagueDoc, t: TableDoc) -> None:
        base = match_template(match_service_pb2.CreateMatchRequest.FromString(bytes.fromhex(doc.template)))
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
            labels={**base.labels, "league": doc.league_id, "round": t.key.split(".")[0][1:], "table": t.key},
            deck_orders=_deals(doc, rules, t.deal_set) if duplicate else (),
            request_id=f"league:{doc.league_id}:{t.key}",
            first_dealer=None,  # the last seat deals: seat 0 (direction 0) is mano in the first hand
        )
        created = await self.create_match(Operator(doc.owner), req, requires=(DocRef(LEAGUE, doc.league_id),))
        t.match_id = created.match.match_id
        t.seats = [[i, p, created.seat_tokens[i]] for i, p in enumerate(seats)]
        t.spectator = created.spectator_token

    async def _assign(self, doc: LeagueDoc, tables: Sequence[TableDoc]) -> None:
        now = self.now()
        round_of = {k: p.round for p in doc.pairings for k in p.tables}
        for t in tables:
            for seat, player, token in t.seats:
                if player.startswith(BOT_PREFIX):
                    a = Assignment(t.match_id, seat, token, doc.league_id, round_of[t.key], t.key, now)
                    parents = (DocRef(LEAGUE, doc.league_id), DocRef(BOT, player))
                    try:
                        await self.documents.assignment_put(
                            player, t.match_id, assignment_to_proto(a).SerializeToString(), requires=parents
                        )
                    except ParentMissing as exc:
                        if exc.ref.kind != BOT:
                            raise
                        metrics.ORPHANED_WORK.labels("bot").inc()
                        log.warning(
                            "bot assignment dropped: the bot account no longer exists",
                            league_id=doc.league_id,
                            bot_id=player,
                            match_id=t.match_id,
                        )

    async def _collect(
        self, doc: LeagueDoc, current: Sequence[PairingDoc], tables: Sequence[TableDoc]
    ) -> bool:
        """Record the outcome of every table whose match is over and decide every pairing
        whose tables are all done; ``False`` when nothing changed."""
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
            t.done, t.winner_side, t.forfeit, t.ending = True, out.winner_side, out.forfeit, out.ending
            t.points, t.deals = list(out.points), [list(d) for d in out.deals]
            return True

        todo = [t for t in tables if not t.done]
        now_done = {
            t.key for t, done in zip(todo, await asyncio.gather(*map(collect, todo)), strict=True) if done
        }
        changed = bool(now_done)
        for p in current:
            for k in p.tables:
                t = doc.tables[k]
                if k in now_done and t.ending in (NO_SHOW, TIME_FORFEIT):
                    _forfeited(doc, p, t, self.now())
        event: Event | None = None  # built once, for the pairings decided now
        for p in current:
            if p.result is None and p.tables and all(doc.tables[k].done for k in p.tables):
                if is_series(doc, p):  # its result, or its next game's table
                    advance_series(doc, p)
                else:
                    event = event or doc.event(min_entrants=False)
                    p.result = decide(doc, p, event)
                changed = True
        return changed

    async def _finish_tables(self, doc: LeagueDoc, tables: Sequence[TableDoc]) -> None:
        """Remove the bot assignments of finished tables, and rate each under the league's
        policy (a table the policy does not count is un-rated, in case a correction made it
        so; the book ignores a match it already holds as it is)."""
        players = doc.entrant_players()
        series = {k: p for p in doc.pairings if is_series(doc, p) for k in p.tables}
        played, unrated = [], []
        for t in tables:
            for _seat, player, _token in t.seats:
                if player.startswith(BOT_PREFIX) and not t.released:
                    await self.documents.assignment_delete(player, t.match_id)
            if t.rated:
                continue
            if t.key in series:  # a series is rated as one match, with its last game
                p = series[t.key]
                if p.result is not None and t.key == p.tables[-1]:
                    rated = series_rating(doc, p, players)
                    played.extend([rated] if rated else [])
                    unrated.extend([] if rated else [doc.tables[p.tables[0]].match_id])
                continue
            if not doc.counts(t):
                unrated.append(t.match_id)
                continue
            sides = tuple(tuple(players[e]) for e in t.sides)
            assert t.winner_side is not None
            played.append(RatedMatch(t.match_id, doc.family, sides, ranks_from_winner(sides, t.winner_side)))
        if played or unrated:
            applied = await self.ratings.rate(
                doc.owner, doc.family, played, unrated, requires=(DocRef(LEAGUE, doc.league_id),)
            )
            log.info("matches rated", league_id=doc.league_id, matches=len(applied))


# ----------------------------------------------------------------------- rounds and results
def _forfeited(doc: LeagueDoc, p: PairingDoc, t: TableDoc, now: float) -> None:
    """``entrant.forfeited`` for each side of a finished table that lost it without playing
    (did not join, or ran out of time)."""
    for side, entrant in enumerate(t.sides):
        if t.winner_side is None or side != t.winner_side:
            doc.emit(
                "entrant.forfeited", now, t.match_id,
                round=p.round, table=p.table, entrant=entrant, ending=t.ending or NO_SHOW,
            )  # fmt: skip


def league_event(e: dict[str, Any]) -> OperatorEvent:
    """A stored league event (:meth:`LeagueDoc.emit`) as an operator event."""
    return OperatorEvent(
        id=e["id"],
        match_id=e["match_id"],
        type=OperatorEventType(e["type"]),
        time=e["time"],
        labels=e["labels"],
    )


def _scheduled_start(doc: LeagueDoc, now: float) -> None:
    """Start a league at its start time (as StartLeague would: those who did not check in
    are withdrawn), or end it when it cannot start (too few entrants)."""
    try:
        control.start(doc, now)
    except LeagueError as exc:
        doc.state, doc.finish_reason = State.FINISHED, f"not started at its start time: {exc}"
        doc.emit("league.finished", now, rounds=0, reason=doc.finish_reason)
        return
    log.info("league started at its start time", league_id=doc.league_id)


def _next_round(doc: LeagueDoc, now: float) -> None:
    """End the league whose rounds are all played, or pair its next round."""
    event = doc.event()
    results = doc.results()
    if doc.round > 0 and _finished(doc, event, results):
        doc.state = State.FINISHED
        doc.emit("league.finished", now, rounds=doc.round)
        log.info("league finished", league_id=doc.league_id, rounds=doc.round)
        return
    nxt = doc.round + 1
    try:
        paired = event.pairings(
            nxt, results, doc.withdrawn(), forbidden=doc.forbidden_pairs(), overrides=doc.round_overrides(nxt)
        )
    except NoValidPairingError as exc:
        doc.state, doc.finish_reason = State.FINISHED, exc.message
        doc.emit("league.finished", now, rounds=doc.round, reason=exc.message)
        log.info("league finished: no valid pairing", league_id=doc.league_id, round=nxt)
        return
    except LeagueError as exc:  # the operator's pairings no longer fit: the operator decides
        doc.state, doc.finish_reason = State.PAUSED, f"round {nxt}: {exc}"
        doc.emit("league.paused", now, round=nxt, reason=doc.finish_reason)
        log.info("league paused: the operator's pairings do not fit", league_id=doc.league_id, round=nxt)
        return
    doc.overrides.pop(str(nxt), None)
    doc.round += 1
    for pairing in paired:
        pd = PairingDoc(pairing.round, pairing.table, pairing.first, pairing.second, pairing.label)
        if pairing.is_bye:
            pd.result = result_dict(pairing.bye_result())
        for dt in event.tables(pairing):
            doc.tables[dt.key] = TableDoc(dt.key, dt.deal_set, list(dt.sides))
            pd.tables.append(dt.key)
        doc.pairings.append(pd)
    byes = sum(1 for p in paired if p.is_bye)
    doc.emit("round.paired", now, round=doc.round, pairings=len(paired) - byes, byes=byes)
    log.info("league round paired", league_id=doc.league_id, round=doc.round, pairings=len(paired))


def _finished(doc: LeagueDoc, event: Event, results: Sequence[Result]) -> bool:
    """Every round played: a round robin's and a Swiss's count is fixed (asking the Swiss
    would pair a round again to see whether it has tables); a knockout's depends on the
    results (the grand final's reset)."""
    if parse_format(doc.format) in ELIMINATION:
        return event.is_finished(results, doc.withdrawn())
    return doc.round >= event.total_rounds()


def _deals(doc: LeagueDoc, rules: te.RuleSet, deal_set: str) -> tuple[tuple[str, ...], ...]:
    """The deck orders of a deal set: the same for every table of the set, drawn from the
    league's secret with the fairness module's shuffle."""
    seed = hmac.new(bytes.fromhex(doc.deal_key), deal_set.encode(), hashlib.sha256).digest()
    return tuple(tuple(deck_for_hand(seed, k, rules.deck_cards)) for k in range(1, DUPLICATE_DEALS + 1))


def decide(doc: LeagueDoc, p: PairingDoc, event: Event | None = None) -> dict[str, Any]:
    """The result of a pairing whose matches are all over (``event``: the league's, when the
    caller has it)."""
    event = event or doc.event(min_entrants=False)
    pairing = p.pairing()
    tables = [doc.tables[k] for k in p.tables]
    knockout = event.is_knockout_round(p.round)
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
    ta, tb = event.tables(pairing)
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


def match_template(template: match_service_pb2.CreateMatchRequest) -> T.CreateMatchRequest:
    """The match every table of a league starts from (its template); a malformed one is
    INVALID_ARGUMENT naming the field."""
    try:
        spec = codec.match_spec_from_proto(template)
    except codec.DecodeError as exc:
        raise invalid(exc.field, exc.message) from None
    return T.CreateMatchRequest(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)})
