"""The short campaign (``truco campaign --short``, docs/reliability.md): load, soak, chaos
(worker SIGKILLs, a Redis restart on its append-only file, a Redis pause, a Redis data loss)
and fuzz over gRPC and REST, on loopback, bounded in time; every invariant must hold."""

from __future__ import annotations

import pytest

import truco_engine as te
from truco_contract import codec
from truco_contract.events import MatchStatus
from truco_contract.views import view
from truco_tools.campaign import SHORT
from truco_tools.campaign.leaks import cases, leaks_in_observation
from truco_tools.campaign.run import campaign

pytestmark = [pytest.mark.timeout(240)]


@pytest.mark.asyncio
async def test_the_short_campaign_holds_every_invariant() -> None:
    report = await campaign(SHORT)
    text = report.markdown()
    assert report.ok, text
    _soak, chaos = report.loads
    assert chaos.faults == {
        "kill": SHORT.worker_kills,
        "restart": SHORT.redis_restarts,
        "pause": SHORT.redis_pauses,
        "loss": SHORT.redis_losses,
    }
    for load in report.loads:
        assert load.stats.matches_finished > 0 and load.checked_actions > 0
        assert load.checked_actions + load.set_aside == load.stats.actions
    # the data loss took the matches in progress: created again, their old acknowledgements set aside
    assert chaos.stats.matches_recreated > 0 and chaos.set_aside > 0 and not chaos.same_deal_again
    assert chaos.idle_faults == 0  # every fault hit matches in play
    assert [f.inputs for f in report.fuzz] == [SHORT.fuzz_inputs, SHORT.fuzz_inputs]
    leaks = report.leaks
    assert leaks.matches == SHORT.leak_matches and not leaks.leaks and not leaks.errors
    assert len(leaks.presets) == len({name for name, _ in cases()}) and leaks.messages > 1000
    # the fuzz reached past validation too: some inputs were accepted, many refused
    for f in report.fuzz:
        assert sum(n for code, n in f.codes.items() if code in ("OK", "200")) > 0
        assert sum(f.codes.values()) == f.inputs


def test_the_leak_oracle_sees_a_leak() -> None:
    """The oracle is not blind: seat 1's observation shown to seat 0 is a leak of seat 1's hand."""
    rules = te.get_rules("paulista", players=2)
    state, _ = te.deal(te.new_match(rules), list(rules.deck_cards))
    theirs = codec.observation_to_proto(view(state, 1, 1, MatchStatus.ACTIVE), rules)
    mine = codec.observation_to_proto(view(state, 0, 1, MatchStatus.ACTIVE), rules)
    assert leaks_in_observation(theirs, state, 0) == set(state.hand.cards[1])
    assert leaks_in_observation(mine, state, 0) == set()
