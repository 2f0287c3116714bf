"""Match records, replay and canonical JSON.

A record is the rule set plus every step of the match in order: each deal (deck order and
salt) and each action (seat and action). ``replay(record)`` rebuilds exactly the same state.
Format (``docs/records.md``)::

    {"format": "truco-record/1",
     "rules": {...every RuleSet field...},
     "first_dealer": 3,
     "steps": [{"deal": ["4C", ...], "salt": "..."},
               {"seat": 0, "action": {"kind": "play", "card": "4C"}}, ...]}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from truco_engine.actions import Action
from truco_engine.engine import apply, deal, new_match
from truco_engine.errors import RecordError, TrucoError
from truco_engine.events import Event
from truco_engine.rules import RuleSet
from truco_engine.state import MatchState

RECORD_FORMAT = "truco-record/1"


def canonical_json(obj: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, UTF-8 characters kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_to_json(state: MatchState) -> str:
    """Canonical JSON of a match state (hidden information included)."""
    return canonical_json(state.to_dict())


def state_from_json(text: str | bytes) -> MatchState:
    """Inverse of :func:`state_to_json`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordError(f"not JSON: {exc}") from exc
    return MatchState.from_dict(data)


@dataclass
class MatchRecord:
    """Rules, first dealer and every step of a match."""

    rules: RuleSet
    first_dealer: int | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "rules": self.rules.to_dict(),
            "first_dealer": self.first_dealer,
            "steps": self.steps,
        }

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> MatchRecord:
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
            raise RecordError(f"not a match record of format {RECORD_FORMAT!r}")
        steps = data.get("steps")
        if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
            raise RecordError("record 'steps' must be a list of objects")
        first_dealer = data.get("first_dealer")
        if first_dealer is not None and (not isinstance(first_dealer, int) or isinstance(first_dealer, bool)):
            raise RecordError("record 'first_dealer' must be a seat number or null")
        rules = data.get("rules")
        if not isinstance(rules, dict):
            raise RecordError("record 'rules' must be an object of rule fields")
        return cls(RuleSet.from_dict(rules), first_dealer, list(steps))

    @classmethod
    def from_json(cls, text: str | bytes) -> MatchRecord:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RecordError(f"not JSON: {exc}") from exc
        return cls.from_dict(data)


class Match:
    """Convenience driver: a state plus the record of how it was reached.

    >>> from truco_engine import Match, get_rules
    >>> m = Match(get_rules("paulista-2p"))
    """

    def __init__(self, rules: RuleSet, first_dealer: int | None = None) -> None:
        self.state = new_match(rules, first_dealer)
        self.record = MatchRecord(rules, first_dealer)

    def deal(self, deck: Sequence[str], salt: str = "") -> list[Event]:
        self.state, events = deal(self.state, deck, salt)
        self.record.steps.append({"deal": list(deck), "salt": salt})
        return events

    def act(self, seat: int, action: Action) -> list[Event]:
        self.state, events = apply(self.state, seat, action)
        self.record.steps.append({"seat": seat, "action": action.to_dict()})
        return events


def replay(record: MatchRecord) -> MatchState:
    """Rebuild the state a record describes, step by step (raising on any illegal step)."""
    try:
        state = new_match(record.rules, record.first_dealer)
    except (TrucoError, LookupError, TypeError, ValueError) as exc:
        raise RecordError(f"the match cannot be set up: {exc}") from exc
    for i, step in enumerate(record.steps):
        try:
            if "deal" in step:
                deck, salt = step["deal"], step.get("salt", "")
                if not isinstance(deck, list) or not all(isinstance(c, str) for c in deck):
                    raise RecordError(f"step {i}: 'deal' must be a list of card codes")
                if not isinstance(salt, str):
                    raise RecordError(f"step {i}: 'salt' must be a string")
                state, _ = deal(state, deck, salt)
            else:
                seat = step.get("seat")
                if not isinstance(seat, int) or isinstance(seat, bool):
                    raise RecordError(f"step {i}: 'seat' must be a seat number")
                state, _ = apply(state, seat, Action.from_dict(step.get("action")))
        except RecordError:
            raise
        except (TrucoError, LookupError, TypeError, ValueError) as exc:
            raise RecordError(f"step {i}: {exc}") from exc
    return state
