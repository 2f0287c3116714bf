"""River Plate and other Spanish-deck presets: Uruguayan, gaúcho, Valencian, carancho,
pica-pica. Imported by :mod:`truco_engine` so that they are always registered.

Sources and every decision: ``docs/rules/river-plate.md``.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from truco_engine.enums import Deck, FaltaEnvido, FoldOnEnvido, PartnerFlor, PlayMode, Ranking
from truco_engine.rules import PRESETS, register_preset

_ARGENTINE: Final = PRESETS["argentine"]

URUGUAYAN: Final = dataclasses.replace(
    _ARGENTINE,
    name="uruguayan",
    ranking=Ranking.MUESTRA,
    target_points=30,
    halves=True,
    falta_envido=FaltaEnvido.HALF,
    fold_on_envido=FoldOnEnvido.DECLINED,
    partner_flor=PartnerFlor.VOIDED,
)
"""Uruguayan truco: muestra and piezas, flor, 30 points in two halves of 15. Seed 001 describes
it: the envido speaks for the pair (``partner_flor="voided"``)."""

GAUCHO: Final = dataclasses.replace(
    _ARGENTINE,
    name="gaucho",
    players=4,
    target_points=12,
    games_to_win=2,
    truco_call_names=("truco", "retruco", "vale_quatro"),
    fold_on_envido=FoldOnEnvido.DECLINED,
    partner_flor=PartnerFlor.VOIDED,
)
"""Truco gaúcho / cego: the Argentine card order and calls, games of 12, best of three
(ruins and boas); seed 001's envido that speaks for the pair."""

VALENCIAN: Final = dataclasses.replace(
    _ARGENTINE,
    name="valencian",
    players=4,
    deck=Deck.SPANISH22,
    ranking=Ranking.VALENCIAN,
    target_points=12,
    games_to_win=2,
    truco_call_names=("truc", "retruc", "quatre_val"),
    truco_game_call="joc_fora",
    flor=False,
    fold_on_envido=FoldOnEnvido.DECLINED,
    partner_flor=PartnerFlor.VOIDED,
)
"""Valencian truc: 22 cards, truc / retruc / quatre val / joc fora (the game at stake), envit,
two games (cames) of 12."""

CARANCHO: Final = dataclasses.replace(GAUCHO, name="carancho", players=3, play_mode=PlayMode.CARANCHO)
"""Three players: two against the carancho (the mano, who gets a fourth card and discards)."""

PICA_PICA: Final = dataclasses.replace(
    _ARGENTINE,
    name="pica-pica",
    players=6,
    target_points=30,
    halves=True,
    pica_pica=True,
    partner_flor=PartnerFlor.VOIDED,
)
"""Six (to twelve) players in two teams, to 30; every second hand is head-to-head (seed 001),
the envido speaking for the pair in the team hands (seed 001); folding as in seed 003."""

register_preset("uruguayan", URUGUAYAN, "uruguayo", "truco-uruguayo", "uruguay", "muestra")
register_preset(
    "uruguayan-40", dataclasses.replace(URUGUAYAN, name="uruguayan-40", target_points=40), "uruguayo-40"
)
register_preset("gaucho", GAUCHO, "gaúcho", "truco-gaucho", "truco-gaúcho", "cego", "truco-cego", "gauderio")
register_preset("valencian", VALENCIAN, "truc", "truc-valencia", "valenciano", "truc-valencià")
register_preset("carancho", CARANCHO, "truco-carancho")
register_preset("pica-pica", PICA_PICA, "picapica", "argentine-pica-pica")
