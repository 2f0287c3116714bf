"""Cards, decks and their canonical text codes.

Every card has one short code used everywhere (proto, logs, CLI, SDK):

* French deck (truco paulista, mineiro, manilha velha): rank ``A 2 3 4 5 6 7 J Q K``
  followed by an upper-case suit letter ``C`` (clubs/paus), ``H`` (hearts/copas),
  ``S`` (spades/espadas), ``D`` (diamonds/ouros). Examples: ``4C`` (zap), ``7H``, ``AS``, ``QD``.
* Spanish deck (River Plate, gaúcho, Valencian): rank ``1``–``7``, ``10``, ``11``, ``12``
  followed by a lower-case suit letter ``e`` (espadas), ``b`` (bastos), ``c`` (copas),
  ``o`` (oros). Examples: ``1e`` (ancho de espadas), ``7o``, ``12c``.

The two alphabets never overlap (case differs), so a code names one card of one deck.
"""

from __future__ import annotations

from typing import Final

from truco_engine.errors import InvalidCardError

FRENCH_SUITS: Final = ("C", "H", "S", "D")
"""French suits, strongest first for manilhas: clubs > hearts > spades > diamonds."""
FRENCH_RANKS: Final = ("4", "5", "6", "7", "Q", "J", "K", "A", "2", "3")
"""French ranks in truco order, weakest first (3 is the strongest plain card)."""
SPANISH_SUITS: Final = ("e", "b", "c", "o")
"""Spanish suits: espadas, bastos, copas, oros."""
SPANISH_RANKS: Final = ("1", "2", "3", "4", "5", "6", "7", "10", "11", "12")

SUIT_NAMES: Final = {
    "C": "clubs",
    "H": "hearts",
    "S": "spades",
    "D": "diamonds",
    "e": "espadas",
    "b": "bastos",
    "c": "copas",
    "o": "oros",
}
SUIT_SYMBOLS: Final = {"C": "♣", "H": "♥", "S": "♠", "D": "♦", "e": "⚔", "b": "♣", "c": "♥", "o": "◆"}

FRENCH_40: Final = tuple(r + s for s in FRENCH_SUITS for r in FRENCH_RANKS)
SPANISH_40: Final = tuple(r + s for s in SPANISH_SUITS for r in SPANISH_RANKS)
SPANISH_22: Final = ("1e", "1b", *tuple(r + s for s in SPANISH_SUITS for r in ("3", "4", "5", "6", "7")))
"""Valencian truc: no 8, 9, figures, 2s, nor the aces of copas and oros."""

DECKS: Final = {"french40": FRENCH_40, "spanish40": SPANISH_40, "spanish22": SPANISH_22}


def rank(card: str) -> str:
    """The rank part of a card code (``"10"`` for ``"10e"``)."""
    return card[:-1]


def suit(card: str) -> str:
    """The suit letter of a card code."""
    return card[-1]


def pips(card: str) -> int:
    """Numeric value of a Spanish card for envido: 1–7 count their number, 10–12 count 0."""
    r = int(card[:-1])
    return r if r <= 7 else 0


def describe(card: str) -> str:
    """Human name of a card, e.g. ``"4 of clubs"`` or ``"1 de espadas"``."""
    s = suit(card)
    if s in FRENCH_SUITS:
        names = {"A": "ace", "J": "jack", "Q": "queen", "K": "king"}
        return f"{names.get(rank(card), rank(card))} of {SUIT_NAMES[s]}"
    return f"{rank(card)} de {SUIT_NAMES[s]}"


def check_card(card: object, deck: tuple[str, ...]) -> str:
    """Return ``card`` if it is a card of ``deck``, else raise :class:`InvalidCardError`."""
    if not isinstance(card, str) or card not in deck:
        raise InvalidCardError(
            f"{card!r} is not a card of this deck; codes look like {deck[0]!r}, {deck[-1]!r}"
        )
    return card
