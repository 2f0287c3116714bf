"""Typed events emitted by every transition, and their per-seat redaction.

Each event kind has one frozen payload class; its field names are the names the wire uses
(``truco.v1`` payload messages carry the same fields, and the payload's :attr:`kind` is the
name of its ``oneof`` case). Conventions shared by every payload and by the observation:
tricks are indexed from 0 (``trick_index`` is a position in ``Observation.tricks``), a score
holder is a ``team`` (the seat itself where each plays for himself), the turned-up card is
``turn_up``.

An :class:`Event` wraps a payload with its visibility: public unless ``private_to`` names the
seats entitled to its ``hidden`` fields; every other seat (and a spectator) gets
:meth:`Event.redact`'s copy, in which each hidden field is blanked (a card becomes ``None``,
a tuple of cards becomes empty; the payload's ``count`` still says how many there were).
Redaction happens here, in the engine, never in a transport.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from truco_engine._fast import fast_init


class EventKind(StrEnum):
    """Every kind of engine event: the ``kind`` of its payload class."""

    HAND_STARTED = "hand_started"
    CARDS_DEALT = "cards_dealt"
    CARDS_REVEALED = "cards_revealed"
    CARD_PLAYED = "card_played"
    CARD_DISCARDED = "card_discarded"
    HEAD_TO_HEAD_STARTED = "head_to_head_started"
    TRICK_ENDED = "trick_ended"
    CALL_MADE = "call_made"
    CALL_ANSWERED = "call_answered"
    HAND_OF_ELEVEN_DECISION = "hand_of_eleven_decision"
    POINTS_DECLARED = "points_declared"
    BET_WON = "bet_won"
    FOLDED = "folded"
    HAND_ENDED = "hand_ended"
    SCORE_CHANGED = "score_changed"
    GAME_ENDED = "game_ended"
    MATCH_ENDED = "match_ended"


class CallFamily(StrEnum):
    """What a call (or a pending decision) belongs to."""

    TRUCO = "truco"
    ENVIDO = "envido"
    FLOR = "flor"
    HAND_OF_ELEVEN = "hand_of_eleven"


class Special(StrEnum):
    """A hand played under special rules."""

    ELEVEN = "eleven"
    """The hand of eleven (mão de onze; of ten in mineiro): one side decides to play it."""
    IRON = "iron"
    """The iron hand (mão de ferro): both sides at eleven, everybody plays blind."""


class HandEndReason(StrEnum):
    """Why a hand ended."""

    TRICKS = "tricks"
    """A side won the tricks."""
    FOLDED = "folded"
    """A seat folded (went to the mazo)."""
    DECLINED = "declined"
    """A truco call was declined."""
    ELEVEN_REFUSED = "eleven_refused"
    """The side at the hand of eleven gave it up."""
    ALL_TIED_MANO = "all_tied_mano"
    """Every trick tied; the mano's side takes the hand (``all_tricks_tied="mano"``)."""
    ALL_TIED_REDEAL = "all_tied_redeal"
    """Every trick tied; nobody scores and the cards are dealt again."""


# ------------------------------------------------------------------------ payloads
@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class HandStarted:
    """A hand started: who deals, who is mano, the turned-up card and the deal's commitment
    (SHA-256 of the deck order and salt, revealed when the match ends)."""

    kind: ClassVar[EventKind] = EventKind.HAND_STARTED
    game_number: int
    hand_number: int
    dealer: int
    mano: int
    turn_up: str | None
    deck_commitment: str
    special: Special | None = None


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CardsDealt:
    """Cards dealt to ``seat``; ``cards`` private to that seat (to nobody in the iron hand)."""

    kind: ClassVar[EventKind] = EventKind.CARDS_DEALT
    seat: int
    cards: tuple[str, ...]
    count: int


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CardsRevealed:
    """``seat``'s cards shown: to everybody (``public``: the envido or flor winner's cards at
    the end of the hand) or to some seats only (partners at the hand of eleven)."""

    kind: ClassVar[EventKind] = EventKind.CARDS_REVEALED
    seat: int
    cards: tuple[str, ...]
    count: int
    reason: str
    """``envido``, ``flor`` or ``hand_of_eleven``."""
    public: bool


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CardPlayed:
    """A card played to trick ``trick_index``; hidden from the others when face down."""

    kind: ClassVar[EventKind] = EventKind.CARD_PLAYED
    seat: int
    card: str | None
    face_down: bool
    trick_index: int


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CardDiscarded:
    """The carancho's discard; the card is private to him."""

    kind: ClassVar[EventKind] = EventKind.CARD_DISCARDED
    seat: int
    card: str | None


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class HeadToHeadStarted:
    """A head-to-head sub-hand of a pica-pica round starts between ``seats`` (the first is
    its mano); ``index`` counts the sub-hands of the round from 0."""

    kind: ClassVar[EventKind] = EventKind.HEAD_TO_HEAD_STARTED
    seats: tuple[int, ...]
    mano: int
    index: int


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TrickEnded:
    """Trick ``trick_index`` ended: won by ``winner_seat`` (``winner_team``), or tied."""

    kind: ClassVar[EventKind] = EventKind.TRICK_ENDED
    trick_index: int
    winner_seat: int | None
    winner_team: int | None
    tied: bool


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CallMade:
    """A call: ``name`` is the step as the rule set words it (``truco``, ``six``,
    ``retruco``, ``real_envido``, ``contraflor``...). ``responder`` answers it (``None`` when
    nobody does: a flor no rival can answer); ``cancels`` names the family a flor voided."""

    kind: ClassVar[EventKind] = EventKind.CALL_MADE
    seat: int
    family: CallFamily
    name: str
    value_if_accepted: int
    value_if_declined: int
    responder: int | None
    cancels: CallFamily | None = None


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CallAnswered:
    """A call answered (quiero / no quiero); ``value`` is the accepted value, or the points
    the caller's side scores on a decline."""

    kind: ClassVar[EventKind] = EventKind.CALL_ANSWERED
    seat: int
    family: CallFamily
    accepted: bool
    value: int


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class HandOfElevenDecision:
    """The side at the hand of eleven decided whether to play it."""

    kind: ClassVar[EventKind] = EventKind.HAND_OF_ELEVEN_DECISION
    seat: int
    team: int
    play: bool


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PointsDeclared:
    """Envido or flor points declared; ``points`` is ``None`` for "son buenas" (not shown)."""

    kind: ClassVar[EventKind] = EventKind.POINTS_DECLARED
    seat: int
    family: CallFamily
    points: int | None


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class BetWon:
    """An envido or flor bet was won by ``winner_team`` (``winner_seat`` is ``None`` when no
    seat's points decided it: the envido point conceded by folding)."""

    kind: ClassVar[EventKind] = EventKind.BET_WON
    family: CallFamily
    winner_seat: int | None
    winner_team: int
    points: int


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Folded:
    """``seat`` folded (went to the mazo) for its team."""

    kind: ClassVar[EventKind] = EventKind.FOLDED
    seat: int
    team: int


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class HandEnded:
    """A hand (or a head-to-head sub-hand) ended; ``winner_team`` is ``None`` when nobody
    scores."""

    kind: ClassVar[EventKind] = EventKind.HAND_ENDED
    winner_team: int | None
    points: int
    reason: HandEndReason


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreChanged:
    """Scores of the current game and games won, index = team."""

    kind: ClassVar[EventKind] = EventKind.SCORE_CHANGED
    scores: tuple[int, ...]
    games_won: tuple[int, ...]


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class GameEnded:
    """Game ``game_number`` was won by ``winner_team``."""

    kind: ClassVar[EventKind] = EventKind.GAME_ENDED
    game_number: int
    winner_team: int
    games_won: tuple[int, ...]


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MatchEnded:
    """The match ended. The server follows it with its ``match_revealed`` event (seed and
    every deal) so that anyone can verify the deals (docs/fairness.md)."""

    kind: ClassVar[EventKind] = EventKind.MATCH_ENDED
    winner_team: int | None
    games_won: tuple[int, ...]


Payload = (
    HandStarted
    | CardsDealt
    | CardsRevealed
    | CardPlayed
    | CardDiscarded
    | HeadToHeadStarted
    | TrickEnded
    | CallMade
    | CallAnswered
    | HandOfElevenDecision
    | PointsDeclared
    | BetWon
    | Folded
    | HandEnded
    | ScoreChanged
    | GameEnded
    | MatchEnded
)
"""Any engine event payload."""

PAYLOADS: dict[EventKind, type[Payload]] = {
    cls.kind: cls
    for cls in (
        HandStarted,
        CardsDealt,
        CardsRevealed,
        CardPlayed,
        CardDiscarded,
        HeadToHeadStarted,
        TrickEnded,
        CallMade,
        CallAnswered,
        HandOfElevenDecision,
        PointsDeclared,
        BetWon,
        Folded,
        HandEnded,
        ScoreChanged,
        GameEnded,
        MatchEnded,
    )
}
"""The payload class of every kind."""


def _enum_fields(cls: type) -> dict[str, type[StrEnum]]:
    """Fields of ``cls`` typed with one of this module's enums (``X`` or ``X | None``)."""
    out: dict[str, type[StrEnum]] = {}
    for name, hint in typing.get_type_hints(cls).items():
        for t in (hint, *typing.get_args(hint)):
            if isinstance(t, type) and issubclass(t, StrEnum):
                out[name] = t
    return out


_ENUM_FIELDS: dict[type, dict[str, type[StrEnum]]] = {cls: _enum_fields(cls) for cls in PAYLOADS.values()}
_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in PAYLOADS.values()
}
"""Each payload class's field names, in order (``dataclasses.fields`` builds them per call)."""


def payload_to_dict(p: Payload) -> dict[str, Any]:
    """JSON-able mapping of a payload: ``kind`` plus every field (tuples as lists)."""
    d: dict[str, Any] = {"kind": p.kind.value}
    for name in _FIELD_NAMES[type(p)]:
        v = getattr(p, name)
        d[name] = list(v) if isinstance(v, tuple) else v.value if isinstance(v, StrEnum) else v
    return d


def payload_from_dict(d: Mapping[str, Any]) -> Payload:
    """Inverse of :func:`payload_to_dict` (extra keys are refused by the payload class)."""
    cls = PAYLOADS[EventKind(d["kind"])]
    enums = _ENUM_FIELDS[cls]
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        if k == "kind":
            continue
        if isinstance(v, list):
            v = tuple(v)
        elif v is not None and k in enums:
            v = enums[k](v)
        kwargs[k] = v
    return cls(**kwargs)


# --------------------------------------------------------------------------- events
@fast_init
@dataclass(frozen=True, slots=True)
class Event:
    """One event: a typed payload and who may see its hidden fields."""

    payload: Payload
    private_to: frozenset[int] | None = None
    """Seats that see the ``hidden`` fields; ``None`` means the whole event is public."""
    hidden: tuple[str, ...] = field(default=())
    """Payload fields blanked for seats outside ``private_to``."""

    @property
    def kind(self) -> EventKind:
        return self.payload.kind

    def visible_to(self, seat: int | None) -> bool:
        """Whether ``seat`` (``None``: a spectator) sees the hidden fields."""
        return self.private_to is None or (seat is not None and seat in self.private_to)

    def redact(self, seat: int | None) -> Event:
        """The event as ``seat`` (``None``: a spectator) may see it (a public event)."""
        if self.visible_to(seat):
            return self if self.private_to is None else Event(self.payload)
        blank = {k: () if isinstance(getattr(self.payload, k), tuple) else None for k in self.hidden}
        payload: Any = self.payload  # ``replace`` cannot check fields named at run time
        return Event(dataclasses.replace(payload, **blank))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping (the event as stored; redact first to send it)."""
        d = payload_to_dict(self.payload)
        if self.private_to is not None:
            d["private_to"] = sorted(self.private_to)
            d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Event:
        """Inverse of :meth:`to_dict`."""
        private = d.get("private_to")
        payload = payload_from_dict({k: v for k, v in d.items() if k not in ("private_to", "hidden")})
        return cls(payload, None if private is None else frozenset(private), tuple(d.get("hidden", ())))


_SEATS: dict[tuple[int, ...], frozenset[int]] = {}


def private(payload: Payload, seats: Iterable[int], *hidden: str) -> Event:
    """An event whose ``hidden`` fields only ``seats`` see."""
    key = tuple(seats)
    who = _SEATS.get(key)
    if who is None:
        who = _SEATS[key] = frozenset(key)
    return Event(payload, who, hidden)
