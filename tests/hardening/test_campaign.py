"""The short campaign (``truco campaign --short``, docs/reliability.md): load, soak, chaos
(worker SIGKILLs, a Redis restart on its append-only file, a Redis pause, a Redis data loss)
and fuzz over gRPC, REST and the WebSocket player connection, on loopback, bounded in time;
every invariant must hold."""

from __future__ import annotations

import time

import pytest
import redis

import truco_engine as te
from truco_contract import codec
from truco_contract.pb import operator_service_pb2
from truco_match.events import MatchStatus
from truco_match.views import view
from truco_tools.campaign import SHORT
from truco_tools.campaign.chaos import OPERATOR_STREAM, Checker, EventFollower, LoadResult
from truco_tools.campaign.leaks import cases, leaks_in_observation
from truco_tools.campaign.run import campaign
from truco_tools.cluster_load import LoadStats

pytestmark = [pytest.mark.timeout(600)]  # the whole short form: about 4 minutes on 2 loaded cores


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
        # every finished match the data loss did not touch has its operator events
        assert load.events_checked > 0 and not load.events_missing
    # the data loss took the matches in progress: created again, their old acknowledgements set aside
    assert chaos.stats.matches_recreated > 0 and chaos.set_aside > 0 and not chaos.same_deal_again
    assert chaos.idle_faults == 0  # every fault hit matches in play
    assert [f.inputs for f in report.fuzz] == [SHORT.fuzz_inputs] * 3  # gRPC, REST, WebSocket
    leaks = report.leaks
    assert leaks.matches == SHORT.leak_matches and not leaks.leaks and not leaks.errors
    assert len(leaks.presets) == len({name for name, _ in cases()}) and leaks.messages > 1000
    # whole matches: every one ended (else an error above), several hands each, some of eleven,
    # and the late viewers' streams rebuilt from the record
    assert leaks.hands >= 2 * leaks.matches and leaks.special_hands > 0 and leaks.late_streams > 0
    # the fuzz reached past validation too: some inputs were accepted, many refused
    grpc_, rest, ws = report.fuzz
    for f in (grpc_, rest):
        assert sum(n for code, n in f.codes.items() if code in ("OK", "200")) > 0
    for f in report.fuzz:
        assert sum(f.codes.values()) == f.inputs
    # over WebSocket: actions applied, subscriptions served, and refusals before the upgrade
    assert ws.messages["result"] > 0 and ws.messages["update"] > 0 and ws.messages["error"] > 0
    assert ws.codes["close 1000"] > 0 and ws.codes["close 4003"] > 0 and ws.codes["upgrade 400"] > 0


def test_the_leak_oracle_sees_a_leak() -> None:
    """The oracle is not blind: seat 1's observation shown to seat 0 is a leak of seat 1's hand."""
    rules = te.get_rules("paulista", players=2)
    state, _ = te.deal(te.new_match(rules), list(rules.deck_cards))
    theirs = codec.observation_to_proto(view(state, 1, 1, MatchStatus.ACTIVE), rules)
    mine = codec.observation_to_proto(view(state, 0, 1, MatchStatus.ACTIVE), rules)
    assert leaks_in_observation(theirs, state, 0) == set(state.hand.cards[1])
    assert leaks_in_observation(mine, state, 0) == set()


class _GrowingAcks(list[tuple[str, str, int]]):
    """The bots' acknowledgements, one of them arriving while the checker reads the list (the
    bots append on the event loop's thread while a checker thread reads)."""

    def __init__(self, stats: LoadStats, late: tuple[str, str, int]) -> None:
        super().__init__()
        self.stats, self.late = stats, late

    def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
        if self.late is not None:
            late, self.late = self.late, None
            self.append(late)
            self.stats.ack_sent.append(time.monotonic())
        return super().__getitem__(index)


def test_the_checker_checks_an_acknowledgement_that_arrives_while_it_reads(clean_redis_url: str) -> None:
    stats = LoadStats()
    acks = _GrowingAcks(stats, ("m-late", "m-late-s0-v1", 1))
    acks.append(("m-first", "m-first-s0-v1", 1))
    stats.acks = acks
    stats.ack_sent.append(time.monotonic())
    result = LoadResult("soak", 1.0, stats)
    with redis.Redis.from_url(clean_redis_url) as r:
        for mid in ("m-first", "m-late"):
            r.hset(f"truco:{{{mid}}}:req", f"{mid}-s0-v1", "1:0:x:1")
            r.hset(f"truco:{{{mid}}}:match", "status", "finished")
        checker = Checker(result, r)
        checker.match_done("m-first", time.monotonic())
        checker.match_done("m-late", time.monotonic())
    assert checker.checked_actions == 2 and checker.set_aside == 0
    assert not result.lost and not result.doubled and not result.unfinished


def test_an_action_sent_before_a_data_loss_is_set_aside_whenever_its_answer_came(
    clean_redis_url: str,
) -> None:
    """A match's last action was committed, then Redis lost everything, then the answer
    reached the bot (the worker had the commit's reply before the kill): nothing in the store
    to check, and no further call to notice the loss. Not a lost action: the loss took it."""
    stats = LoadStats()
    sent = time.monotonic()
    stats.acks.append(("m-gone", "m-gone-s1-v98", 104))
    stats.ack_sent.append(sent)
    result = LoadResult("chaos", 1.0, stats)
    result.loss_times.append(sent + 0.01)  # the loss began after the action was sent
    with redis.Redis.from_url(clean_redis_url) as r:
        checker = Checker(result, r)
        checker.match_done("m-gone", sent + 0.5)  # answered, and the match seen over, after it
    assert not result.lost and not result.unfinished
    assert checker.set_aside == 1 and checker.checked_actions == 0 and checker.checked_after_loss == 1
    # the same action sent after the loss began must be in the store
    stats.acks.append(("m-later", "m-later-s0-v3", 4))
    stats.ack_sent.append(sent + 1.0)
    with redis.Redis.from_url(clean_redis_url) as r:
        checker = Checker(result, r)
        checker.match_done("m-later", sent + 2.0)
    assert result.lost == ["m-later m-later-s0-v3 answered v4, stored None"]


def test_the_event_follower_finds_a_match_whose_end_never_reached_the_operator(clean_redis_url: str) -> None:
    def ev(mid: str, kind: str) -> bytes:
        return operator_service_pb2.OperatorEvent(match_id=mid, type=kind).SerializeToString()

    follower = EventFollower(clean_redis_url)
    follower.start()
    try:
        with redis.Redis.from_url(clean_redis_url) as r:
            for mid, kind in [("m1", "match.created"), ("m2", "match.created"), ("m2", "match.ended")]:
                r.xadd(OPERATOR_STREAM, {"e": ev(mid, kind)})
        assert follower.missing(["m1", "m2"], timeout=1.0) == ["m1: no match.ended"]
        with redis.Redis.from_url(clean_redis_url) as r:
            r.xadd(OPERATOR_STREAM, {"e": ev("m1", "match.ended")})  # relayed late, within the wait
        assert follower.missing(["m1", "m2"], timeout=5.0) == []
    finally:
        follower.stop()


def test_the_memory_line_gives_the_load_of_each_fifth() -> None:
    """Memory that follows the load (more matches in play, more just ended) is not a leak: the
    report shows the actions per second of each fifth beside its memory."""
    from truco_tools.campaign.chaos import Sample, memory_growth

    mb = 2**20
    samples = [Sample(float(t), [100 * mb], 5 * mb, actions=10 * t if t < 30 else 300 + 40 * (t - 30))
               for t in range(60)]  # fmt: skip
    g = memory_growth(samples, warmup=0.0)
    assert g["actions_per_s_fifths"] == [10, 10, 24, 40, 40]  # third: (500 - 240) / 11
    assert g["worker_ratio"] == 1.0 and g["redis_ratio"] == 1.0


def test_a_data_loss_that_begins_while_the_checker_reads_sets_the_match_aside(clean_redis_url: str) -> None:
    """The checker chose the actions to check (no loss yet), then Redis was killed and came
    back empty, then its read found nothing: the loss took those records, not the service (a
    chaos run once reported a whole finished match's actions lost this way)."""
    stats = LoadStats()
    sent = time.monotonic()
    stats.acks.append(("m-taken", "m-taken-s0-v4", 5))
    stats.ack_sent.append(sent)
    result = LoadResult("chaos", 1.0, stats)
    with redis.Redis.from_url(clean_redis_url) as r:
        read = r.hmget

        def lost_meanwhile(*args: object, **kwargs: object) -> object:
            result.loss_times.append(time.monotonic())  # killed, then started empty
            return read(*args, **kwargs)  # type: ignore[arg-type]

        r.hmget = lost_meanwhile  # type: ignore[method-assign]
        checker = Checker(result, r)
        checker.match_done("m-taken", sent + 0.5)
    assert not result.lost and not result.unfinished
    assert checker.set_aside == 1 and checker.checked_actions == 0 and checker.checked_after_loss == 1
