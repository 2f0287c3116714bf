"""A match's log as a pure function of its rules, its deals and its actions.

The server commits what these functions return (one atomic commit per call); the SDK's local
runner plays the same functions in-process, so a match looks the same to a bot locally and
online, event for event and version for version. Dealing is the chance step: every deal that
falls due after an action is made here, from :class:`Dealing`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import truco_engine as te
from truco_contract.events import (
    LogEntry,
    MatchCancelled,
    MatchCreated,
    MatchRevealed,
    RevealedDeal,
    SeatInfo,
    SeatKind,
)
from truco_contract.fairness import deck_for_hand, salt_for_hand


@dataclass(frozen=True, slots=True)
class Dealing:
    """Where each hand's deck order comes from: the explicit deck orders first (hand 1 is
    ``deck_orders[0]``), then the shuffle of the seed (docs/fairness.md)."""

    seed: bytes
    deck_orders: tuple[tuple[str, ...], ...] = ()

    def deck(self, hand: int, rules: te.RuleSet) -> list[str]:
        """The deck order of hand ``hand`` (1-based)."""
        if hand <= len(self.deck_orders):
            return list(self.deck_orders[hand - 1])
        return deck_for_hand(self.seed, hand, rules.deck_cards)

    def salt(self, hand: int) -> str:
        """The commitment salt of hand ``hand``."""
        return salt_for_hand(self.seed, hand)


def seats_of(rules: te.RuleSet, names: Sequence[tuple[str, SeatKind]] = ()) -> tuple[SeatInfo, ...]:
    """The public seats of a new match: display names (default ``seat N``) and kinds."""
    teams = te.seat_teams(te.new_match(rules))
    return tuple(
        SeatInfo(
            seat=i,
            team=teams[i],
            display_name=(names[i][0] if i < len(names) else "") or f"seat {i}",
            kind=names[i][1] if i < len(names) else SeatKind.HUMAN,
        )
        for i in range(rules.players)
    )


def start(
    rules: te.RuleSet, seats: Sequence[SeatInfo], dealing: Dealing, first_dealer: int | None = None
) -> tuple[te.MatchState, list[LogEntry]]:
    """A new match: ``match_created`` and the first deal."""
    state = te.new_match(rules, first_dealer)
    entries: list[LogEntry] = [MatchCreated(preset=rules.name, players=rules.players, seats=tuple(seats))]
    state = _deal_due(state, dealing, entries)
    return state, entries


def act(
    state: te.MatchState, seat: int, action: te.Action, dealing: Dealing
) -> tuple[te.MatchState, list[LogEntry]]:
    """``seat``'s action, the deals it makes due, and the reveal when it ends the match.
    Raises the engine's errors (:class:`truco_engine.TrucoError`) without a change."""
    state, events = te.apply(state, seat, action)
    entries: list[LogEntry] = list(events)
    state = _deal_due(state, dealing, entries)
    if te.is_over(state):
        entries.append(reveal(state, dealing))
    return state, entries


def cancel(state: te.MatchState, reason: str, dealing: Dealing) -> list[LogEntry]:
    """The creator's cancellation and the reveal."""
    return [MatchCancelled(reason=reason), reveal(state, dealing)]


def reveal(state: te.MatchState, dealing: Dealing) -> MatchRevealed:
    """The seed and every deal so far, so anyone can check the commitments published when
    each hand started."""
    deals = []
    for k in range(1, state.hands + 1):
        deck = dealing.deck(k, state.rules)
        salt = dealing.salt(k)
        deals.append(RevealedDeal(cards=tuple(deck), salt=salt, commitment=te.deck_commitment(deck, salt)))
    return MatchRevealed(seed=dealing.seed, deals=tuple(deals))


def _deal_due(state: te.MatchState, dealing: Dealing, entries: list[LogEntry]) -> te.MatchState:
    while te.needs_deal(state):
        k = state.hands + 1
        state, events = te.deal(state, dealing.deck(k, state.rules), dealing.salt(k))
        entries.extend(events)
    return state
