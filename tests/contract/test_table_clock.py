"""The turn clock of the pure table (:mod:`truco_match.table`, :mod:`truco_match.lifecycle`):
allowances, banks and increments, expiries that come only at their deadline and only once,
the forfeit after K expiries, and what a call out of turn does to the awaited seat's clock."""

from __future__ import annotations

import truco_engine as te
from truco_match import table
from truco_match.events import MatchForfeited, TimeoutCause, TurnTimedOut
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.timeout import default_move


def setup(tc: TimeControl, preset: str = "paulista-2p") -> table.Setup:
    rules = te.get_rules(preset)
    return table.Setup(rules=rules, seed=b"clock tests", lifecycle=Lifecycle(time_control=tc))


def begin(s: table.Setup) -> table.Step:
    return table.start(s, table.seats_of(s.rules), now=0)


def test_an_expiry_applies_at_its_deadline_and_never_before_or_twice() -> None:
    s = setup(TimeControl(per_decision=1000))
    first = begin(s)
    seat = te.to_act(first.state)[0]
    assert first.life.deadline() == 1000 and first.life.awaited == seat
    assert table.expire(s, first.state, first.life, TimeoutCause.CLOCK, 999) is None
    done = table.expire(s, first.state, first.life, TimeoutCause.CLOCK, 1000)
    assert done is not None
    timed = done.entries[0]
    assert isinstance(timed, TurnTimedOut) and timed.seat == seat and timed.expiries == 1
    assert timed.action == default_move(first.state, seat).action
    # the same expiry again, on the state after it: the next decision is not due yet
    assert table.expire(s, done.state, done.life, TimeoutCause.CLOCK, 1000) is None


def test_a_decision_made_in_time_is_not_expired_late() -> None:
    s = setup(TimeControl(per_decision=1000))
    first = begin(s)
    seat = te.to_act(first.state)[0]
    moved = table.act(s, first.state, first.life, seat, default_move(first.state, seat).action, 400)
    assert moved.clock_ms == 400
    # an expiry computed for the old decision but handled late finds the new one: no effect
    assert table.expire(s, moved.state, moved.life, TimeoutCause.CLOCK, 1000) is None
    assert moved.life.deadline() == 1400


def test_the_bank_pays_for_time_over_the_allowance_and_earns_the_increment() -> None:
    s = setup(TimeControl(per_decision=1000, bank=5000, increment=2000))
    first = begin(s)
    seat = te.to_act(first.state)[0]
    assert first.life.deadline() == 6000
    moved = table.act(s, first.state, first.life, seat, default_move(first.state, seat).action, 3500)
    assert moved.life.bank[seat] == 5000 - 2500 + 2000
    other = 1 - seat
    assert moved.life.bank[other] == 5000


def test_a_call_out_of_turn_charges_the_awaited_seat_but_earns_it_no_increment() -> None:
    s = setup(TimeControl(per_decision=1000, bank=5000, increment=2000))
    first = begin(s)
    awaited = te.to_act(first.state)[0]
    caller = 1 - awaited
    assert te.Action("truco") in te.legal_actions(first.state, caller)  # paulista: truco out of turn
    called = table.act(s, first.state, first.life, caller, te.Action("truco"), 3000)
    assert called.clock_ms == 0  # the caller's clock was not running
    assert called.life.bank[awaited] == 5000 - 2000  # its time over the allowance, no increment
    assert called.life.bank[caller] == 5000
    assert called.life.awaited == awaited and called.life.since == 3000  # it now answers the call


def test_the_match_is_forfeited_at_the_kth_expiry_of_one_seat() -> None:
    s = setup(TimeControl(per_decision=1000, forfeit_after=2))
    step = begin(s)
    seen: list[int] = []
    while not te.is_over(step.state):
        due = table.due(s, step.state, step.life)
        assert due is not None
        nxt = table.expire(s, step.state, step.life, TimeoutCause.CLOCK, due)
        assert nxt is not None
        seen += [e.seat for e in nxt.entries if isinstance(e, TurnTimedOut)]
        step = nxt
    forfeit = [e for e in step.entries if isinstance(e, MatchForfeited)]
    assert len(forfeit) == 1 and forfeit[0].expiries == 2
    loser = forfeit[0].seat
    assert (
        seen.count(loser) == 2 and seen[-1] == loser and all(seen.count(x) < 2 for x in set(seen) - {loser})
    )
    assert step.state.winner == te.seat_teams(step.state)[1 - loser]


def test_the_stored_form_of_the_settings_holds_only_what_is_set() -> None:
    """``Lifecycle.to_dict`` (stored with every match and listing row): unset settings are
    left out, and a clock without a reminder keeps the form it had before reminders existed;
    ``from_dict`` reads it back."""
    assert Lifecycle().to_dict() == {}
    plain = Lifecycle(idle_timeout=86_400_000, show_hands=True).to_dict()
    assert plain == {"idle_timeout": 86_400_000, "show_hands": True}
    clock = TimeControl(per_decision=30_000, bank=60_000)
    timed = Lifecycle(time_control=clock, disconnect_grace=10_000)
    assert timed.to_dict() == {
        "time_control": {
            "per_decision": 30_000,
            "bank": 60_000,
            "increment": 0,
            "first_decision": 0,
            "forfeit_after": 0,
        },
        "disconnect_grace": 10_000,
    }
    reminded = Lifecycle(time_control=TimeControl(per_decision=30_000, remind_before=10_000))
    assert reminded.to_dict()["time_control"]["remind_before"] == 10_000
    for lc in (Lifecycle(), Lifecycle(idle_timeout=86_400_000, show_hands=True), timed, reminded):
        assert Lifecycle.from_dict(lc.to_dict()) == lc
