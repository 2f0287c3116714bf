"""Action builders (``from truco_client import actions as A``; defined in
:mod:`truco_kit.actions`)::

    A.play("4C"), A.play("7H", face_down=True), A.truco(), A.accept(), A.envido()
"""

from truco_kit.actions import (
    Action,
    accept,
    contraflor,
    contraflor_al_resto,
    decline,
    discard,
    envido,
    falta_envido,
    flor,
    fold,
    parse,
    play,
    play_slot,
    real_envido,
    truco,
)

__all__ = [
    "Action",
    "accept",
    "contraflor",
    "contraflor_al_resto",
    "decline",
    "discard",
    "envido",
    "falta_envido",
    "flor",
    "fold",
    "parse",
    "play",
    "play_slot",
    "real_envido",
    "truco",
]
