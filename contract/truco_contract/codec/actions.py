"""Engine actions and ``truco.v1.Action``, both ways (the decoder strict)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import truco_engine as te
from truco_contract.codec.errors import DecodeError
from truco_contract.pb import action_pb2

ENVIDO_KINDS: dict[str, Any] = {
    "envido": action_pb2.ENVIDO_KIND_ENVIDO,
    "real_envido": action_pb2.ENVIDO_KIND_REAL_ENVIDO,
    "falta_envido": action_pb2.ENVIDO_KIND_FALTA_ENVIDO,
}
FLOR_KINDS: dict[str, Any] = {
    "flor": action_pb2.FLOR_KIND_FLOR,
    "contraflor": action_pb2.FLOR_KIND_CONTRAFLOR,
    "contraflor_al_resto": action_pb2.FLOR_KIND_CONTRAFLOR_AL_RESTO,
}
_ENVIDO_NAMES = {v: k for k, v in ENVIDO_KINDS.items()}
_FLOR_NAMES = {v: k for k, v in FLOR_KINDS.items()}
_SIMPLE = {
    "call_truco": "truco",
    "accept": "accept",
    "decline": "decline",
    "fold": "fold",
    "resign": "resign",
}
_SIMPLE_PROTO: dict[str, Callable[[], action_pb2.Action]] = {
    "truco": lambda: action_pb2.Action(call_truco=action_pb2.CallTruco()),
    "accept": lambda: action_pb2.Action(accept=action_pb2.Accept()),
    "decline": lambda: action_pb2.Action(decline=action_pb2.Decline()),
    "fold": lambda: action_pb2.Action(fold=action_pb2.Fold()),
    "resign": lambda: action_pb2.Action(resign=action_pb2.Resign()),
}
MAX_CARD_CODE = 8
"""Longest card code accepted on the wire (the longest real one, ``12c``, has 3 characters)."""


@lru_cache(maxsize=4096)
def action_to_proto(action: te.Action) -> action_pb2.Action:
    """An engine action as ``truco.v1.Action`` (cached: a match offers few distinct actions;
    callers must not modify the returned message)."""
    k = action.kind
    if k == "play":
        if action.slot is not None:
            return action_pb2.Action(play_card=action_pb2.PlayCard(slot=action.slot))
        return action_pb2.Action(
            play_card=action_pb2.PlayCard(card=action.card or "", face_down=action.face_down)
        )
    if k in _SIMPLE_PROTO:
        return _SIMPLE_PROTO[k]()
    if k in ENVIDO_KINDS:
        return action_pb2.Action(call_envido=action_pb2.CallEnvido(kind=ENVIDO_KINDS[k]))
    if k in FLOR_KINDS:
        return action_pb2.Action(call_flor=action_pb2.CallFlor(kind=FLOR_KINDS[k]))
    if k == "discard":
        return action_pb2.Action(discard=action_pb2.Discard(card=action.card or ""))
    raise ValueError(f"unknown action kind {k!r}")


_ACTION_BYTES: dict[tuple[str, str | None, bool, int | None], bytes] = {}
""":func:`action_bytes` by the action's fields: a tuple of them hashes and compares in C, where
the action's own ``__hash__`` and ``__eq__`` (its dataclass's) are Python calls, several per
observation."""


def action_bytes(action: te.Action) -> bytes:
    """:func:`action_to_proto` serialized (kept per distinct action, at most 4,096: there are
    a few hundred)."""
    key = (action.kind, action.card, action.face_down, action.slot)
    made = _ACTION_BYTES.get(key)
    if made is None:
        if len(_ACTION_BYTES) >= 4096:
            _ACTION_BYTES.clear()
        made = _ACTION_BYTES[key] = action_to_proto(action).SerializeToString()
    return made


def _card(code: str, where: str) -> str:
    if not code:
        raise DecodeError(where, "a card code is required")
    if len(code) > MAX_CARD_CODE or not code.isascii() or not code.isalnum():
        raise DecodeError(where, f"not a card code: {code[:MAX_CARD_CODE]!r}")
    return code


def action_from_proto(msg: action_pb2.Action, where: str = "action", *, hidden: bool = False) -> te.Action:
    """``truco.v1.Action`` as an engine action. Raises :class:`DecodeError` when no action is
    set or a field is malformed (whether the action is legal is the engine's business).
    ``hidden``: a face-down play or a discard may come without its card (a record seen
    during the match by another seat)."""
    which = msg.WhichOneof("action")
    if which is None:
        raise DecodeError(
            where, "no action given: set one of " + ", ".join(action_pb2.Action.DESCRIPTOR.fields_by_name)
        )
    if which == "play_card":
        pc = msg.play_card
        if pc.HasField("slot"):
            if pc.card or pc.face_down:
                raise DecodeError(f"{where}.play_card", "give either a card or a slot, not both")
            if pc.slot < 0:
                raise DecodeError(f"{where}.play_card.slot", "a slot is 0 or more")
            return te.Action("play", slot=pc.slot)
        if hidden and pc.face_down and not pc.card:
            return te.Action("play", None, face_down=True)
        return te.Action("play", _card(pc.card, f"{where}.play_card.card"), face_down=pc.face_down)
    if which == "discard":
        if hidden and not msg.discard.card:
            return te.Action("discard", None)
        return te.Action("discard", _card(msg.discard.card, f"{where}.discard.card"))
    if which == "call_envido":
        name = _ENVIDO_NAMES.get(msg.call_envido.kind)
        if name is None:
            raise DecodeError(f"{where}.call_envido.kind", "one of ENVIDO, REAL_ENVIDO, FALTA_ENVIDO")
        return te.Action(name)
    if which == "call_flor":
        name = _FLOR_NAMES.get(msg.call_flor.kind)
        if name is None:
            raise DecodeError(f"{where}.call_flor.kind", "one of FLOR, CONTRAFLOR, CONTRAFLOR_AL_RESTO")
        return te.Action(name)
    return te.Action(_SIMPLE[which])
