"""Rule sets as data: a frozen, validated :class:`RuleSet`, named presets and overrides.

A variant is a preset (a ``RuleSet`` value) plus house-rule overrides::

    rules = get_rules("paulista", players=2, target_points=24)
    rules = get_rules("mineiro-2p")
    rules = get_rules("argentine", flor=False)

Every field has a docstring; an invalid combination raises :class:`InvalidRulesError`
naming the field and the allowed values. See ``docs/rules/`` for the sources.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from functools import lru_cache
from typing import Any, Final

from truco_engine.cards import DECKS
from truco_engine.enums import (
    RULE_ENUMS,
    AllTied,
    ContraflorAlResto,
    Deck,
    FaltaEnvido,
    FoldOnEnvido,
    LeadAfterTie,
    PartnerFlor,
    PiezaValues,
    PlayMode,
    Ranking,
)
from truco_engine.errors import InvalidRulesError, UnknownPresetError
from truco_engine.rule_checks import validate

RANKINGS: Final = tuple(Ranking)
PLAY_MODES: Final = tuple(PlayMode)
ALL_TIED: Final = tuple(AllTied)
LEAD_AFTER_TIE: Final = tuple(LeadAfterTie)
FALTA_ENVIDO: Final = tuple(FaltaEnvido)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Every rule of a variant, as validated data. Build one with :func:`get_rules`."""

    name: str = "paulista"
    """Preset name this rule set was built from (informative only)."""

    players: int = 4
    """Number of seats. Teams: 2, 4, 6 (and 8, 10, 12 where the ranking allows);
    individual and carancho: 3."""

    play_mode: PlayMode = PlayMode.TEAMS
    """``teams``: two sides, partners sit across and alternate; ``individual``: each for
    themselves (3 players); ``carancho``: 3 players, two against the carancho each hand."""

    deck: Deck = Deck.FRENCH40
    """``french40`` (A, 2–7, J, Q, K), ``spanish40`` (1–7, 10–12) or ``spanish22`` (Valencian)."""

    clean_deck: bool = False
    """Baralho limpo: play without the 4s, 5s, 6s and 7s that are not manilhas."""

    ranking: Ranking = Ranking.VIRA
    """How cards rank: ``vira`` (turn-up card sets rotating manilhas), ``fixed_mineiro``
    (zap 4♣ > 7♥ > A♠ > 7♦ always), ``argentine`` (the 14 fixed tiers), ``muestra``
    (Uruguayan muestra and piezas), ``valencian`` (the 22-card truc order)."""

    three_never_manilha: bool = False
    """With a vira: a 2 turned up makes the 4s manilhas instead of the 3s."""

    extra_manilhas: tuple[str, ...] = ()
    """Cards placed above the four manilhas, strongest first (larger tables)."""

    target_points: int = 12
    """Points that win a game."""

    games_to_win: int = 1
    """Games needed to win the match: 1 is a single game, 2 is best of three."""

    halves: bool = False
    """Split the game in two halves (malas and buenas); affects falta envido under
    ``falta_envido="half"`` and how scores are shown."""

    base_value: int = 1
    """Value of a hand with no accepted call."""

    truco_ladder: tuple[int, ...] = (3, 6, 9, 12)
    """Value of the hand after each accepted call of the truco ladder, in order."""

    truco_call_names: tuple[str, ...] = ("truco", "six", "nine", "twelve")
    """Name of each step of the ladder (same length as ``truco_ladder``)."""

    truco_game_call: str | None = None
    """Name of a last step of the ladder, above ``truco_ladder``, that puts the game at stake:
    accepted, the hand's winner scores what it needs to win the game (Valencian ``joc_fora``);
    declined, the caller scores the value before it. ``None``: no such step."""

    truco_out_of_turn: bool = False
    """Any seat may call truco (or raise, when its side holds the right to) at any moment of
    the hand while no call is pending, not only on its own turn (seed 000 rule 9: "At any
    moment during the hand, a player may call truco"). Off: a call is made on one's turn,
    before one's card."""

    fold: bool = False
    """A player may fold (give up the hand at its current value) on their own turn and
    as an answer to a pending call (irse al mazo)."""

    face_down_from_trick: int = 2
    """First trick (1-based) in which a card may be played face down; 0: never."""

    all_tricks_tied: AllTied = AllTied.REDEAL
    """All three tricks tied: ``redeal`` (nobody scores) or ``mano`` (the first player's
    side wins)."""

    lead_after_tie: LeadAfterTie = LeadAfterTie.TIED_TRICK_OPENER
    """Who leads after a tied trick: ``tied_trick_opener``, ``nearest_to_mano`` (the tying
    player nearest the hand's first player) or ``mano`` (the hand's first player)."""

    hand_of_eleven_at: int | None = 11
    """Score at which a side plays the hand of eleven (mão de onze; 10 in mineiro's
    hand of ten); ``None``: no such hand."""

    hand_of_eleven_value: int = 3
    """Value of the hand of eleven when the side at that score plays it."""

    hand_of_eleven_refusal: int = 1
    """Points the other side scores when the side at eleven gives the hand up."""

    iron_hand: bool = True
    """Both sides at ``hand_of_eleven_at``: everybody plays blind and the winner takes the
    game (mão de ferro)."""

    envido: bool = False
    """Envido, real envido and falta envido are played."""

    falta_envido: FaltaEnvido = FaltaEnvido.GAME
    """Falta envido is worth what the leader needs to win the game (``game``), or, while
    the leader is in the first half, what it needs to close that half (``half``)."""

    flor: bool = False
    """Flor (three cards of one suit), contraflor and contraflor al resto are played."""

    flor_mandatory: bool = True
    """A player holding flor must sing it (cannot play on as if without it)."""

    show_envido_cards: bool = True
    """The winner of an envido or flor shows the cards that make the points when the hand
    ends."""

    envido_with_flor: bool = False
    """A player holding flor may still call or raise envido (only with ``flor``). Off: a
    player with flor cannot call envido (he sings flor instead); he may still answer one."""

    fold_on_envido: FoldOnEnvido = FoldOnEnvido.DECLINED
    """Folding as the answer to a pending envido: ``hand`` gives the other side what the hand
    is worth now and drops the envido (seed 003: "your opponent is awarded whatever the round
    is currently worth"); ``declined`` counts the envido as declined, plus the hand."""

    partner_flor: PartnerFlor = PartnerFlor.FIRST
    """An envido called while the caller's partner holds an unsung flor: ``first`` (la flor
    está primero: the partner sings it before the envido is answered and it voids the envido)
    or ``voided`` (seed 001: the envido speaks for the pair and voids the partner's flor)."""

    flor_value: int = 3
    """An unopposed flor, per flor of the singing side; also what a flor scores when its
    opposing flor gives up ("con flor me achico")."""

    flor_accepted_value: int = 4
    """Flor against flor, accepted ("con flor quiero"); also what a declined contraflor gives."""

    contraflor: bool = True
    """A flor may be answered by a contraflor (worth ``contraflor_value``)."""

    contraflor_value: int = 6
    """An accepted contraflor; also what a contraflor al resto declined after it gives."""

    contraflor_al_resto: ContraflorAlResto = ContraflorAlResto.FALTA
    """Contraflor al resto: worth the falta envido (``falta``), what the leader needs to win the
    game (``game``), or not played (``off``)."""

    pieza_values: PiezaValues = PiezaValues.TABLES
    """Uruguayan piezas for envido and flor: ``tables`` (2 = 30, 4 = 29, 5 = 28, 11 and 10 =
    27) or ``text`` (seed 001 as written: 2, 4, 5 and 11 = 30, 10 = 29)."""

    fold_concedes_envido: bool = False
    """Going to the mazo while envido could still be called (first trick, no envido or flor
    played yet, no truco accepted) gives the other side one extra point, as a declined envido
    would (only with ``envido`` and ``fold``)."""

    envido_declined_plus_one: bool = False
    """A declined envido chain pays what it had reached before the declined call plus one:
    envido, envido declined 3; envido, real envido 3; envido, envido, real envido 5;
    envido, falta envido 3 (gotruco, pytruco). A single declined call still pays 1. Off: what
    the chain had reached, at least 1 (seeds 002, 003). Only with ``envido``."""

    falta_envido_adds_chain: bool = False
    """An accepted falta envido also pays the calls accepted before it: envido, falta envido
    = 2 + the falta (gotruco, pytruco). Off: the falta alone (seeds 002, 003). Only with
    ``envido``."""

    falta_envido_by_winner: bool = False
    """While the leader is in the first half (malas), the falta envido (and a contraflor al
    resto played as the falta) pays what its winner needs to close the half, not what the
    leader needs (marianogappa/truco, gotruco). Only with ``falta_envido="half"``."""

    falta_after_envido_envido: bool = True
    """Falta envido may directly follow envido, envido. Off: it may not (marianogappa/truco);
    envido, envido, real envido, falta envido stays possible. Off only with ``envido``."""

    fold_concedes_envido_after_truco: bool = False
    """With ``fold_concedes_envido``: going to the mazo during the first trick still gives the
    envido point when a truco was accepted, as long as no envido or flor was played
    (marianogappa/truco). Off: an accepted truco closes the envido and there is no point."""

    truco_capped_at_game: bool = False
    """No truco call or raise once the hand's value (the pending call's, else the accepted
    one) already gives every side what it needs to win the game: at 10-10 of 12 no six after
    the truco, at 5-8 no twelve after the nine (CTruco). Off: the ladder is always open."""

    fold_alone: bool = False
    """Team games: a player may go to the deck alone on his turn (no call pending) while a
    partner is still in the hand; his cards leave the hand and the partners play on. The last
    player of a side to fold gives up the hand for the side (gotruco). Only with ``fold``,
    ``play_mode="teams"`` and 4 or more players."""

    pica_pica: bool = False
    """Teams of 6 to 12 players: every second hand is played head-to-head ('pica-pica',
    'de punta'): each player plays a one-against-one sub-hand with the opponent facing him
    (with 8 or 12 players, where the facing seat is a partner: the opponent seated after
    him), one pair after the other, each sub-hand's points going to the team. No
    head-to-head hands once a side is within 5 points of the target."""

    def __post_init__(self) -> None:
        for name, enum in RULE_ENUMS.items():  # a name given as a string becomes its member
            value = getattr(self, name)
            if not isinstance(value, enum):
                try:
                    object.__setattr__(self, name, enum(value))
                except ValueError:
                    allowed = ", ".join(m.value for m in enum)
                    raise InvalidRulesError(name, f"{value!r} is not allowed; allowed: {allowed}") from None
        validate(self)

    # ----------------------------------------------------------------- helpers
    @property
    def deck_cards(self) -> tuple[str, ...]:
        """The cards of the deck in use, in canonical order."""
        cards = DECKS[self.deck]
        if self.clean_deck:
            from truco_engine.ranking import keeps_in_clean_deck

            cards = tuple(c for c in cards if keeps_in_clean_deck(self, c))
        return cards

    @property
    def sides(self) -> int:
        """Number of score holders: 2 for teams, ``players`` otherwise."""
        return 2 if self.play_mode is PlayMode.TEAMS else self.players

    @property
    def ladder_steps(self) -> int:
        """Steps of the truco ladder: ``truco_ladder`` plus the game step, if any."""
        return len(self.truco_ladder) + (self.truco_game_call is not None)

    def call_name(self, level: int) -> str:
        """Name of the truco-ladder step ``level`` (0: the first call)."""
        if level < len(self.truco_call_names):
            return self.truco_call_names[level]
        assert self.truco_game_call is not None
        return self.truco_game_call

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able mapping of every field (names as plain strings); a new one at each
        call (the caller may change it)."""
        return {k: list(v) if type(v) is list else v for k, v in _plain_form(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleSet:
        """Inverse of :meth:`to_dict`; unknown fields are refused."""
        if not isinstance(data, Mapping):
            raise InvalidRulesError("rules", f"must be an object of rule fields, got {type(data).__name__}")
        if cls is not RuleSet:
            return _build(cls(), data)
        return _build_once(_key(data), _DEFAULTS, data)

    def replace(self, **overrides: Any) -> RuleSet:
        """A copy with some fields changed (validated)."""
        return _build(self, overrides)


# A rule set is immutable and a server builds the same few again and again (every match
# created or loaded, every listing row): both directions of the plain form are kept, for at
# most _REMEMBERED of them.
_REMEMBERED: Final = 512
_BUILT: dict[tuple[Any, ...], RuleSet] = {}
_DEFAULTS: Final = RuleSet()


@lru_cache(maxsize=_REMEMBERED)
def _plain_form(rules: RuleSet) -> dict[str, Any]:
    """:meth:`RuleSet.to_dict`, kept (its caller copies it)."""
    plain: dict[str, Any] = {}
    for f in fields(rules):
        v = getattr(rules, f.name)
        if isinstance(v, tuple):
            v = list(v)
        elif isinstance(v, StrEnum):
            v = v.value
        plain[f.name] = v
    return plain


def _typed(v: Any) -> tuple[Any, ...]:
    """A value with its type, and a sequence's items with theirs (``True`` and ``1``, a list
    and a tuple of the same items, are different input: one may be refused)."""
    if type(v) is list or type(v) is tuple:
        return (type(v), *((type(x), x) for x in v))
    return (type(v), v)


def _key(data: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A hashable form of a plain rule set, or None (a value no key can hold)."""
    key = tuple((k, _typed(v)) for k, v in data.items())
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _build_once(key: tuple[Any, ...] | None, base: RuleSet, overrides: Mapping[str, Any]) -> RuleSet:
    """``_build(base, overrides)``, kept under ``key`` (None: not kept). Exceptions are not
    kept: an input refused is refused again."""
    if key is None:
        return _build(base, overrides)
    rules = _BUILT.get(key)
    if rules is None:
        if len(_BUILT) >= _REMEMBERED:
            _BUILT.clear()
        rules = _BUILT[key] = _build(base, overrides)
    return rules


_FIELD_NAMES: Final = {f.name for f in fields(RuleSet)}
_FIELD_TYPES: Final = typing.get_type_hints(RuleSet)


def _type_problem(hint: Any, value: object) -> str | None:
    """What is wrong with the type of ``value`` for a field of type ``hint``, for the types
    :func:`truco_engine.rule_checks.validate` does not check itself (``None``: nothing):
    flags, and lists, whose items later code hashes or prints as names (numbers and names get
    their allowed values from ``validate`` and the enums)."""
    if hint is bool:
        return None if isinstance(value, bool) else "expected true or false"
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, tuple):
            return "expected a list"
        if typing.get_args(hint)[0] is str and not all(isinstance(v, str) for v in value):
            return "expected a list of names (strings)"
    return None


def _build(base: RuleSet, overrides: Mapping[str, Any]) -> RuleSet:
    unknown = sorted(set(overrides) - _FIELD_NAMES)
    if unknown:
        raise InvalidRulesError(
            unknown[0], f"unknown rule field; fields are: {', '.join(sorted(_FIELD_NAMES))}"
        )
    clean: dict[str, Any] = {}
    for k, v in overrides.items():
        default = getattr(base, k)
        if isinstance(default, tuple) and isinstance(v, list | tuple):
            v = tuple(v)
        problem = _type_problem(_FIELD_TYPES[k], v)
        if problem is not None:
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
            raise InvalidRulesError(k, f"{problem}, got {shown}")
        clean[k] = v
    return dataclasses.replace(base, **clean)


# ---------------------------------------------------------------------- presets
_PAULISTA = RuleSet(truco_out_of_turn=True)
_MINEIRO = RuleSet(
    name="mineiro",
    truco_out_of_turn=True,
    ranking=Ranking.FIXED_MINEIRO,
    base_value=2,
    truco_ladder=(4, 6, 10, 12),
    truco_call_names=("truco", "six", "ten", "twelve"),
    hand_of_eleven_at=10,
    hand_of_eleven_value=4,
    hand_of_eleven_refusal=2,
)
_ARGENTINE = RuleSet(
    name="argentine",
    players=2,
    deck=Deck.SPANISH40,
    ranking=Ranking.ARGENTINE,
    target_points=15,
    truco_ladder=(2, 3, 4),
    truco_call_names=("truco", "retruco", "vale_cuatro"),
    fold=True,
    face_down_from_trick=0,
    all_tricks_tied=AllTied.MANO,
    lead_after_tie=LeadAfterTie.NEAREST_TO_MANO,
    hand_of_eleven_at=None,
    iron_hand=False,
    envido=True,
    flor=True,
    fold_on_envido=FoldOnEnvido.HAND,
)

PRESETS: Final[dict[str, RuleSet]] = {
    "paulista": _PAULISTA,
    "mineiro": _MINEIRO,
    "manilha-velha": dataclasses.replace(_PAULISTA, name="manilha-velha", ranking=Ranking.FIXED_MINEIRO),
    "argentine": _ARGENTINE,
    "argentine-30": dataclasses.replace(_ARGENTINE, name="argentine-30", target_points=30, halves=True),
}
"""Registered presets by canonical name. Player-count forms are ``NAME-Np``."""

ALIASES: Final[dict[str, str]] = {
    "truco-paulista": "paulista",
    "truco-mineiro": "mineiro",
    "manilha_velha": "manilha-velha",
    "manilhavelha": "manilha-velha",
    "velha": "manilha-velha",
    "argentino": "argentine",
    "truco-argentino": "argentine",
}
"""Other names accepted for presets."""

_DEFAULT_PLAYERS: Final = {"paulista": 4, "mineiro": 4, "manilha-velha": 4}


def register_preset(name: str, rules: RuleSet, *aliases: str) -> None:
    """Add a preset (and its aliases) to the registry."""
    PRESETS[name] = rules
    for a in aliases:
        ALIASES[a] = name


def preset_names() -> list[str]:
    """Canonical preset names, sorted."""
    return sorted(PRESETS)


def find_preset(name: str) -> tuple[str, int | None]:
    """Resolve a preset name or alias, with an optional ``-Np`` player-count suffix.

    Returns the canonical name and the player count the suffix asked for (or ``None``).
    """
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    players: int | None = None
    head, sep, tail = key.rpartition("-")
    if sep and tail.endswith("p") and tail[:-1].isdigit():
        key, players = head, int(tail[:-1])
    key = ALIASES.get(key, key)
    if key not in PRESETS:
        raise UnknownPresetError(name, preset_names())
    return key, players


def get_rules(name: str = "paulista", /, **overrides: Any) -> RuleSet:
    """The rule set of a preset (name, alias or ``NAME-Np``) with house-rule overrides.

    ``name`` is not a house rule: a rule set keeps the name of the preset it was built from
    (what a match shows, what ratings group by), so overriding it raises
    :class:`InvalidRulesError` rather than passing one preset off as another."""
    if "name" in overrides:
        raise InvalidRulesError(
            "name", "is the preset's name, not a house rule: pick the preset by name and override its fields"
        )
    key, players = find_preset(name)
    base = PRESETS[key]
    extra: dict[str, Any] = {}
    if players is not None:
        extra["players"] = players
        if players == 3 and base.play_mode is PlayMode.TEAMS:
            extra["play_mode"] = PlayMode.INDIVIDUAL
    extra.update(overrides)
    if extra.get("players") == 3 and base.play_mode is PlayMode.TEAMS and "play_mode" not in extra:
        extra["play_mode"] = PlayMode.INDIVIDUAL
    # The hand of eleven is "one hand from the end": a new target moves it along
    # (paulista to 24 plays it at 23), unless the override sets it explicitly.
    target = extra.get("target_points")
    if isinstance(target, int) and "hand_of_eleven_at" not in extra and base.hand_of_eleven_at is not None:
        at = base.hand_of_eleven_at + target - base.target_points
        extra["hand_of_eleven_at"] = at if at >= 1 else None
    if not extra:
        return base
    overridden = _key(extra)
    return _build_once(None if overridden is None else ("preset", key, overridden), base, extra)


@lru_cache(maxsize=256)
def house_rules(rules: RuleSet) -> tuple[str, ...]:
    """The names of the fields in which ``rules`` differs from its preset played at the same
    table size, target and number of games (what a match's rules summary names as its house
    rules), sorted. A rule set not built from a registered preset is compared with the field
    defaults."""
    ref = RuleSet()
    if rules.name in PRESETS:
        shown = {"players": rules.players, "target_points": rules.target_points}
        try:
            ref = get_rules(rules.name, games_to_win=rules.games_to_win, **shown)
        except InvalidRulesError:
            ref = PRESETS[rules.name]
    differ = (f.name for f in fields(RuleSet) if getattr(rules, f.name) != getattr(ref, f.name))
    return tuple(sorted(name for name in differ if name != "name"))


__all__ = [
    "ALIASES",
    "PRESETS",
    "RuleSet",
    "find_preset",
    "get_rules",
    "house_rules",
    "preset_names",
    "register_preset",
]
