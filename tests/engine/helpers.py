"""Test helpers: explicit deck orders and a small table driver.

Dealing (``engine._start_hand``): the mano is the seat after the dealer; cards go one at a
time in play order starting with the mano, three rounds; then the next card is the vira
(when the ranking uses one). :func:`deck_for` builds a deck order that gives chosen cards to
chosen seats and turns up a chosen vira; every other card comes in canonical deck order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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


def deck_for(
    state: MatchState,
    hands: Mapping[int, Sequence[str]],
    vira: str | None = None,
    avoid: Iterable[str] = (),
) -> list[str]:
    """A deck order for the next deal of ``state``: ``hands[seat]`` (up to 3 cards, in deal
    order) go to ``seat``; ``vira`` is turned up. Seats (or card slots) not given get the
    first unused cards of the deck in canonical order, skipping ``avoid``."""
    r = state.rules
    n = r.players
    mano = (state.dealer + 1) % n
    order = [(mano + i) % n for i in range(n)]
    used = [c for cs in hands.values() for c in cs] + ([vira] if vira else [])
    assert len(used) == len(set(used)), f"card given twice: {used}"
    for c in used:
        assert c in r.deck_cards, f"{c} is not a card of {r.deck}"
    skip = set(avoid)
    fillers = [c for c in r.deck_cards if c not in used and c not in skip]
    fillers += [c for c in r.deck_cards if c not in used and c in skip]
    deck: list[str] = []
    for k in range(3):
        for seat in order:
            given = list(hands.get(seat, ()))
            deck.append(given[k] if k < len(given) else fillers.pop(0))
    if r.ranking in USES_TURN_UP:
        deck.append(vira if vira is not None else fillers.pop(0))
    else:
        assert vira is None, "this ranking turns up no card"
    deck.extend(fillers)
    assert sorted(deck) == sorted(r.deck_cards)
    return deck


def state_with(state: MatchState, **fields: Any) -> MatchState:
    """A copy of ``state`` with some top-level fields replaced through ``to_dict`` /
    ``from_dict`` (e.g. ``scores=[11, 4]``): a way to reach a position without playing it."""
    d = state.to_dict()
    d.update(fields)
    return MatchState.from_dict(d)


class Table:
    """A match driven by explicit deals and text actions; keeps every event."""

    def __init__(self, rules: RuleSet | str, first_dealer: int | None = None, **overrides: Any) -> None:
        self.rules = get_rules(rules, **overrides) if isinstance(rules, str) else rules
        self.state = new_match(self.rules, first_dealer)
        self.events: list[Event] = []
        self.last: list[Event] = []

    @property
    def hand(self) -> Any:
        assert self.state.hand is not None
        return self.state.hand

    def set(self, **fields: Any) -> Table:
        self.state = state_with(self.state, **fields)
        return self

    def deal(
        self, hands: Mapping[int, Sequence[str]] | None = None, vira: str | None = None, **kw: Any
    ) -> list[Event]:
        deck = deck_for(self.state, hands or {}, vira, **kw)
        self.state, self.last = deal(self.state, deck)
        self.events.extend(self.last)
        return self.last

    def act(self, seat: int, action: str) -> list[Event]:
        self.state, self.last = apply(self.state, seat, parse_action(action))
        self.events.extend(self.last)
        return self.last

    def play(self, *plays: str) -> list[Event]:
        """Each item is ``"SEAT ACTION"``, e.g. ``"0 play 4C"`` or ``"1 truco"``."""
        out: list[Event] = []
        for p in plays:
            seat, _, action = p.partition(" ")
            out.extend(self.act(int(seat), action))
        return out

    def turn(self) -> int:
        return to_act(self.state)[0]

    def legal(self, seat: int | None = None) -> list[str]:
        s = self.turn() if seat is None else seat
        return [a.text() for a in legal_actions(self.state, s)]

    def obs(self, seat: int | None) -> Any:
        return observe(self.state, seat)

    def of(self, kind: EventKind, events: Sequence[Event] | None = None) -> list[dict[str, Any]]:
        return [dict(data(e)) for e in (self.events if events is None else events) if e.kind == kind]

    def hand_end(self) -> dict[str, Any]:
        ends = self.of(EventKind.HAND_ENDED)
        assert ends, "no hand ended"
        return ends[-1]

    def trick_results(self) -> list[tuple[int | None, bool]]:
        return [(t.side, t.tied) for t in self.hand.tricks if t.tied or t.side is not None]
