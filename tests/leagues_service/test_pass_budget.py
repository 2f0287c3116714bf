"""A league pass is bounded: it creates at most TABLES_PER_STEP matches a step and takes no
new step once its time budget is spent, so it ends well within its claim (a pass that
outlived its claim let another worker run the same steps and publish the same league events
again). The rest is done by the next passes, each match created once."""

from __future__ import annotations

from collections import Counter

from tests.leagues_service.conftest import OPERATOR, Stack, spec
from truco_server.services.leagues import job as job_module
from truco_server.services.leagues.documents import load_league


async def test_a_pass_stops_at_its_budget_and_the_next_passes_finish_the_round(any_stack: Stack) -> None:
    s = any_stack
    job = s.leagues.job
    created: Counter[str] = Counter()
    inner = job.create_match

    async def counting(*args: object, **kwargs: object) -> object:
        created[str(getattr(args[1], "request_id", ""))] += 1  # (operator, request, ...)
        return await inner(*args, **kwargs)  # type: ignore[arg-type]

    job.create_match = counting  # type: ignore[assignment]
    n = 2 * job_module.TABLES_PER_STEP + 10  # a round of 74 tables: three steps and more
    doc = await s.leagues.create_league(OPERATOR, spec("round_robin", 2 * n))
    await s.leagues.start(OPERATOR, doc.league_id)
    job.pass_budget_s = 0.0  # every pass ends after its first stored step
    passes = 0
    while True:
        stored = await load_league(s.leagues.documents, doc.league_id)
        assert stored is not None
        tables = [stored.doc.tables[k] for p in stored.doc.round_pairings(1) for k in p.tables]
        made = sum(1 for t in tables if t.match_id)
        if tables and made == len(tables):
            break
        due = await job.advance(doc.league_id)
        passes += 1
        assert due is not None
        after = await load_league(s.leagues.documents, doc.league_id)
        assert after is not None
        now_made = sum(
            1 for p in after.doc.round_pairings(1) for k in p.tables if after.doc.tables[k].match_id
        )
        assert now_made - made <= job_module.TABLES_PER_STEP  # one step a pass
    assert len(tables) == n
    assert passes >= n // job_module.TABLES_PER_STEP + 1
    assert len(created) == n and set(created.values()) == {1}
