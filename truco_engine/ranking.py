"""Card strength: one table per hand, computed from the rule set and the turn-up card.

A strength table maps every card of the deck to an integer; higher wins a trick and equal
strengths tie. Face-down cards are worth :data:`FACE_DOWN` (below every card).
Each ranking is a small function registered in :data:`RANKING_FUNCS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from truco_engine.cards import FRENCH_RANKS, FRENCH_SUITS, rank, suit
from truco_engine.enums import PiezaValues
from truco_engine.ranking_spanish import (
    PIEZA_ENVIDO,
    PIEZA_ENVIDO_TEXT,
    muestra_envido,
    muestra_flor_points,
    muestra_has_flor,
    muestra_strengths,
    standard_envido,
)

if TYPE_CHECKING:
    from truco_engine.rules import RuleSet

FACE_DOWN: Final = -1
MANILHA_BASE: Final = 100
"""Manilhas (and the fixed top cards of the Spanish rankings) rank from here up."""
EXTRA_BASE: Final = 200
"""Extra manilhas of larger tables rank above every other card."""

MINEIRO_MANILHAS: Final = ("4C", "7H", "AS", "7D")
"""Fixed manilhas of mineiro and manilha velha, strongest first: zap, 7 copas, espadilha,
7 ouros (pica-fumo)."""

ARGENTINE_TOP: Final = ("1e", "1b", "7e", "7o")
"""The four unique top cards of the Spanish rankings, strongest first."""
_ARGENTINE_PLAIN: Final = ("4", "5", "6", "7", "10", "11", "12", "1", "2", "3")
"""Spanish plain ranks, weakest first (false 7s sit between 6s and 10s; false aces
between 12s and 2s)."""

StrengthTable = dict[str, int]


def _french_cycle(rules: RuleSet) -> tuple[str, ...]:
    if rules.clean_deck:
        return tuple(r for r in FRENCH_RANKS if r not in ("4", "5", "6", "7"))
    return FRENCH_RANKS


def manilha_rank(rules: RuleSet, vira: str) -> str:
    """The rank whose four cards are manilhas for a given turn-up card (vira)."""
    cycle = _french_cycle(rules)
    i = cycle.index(rank(vira))
    m = cycle[(i + 1) % len(cycle)]
    if rules.three_never_manilha and m == "3":
        m = cycle[(i + 2) % len(cycle)]
    return m


def _extra(rules: RuleSet, table: StrengthTable) -> StrengthTable:
    n = len(rules.extra_manilhas)
    for i, c in enumerate(rules.extra_manilhas):
        table[c] = EXTRA_BASE + n - i
    return table


def _vira(rules: RuleSet, vira: str | None) -> StrengthTable:
    assert vira is not None
    m = manilha_rank(rules, vira)
    table: StrengthTable = {}
    for card in rules.deck_cards:
        r = rank(card)
        if r == m:
            table[card] = MANILHA_BASE + 3 - FRENCH_SUITS.index(suit(card))
        else:
            table[card] = FRENCH_RANKS.index(r)
    return _extra(rules, table)


def _fixed_mineiro(rules: RuleSet, vira: str | None) -> StrengthTable:
    table: StrengthTable = {}
    for card in rules.deck_cards:
        if card in MINEIRO_MANILHAS:
            table[card] = MANILHA_BASE + 3 - MINEIRO_MANILHAS.index(card)
        else:
            table[card] = FRENCH_RANKS.index(rank(card))
    return _extra(rules, table)


def _argentine(rules: RuleSet, vira: str | None) -> StrengthTable:
    table: StrengthTable = {}
    for card in rules.deck_cards:
        if card in ARGENTINE_TOP:
            table[card] = MANILHA_BASE + 3 - ARGENTINE_TOP.index(card)
        else:
            table[card] = _ARGENTINE_PLAIN.index(rank(card))
    return _extra(rules, table)


def _muestra(rules: RuleSet, vira: str | None) -> StrengthTable:
    assert vira is not None
    return _extra(rules, muestra_strengths(rules.deck_cards, vira, ARGENTINE_TOP, _ARGENTINE_PLAIN))


RANKING_FUNCS: Final[dict[str, Callable[[RuleSet, str | None], StrengthTable]]] = {
    "vira": _vira,
    "fixed_mineiro": _fixed_mineiro,
    "argentine": _argentine,
    "muestra": _muestra,
    # Valencian truc: the Argentine order restricted to the 22-card deck
    # (1e > 1b > 7e > 7o > 3s > 7b/7c > 6s > 5s > 4s); see docs/rules/river-plate.md.
    "valencian": _argentine,
}

PIEZA_VALUES: Final = {PiezaValues.TABLES: PIEZA_ENVIDO, PiezaValues.TEXT: PIEZA_ENVIDO_TEXT}
"""The pieza values of each ``pieza_values`` option."""

USES_TURN_UP: Final = {"vira", "muestra"}
"""Rankings that turn up a card after the deal (vira or muestra)."""


_TABLES: dict[tuple[object, ...], StrengthTable] = {}
_DECK_SETS: dict[tuple[object, ...], frozenset[str]] = {}


def _ranking_key(rules: RuleSet) -> tuple[object, ...]:
    """The rule fields a strength table (and the deck) depend on."""
    return (rules.ranking, rules.deck, rules.clean_deck, rules.three_never_manilha, rules.extra_manilhas)


def strength_table(rules: RuleSet, turn_up: str | None) -> StrengthTable:
    """Strength of every card of the deck for one hand. Tables are computed once per ranking
    and turn-up card and shared: never change one."""
    key = (*_ranking_key(rules), turn_up)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = RANKING_FUNCS[rules.ranking](rules, turn_up)
    return table


def deck_set(rules: RuleSet) -> frozenset[str]:
    """The cards of the rule set's deck, as a set (computed once per deck)."""
    key = _ranking_key(rules)
    cards = _DECK_SETS.get(key)
    if cards is None:
        cards = _DECK_SETS[key] = frozenset(rules.deck_cards)
    return cards


def keeps_in_clean_deck(rules: RuleSet, card: str) -> bool:
    """Whether ``card`` stays in the deck under baralho limpo (no plain 4–7)."""
    if rank(card) not in ("4", "5", "6", "7") or card in rules.extra_manilhas:
        return True
    if rules.ranking == "fixed_mineiro":
        return card in MINEIRO_MANILHAS
    if rules.ranking in ("argentine", "valencian"):
        return card in ARGENTINE_TOP
    return False


def envido_points(cards: tuple[str, ...] | list[str]) -> int:
    """Envido value of a Spanish hand: 20 plus the two best cards of one suit (10–12 count
    0), or else the best single card."""
    return standard_envido(cards)


def has_flor(cards: tuple[str, ...] | list[str]) -> bool:
    """Three cards of one suit."""
    return len(cards) == 3 and cards[0][-1] == cards[1][-1] == cards[2][-1]


def flor_points(cards: tuple[str, ...] | list[str]) -> int:
    """Flor value: 20 plus the three cards' envido values."""
    return 20 + sum((int(c[:-1]) if int(c[:-1]) <= 7 else 0) for c in cards)


def envido_points_for(rules: RuleSet, turn_up: str | None, cards: tuple[str, ...] | list[str]) -> int:
    """Envido points of a hand under the rule set's ranking (the muestra's piezas count
    their value; every other ranking uses :func:`envido_points`)."""
    if rules.ranking == "muestra":
        return muestra_envido(cards, turn_up, PIEZA_VALUES[rules.pieza_values])
    return envido_points(cards)


def has_flor_for(rules: RuleSet, turn_up: str | None, cards: tuple[str, ...] | list[str]) -> bool:
    """Whether a hand holds flor under the rule set's ranking (piezas are wild)."""
    if rules.ranking == "muestra":
        return muestra_has_flor(cards, turn_up)
    return has_flor(cards)


def flor_points_for(rules: RuleSet, turn_up: str | None, cards: tuple[str, ...] | list[str]) -> int:
    """Flor value of a hand under the rule set's ranking."""
    if rules.ranking == "muestra":
        return muestra_flor_points(cards, turn_up, PIEZA_VALUES[rules.pieza_values])
    return flor_points(cards)
