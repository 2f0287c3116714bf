"""Brazilian presets for larger tables: extra manilhas above the four fixed ones.

Seed 001 (pt.wikipedia "Truco", the card-ranking table) lists, per column, the manilhas of
truco for larger tables, strongest first, above zap (4♣) > 7♥ > A♠ > 7♦. Our reading of
the garbled table (see ``docs/rules/brazilian.md`` for the quoted text):

* Truco mineiro, 6 players (trio): Dourada Q♦ > Caculo J♣ > Ferrão 5♠, then the fixed four.
* Irra Dourada, 8 players (quadra): Irra 4♠ > Douradão K♦ > Dourada Q♦ > Caculo J♣ >
  Ferrão 5♠, then the fixed four.
* Douradona, 10 to 12 players (quíntuplo ou sêxtuplo): "Manilha 4" K♣, 7♣; "Manilha 3"
  K♦, J♦, 2♦, A♦; "Manilha 2" Q♦, J♣, 2♣, A♣, 5♣, 4♠; "Manilha 1" the fixed four.

They build on truco mineiro (fixed manilhas, no vira, 2/4/6/10/12 count, hand of ten); the
seed gives no count for them, so that is a documented choice, overridable like any field.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from truco_engine.rules import PRESETS, register_preset

MINEIRO_TRIO_EXTRA: Final = ("QD", "JC", "5S")
"""Dourada, Caculo, Ferrão."""
IRRA_DOURADA_EXTRA: Final = ("4S", "KD", "QD", "JC", "5S")
"""Irra, Douradão, Dourada, Caculo, Ferrão."""
DOURADONA_EXTRA: Final = ("KC", "7C", "KD", "JD", "2D", "AD", "QD", "JC", "2C", "AC", "5C", "4S")
"""Manilha 4 (K♣, 7♣), manilha 3 (K♦, J♦, 2♦, A♦), manilha 2 (Q♦ Dourada, J♣ Caculo,
2♣ Duque, A♣ Piu, 5♣ Cinquinho, 4♠ Catatau)."""

_MINEIRO = PRESETS["mineiro"]

register_preset(
    "mineiro-trio",
    dataclasses.replace(_MINEIRO, name="mineiro-trio", players=6, extra_manilhas=MINEIRO_TRIO_EXTRA),
    "truco-mineiro-trio",
)
register_preset(
    "irra-dourada",
    dataclasses.replace(_MINEIRO, name="irra-dourada", players=8, extra_manilhas=IRRA_DOURADA_EXTRA),
    "irradourada",
    "irra",
    "quadra",
)
register_preset(
    "douradona",
    dataclasses.replace(_MINEIRO, name="douradona", players=12, extra_manilhas=DOURADONA_EXTRA),
    "truco-douradona",
)
