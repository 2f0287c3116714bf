"""Action builders.

The SDK uses the engine's :class:`truco_engine.Action` as its action type, so a bot's code is
the same whether it plays over the network or in-process::

    from truco_client import actions as A
    A.play("4C"), A.play("7H", face_down=True), A.truco(), A.accept(), A.envido()

Every action listed in ``Observation.legal_actions`` can be submitted back unchanged.
"""

from __future__ import annotations

from truco_engine import Action, parse_action

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


def play(card: str, *, face_down: bool = False) -> Action:
    """Play ``card`` (e.g. ``"4C"``, ``"1e"``), face up unless ``face_down``."""
    return Action("play", card, face_down=face_down)


def play_slot(slot: int) -> Action:
    """Play the card at position ``slot`` (0-based) of an unseen hand (iron hand)."""
    return Action("play", slot=slot)


def truco() -> Action:
    """Call truco, or raise the truco ladder one step (retruco, vale cuatro; six, nine, twelve)."""
    return Action("truco")


def accept() -> Action:
    """Accept the pending call ("quiero"), or play the hand of eleven."""
    return Action("accept")


def decline() -> Action:
    """Decline the pending call ("no quiero"), or refuse the hand of eleven."""
    return Action("decline")


def fold() -> Action:
    """Give up the hand (irse al mazo)."""
    return Action("fold")


def envido() -> Action:
    """Call (or raise with) envido."""
    return Action("envido")


def real_envido() -> Action:
    """Call (or raise with) real envido."""
    return Action("real_envido")


def falta_envido() -> Action:
    """Call (or raise with) falta envido."""
    return Action("falta_envido")


def flor() -> Action:
    """Sing flor."""
    return Action("flor")


def contraflor() -> Action:
    """Answer a flor with contraflor."""
    return Action("contraflor")


def contraflor_al_resto() -> Action:
    """Answer a flor with contraflor al resto."""
    return Action("contraflor_al_resto")


def discard(card: str) -> Action:
    """Discard ``card`` (the carancho's fourth card)."""
    return Action("discard", card)


def parse(text: str) -> Action:
    """Parse the text form: ``play 4C``, ``play 4C down``, ``play #0``, ``truco``, ``accept``…"""
    return parse_action(text)
