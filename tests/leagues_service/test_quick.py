from __future__ import annotations

from tests.leagues_service.conftest import OPERATOR, Stack, run_league, spec


async def test_swiss_runs(any_stack: Stack) -> None:
    doc = await any_stack.leagues.create_league(OPERATOR, spec("swiss", 7, rounds=3))
    await any_stack.leagues.start(OPERATOR, doc.league_id)
    done = await run_league(any_stack, doc.league_id)
    assert done.round == 3
    print(done.pairings)
