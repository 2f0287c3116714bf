"""A record step's stored form: an action's step, written directly, is the same JSON array
the encoder writes for every other step, byte for byte, and reads back."""

from __future__ import annotations

import json

import pytest

import truco_engine as te
from truco_match import records
from truco_match.records import RecordStep, StepCause


def _encoded(step: RecordStep, version: int, time: float, clock_ms: int, created_at: float) -> bytes:
    """What the JSON encoder makes of the step (the form every other step takes)."""
    assert step.action is not None
    head = [
        version,
        round((time - created_at) * 1000),
        step.seat,
        list(StepCause).index(step.cause),
        clock_ms,
    ]
    return json.dumps([*head, "a", step.action.text()], separators=(",", ":"), ensure_ascii=False).encode()


REAL = [
    te.Action("play", "4o"),
    te.Action("play", "12e", face_down=True),
    te.Action("play", slot=2),
    te.Action("discard", "7c"),
    te.Action("truco"),
    te.Action("falta_envido"),
]
ACTIONS = [
    *REAL,
    # texts no real card makes, for the characters JSON escapes and those it does not
    te.Action("play", 'a"b'),
    te.Action("play", "a\\b"),
    te.Action("play", "a\x01b"),
    te.Action("play", "a\u2028b"),
    te.Action("play", "ñandú"),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: repr(a.text()))
@pytest.mark.parametrize("seat", [0, 3, None])
@pytest.mark.parametrize("cause", list(StepCause))
def test_an_action_step_is_the_encoders_json(action: te.Action, seat: int | None, cause: StepCause) -> None:
    step = RecordStep(version=0, time=0.0, seat=seat, cause=cause, action=action)
    for version, time, clock_ms in ((1, 1000.0, 0), (417, 1_700_000_123.4567, 29_500)):
        created = 990.0 if time < 2000 else 1_700_000_000.0
        packed = records.pack_stamped(step, version, time, clock_ms, created)
        assert packed == _encoded(step, version, time, clock_ms, created)
        if action not in REAL:
            continue
        back = records.unpack_step(packed, created)
        assert (back.action, back.seat, back.cause, back.version, back.clock_ms) == (
            action,
            seat,
            cause,
            version,
            clock_ms,
        )
