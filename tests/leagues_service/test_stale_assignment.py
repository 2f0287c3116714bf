"""A bot's assignment written again after its table was released (a league pass that started
before the release and ran late: a match-ended event makes the league due while a pass runs)
must not hold the bot's only slot for good. Seen in the league campaign: bots that were never
sent another match, whose seats then forfeited round after round."""

from __future__ import annotations

import asyncio
import dataclasses
import random

from tests.leagues_service.conftest import OPERATOR, Stack, play_match, spec
from truco_contract.leagues import Assignment, assignment_to_proto
from truco_server.services.leagues import EntrantDoc


async def _next(gen: object, timeout: float = 10.0) -> object:
    return await asyncio.wait_for(gen.__anext__(), timeout)  # type: ignore[attr-defined]


async def test_an_assignment_of_a_released_table_is_let_go_when_it_blocks_the_bot(any_stack: Stack) -> None:
    s = any_stack
    s.leagues.bots.stale_check_seconds = 0.0
    bot, _ = await s.leagues.bots.create(OPERATOR, "one at a time", 1)
    sp = dataclasses.replace(
        spec("round_robin", 2, duplicate="tables"),
        entrants=(EntrantDoc(bot.bot_id, 1), EntrantDoc("human", 2)),
    )
    doc = await s.leagues.create_league(OPERATOR, sp)
    await s.leagues.start(OPERATOR, doc.league_id)
    await s.leagues.job.advance(doc.league_id)
    doc = await s.leagues.get_league(OPERATOR, doc.league_id)
    stream = s.leagues.bots.assignment_stream(bot)
    first = await _next(stream)
    assert isinstance(first, Assignment)
    await stream.aclose()
    table = next(t for t in doc.tables.values() if t.match_id == first.match_id)
    await play_match(s, first.match_id, [tok for _, _, tok in table.seats], random.Random(1))
    await s.leagues.job.advance(doc.league_id)  # the table is released, its assignment deleted
    assert first.match_id not in await s.store.documents.assignments(bot.bot_id)
    # a late pass writes it again
    await s.store.documents.assignment_put(
        bot.bot_id, first.match_id, assignment_to_proto(first).SerializeToString()
    )
    stream = s.leagues.bots.assignment_stream(bot)
    got = [await _next(stream) for _ in range(3)]
    await stream.aclose()
    assert got[0] == first  # sent again, as any current assignment is
    assert got[1] == first.match_id  # then let go: its table is over
    second = got[2]
    assert isinstance(second, Assignment) and second.match_id != first.match_id
    assert first.match_id not in await s.store.documents.assignments(bot.bot_id)
