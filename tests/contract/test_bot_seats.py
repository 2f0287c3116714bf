"""Seats the server plays, in the pure match (:mod:`truco_match.table`, :mod:`truco_match.clock`,
:mod:`truco_match.records`): a bot seat joins by itself and decides after its think time; its
credential cannot act; a bot takes an away seat over (never before the grace) and the seat's
player takes it back with an action or a join; every step replays from the record."""

from __future__ import annotations

import random

import pytest

import truco_engine as te
from truco_match import clock, create, records, table
from truco_match.events import MatchStatus, SeatJoined, SeatReclaimed, SeatTakenOver, TurnReminder
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.views import view


def setup(bots: tuple[int, ...] = (), **lifecycle: object) -> table.Setup:
    lc = Lifecycle(bot_think=1000, **lifecycle)  # type: ignore[arg-type]
    return table.Setup(rules=te.get_rules("paulista-2p"), seed=b"bot seats", lifecycle=lc, bots=bots)


def begin(s: table.Setup) -> table.Step:
    return table.start(s, table.seats_of(s.rules, levels=s.bots), now=0)


def test_a_bot_seat_is_public_and_joins_by_itself() -> None:
    s = setup(bots=(0, 4), join_window=60_000)
    seats = table.seats_of(s.rules, levels=s.bots)
    assert [(x.kind.value, x.bot_level) for x in seats] == [("human", 0), ("bot", 4)]
    first = begin(s)
    assert first.life.joined == [False, True] and not first.life.started
    joined = table.join(s, first.state, first.life, 0, b"", 10)
    assert joined.life.started  # the human was the last to join: the first hand is dealt
    everyone = table.start(setup(bots=(2, 5), join_window=60_000), seats, now=0)
    assert everyone.life.started  # only bots: nobody to wait for


def test_a_bot_decides_after_its_think_time_and_its_credential_cannot_act() -> None:
    s = setup(bots=(3, 3))
    step = begin(s)
    seat = step.life.awaited
    assert seat is not None
    think = table.think_time(s, step.state, step.life)
    assert 0.6 * 1000 / 2 <= think <= 1.4 * 1000  # a forced move takes half
    assert table.due(s, step.state, step.life) == step.life.since + think
    assert clock.bot_turn(s, step.state, step.life, step.life.since + think - 1) is None
    assert clock.bot_turn(s, step.state, step.life, step.life.since + think) == seat
    move = te.legal_actions(step.state, seat)[0]
    with pytest.raises(table.ServerSeatError):
        table.act(s, step.state, step.life, seat, move, think)
    done, record, status = clock.bot_step(s, step.state, step.life, seat, move, think)
    assert record.cause is records.StepCause.BOT and record.action == move and status is None
    assert done.state.actions == step.state.actions + 1


def test_think_times_vary_between_decisions_and_stay_the_same_for_one() -> None:
    s = setup(bots=(3, 3))
    step = begin(s)
    rng = random.Random(2)
    seen = set()
    for _ in range(12):
        seat = step.life.awaited
        assert seat is not None
        t = table.think_time(s, step.state, step.life)
        assert t == table.think_time(s, step.state, step.life)
        seen.add(t)
        step = table.act(
            s, step.state, step.life, seat, rng.choice(te.legal_actions(step.state, seat)), 0, by_server=True
        )
        if te.is_over(step.state):
            break
    assert len(seen) >= 6


def takeover_setup() -> table.Setup:
    return setup(disconnect_grace=5000, takeover=True, takeover_level=2)


def test_an_away_seat_is_taken_over_after_the_grace_and_reclaimed_by_its_action() -> None:
    s = takeover_setup()
    step = begin(s)
    seat = step.life.awaited
    assert seat is not None
    assert clock.due_step(s, step.state, step.life, 4999, away_ms=4999) is None
    due = clock.due_step(s, step.state, step.life, 5000, away_ms=5000)
    assert due is not None
    taken, record, _ = due
    assert taken.entries == [SeatTakenOver(seat=seat, bot_level=2)]
    assert record.take_over == SeatTakenOver(seat=seat, bot_level=2) and record.seat == seat
    assert taken.state is step.state  # nothing else changes
    assert s.bot_level(taken.life, seat) == 2
    assert view(taken.state, 1 - seat, 3, MatchStatus.ACTIVE, taken.life).taken_over == (seat,)
    # the bot's think time is over at once (the seat was awaited for the grace): it decides
    assert clock.bot_turn(s, taken.state, taken.life, 5000) == seat
    assert not clock.presence_matters(s, taken.life, 99_000)  # nobody checks a bot's presence
    # the player is back: its own action takes the seat back, in the same step
    move = te.legal_actions(taken.state, seat)[0]
    back = table.act(s, taken.state, taken.life, seat, move, 6000)
    assert back.entries[0] == SeatReclaimed(seat=seat)
    assert s.bot_level(back.life, seat) == 0


def test_a_join_takes_the_seat_back_before_its_turn() -> None:
    s = takeover_setup()
    step = begin(s)
    seat = step.life.awaited
    assert seat is not None
    due = clock.due_step(s, step.state, step.life, 5000, away_ms=5000)
    assert due is not None
    taken = due[0]
    again = table.join(s, taken.state, taken.life, seat, b"", 5500)
    assert again.entries == [SeatReclaimed(seat=seat)] and not again.life.taken_over(seat)
    assert table.join(s, again.state, again.life, seat, b"", 5600).entries == []  # nothing to take back


def test_without_takeover_an_away_seat_gets_its_default_move() -> None:
    s = setup(disconnect_grace=5000)
    step = begin(s)
    due = clock.due_step(s, step.state, step.life, 5000, away_ms=5000)
    assert due is not None
    assert not any(isinstance(e, SeatTakenOver) for e in due[0].entries)
    assert due[1].cause is records.StepCause.DISCONNECTED and due[1].action is not None


def test_takeover_bot_steps_and_reclaim_replay_from_the_record() -> None:
    s = takeover_setup()
    seats = table.seats_of(s.rules)
    step = table.start(s, seats, now=0)
    steps: list[records.RecordStep] = []
    version = len(step.entries)
    rng = random.Random(5)
    now = 0

    def commit(done: table.Step, record: records.RecordStep) -> None:
        nonlocal step, version
        version += len(done.entries)
        steps.append(records.RecordStep(**{**_fields(record), "version": version, "time": now / 1000}))
        step = done

    for _ in range(40):
        if te.is_over(step.state):
            break
        seat = step.life.awaited
        assert seat is not None
        now += 6000
        if not step.life.taken_over(seat) and rng.random() < 0.5:
            due = clock.due_step(s, step.state, step.life, now, away_ms=6000)
            assert due is not None
            commit(due[0], due[1])
            continue
        move = rng.choice(te.legal_actions(step.state, seat))
        if step.life.taken_over(seat) and rng.random() < 0.5:
            done, record, _ = clock.bot_step(s, step.state, step.life, seat, move, now)
            commit(done, record)
        else:
            commit(
                table.act(s, step.state, step.life, seat, move, now),
                records.RecordStep(version=0, time=0.0, seat=seat, action=move),
            )
    kinds = {type(e) for r in records.replay(s, seats, steps, 0.0) for e in r.entries}
    assert {SeatTakenOver, SeatReclaimed} <= kinds
    last = list(records.replay(s, seats, steps, 0.0))[-1]
    assert last.first_version + len(last.entries) - 1 == version
    assert te.to_act(last.state) == te.to_act(step.state) and last.life.takeovers == step.life.takeovers
    packed = [records.unpack_step(records.pack_step(x, 0.0), 0.0) for x in steps]
    assert packed == steps


def test_what_a_creator_may_ask_for() -> None:
    spec = create.MatchSpec(
        preset="paulista", players=2, seats=(create.SeatSpec("ana"), create.SeatSpec("cpu", bot_level=6))
    )
    rules, lc = create.check(spec, 1000, 1200)
    assert lc.bot_think == 1200 and not lc.takeover
    assert [s.bot_level for s in create.seats_of(spec, rules)] == [0, 6]
    bad = create.MatchSpec(
        preset="paulista", players=2, seats=(create.SeatSpec("a"), create.SeatSpec("b", bot_level=7))
    )
    with pytest.raises(create.SpecError) as exc:
        create.check(bad, 1000)
    assert exc.value.violations[0][0] == "seats[1].bot_level"
    with pytest.raises(create.SpecError) as exc:
        create.check(create.MatchSpec(lifecycle=Lifecycle(takeover=True)), 1000)
    assert exc.value.violations[0][0] == "settings.abandonment"
    _, lc = create.check(create.MatchSpec(lifecycle=Lifecycle(takeover=True, disconnect_grace=5000)), 1000)
    assert lc.takeover_level == create.DEFAULT_TAKEOVER_LEVEL
    with pytest.raises(create.SpecError):
        create.check(create.MatchSpec(lifecycle=Lifecycle(bot_think=100)), 1000)


def _fields(record: records.RecordStep) -> dict[str, object]:
    return {f: getattr(record, f) for f in record.__dataclass_fields__}


def test_seat_joined_is_unchanged_for_a_join_in_the_window() -> None:
    s = setup(bots=(0, 4), join_window=60_000)
    first = begin(s)
    joined = table.join(s, first.state, first.life, 0, b"x", 10)
    assert joined.entries[0] == SeatJoined(seat=0, client_seed=b"x")


def test_a_seat_the_bot_plays_is_not_reminded_and_a_player_is() -> None:
    """A reminder (``TimeControl.remind_before``) is for a person who may have forgotten the
    match: the seat the server's bot plays is never reminded, even when the reminder falls
    due before the bot has thought; the human seat of the same match is."""
    tc = TimeControl(per_decision=10_000, remind_before=10_000)  # due as the decision starts
    s = setup(bots=(0, 3), time_control=tc)
    step = begin(s)
    while step.life.awaited != 1:  # the human plays until the bot's seat is awaited
        seat = step.life.awaited
        assert seat == 0
        reminded = table.remind(s, step.state, step.life, step.life.since)
        assert reminded is not None and reminded.entries[0] == TurnReminder(seat=0, remaining=10_000)
        move = te.legal_actions(step.state, seat)[0]
        step = table.act(s, step.state, step.life, seat, move, step.life.since + 1)
    since = step.life.since
    assert table.remind(s, step.state, step.life, since) is None
    assert clock.due_step(s, step.state, step.life, since) is None
    assert table.due(s, step.state, step.life) == since + table.think_time(s, step.state, step.life)


def test_a_seat_view_crosses_to_a_bot_process_whole() -> None:
    """A bot decides in a process of its own: the view it is sent is pickled, and comes back
    equal, clock included (by its constructor: a compiled build's frozen classes refuse their
    fields being set one by one)."""
    import pickle

    from truco_match.views import ClockView, clock_view

    s = setup(bots=(1,), time_control=TimeControl(per_decision=30_000))
    first = begin(s)
    clock_now = clock_view(first.life, 0.0, 5.0)
    assert isinstance(clock_now, ClockView)
    seen = view(first.state, 0, 3, MatchStatus.ACTIVE, first.life, 0.0, 5.0)
    assert seen.clock == clock_now
    back = pickle.loads(pickle.dumps(seen))
    assert back == seen and back.clock == seen.clock
    assert back.clock is not None and back.clock.remaining_ms == clock_now.remaining_ms
    assert pickle.loads(pickle.dumps(clock_now)).server_time == 5.0
