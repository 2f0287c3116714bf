"""The check-in window: open from ``start_time - window`` until ``start_time``; who did not
check in is withdrawn at the start."""

from __future__ import annotations

import pytest

from truco_server.leagues import (
    MAX_CHECK_IN,
    CheckInClosedError,
    CheckInWindow,
    InvalidOptionError,
    RegistrationClosedError,
    not_checked_in,
)

START = 1_000_000.0


def test_the_window_is_open_from_its_opening_until_the_start() -> None:
    w = CheckInWindow(START, 600)
    assert w.opens_at == START - 600
    assert not w.is_open(START - 600.5)
    assert w.is_open(START - 600) and w.is_open(START - 0.001)
    assert not w.is_open(START)
    w.check(START - 1)


def test_checking_in_early_or_late_is_refused_saying_when() -> None:
    w = CheckInWindow(START, 600)
    with pytest.raises(CheckInClosedError, match="opens 300s from now"):
        w.check(START - 900)
    with pytest.raises(CheckInClosedError, match="closed at the league's start"):
        w.check(START)
    assert issubclass(CheckInClosedError, RegistrationClosedError)


@pytest.mark.parametrize(
    ("start", "window"), [(0.0, 60.0), (START, 0.0), (START, -5.0), (START, MAX_CHECK_IN + 1)]
)
def test_a_window_needs_a_start_time_and_a_length_up_to_seven_days(start: float, window: float) -> None:
    with pytest.raises(InvalidOptionError) as err:
        CheckInWindow(start, window)
    assert err.value.field == "schedule.check_in"


def test_those_who_did_not_check_in_in_the_order_given() -> None:
    assert not_checked_in(["a", "b", "c", "d"], {"c", "a"}) == ("b", "d")
    assert not_checked_in(["a"], {"a"}) == ()
