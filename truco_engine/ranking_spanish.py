"""Spanish-deck hooks that depend on the turn-up card: the Uruguayan muestra and its piezas.

Uruguayan truco (seed 001: "a versão uruguaia do jogo usa uma 'Muestra' de cada mão"):

* After the deal one card is turned up: the *muestra*.
* The 2, 4, 5, 11 and 10 of the muestra's suit are the *piezas*; they beat every other card,
  in that order (2 > 4 > 5 > 11 > 10).
* When the muestra itself is one of those cards, the 12 of the muestra's suit stands in for it
  (takes its place in the order and its envido value).
* Below the piezas come the fixed top cards 1e > 1b > 7e > 7o, then the Argentine order.
* Envido/flor values of the piezas: 2 = 30, 4 = 29, 5 = 28, 11 = 27, 10 = 27 (the Uruguayan
  tables, ``pieza_values="tables"``), or seed 001 as written ("2, 4, 5, Cavaleiro ... valem 30
  pontos, e o Valete ... vale 29": ``pieza_values="text"``).

Nothing here imports :mod:`truco_engine.ranking` (which imports this module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Final

from truco_engine.cards import pips

PIEZA_RANKS: Final = ("2", "4", "5", "11", "10")
"""Pieza ranks of the muestra's suit, strongest first."""
PIEZA_ENVIDO: Final = {"2": 30, "4": 29, "5": 28, "11": 27, "10": 27}
"""Envido (and flor) value of each pieza rank, after the Uruguayan tables (the default)."""
PIEZA_ENVIDO_TEXT: Final = {"2": 30, "4": 30, "5": 30, "11": 30, "10": 29}
"""The values as seed 001 writes them: "2, 4, 5, Cavaleiro (Cavalo) ... valem 30 pontos, e o
Valete ... vale 29 pontos" (the caballo is the 11, the sota the 10)."""
PIEZA_BASE: Final = 110
"""Piezas rank from here up: above the fixed top cards (100–103), below extra manilhas (200)."""


def piezas(muestra: str) -> dict[str, str]:
    """The piezas for a muestra: card code -> the pieza rank it plays as.

    >>> sorted(piezas("3o").items())
    [('10o', '10'), ('11o', '11'), ('2o', '2'), ('4o', '4'), ('5o', '5')]
    >>> piezas("4o")["12o"]
    '4'
    """
    return dict(_piezas(muestra))


@lru_cache(maxsize=64)
def _piezas(muestra: str) -> dict[str, str]:
    """:func:`piezas`, computed once per muestra and shared (never change it)."""
    s = muestra[-1]
    r = muestra[:-1]
    out = {p + s: p for p in PIEZA_RANKS if p != r}
    if r in PIEZA_RANKS:
        out["12" + s] = r
    return out


_NONE: Final[dict[str, str]] = {}


def muestra_strengths(
    deck: Sequence[str], muestra: str, top: Sequence[str], plain: Sequence[str]
) -> dict[str, int]:
    """Strength of every card under a muestra: piezas, then ``top`` (strongest first),
    then ``plain`` ranks (weakest first)."""
    pz = _piezas(muestra)
    table: dict[str, int] = {}
    n_top = len(top)
    for card in deck:
        p = pz.get(card)
        if p is not None:
            table[card] = PIEZA_BASE + len(PIEZA_RANKS) - 1 - PIEZA_RANKS.index(p)
        elif card in top:
            table[card] = 100 + n_top - 1 - list(top).index(card)
        else:
            table[card] = list(plain).index(card[:-1])
    return table


def muestra_envido(
    cards: Sequence[str], muestra: str | None, values: Mapping[str, int] = PIEZA_ENVIDO
) -> int:
    """Envido points under a muestra.

    With a pieza: the best pieza's value plus the best other card (a second pieza counts its
    units only: 29 -> 9). Without: the standard count (20 + two of a suit, else best card).
    """
    pz = _piezas(muestra) if muestra else _NONE
    found = sorted((values[pz[c]] for c in cards if c in pz), reverse=True)
    if found:
        others = [v % 10 for v in found[1:]] + [pips(c) for c in cards if c not in pz]
        return found[0] + max(others, default=0)
    return standard_envido(cards)


def standard_envido(cards: Sequence[str]) -> int:
    """20 plus the two best cards of one suit (10–12 count 0), or else the best single card."""
    best = 0
    by_suit: dict[str, list[int]] = {}
    for c in cards:
        p = pips(c)
        by_suit.setdefault(c[-1], []).append(p)
        best = max(best, p)
    for values in by_suit.values():
        if len(values) >= 2:
            values.sort(reverse=True)
            best = max(best, 20 + values[0] + values[1])
    return best


def muestra_has_flor(cards: Sequence[str], muestra: str | None) -> bool:
    """Flor under a muestra: the cards that are not piezas all share one suit (piezas are
    wild): three of a suit, a pieza and two of a suit, or two piezas and any card."""
    if len(cards) != 3:
        return False
    pz = _piezas(muestra) if muestra else _NONE
    suits = {c[-1] for c in cards if c not in pz}
    return len(suits) <= 1


def muestra_flor_points(
    cards: Sequence[str], muestra: str | None, values: Mapping[str, int] = PIEZA_ENVIDO
) -> int:
    """Flor value under a muestra: the best pieza's value, plus the units of any other pieza,
    plus the other cards' pips; without a pieza 20 plus the three cards' pips."""
    pz = _piezas(muestra) if muestra else _NONE
    found = sorted((values[pz[c]] for c in cards if c in pz), reverse=True)
    rest = sum(pips(c) for c in cards if c not in pz)
    if found:
        return found[0] + sum(v % 10 for v in found[1:]) + rest
    return 20 + rest
