"""Every rule knob that takes a name, and the match phase, as :class:`enum.StrEnum`.

A member *is* its string (``Ranking.VIRA == "vira"``), so rule sets, states and records keep
exactly the JSON they always had, and code comparing with the old strings still works;
``mypy --strict`` checks the engine's own uses. :class:`truco_engine.RuleSet` turns a string
given for one of these fields into its member (and refuses a name that is not one).
"""

from __future__ import annotations

from enum import StrEnum


class Deck(StrEnum):
    """The card set in use (``docs/cards.md``)."""

    FRENCH40 = "french40"
    """A, 2–7, J, Q, K of the four French suits (paulista, mineiro, manilha velha)."""
    SPANISH40 = "spanish40"
    """1–7, 10–12 of the four Spanish suits (River Plate, gaúcho)."""
    SPANISH22 = "spanish22"
    """Valencian truc: 1e, 1b and the 3–7 of every suit."""


class Ranking(StrEnum):
    """How cards rank in a trick (``truco_engine.ranking``)."""

    VIRA = "vira"
    """A turned-up card (vira) makes the next rank the manilhas, clubs > hearts > spades > diamonds."""
    FIXED_MINEIRO = "fixed_mineiro"
    """Fixed manilhas 4♣ > 7♥ > A♠ > 7♦, no turn-up card."""
    ARGENTINE = "argentine"
    """The fourteen fixed tiers of the Spanish deck."""
    MUESTRA = "muestra"
    """Uruguayan: a turned-up muestra makes piezas of five cards of its suit."""
    VALENCIAN = "valencian"
    """The 22-card truc order."""


class PlayMode(StrEnum):
    """Who plays with whom (the table shape; ``truco_engine.variants``)."""

    TEAMS = "teams"
    """Two sides; partners sit across and alternate."""
    INDIVIDUAL = "individual"
    """Three players, each for himself."""
    CARANCHO = "carancho"
    """Three players: two against the carancho, who changes with the deal."""


class AllTied(StrEnum):
    """What three tied tricks give."""

    REDEAL = "redeal"
    """Nobody scores; the next hand is dealt."""
    MANO = "mano"
    """The side of the hand's first player (the mano) takes the hand."""


class LeadAfterTie(StrEnum):
    """Who leads the trick after a tied one."""

    TIED_TRICK_OPENER = "tied_trick_opener"
    """The seat that led the tied trick."""
    NEAREST_TO_MANO = "nearest_to_mano"
    """The tying seat nearest the mano."""
    MANO = "mano"
    """The hand's first player."""


class FaltaEnvido(StrEnum):
    """What a falta envido (and a contraflor al resto played as the falta) is worth."""

    GAME = "game"
    """What the leader needs to win the game."""
    HALF = "half"
    """While the leader is in the first half: what closes that half; then what wins the game."""


class FoldOnEnvido(StrEnum):
    """What folding (irse al mazo) as the answer to a pending envido gives the other side."""

    HAND = "hand"
    """Whatever the hand is currently worth; the envido is dropped (seed 003)."""
    DECLINED = "declined"
    """The envido counts as declined (its refusal value), plus the hand's value."""


class PartnerFlor(StrEnum):
    """An envido called while the caller's partner holds a flor he has not sung."""

    FIRST = "first"
    """La flor está primero: the partner sings his flor before the envido is answered, and the
    flor voids the envido."""
    VOIDED = "voided"
    """The envido speaks for the pair and voids the partner's flor for the hand (seed 001)."""


class PiezaValues(StrEnum):
    """Envido (and flor) value of the Uruguayan piezas."""

    TABLES = "tables"
    """The Uruguayan tables: 2 = 30, 4 = 29, 5 = 28, 11 = 27, 10 = 27."""
    TEXT = "text"
    """Seed 001 as written: 2, 4, 5 and 11 = 30, 10 = 29."""


class ContraflorAlResto(StrEnum):
    """Whether a contraflor al resto may be called, and what it is worth when accepted."""

    FALTA = "falta"
    """Worth the falta envido (following ``falta_envido``)."""
    GAME = "game"
    """Worth what the leader needs to win the game, whatever ``falta_envido`` says."""
    OFF = "off"
    """Not played."""


class Phase(StrEnum):
    """Where a match stands (``MatchState.phase``, ``Observation.phase``)."""

    DEAL = "deal"
    """A deck order is awaited (the chance step, :func:`truco_engine.deal`)."""
    PLAY = "play"
    """A hand is being played."""
    OVER = "over"
    """The match has ended."""


RULE_ENUMS: dict[str, type[StrEnum]] = {
    "deck": Deck,
    "ranking": Ranking,
    "play_mode": PlayMode,
    "all_tricks_tied": AllTied,
    "lead_after_tie": LeadAfterTie,
    "falta_envido": FaltaEnvido,
    "fold_on_envido": FoldOnEnvido,
    "partner_flor": PartnerFlor,
    "pieza_values": PiezaValues,
    "contraflor_al_resto": ContraflorAlResto,
}
"""The :class:`RuleSet` fields that take one of these names, and their enum."""
