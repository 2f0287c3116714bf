"""The SDK's lifecycle calls against a real worker on a real Redis (sync and asyncio, same
names): create_match's lifecycle settings and client seed, join_match, the clock and the
join state in observations, add_time, adjudicate_match, get_match_record and the record file."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from truco_client import (
    AsyncTrucoClient,
    IllegalAction,
    InvalidArgument,
    TimeControl,
    TrucoClient,
    Unauthenticated,
    read_record,
    write_record,
)
from truco_match.events import MatchStatus
from truco_match.lifecycle import Lifecycle
from truco_match.verify import verify
from truco_server.app.embedded import EmbeddedServer

pytestmark = pytest.mark.timeout(60)

CLOCK = TimeControl(per_decision=30_000, bank=60_000, increment=1_000)


def test_lifecycle_settings_join_and_clock(client: TrucoClient) -> None:
    m = client.create_match(
        "paulista",
        players=2,
        time_control=CLOCK,
        join_window=45,
        disconnect_grace=20.5,
        spectator_delay=2,
        show_hands=True,
        client_seed=b"creator entropy",
    )
    assert m.match.lifecycle == Lifecycle(
        time_control=CLOCK,
        join_window=45_000,
        disconnect_grace=20_500,
        spectator_delay=2,
        show_hands=True,
        bot_think=1500,  # the server's default think time (TRUCO_BOT_THINK_MS), kept on the match
    )
    assert m.match.fairness is not None
    assert [(c.seat, c.seed) for c in m.match.fairness.client_seeds] == [(None, b"creator entropy")]

    seat0, seat1 = (client.with_token(t) for t in m.seat_tokens)
    before = seat0.get_match(m.match_id).observation
    assert before.must_join and not before.joined and before.not_joined == (0, 1)
    assert before.my_cards == () and before.legal_actions == ()
    assert before.ms_left is None and before.deadline is None and before.bank_ms == (60_000, 60_000)

    joined = seat0.join_match(m.match_id, b"seat zero")
    assert joined.observation.joined and not joined.observation.must_join
    assert joined.observation.not_joined == (1,)
    again = seat0.join_match(m.match_id, b"seat zero")  # joining again changes nothing
    assert again.version == joined.version
    with pytest.raises(IllegalAction) as refused:
        seat0.join_match(m.match_id, b"another seed")
    assert refused.value.reason == "ALREADY_STARTED"

    t0 = time.time()
    dealt = seat1.join_match(m.match_id)  # no seed
    obs = dealt.observation
    assert obs.not_joined == () and len(obs.my_cards) == 3
    timed = obs.whose_turn
    assert timed is not None and obs.clock is not None and obs.clock.seat == timed
    # the awaited seat has its decision's 30 s and its 60 s bank
    assert obs.deadline is not None and t0 + 85 < obs.deadline < time.time() + 91
    assert obs.ms_left is not None and 85_000 < obs.ms_left <= 90_000
    assert obs.bank_ms == (60_000, 60_000)

    info = client.add_time(m.match_id, 10, seat=timed)
    assert info.state is MatchStatus.ACTIVE
    later = client.with_token(m.seat_tokens[timed]).get_match(m.match_id).observation
    assert later.bank_ms[timed] == 70_000 and later.bank_ms[1 - timed] == 60_000
    assert later.deadline is not None and abs(later.deadline - obs.deadline - 10) < 0.01
    everyone = client.add_time(m.match_id, 1.5)
    assert everyone.state is MatchStatus.ACTIVE
    assert client.get_match(m.match_id, token=m.seat_tokens[0]).observation.bank_ms == (
        (71_500, 61_500) if timed == 0 else (61_500, 71_500)
    )

    done = client.adjudicate_match(m.match_id, 1, "the arbiter's decision")
    assert done.state is MatchStatus.FINISHED and done.result is not None and done.result.winner_team == 1

    record = seat0.get_match_record(m.match_id)
    assert record.reveal is not None
    assert [s.join.seat for s in record.steps if s.join is not None] == [0, 1]
    assert [s.add_time.added for s in record.steps if s.add_time is not None] == [10_000, 1_500]
    assert record.steps[-1].adjudicate is not None and record.steps[-1].adjudicate.winner_team == 1
    assert verify(record).ok, verify(record).fault


def test_shorthand_and_refusals(client: TrucoClient, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="turn_timeout"):
        client.create_match("paulista", turn_timeout=10, time_control=CLOCK)
    m = client.create_match("paulista", players=2, turn_timeout=20)
    assert m.match.lifecycle.time_control == TimeControl(per_decision=20_000)
    obs = client.get_match(m.match_id, token=m.seat_tokens[0]).observation
    assert obs.ms_left is not None and 15_000 < obs.ms_left <= 20_000 and obs.bank_ms == ()
    assert not obs.must_join and obs.joined and obs.not_joined == ()

    plain = client.create_match("paulista", players=2)
    with pytest.raises(IllegalAction) as no_clock:
        client.add_time(plain.match_id, 5)
    assert no_clock.value.reason == "NO_CLOCK"
    with pytest.raises(InvalidArgument):
        client.adjudicate_match(plain.match_id, 7)
    with pytest.raises(InvalidArgument):
        client.create_match("paulista", client_seed=b"x" * 65)
    with pytest.raises(Unauthenticated):  # a seat token of another match
        client.get_match_record(plain.match_id, token=m.seat_tokens[0])
    client.cancel_match(plain.match_id, "done")
    record = client.get_match_record(plain.match_id, token=plain.spectator_token)
    assert record.match.state is MatchStatus.CANCELLED and record.steps[-1].cancel is not None
    path = tmp_path / "cancelled.json"
    write_record(record, path)
    again = read_record(path)
    assert again.steps == record.steps and again.reveal == record.reveal
    report = verify(again)
    assert report.ok and report.passed[-1].detail == "cancelled: no result"
    assert plain.match_id in {x.match_id for x in client.iter_matches(state="cancelled")}


async def test_async_client_has_the_same_calls(server: EmbeddedServer) -> None:
    async with AsyncTrucoClient(server.address, timeout=5.0) as client:
        m = await client.create_match(
            "argentine", players=2, time_control=TimeControl(bank=30_000), join_window=30, client_seed=b"c"
        )
        assert m.match.lifecycle.join_window == 30_000
        for seat, token in enumerate(m.seat_tokens):
            joined = await client.with_token(token).join_match(m.match_id, f"seat {seat}".encode())
        assert joined.observation.not_joined == () and joined.observation.ms_left is not None
        info = await client.add_time(m.match_id, 2, seat=0)
        assert info.state is MatchStatus.ACTIVE
        obs = (await client.get_match(m.match_id, token=m.seat_tokens[0])).observation
        assert obs.bank_ms == (32_000, 30_000)
        done = await client.adjudicate_match(m.match_id, 0, "test")
        assert done.result is not None and done.result.winner_team == 0
        record = await client.get_match_record(m.match_id, token=m.spectator_token)
        assert record.match.fairness is not None
        assert [c.seed for c in record.match.fairness.client_seeds] == [b"c", b"seat 0", b"seat 1"]
        assert verify(record).ok


def test_an_unjoined_match_is_aborted_and_its_record_verifies(client: TrucoClient) -> None:
    m = client.create_match("argentine", players=2, join_window=1)
    client.join_match(m.match_id, b"only seat 0", token=m.seat_tokens[0])
    deadline = time.time() + 15
    while client.get_match(m.match_id, token=m.spectator_token).match.state is MatchStatus.ACTIVE:
        assert time.time() < deadline, "the join window did not close"
        time.sleep(0.1)
    obs = client.get_match(m.match_id, token=m.seat_tokens[1]).observation
    assert obs.match_state == "aborted" and obs.is_over and not obs.must_join
    record = client.get_match_record(m.match_id, token=m.seat_tokens[1])
    last = record.steps[-1]
    assert last.abort is not None and last.abort.reason == "not_joined" and last.abort.seats == (1,)
    assert record.reveal is not None and record.reveal.deals == ()  # no hand was dealt
    report = verify(record)
    assert report.ok, report.fault
    assert report.passed[-1].detail == "aborted: no result"
    assert m.match_id in {x.match_id for x in client.iter_matches(state="aborted")}
