"""Actions a seat can take, with a text form (``play 4C``, ``play 4C down``, ``truco``).

Kinds:

* ``play`` — play ``card`` (face up, or face down with ``face_down=True``). In the iron hand
  players cannot see their own cards and play by ``slot`` (0-based position in hand).
* ``truco`` — call the next step of the truco ladder (truco, six, nine, twelve; or truco,
  retruco, vale cuatro). Answering a truco-ladder call with ``truco`` raises it.
* ``accept`` / ``decline`` — answer the pending call (quiero / no quiero). Also the decision
  of the side at the hand of eleven: ``accept`` plays it, ``decline`` gives it up.
* ``fold`` — give up the hand (irse al mazo), where the rule set allows it.
* ``envido``, ``real_envido``, ``falta_envido`` — the envido chain.
* ``flor``, ``contraflor``, ``contraflor_al_resto`` — the flor chain.
* ``discard`` — the carancho discards ``card`` from four.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from truco_engine._fast import fast_init
from truco_engine.errors import TrucoError

KINDS: Final = (
    "play",
    "truco",
    "accept",
    "decline",
    "fold",
    "envido",
    "real_envido",
    "falta_envido",
    "flor",
    "contraflor",
    "contraflor_al_resto",
    "discard",
)
CARD_KINDS: Final = ("play", "discard")


@fast_init
@dataclass(frozen=True, slots=True)
class Action:
    """One action of one seat."""

    kind: str
    """One of :data:`KINDS`."""
    card: str | None = None
    """Card code for ``play`` and ``discard``."""
    face_down: bool = False
    """``play`` only: the card is played face down (worth nothing)."""
    slot: int | None = None
    """``play`` in the iron hand only: position of the unseen card in hand."""

    def text(self) -> str:
        """Canonical text form, parsed back by :func:`parse_action`."""
        if self.kind == "play":
            if self.slot is not None:
                return f"play #{self.slot}"
            return f"play {self.card} down" if self.face_down else f"play {self.card}"
        if self.kind == "discard":
            return f"discard {self.card}"
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping (only the fields that apply)."""
        d: dict[str, Any] = {"kind": self.kind}
        if self.card is not None:
            d["card"] = self.card
        if self.face_down:
            d["face_down"] = True
        if self.slot is not None:
            d["slot"] = self.slot
        return d

    @classmethod
    def from_dict(cls, data: Any) -> Action:
        """Inverse of :meth:`to_dict`, with validation of the shape."""
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            raise TrucoError(f"not an action: {data!r}; kinds are: {', '.join(KINDS)}")
        card = data.get("card")
        slot = data.get("slot")
        face_down = data.get("face_down", False)
        if card is not None and not isinstance(card, str):
            raise TrucoError(f"action card must be a card code, got {card!r}")
        if slot is not None and (not isinstance(slot, int) or isinstance(slot, bool)):
            raise TrucoError(f"action slot must be an integer, got {slot!r}")
        if not isinstance(face_down, bool):
            raise TrucoError(f"action face_down must be true or false, got {face_down!r}")
        return cls(data["kind"], card, face_down, slot)

    def __str__(self) -> str:
        return self.text()


def parse_action(text: str) -> Action:
    """Parse the text form: ``play 4C``, ``play 4C down``, ``play #0``, ``truco``, …"""
    parts = text.strip().split()
    if not parts or parts[0] not in KINDS:
        raise TrucoError(f"cannot read action {text!r}; kinds are: {', '.join(KINDS)}")
    kind = parts[0]
    if kind in CARD_KINDS:
        if len(parts) < 2:
            raise TrucoError(f"{kind} needs a card, e.g. '{kind} 4C'")
        if kind == "play" and parts[1].startswith("#") and parts[1][1:].isdigit() and len(parts) == 2:
            return Action("play", slot=int(parts[1][1:]))
        down = len(parts) == 3 and parts[2] in ("down", "face-down")
        if len(parts) > 3 or (len(parts) == 3 and not down) or (down and kind != "play"):
            raise TrucoError(f"cannot read action {text!r}")
        return Action(kind, parts[1], face_down=down)
    if len(parts) != 1:
        raise TrucoError(f"cannot read action {text!r}: {kind} takes no argument")
    return Action(kind)


TRUCO: Final = Action("truco")
ACCEPT: Final = Action("accept")
DECLINE: Final = Action("decline")
FOLD: Final = Action("fold")
ENVIDO: Final = Action("envido")
REAL_ENVIDO: Final = Action("real_envido")
FALTA_ENVIDO: Final = Action("falta_envido")
FLOR: Final = Action("flor")
CONTRAFLOR: Final = Action("contraflor")
CONTRAFLOR_AL_RESTO: Final = Action("contraflor_al_resto")


_PLAY: dict[tuple[str, bool], Action] = {}
_SLOT: dict[int, Action] = {}
_DISCARD: dict[str, Action] = {}


def play(card: str, face_down: bool = False) -> Action:
    """``Action("play", card, face_down)``, one shared instance per card (actions are frozen)."""
    a = _PLAY.get((card, face_down))
    if a is None:
        a = _PLAY[(card, face_down)] = Action("play", card, face_down)
    return a


def play_slot(slot: int) -> Action:
    """``Action("play", slot=slot)`` (the iron hand), shared."""
    a = _SLOT.get(slot)
    if a is None:
        a = _SLOT[slot] = Action("play", slot=slot)
    return a


def discard(card: str) -> Action:
    """``Action("discard", card)``, shared."""
    a = _DISCARD.get(card)
    if a is None:
        a = _DISCARD[card] = Action("discard", card)
    return a
