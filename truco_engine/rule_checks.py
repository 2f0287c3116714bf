"""Validation of a :class:`truco_engine.rules.RuleSet`: every check names the offending field
and what is allowed (:class:`InvalidRulesError`).

:func:`validate` runs the checks in a fixed order (the table, then the values, then the
options that only make sense with another option), so a rule set with several problems
always names the same field first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from truco_engine.cards import DECKS
from truco_engine.enums import Deck, FaltaEnvido, PlayMode, Ranking
from truco_engine.errors import InvalidRulesError

if TYPE_CHECKING:
    from truco_engine.rules import RuleSet

PICA_PICA_PLAYERS: Final = (6, 8, 10, 12)
"""Table sizes of the head-to-head rounds (seed 001: "Nas modalidades de 6 a 12 pessoas")."""


def validate(r: RuleSet) -> None:
    """Raise :class:`InvalidRulesError` for the first problem of ``r``."""
    if not isinstance(r.name, str) or not r.name:
        raise InvalidRulesError("name", "must be a non-empty string")
    _check_table(r)
    _check_values(r)
    _check_options(r)
    _check_house_rules(r)
    if r.envido and r.deck is Deck.FRENCH40:
        raise InvalidRulesError("envido", "envido is played with a Spanish deck; allowed: false")
    seen: set[str] = set()
    for c in r.extra_manilhas:
        if c not in DECKS[r.deck] or c in seen:
            raise InvalidRulesError("extra_manilhas", f"{c!r} is not a distinct card of deck '{r.deck}'")
        seen.add(c)


def _int(name: str, value: object, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InvalidRulesError(name, f"{value!r} is not allowed; allowed: integers {lo}..{hi}")


def _check_table(r: RuleSet) -> None:
    """Deck, ranking, players and whether the deck has cards enough for them."""
    french = r.deck is Deck.FRENCH40
    needs_french = r.ranking in (Ranking.VIRA, Ranking.FIXED_MINEIRO)
    if french != needs_french:
        decks = "french40" if needs_french else "spanish40, spanish22"
        raise InvalidRulesError("deck", f"'{r.deck}' does not fit ranking '{r.ranking}'; allowed: {decks}")
    if r.ranking is Ranking.VALENCIAN and r.deck is not Deck.SPANISH22:
        raise InvalidRulesError("deck", "ranking 'valencian' needs deck 'spanish22'; allowed: spanish22")
    if r.deck is Deck.SPANISH22 and r.ranking is not Ranking.VALENCIAN:
        raise InvalidRulesError("ranking", "deck 'spanish22' needs ranking 'valencian'; allowed: valencian")
    allowed_players: tuple[int, ...]
    if r.play_mode is PlayMode.TEAMS:
        allowed_players = (2, 4, 6) if r.deck is Deck.SPANISH22 else (2, 4, 6, 8, 10, 12)
    else:
        allowed_players = (3,)
    if r.players not in allowed_players:
        raise InvalidRulesError(
            "players",
            f"{r.players!r} is not allowed with play_mode '{r.play_mode}' and deck '{r.deck}'; "
            f"allowed: {', '.join(map(str, allowed_players))}",
        )
    # Each player needs 3 cards (4 for the carancho), plus a turn-up card where used.
    need = (
        3 * r.players
        + (1 if r.ranking in (Ranking.VIRA, Ranking.MUESTRA) else 0)
        + (1 if r.play_mode is PlayMode.CARANCHO else 0)
    )
    have = len(DECKS[r.deck]) if not r.clean_deck else 24
    if need > have:
        raise InvalidRulesError("players", f"{r.players} players need {need} cards; the deck has {have}")


def _check_values(r: RuleSet) -> None:
    """Points, the truco ladder and its names, the hand of eleven."""
    _int("target_points", r.target_points, 1, 1000)
    _int("games_to_win", r.games_to_win, 1, 99)
    _int("base_value", r.base_value, 1, 1000)
    _int("face_down_from_trick", r.face_down_from_trick, 0, 3)
    if r.face_down_from_trick == 1:
        raise InvalidRulesError("face_down_from_trick", "1 is not allowed; allowed: 0 (never), 2, 3")
    ladder = r.truco_ladder
    if not ladder or any(not isinstance(v, int) or isinstance(v, bool) for v in ladder):
        raise InvalidRulesError("truco_ladder", "must be a non-empty list of integers")
    if any(b <= a for a, b in zip((r.base_value, *ladder), ladder, strict=False)):
        raise InvalidRulesError(
            "truco_ladder", f"values must rise above base_value {r.base_value}: {list(ladder)}"
        )
    if len(r.truco_call_names) != len(ladder):
        raise InvalidRulesError("truco_call_names", f"needs {len(ladder)} names, one per ladder step")
    game_call = r.truco_game_call
    if game_call is not None and (
        not isinstance(game_call, str) or not game_call or game_call in r.truco_call_names
    ):
        raise InvalidRulesError(
            "truco_game_call", "must be null or a name that is not one of truco_call_names"
        )
    if r.hand_of_eleven_at is not None:
        _int("hand_of_eleven_at", r.hand_of_eleven_at, 1, r.target_points - 1)
        _int("hand_of_eleven_value", r.hand_of_eleven_value, 1, 1000)
        _int("hand_of_eleven_refusal", r.hand_of_eleven_refusal, 1, 1000)
        if r.play_mode is not PlayMode.TEAMS:
            raise InvalidRulesError("hand_of_eleven_at", "only with play_mode 'teams'; allowed: null")
    else:  # not played, but an integer still (a rule set is hashed whole: an object broke it)
        for name in ("hand_of_eleven_value", "hand_of_eleven_refusal"):
            value = getattr(r, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidRulesError(
                    name, f"{value!r} is not allowed; allowed: an integer (1..1000 with hand_of_eleven_at)"
                )


def _check_options(r: RuleSet) -> None:
    """Options that need another option: clean deck, flor, folding, pica-pica."""
    if r.clean_deck and r.ranking in (Ranking.MUESTRA, Ranking.VALENCIAN):
        raise InvalidRulesError("clean_deck", f"not with ranking '{r.ranking}'; allowed: false")
    if r.flor and not r.envido:
        raise InvalidRulesError("flor", "flor needs envido; allowed: false when envido is false")
    if r.envido_with_flor and not r.flor:
        raise InvalidRulesError("envido_with_flor", "only with flor; allowed: false when flor is false")
    for name in ("flor_value", "flor_accepted_value", "contraflor_value"):
        _int(name, getattr(r, name), 1, 1000)
    if r.fold_concedes_envido and not (r.envido and r.fold):
        raise InvalidRulesError(
            "fold_concedes_envido", "only with envido and fold; allowed: false when either is false"
        )
    if r.pica_pica and (r.play_mode is not PlayMode.TEAMS or r.players not in PICA_PICA_PLAYERS):
        raise InvalidRulesError(
            "pica_pica",
            "head-to-head hands need two teams of 3 to 6 players; "
            "allowed: true with play_mode 'teams' and players 6, 8, 10 or 12, else false",
        )


def _check_house_rules(r: RuleSet) -> None:
    """The table rules other engines play (docs/rules/house-rules.md): each only where the
    rule it changes is played."""
    for name in ("envido_declined_plus_one", "falta_envido_adds_chain"):
        if getattr(r, name) and not r.envido:
            raise InvalidRulesError(name, "only with envido; allowed: false when envido is false")
    if not r.falta_after_envido_envido and not r.envido:
        raise InvalidRulesError(
            "falta_after_envido_envido", "only with envido; allowed: true when envido is false"
        )
    if r.falta_envido_by_winner and not (r.envido and r.falta_envido is FaltaEnvido.HALF):
        raise InvalidRulesError(
            "falta_envido_by_winner",
            "only with envido and falta_envido 'half'; allowed: false otherwise",
        )
    if r.fold_concedes_envido_after_truco and not r.fold_concedes_envido:
        raise InvalidRulesError(
            "fold_concedes_envido_after_truco",
            "only with fold_concedes_envido; allowed: false when fold_concedes_envido is false",
        )
    if r.fold_alone and not (r.fold and r.play_mode is PlayMode.TEAMS and r.players >= 4):
        raise InvalidRulesError(
            "fold_alone",
            "a player folds alone only beside a partner; allowed: true with fold, "
            "play_mode 'teams' and 4 or more players, else false",
        )
