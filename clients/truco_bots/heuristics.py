"""Card and hand evaluation shared by the built-in bots (observation data only)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import truco_engine as te
from truco_engine.ranking import strength_table


@lru_cache(maxsize=4096)
def percentiles(rules: te.RuleSet, vira: str | None) -> dict[str, float]:
    """Each card's strength as the share of the other cards of the deck it beats (0..1)."""
    table = strength_table(rules, vira)
    cards = [c for c in rules.deck_cards if c != vira]
    values = sorted(table[c] for c in cards)
    out: dict[str, float] = {}
    n = max(1, len(values) - 1)
    for c in rules.deck_cards:
        below = sum(1 for v in values if v < table[c])
        out[c] = below / n
    return out


def hand_power(pcts: Sequence[float]) -> float:
    """A rough 0..1 score of a hand's trick-taking power: the best card counts most."""
    if not pcts:
        return 0.0
    s = sorted(pcts, reverse=True)
    weights = (0.55, 0.3, 0.15)
    total = sum(w * p for w, p in zip(weights, s, strict=False))
    return total / sum(weights[: len(s)])
