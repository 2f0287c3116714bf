"""Action builders and the conversion between engine actions and ``truco.v1.Action``.

The SDK uses the engine's :class:`truco_engine.Action` as its action type, so a bot's code is
the same whether it plays over the network or in-process::

    from truco_client import actions as A
    A.play("4C"), A.play("7H", face_down=True), A.truco(), A.accept(), A.envido()

Every action listed in ``Observation.legal_actions`` can be submitted back unchanged.
"""

from __future__ import annotations

from truco.v1 import action_pb2
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
    "from_proto",
    "parse",
    "play",
    "play_slot",
    "real_envido",
    "to_proto",
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


# One place for the mapping between engine action kinds and ``truco.v1``: the server's
# ``truco_server.convert`` imports these too.
ENVIDO_KINDS = {
    "envido": action_pb2.ENVIDO_KIND_ENVIDO,
    "real_envido": action_pb2.ENVIDO_KIND_REAL_ENVIDO,
    "falta_envido": action_pb2.ENVIDO_KIND_FALTA_ENVIDO,
}
FLOR_KINDS = {
    "flor": action_pb2.FLOR_KIND_FLOR,
    "contraflor": action_pb2.FLOR_KIND_CONTRAFLOR,
    "contraflor_al_resto": action_pb2.FLOR_KIND_CONTRAFLOR_AL_RESTO,
}
ENVIDO_NAMES = {v: k for k, v in ENVIDO_KINDS.items()}
FLOR_NAMES = {v: k for k, v in FLOR_KINDS.items()}


def to_proto(action: Action) -> action_pb2.Action:
    """Engine/SDK action -> ``truco.v1.Action``."""
    k = action.kind
    if k == "play":
        if action.slot is not None:
            return action_pb2.Action(play_card=action_pb2.PlayCard(slot=action.slot))
        return action_pb2.Action(
            play_card=action_pb2.PlayCard(card=action.card or "", face_down=action.face_down)
        )
    if k == "truco":
        return action_pb2.Action(call_truco=action_pb2.CallTruco())
    if k == "accept":
        return action_pb2.Action(accept=action_pb2.Accept())
    if k == "decline":
        return action_pb2.Action(decline=action_pb2.Decline())
    if k == "fold":
        return action_pb2.Action(fold=action_pb2.Fold())
    if k in ENVIDO_KINDS:
        return action_pb2.Action(call_envido=action_pb2.CallEnvido(kind=ENVIDO_KINDS[k]))
    if k in FLOR_KINDS:
        return action_pb2.Action(call_flor=action_pb2.CallFlor(kind=FLOR_KINDS[k]))
    if k == "discard":
        return action_pb2.Action(discard=action_pb2.Discard(card=action.card or ""))
    raise ValueError(f"unknown action kind {k!r}")


def from_proto(msg: action_pb2.Action) -> Action:
    """``truco.v1.Action`` -> engine/SDK action."""
    which = msg.WhichOneof("action")
    if which == "play_card":
        pc = msg.play_card
        if pc.HasField("slot"):
            return Action("play", slot=pc.slot)
        return Action("play", pc.card, face_down=pc.face_down)
    if which == "discard":
        return Action("discard", msg.discard.card)
    if which == "call_envido":
        return Action(ENVIDO_NAMES.get(msg.call_envido.kind, "envido"))
    if which == "call_flor":
        return Action(FLOR_NAMES.get(msg.call_flor.kind, "flor"))
    simple = {"call_truco": "truco", "accept": "accept", "decline": "decline", "fold": "fold"}
    if which in simple:
        return Action(simple[which])
    raise ValueError("empty truco.v1.Action (no field of the oneof is set)")
