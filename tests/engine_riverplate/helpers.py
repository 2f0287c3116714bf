"""Driver for River Plate rule tests: explicit deck orders and text actions.

Dealing (``engine._start_hand``): the mano is the seat after the dealer (the first dealer is
the last seat, so seat 0 is the first mano); cards go one at a time in play order starting
with the mano, three rounds; the carancho (the mano) then gets one extra card; then the
muestra is turned up when the ranking uses one. :func:`deck_for` builds such an order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.helpers.events import data
from truco_engine import (
    Event,
    EventKind,
    MatchState,
    apply,
    deal,
    get_rules,
    legal_actions,
    new_match,
    observe,
    parse_action,
    to_act,
)
from truco_engine.ranking import USES_TURN_UP
from truco_engine.rules import RuleSet


def deck_for(state: MatchState, hands: Mapping[int, Sequence[str]], turn_up: str | None = None) -> list[str]:
    """Deck order giving ``hands[seat]`` to each seat (missing cards: the first unused cards
    in canonical order) and turning up ``turn_up``."""
    r = state.rules
    n = r.players
    mano = (state.dealer + 1) % n
    order = [(mano + i) % n for i in range(n)]
    used = [c for cs in hands.values() for c in cs] + ([turn_up] if turn_up else [])
    assert len(used) == len(set(used)), f"card given twice: {used}"
    assert all(c in r.deck_cards for c in used), used
    fillers = [c for c in r.deck_cards if c not in used]
    deck: list[str] = []
    for k in range(3):
        for seat in order:
            given = list(hands.get(seat, ()))
            deck.append(given[k] if k < len(given) else fillers.pop(0))
    if r.play_mode == "carancho":
        given = list(hands.get(mano, ()))
        deck.append(given[3] if len(given) > 3 else fillers.pop(0))
    if r.ranking in USES_TURN_UP:
        deck.append(turn_up if turn_up is not None else fillers.pop(0))
    else:
        assert turn_up is None
    deck.extend(fillers)
    assert sorted(deck) == sorted(r.deck_cards)
    return deck


class Table:
    """A match driven by explicit deals and text actions; keeps every event."""

    def __init__(self, rules: RuleSet | str, first_dealer: int | None = None, **overrides: Any) -> None:
        self.rules = get_rules(rules, **overrides) if isinstance(rules, str) else rules
        self.state = new_match(self.rules, first_dealer)
        self.events: list[Event] = []

    def set_scores(self, *scores: int) -> Table:
        d = self.state.to_dict()
        d["scores"] = list(scores)
        self.state = MatchState.from_dict(d)
        return self

    @property
    def hand(self) -> Any:
        assert self.state.hand is not None
        return self.state.hand

    def deal(self, hands: Mapping[int, Sequence[str]] | None = None, turn_up: str | None = None) -> Table:
        self.state, ev = deal(self.state, deck_for(self.state, hands or {}, turn_up))
        self.events.extend(ev)
        return self

    def play(self, *steps: str) -> Table:
        """Each step is ``"SEAT ACTION"``, e.g. ``"0 play 1e"`` or ``"1 truco"``."""
        for step in steps:
            seat, _, action = step.partition(" ")
            self.state, ev = apply(self.state, int(seat), parse_action(action))
            self.events.extend(ev)
        return self

    def turn(self) -> int:
        return to_act(self.state)[0]

    def legal(self, seat: int | None = None) -> list[str]:
        s = self.turn() if seat is None else seat
        return [a.text() for a in legal_actions(self.state, s)]

    def obs(self, seat: int | None) -> Any:
        return observe(self.state, seat)

    def of(self, kind: EventKind) -> list[dict[str, Any]]:
        return [dict(data(e)) for e in self.events if e.kind == kind]

    def ended(self) -> dict[str, Any]:
        ends = self.of(EventKind.HAND_ENDED)
        assert ends, "no hand ended"
        return ends[-1]

    @property
    def scores(self) -> list[int]:
        return list(self.state.scores)
