"""The league service in process (typed calls, no transport) on a real ``redis-server`` and
on the in-memory store: typed errors for bad input, registration rules, teams, no-shows,
ratings once, the bot lobby's assignments, the store's documents."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from typing import Any

import pytest
from google.protobuf import duration_pb2

from tests.leagues_service.conftest import (
    OPERATOR,
    Stack,
    cred,
    play_match,
    play_round,
    run_league,
    spec,
    template,
)
from truco_contract.leagues import Assignment
from truco_contract.pb import operator_service_pb2
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.services.leagues import EntrantDoc, LeagueNotFound, LeagueStateError, State
from truco_server.services.ratings import RATINGS


async def test_unknown_format_is_a_typed_error(any_stack: Stack) -> None:
    with pytest.raises(E.InvalidArgument) as err:
        await any_stack.leagues.create_league(OPERATOR, spec("ladder", 4))
    assert err.value.field_violations[0].field == "format"
    assert "allowed: round_robin" in err.value.message


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"format": "swiss"}, "rounds"),  # a swiss needs its rounds
        ({"rounds": 3}, "rounds"),  # a round robin has its own
        ({"duplicate": ("boards", "", "")}, "duplicate.mode"),
        ({"duplicate": ("mirror", "", "")}, "duplicate"),
        ({"tie_breaks": ("buchholz", "coin")}, "tie_breaks[1]"),
        ({"name": ""}, "name"),
        ({"template": template("carancho")}, "rules"),  # three players each for himself
        ({"template": template("paulista")}, "entrants[0].members"),  # single players, 2 a side
        (
            {"template": template(join_window=duration_pb2.Duration(nanos=500_000_000))},
            "settings.join_window",
        ),
    ],
)
async def test_bad_league_options_name_the_field(
    any_stack: Stack, changes: dict[str, object], field: str
) -> None:
    with pytest.raises(E.InvalidArgument) as err:
        await any_stack.leagues.create_league(
            OPERATOR, dataclasses.replace(spec("round_robin", 4), **changes)
        )
    assert err.value.field_violations[0].field == field


async def test_too_few_entrants_is_refused_at_the_start(any_stack: Stack) -> None:
    doc = await any_stack.leagues.create_league(OPERATOR, spec("swiss", 3, rounds=2))  # registration open
    with pytest.raises(E.InvalidArgument) as err:
        await any_stack.leagues.start(OPERATOR, doc.league_id)
    assert err.value.field_violations[0].field == "entrants"
    doc = await any_stack.leagues.register(OPERATOR, doc.league_id, EntrantDoc("late", 0))
    assert [e.seed for e in doc.entrants] == [1, 2, 3, 4]  # the next free seed
    started = await any_stack.leagues.start(OPERATOR, doc.league_id)
    assert started.state == State.RUNNING
    with pytest.raises(LeagueStateError):
        await any_stack.leagues.start(OPERATOR, doc.league_id)


async def test_registration_after_the_start(any_stack: Stack) -> None:
    rr = await any_stack.leagues.create_league(OPERATOR, spec("round_robin", 4))
    await any_stack.leagues.start(OPERATOR, rr.league_id)
    await any_stack.leagues.job.advance(rr.league_id)
    with pytest.raises(LeagueStateError) as err:
        await any_stack.leagues.register(OPERATOR, rr.league_id, EntrantDoc("late", 0))
    assert err.value.code is E.Code.FAILED_PRECONDITION and err.value.reason == "REGISTRATION_CLOSED"
    sw = await any_stack.leagues.create_league(OPERATOR, spec("swiss", 6, rounds=4))
    await any_stack.leagues.start(OPERATOR, sw.league_id)
    await any_stack.leagues.job.advance(sw.league_id)
    doc = await any_stack.leagues.register(OPERATOR, sw.league_id, EntrantDoc("late", 0))
    assert doc.entrant("late") is not None and doc.entrant("late").joined_round == 2  # type: ignore[union-attr]
    with pytest.raises(E.InvalidArgument) as dup:
        await any_stack.leagues.register(OPERATOR, sw.league_id, EntrantDoc("late", 0))
    assert dup.value.field_violations[0].field.startswith("entrants")
    done = await run_league(any_stack, sw.league_id)
    assert done.round == 4
    late_rounds = {p.round for p in done.pairings if "late" in (p.first, p.second) and p.second}
    assert late_rounds and min(late_rounds) == 2
    # one bye for the round it missed (round 1), at the table after round 1's
    (bye,) = [p for p in done.pairings if p.first == "late" and not p.second]
    assert (bye.round, bye.table, bye.label) == (1, 4, "late entry") and bye.result["winner"] == "late"


async def test_another_operator_sees_no_league(any_stack: Stack) -> None:
    doc = await any_stack.leagues.create_league(OPERATOR, spec("round_robin", 3))
    with pytest.raises(LeagueNotFound):
        await any_stack.leagues.get_league(Operator("other"), doc.league_id)
    with pytest.raises(LeagueNotFound):
        await any_stack.leagues.get_league(OPERATOR, "lg-nope")
    assert [d.league_id for d in await any_stack.leagues.list_leagues(OPERATOR)] == [doc.league_id]
    assert await any_stack.leagues.list_leagues(Operator("other")) == []


async def test_create_with_a_request_id_is_idempotent(any_stack: Stack) -> None:
    one = await any_stack.leagues.create_league(
        OPERATOR, dataclasses.replace(spec("round_robin", 3), request_id="x")
    )
    two = await any_stack.leagues.create_league(
        OPERATOR, dataclasses.replace(spec("round_robin", 3), request_id="x")
    )
    assert one.league_id == two.league_id
    assert len(await any_stack.leagues.list_leagues(OPERATOR)) == 1


async def test_a_round_is_paired_once(any_stack: Stack) -> None:
    doc = await any_stack.leagues.create_league(OPERATOR, spec("swiss", 6, rounds=3))
    await any_stack.leagues.start(OPERATOR, doc.league_id)
    await asyncio.gather(*(any_stack.leagues.job.advance(doc.league_id) for _ in range(4)))
    after = await any_stack.leagues.get_league(OPERATOR, doc.league_id)
    assert after.round == 1 and len(after.pairings) == 3
    ids = [t.match_id for t in after.tables.values()]
    assert len(set(ids)) == 3 and all(ids)
    await any_stack.leagues.job.advance(doc.league_id)
    again = await any_stack.leagues.get_league(OPERATOR, doc.league_id)
    assert again.pairings == after.pairings


async def test_a_pass_writes_only_the_parts_that_changed(any_stack: Stack) -> None:
    """Two of a round's eight matches end: the pass that records them writes their two
    pairings' parts (the result, then released and rated), not the entrants, the head or
    the six pairings still playing; the league read back is the one the pass kept."""
    s = any_stack
    doc = await s.leagues.create_league(OPERATOR, spec("swiss", 16, rounds=3))
    await s.leagues.start(OPERATOR, doc.league_id)
    await s.leagues.job.advance(doc.league_id)
    paired = await s.leagues.get_league(OPERATOR, doc.league_id)
    assert paired.round == 1 and all(t.match_id and t.assigned for t in paired.tables.values())
    written: list[set[str]] = []
    put = s.store.documents.put_parts

    async def spy(kind: str, doc_id: str, version: int, changed: object, removed: object = ()) -> bool:
        if kind == "league":
            written.append(set(changed) | set(removed))  # type: ignore[call-overload]
        return await put(kind, doc_id, version, changed, removed)  # type: ignore[arg-type]

    s.store.documents.put_parts = spy  # type: ignore[method-assign]
    ended = paired.pairings[2:4]
    for p in ended:
        (key,) = p.tables
        await s.steps.adjudicate_match(OPERATOR, T.AdjudicateMatchRequest(paired.tables[key].match_id, 0))
    await s.leagues.job.advance(doc.league_id)
    assert written == [{"p:1.3", "p:1.4"}] * 2  # collected, then released and rated
    after = await s.leagues.get_league(OPERATOR, doc.league_id)
    assert [p.table for p in after.pairings if p.result is not None] == [3, 4]
    assert after.to_parts() == (await s.store.documents.get_parts("league", doc.league_id) or (0, {}))[1]


async def test_teams_of_two_sit_in_alternate_seats(any_stack: Stack) -> None:
    teams = tuple(EntrantDoc(f"t{i}", i, [f"t{i}a", f"t{i}b"]) for i in range(1, 4))
    sp = dataclasses.replace(spec("round_robin", 3, template=template("paulista", 3)), entrants=teams)
    doc = await any_stack.leagues.create_league(OPERATOR, sp)
    assert doc.players == 4 and doc.family == "paulista-4p"
    await any_stack.leagues.start(OPERATOR, doc.league_id)
    await any_stack.leagues.job.advance(doc.league_id)
    doc = await any_stack.leagues.get_league(OPERATOR, doc.league_id)
    (t,) = [doc.tables[k] for p in doc.pairings for k in p.tables]
    first, second = t.sides
    assert [player for _, player, _ in t.seats] == [f"{first}a", f"{second}a", f"{first}b", f"{second}b"]
    done = await run_league(any_stack, doc.league_id)
    board = await any_stack.leagues.ratings.leaderboard(OPERATOR, "paulista-4p", 0)
    assert {e.player_id for e in board} == {f"t{i}{m}" for i in (1, 2, 3) for m in "ab"}
    assert all(e.rating.games == 2 for e in board)  # each team played twice
    assert done.state == State.FINISHED


async def test_a_no_show_forfeits_and_is_not_rated(stack: Stack) -> None:
    window = duration_pb2.Duration(seconds=1)
    doc = await stack.leagues.create_league(
        OPERATOR, spec("single_elimination", 2, template=template(join_window=window))
    )
    await stack.leagues.start(OPERATOR, doc.league_id)
    await stack.leagues.job.advance(doc.league_id)
    doc = await stack.leagues.get_league(OPERATOR, doc.league_id)
    (t,) = doc.tables.values()
    await stack.matches.join_match(cred(t.seats[1][2]), T.JoinMatchRequest(t.match_id))  # p02 comes
    await asyncio.sleep(1.2)
    await stack.steps.wake_match(t.match_id)  # the join window ends (the clock queue's job)
    await stack.leagues.job.advance(doc.league_id)
    done = await stack.leagues.get_league(OPERATOR, doc.league_id)
    assert done.state == State.FINISHED
    (p,) = done.pairings
    assert p.result is not None and p.result["forfeit"] and p.result["winner"] == t.sides[1]
    assert await stack.store.documents.get(RATINGS, f"{OPERATOR.name}/{doc.family}") is None  # not rated
    _, table, _ = await stack.leagues.standings(OPERATOR, doc.league_id)
    assert table[0].entrant_id == t.sides[1]


async def test_each_match_is_rated_once(any_stack: Stack) -> None:
    doc = await any_stack.leagues.create_league(OPERATOR, spec("round_robin", 4))
    await any_stack.leagues.start(OPERATOR, doc.league_id)
    done = await run_league(any_stack, doc.league_id)
    for _ in range(3):  # more wakeups than needed change nothing
        await any_stack.leagues.job.advance(doc.league_id)
    board = {
        e.player_id: e.rating.games
        for e in await any_stack.leagues.ratings.leaderboard(OPERATOR, done.family, 0)
    }
    decided = [t for t in done.tables.values() if t.winner_side is not None and not t.forfeit]
    assert sum(board.values()) == 2 * len(decided) == 2 * 6
    from truco_server.leagues import RatedMatch, ranks_from_winner

    t = decided[0]
    sides = ((t.sides[0],), (t.sides[1],))
    again = RatedMatch(t.match_id, done.family, sides, ranks_from_winner(sides, t.winner_side))
    applied = await any_stack.leagues.ratings.rate(OPERATOR.name, done.family, [again])
    assert applied == []  # the book knows it (the same match with another result is a correction)


async def _next(gen: object, timeout: float = 5.0) -> object:
    return await asyncio.wait_for(gen.__anext__(), timeout)  # type: ignore[attr-defined]


async def test_the_lobby_sends_assignments_up_to_the_bots_concurrency(any_stack: Stack) -> None:
    s = any_stack
    bot, token = await s.leagues.bots.create(OPERATOR, "one at a time", 1)
    assert (await s.leagues.bots.authenticate(token, bot.bot_id)).bot_id == bot.bot_id
    with pytest.raises(E.Unauthenticated):
        await s.leagues.bots.authenticate(token[:-2] + "xx", "")
    sp = dataclasses.replace(
        spec("round_robin", 2, duplicate="tables"),
        entrants=(EntrantDoc(bot.bot_id, 1), EntrantDoc("human", 2)),
    )
    doc = await s.leagues.create_league(OPERATOR, sp)
    await s.leagues.start(OPERATOR, doc.league_id)
    await s.leagues.job.advance(doc.league_id)
    doc = await s.leagues.get_league(OPERATOR, doc.league_id)
    assert len(await s.store.documents.assignments(bot.bot_id)) == 2  # two tables under duplicate
    stream = s.leagues.bots.assignment_stream(bot)
    first = await _next(stream)
    assert isinstance(first, Assignment) and first.league_id == doc.league_id
    assert await _next(stream) is None  # a heartbeat: the second waits for a free slot
    # a reconnection gets the current assignment again
    again = s.leagues.bots.assignment_stream(bot)
    assert await _next(again) == first
    await again.aclose()
    # the first match ends; the league releases it; the lobby sends the second
    table = next(t for t in doc.tables.values() if t.match_id == first.match_id)
    assert table.seats[first.seat][2] == first.token
    await play_match(s, first.match_id, [tok for _, _, tok in table.seats], random.Random(1))
    await s.leagues.job.advance(doc.league_id)
    got = [await _next(stream), await _next(stream)]
    assert got[0] == first.match_id
    second = got[1]
    assert isinstance(second, Assignment) and second.match_id != first.match_id
    await stream.aclose()
    await play_round(s, await s.leagues.get_league(OPERATOR, doc.league_id), random.Random(2))
    await s.leagues.job.advance(doc.league_id)
    assert await s.store.documents.assignments(bot.bot_id) == {}
    assert (await s.leagues.get_league(OPERATOR, doc.league_id)).state == State.FINISHED


async def test_documents_compare_and_set(any_stack: Stack) -> None:
    store = any_stack.store
    assert await store.documents.get("league", "x") is None
    assert await store.documents.put("league", "x", 0, b"one")
    assert not await store.documents.put("league", "x", 0, b"again")  # exists: no second creation
    assert await store.documents.get("league", "x") == (1, b"one")
    assert not await store.documents.put("league", "x", 2, b"skip")
    assert await store.documents.put("league", "x", 1, b"two")
    assert await store.documents.get("league", "x") == (2, b"two")
    await store.documents.index_add("acme", "league", "x", 1)
    await store.documents.index_add("acme", "league", "y", 2)
    await store.documents.index_add("acme", "league", "x", 3)  # listed once, at its first time
    assert await store.documents.index("acme", "league", 10) == ["y", "x"]
    await store.documents.assignment_put("bot_1", "m1", b"a")
    assert await store.documents.assignments("bot_1") == {"m1": b"a"}
    assert await store.documents.assignment_delete("bot_1", "m1")
    assert not await store.documents.assignment_delete("bot_1", "m1")


async def test_a_duplicate_pairing_is_decided_deal_by_deal_as_in_the_docs(any_stack: Stack) -> None:
    """docs/leagues.md, Example 3 and "Duplicate deals in the service": the deal points of the
    two matches become the pairing's result with its deal-by-deal comparison."""
    from truco_server.services.leagues.documents import PairingDoc, TableDoc
    from truco_server.services.leagues.job import decide

    sp = dataclasses.replace(
        spec("round_robin", 2, duplicate="tables"), entrants=(EntrantDoc("A", 1), EntrantDoc("B", 2))
    )
    doc = await any_stack.leagues.create_league(OPERATOR, sp)
    a = TableDoc("r1.t1.a", "r1.t1", ["A", "B"], done=True, winner_side=0)
    a.deals = [[12, 0], [0, 3], [1, 2], [2, 3], [0, 1]]
    b = TableDoc("r1.t1.b", "r1.t1", ["B", "A"], done=True, winner_side=0)
    b.deals = [[2, 0], [1, 1], [3, 1], [2, 1]]
    doc.tables = {a.key: a, b.key: b}
    result = decide(doc, PairingDoc(1, 1, "A", "B", tables=[a.key, b.key]))
    assert result["deals"] == [
        [0, 12, -2, 10, 6],
        [1, -3, 0, -3, -3],
        [2, -1, -2, -3, -3],
        [3, -1, -1, -2, -2],
    ]
    assert (result["net"], result["imps"], result["winner"]) == (2, -2, "A")  # net decides by default
    assert (result["first_points"], result["second_points"]) == (18, 16)
    doc.duplicate["scoring"] = "imps"
    by_imps = decide(doc, PairingDoc(1, 1, "A", "B", tables=[a.key, b.key]))
    assert by_imps["winner"] == "B"


@pytest.mark.parametrize(
    ("fmt", "n", "duplicate"),
    [("double_elimination", 5, ""), ("single_elimination", 4, "tables"), ("swiss", 6, "tables")],
)
async def test_formats_run_to_the_end(stack: Stack, fmt: str, n: int, duplicate: str) -> None:
    rounds = 3 if fmt == "swiss" else None
    doc = await stack.leagues.create_league(OPERATOR, spec(fmt, n, rounds=rounds, duplicate=duplicate))
    await stack.leagues.start(OPERATOR, doc.league_id)
    done = await run_league(stack, doc.league_id, seed=n)
    assert all(p.result is not None for p in done.pairings)
    if fmt != "swiss":  # a knockout pairing always has a winner, duplicate or not
        assert all(p.result["winner"] for p in done.pairings)  # type: ignore[index]
    tables = [done.tables[k] for p in done.pairings for k in p.tables]
    assert all(len(p.tables) == (2 if duplicate else 1) for p in done.pairings if p.second)
    assert all(t.done and t.match_id for t in tables)
    _, table, _ = await stack.leagues.standings(OPERATOR, doc.league_id)
    assert table[0].rank == 1 and len(table) == n
    if fmt == "double_elimination":
        final = [p for p in done.pairings if p.label.startswith("GF")]
        assert final and table[0].entrant_id == final[-1].result["winner"]  # type: ignore[index]


async def test_pause_and_resume_are_league_events_in_order(stack: Stack) -> None:
    """StartLeague, PauseLeague, ResumeLeague, then the job's pass: the league's events are on
    the operator's stream in that order, before the round the pass pairs."""
    operator = Operator("acme-events")
    doc = await stack.leagues.create_league(operator, spec("round_robin", 4))
    await stack.leagues.start(operator, doc.league_id)
    await stack.leagues.pause(operator, doc.league_id)
    await stack.leagues.resume(operator, doc.league_id)
    await stack.leagues.job.advance(doc.league_id)
    stream = await stack.store.operators.read(operator.name, "", 1000)
    events = [operator_service_pb2.OperatorEvent.FromString(raw) for _cursor, raw in stream]
    league = [
        e
        for e in events
        if e.labels.get("league") == doc.league_id and e.type.startswith(("league.", "round."))
    ]
    assert [(e.type, e.labels.get("round", "")) for e in league] == [
        ("league.started", ""),
        ("league.paused", "0"),
        ("league.resumed", "0"),
        ("round.paired", "1"),
    ]
    assert [e.id for e in league] == [f"{doc.league_id}:e{i}" for i in range(1, 5)]
    assert league[1].labels["reason"] == "PauseLeague"
    assert (await stack.leagues.get_league(operator, doc.league_id)).outbox == []  # all published


async def test_league_events_go_to_the_webhooks_that_want_them(stack: Stack) -> None:
    """A webhook for league.started and round.paired gets one delivery of each, in order,
    with the event's id as webhook-id and a body with the league's labels and no match event;
    a webhook for match events only gets no league event."""
    operator = Operator("acme-hooks")
    wants = await stack.operators.create_webhook(
        operator, "https://93.184.216.34/l", ["league.started", "round.paired"], ""
    )
    other = await stack.operators.create_webhook(operator, "https://93.184.216.34/m", ["match.ended"], "")
    queued: list[Any] = []

    class Capture:
        async def enqueue(self, delivery: Any) -> None:
            queued.append(delivery)

    stack.operators.deliverer = Capture()  # type: ignore[assignment]
    doc = await stack.leagues.create_league(operator, spec("round_robin", 4))
    await stack.leagues.start(operator, doc.league_id)
    await stack.leagues.job.advance(doc.league_id)
    league = [d for d in queued if not d.type.startswith("match.")]
    assert [(d.webhook_id, d.type, d.event_id) for d in league] == [
        (wants.webhook_id, "league.started", f"{doc.league_id}:e1"),
        (wants.webhook_id, "round.paired", f"{doc.league_id}:e2"),
    ]
    assert not [d for d in queued if d.webhook_id == other.webhook_id and not d.type.startswith("match.")]
    body = json.loads(league[1].body)
    assert body["type"] == "round.paired" and "event" not in body["data"]
    assert body["data"]["labels"] == {"league": doc.league_id, "round": "1", "pairings": "2", "byes": "0"}


async def test_a_correction_after_the_end_is_rated_again(any_stack: Stack) -> None:
    """CorrectResult on a finished league: the job (woken by the correction) rates the
    corrected match again, in place of its first rating."""
    s = any_stack
    doc = await s.leagues.create_league(OPERATOR, spec("round_robin", 3))
    await s.leagues.start(OPERATOR, doc.league_id)
    done = await run_league(s, doc.league_id, seed=3)
    assert done.state == State.FINISHED
    p = next(p for p in done.pairings if p.second is not None and p.result and p.result["winner"])
    assert p.result is not None and p.second is not None
    loser = p.second if p.result["winner"] == p.first else p.first
    before = {e.player_id: e.rating for e in await s.leagues.ratings.leaderboard(OPERATOR, done.family, 0)}
    await s.leagues.correct(OPERATOR, doc.league_id, p.round, p.table, (loser, 3, 0, False), "the test")
    await s.leagues.job.advance(doc.league_id)
    after = {e.player_id: e.rating for e in await s.leagues.ratings.leaderboard(OPERATOR, done.family, 0)}
    assert {k: r.games for k, r in after.items()} == {k: r.games for k, r in before.items()}
    assert after[loser].mu > before[loser].mu
