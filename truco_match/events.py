"""A match's log: the engine's events plus the few the service adds, and what a viewer gets.

The log of a match is ``match_created`` (version 1), then every engine event in order (deals
included), and, once the match is over, ``match_ended`` or ``match_cancelled`` followed by
``match_revealed`` as the last event. Each entry has its own version, from 1.

* A stored entry (:data:`LogEntry`) is an engine :class:`truco_engine.Event` (a payload and
  who may see its hidden fields) or a service payload (always public).
* What a viewer receives is an :class:`EventView`: the version and the payload redacted for
  that viewer (:func:`redact`). Service payloads follow the engine's conventions: frozen
  dataclasses whose ``kind`` is the name of their ``oneof`` case in ``truco.v1.Event``.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import truco_engine as te
from truco_engine._fast import fast_init


class MatchStatus(StrEnum):
    """Lifecycle state of a match."""

    ACTIVE = "active"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    ABORTED = "aborted"
    """Ended by the server without a result (a seat did not join, or the match idled)."""


class SeatKind(StrEnum):
    """Who occupies a seat (informative, but for a seat the server's bot plays:
    :attr:`SeatInfo.bot_level`)."""

    HUMAN = "human"
    BOT = "bot"


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatInfo:
    """A seat as everybody may see it (never a credential)."""

    seat: int
    team: int
    """The seat's team in the first hand (carancho: it changes every hand)."""
    display_name: str
    kind: SeatKind = SeatKind.HUMAN
    player_id: str = ""
    """The operator's id of the player in the seat (its own, opaque to the server): what a
    rating follows from match to match; empty when the creator gave none."""
    bot_level: int = 0
    """The level of the server's built-in bot that plays this seat (1 to 6); 0: not the
    server."""


class DealSource(StrEnum):
    """Where the deals of a match come from (docs/fairness.md)."""

    SERVER_SEED = "server_seed"
    """The server's secret seed, its hash published at creation."""
    OPERATOR_SEED = "operator_seed"
    """A seed the creator chose (it could have chosen it for the deals it gives)."""
    OPERATOR_DECKS = "operator_decks"
    """Explicit deck orders from the creator for the first hands."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSeed:
    """Entropy a client contributed to the deals: the creator's (``seat`` is ``None``) or a
    seat's, given when it joined."""

    seat: int | None
    seed: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Fairness:
    """How a match's deals are made, public from its creation on."""

    deal_source: DealSource
    seed_hash: str
    """Lowercase hex SHA-256 of the seed (revealed in ``match_revealed``)."""
    operator_decks: int = 0
    """Hands whose deck order the creator gave."""
    client_seeds: tuple[ClientSeed, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchCreated:
    """The first event of every match."""

    kind: ClassVar[str] = "match_created"
    preset: str
    players: int
    seats: tuple[SeatInfo, ...]
    fairness: Fairness | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchCancelled:
    """The creator cancelled the match; ``match_revealed`` follows."""

    kind: ClassVar[str] = "match_cancelled"
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RevealedDeal:
    """One hand's deck order (top card first), salt and published commitment."""

    cards: tuple[str, ...]
    salt: str
    commitment: str
    operator_deck: bool = False
    """The creator gave this deck order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchRevealed:
    """The seed and every deal, the last event of a match that is over (docs/fairness.md)."""

    kind: ClassVar[str] = "match_revealed"
    seed: bytes
    """The server's (or the creator's) seed: its SHA-256 is ``Fairness.seed_hash``."""
    deals: tuple[RevealedDeal, ...]
    mixed_seed: bytes = b""
    """The seed mixed with the client seeds: what every deal was shuffled from."""


class TimeoutCause(StrEnum):
    """Why the server made a move for a seat."""

    CLOCK = "clock"
    DISCONNECTED = "disconnected"


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatJoined:
    """A seat joined (the match has a join window), with its client seed (may be empty)."""

    kind: ClassVar[str] = "seat_joined"
    seat: int
    client_seed: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTimedOut:
    """The awaited seat's time ran out (or it was away); the events of ``action``, its
    default move (:mod:`truco_match.timeout`), follow. ``action`` is ``None`` when the expiry
    forfeits the match (``match_forfeited`` follows), or when the seat had to sing a flor that
    is now lost and the decision passed to another seat."""

    kind: ClassVar[str] = "turn_timed_out"
    seat: int
    cause: TimeoutCause
    action: te.Action | None
    expiries: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchResigned:
    """``seat`` resigned; its team loses (``match_ended`` follows)."""

    kind: ClassVar[str] = "match_resigned"
    seat: int
    team: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchForfeited:
    """``seat`` ran out of time ``expiries`` times; its team loses."""

    kind: ClassVar[str] = "match_forfeited"
    seat: int
    team: int
    expiries: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchAdjudicated:
    """The creator awarded the match to ``winner_team``."""

    kind: ClassVar[str] = "match_adjudicated"
    winner_team: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchAborted:
    """The server ended the match without a result: ``not_joined`` (``seats`` had not
    joined in time) or ``idle``."""

    kind: ClassVar[str] = "match_aborted"
    reason: str
    seats: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeAdded:
    """The creator gave ``seat`` (``None``: every seat) ``added`` milliseconds."""

    kind: ClassVar[str] = "time_added"
    seat: int | None
    added: int
    """Milliseconds (a ``Duration`` on the wire)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialReissued:
    """The creator re-issued the credential of ``seat`` (``None``: the spectators'); the
    previous one is refused from this version on. Never carries the token."""

    kind: ClassVar[str] = "credential_reissued"
    seat: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnReminder:
    """The awaited ``seat``'s time for its decision runs out in ``remaining`` milliseconds
    (``TimeControl.remind_before``; once per decision)."""

    kind: ClassVar[str] = "turn_reminder"
    seat: int
    remaining: int
    """Milliseconds (a ``Duration`` on the wire)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatTakenOver:
    """``seat``'s player was away for the disconnect grace while the game awaited it: the
    server's bot at ``bot_level`` plays the seat until the seat's own credential acts again."""

    kind: ClassVar[str] = "seat_taken_over"
    seat: int
    bot_level: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatReclaimed:
    """``seat``'s player is back (its credential acted): the bot left the seat."""

    kind: ClassVar[str] = "seat_reclaimed"
    seat: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CardList:
    """A list of cards (one seat's hand)."""

    cards: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class HandCardsShown:
    """Every seat's cards of a finished hand, for spectators; empty lists for a seat."""

    kind: ClassVar[str] = "hand_cards_shown"
    hand_number: int
    hands: tuple[CardList, ...]


ServicePayload = (
    MatchCreated
    | MatchCancelled
    | MatchRevealed
    | SeatJoined
    | TurnTimedOut
    | MatchResigned
    | MatchForfeited
    | MatchAdjudicated
    | MatchAborted
    | TimeAdded
    | HandCardsShown
    | CredentialReissued
    | TurnReminder
    | SeatTakenOver
    | SeatReclaimed
)
"""A payload the service adds to the log (public, but ``hand_cards_shown``: see
:data:`SPECTATORS_ONLY`)."""

Payload = te.Payload | ServicePayload
"""Any payload of a match's log."""

SERVICE_PAYLOADS: dict[str, type[ServicePayload]] = {
    cls.kind: cls
    for cls in (
        MatchCreated,
        MatchCancelled,
        MatchRevealed,
        SeatJoined,
        TurnTimedOut,
        MatchResigned,
        MatchForfeited,
        MatchAdjudicated,
        MatchAborted,
        TimeAdded,
        HandCardsShown,
        CredentialReissued,
        TurnReminder,
        SeatTakenOver,
        SeatReclaimed,
    )
}

LogEntry = te.Event | ServicePayload
"""One stored event of a match's log."""


@dataclass(frozen=True, slots=True)
class UnknownPayload:
    """A payload this build does not know (a newer server): only its kind is known."""

    kind: str


@fast_init
@dataclass(frozen=True, slots=True)
class EventView:
    """One event as a viewer receives it: its version and its payload, already redacted."""

    version: int
    payload: Payload | UnknownPayload
    time: float | None = field(default=None, compare=False)
    """Commit time (seconds since the epoch) when known; not part of equality."""

    @property
    def kind(self) -> str:
        """The payload's kind (``card_played``, ``call_made``, ``match_created``...)."""
        return str(self.payload.kind)

    @property
    def seat(self) -> int | None:
        """The seat the event is about, when it has one (``seat`` or ``winner_seat``)."""
        for name in ("seat", "winner_seat"):
            value = getattr(self.payload, name, None)
            if isinstance(value, int):
                return value
        return None

    @property
    def data(self) -> dict[str, Any]:
        """The payload's fields as a plain dict (tuples as lists, enums as strings)."""
        if isinstance(self.payload, UnknownPayload):
            return {}
        d = payload_to_dict(self.payload)
        del d["kind"]
        return d


# ---------------------------------------------------------------------- the log entries
SPECTATORS_ONLY = (HandCardsShown,)
"""Service payloads whose cards only spectators see (a seat gets them with empty lists)."""


def redact(entry: LogEntry, seat: int | None) -> Payload:
    """``entry`` as ``seat`` (``None``: a spectator) may see it."""
    if isinstance(entry, te.Event):
        return entry.redact(seat).payload
    if isinstance(entry, HandCardsShown) and seat is not None:
        return dataclasses.replace(entry, hands=tuple(CardList(cards=()) for _ in entry.hands))
    return entry


def is_private(entry: LogEntry) -> bool:
    """Whether some viewers see ``entry`` differently from others."""
    return (isinstance(entry, te.Event) and entry.private_to is not None) or isinstance(
        entry, SPECTATORS_ONLY
    )


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Types whose values are their own plain form, both ways (an enum's members are not of these)."""


def _plain(value: Any) -> Any:
    if type(value) in _SCALARS:  # most values: a card, a seat, a count (a reveal has 800 cards)
        return value
    if isinstance(value, te.Action):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, bytes):
        return value.hex()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        d = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, SeatInfo) and not value.player_id:
            del d["player_id"]  # the stored form of a seat without one is as it always was
        return d
    return value


def payload_to_dict(payload: Payload) -> dict[str, Any]:
    """JSON-able mapping of any payload: ``kind`` plus every field (tuples as lists, enums as
    strings, bytes as hex)."""
    names = _SERVICE_FIELDS.get(type(payload))
    if names is None:
        return te.payload_to_dict(payload)  # type: ignore[arg-type]
    d: dict[str, Any] = {"kind": payload.kind}
    for name in names:
        d[name] = _plain(getattr(payload, name))
    return d


_SERVICE_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in SERVICE_PAYLOADS.values()
}
"""Each service payload class's field names, in order."""


def seat_to_dict(seat: SeatInfo) -> dict[str, Any]:
    """A seat as plain values (stored in match metadata and listings; no ``player_id`` when
    it has none, ``bot_level`` only for a seat the server plays)."""
    d: dict[str, Any] = {
        "seat": seat.seat,
        "team": seat.team,
        "display_name": seat.display_name,
        "kind": str(seat.kind),
    }
    if seat.player_id:
        d["player_id"] = seat.player_id
    if seat.bot_level:
        d["bot_level"] = seat.bot_level
    return d


def seat_from_dict(d: Mapping[str, Any]) -> SeatInfo:
    """Inverse of :func:`seat_to_dict`."""
    kind = d.get("kind")
    return SeatInfo(**d) if kind is None else SeatInfo(**{**d, "kind": SeatKind(kind)})


def entry_to_dict(entry: LogEntry) -> dict[str, Any]:
    """The stored form of a log entry (engine events keep their visibility markers)."""
    return entry.to_dict() if isinstance(entry, te.Event) else payload_to_dict(entry)


_ENGINE = frozenset(k.value for k in te.EventKind)


def _from_plain(hint: Any, value: Any) -> Any:
    """Inverse of :func:`_plain` for a value of type ``hint``."""
    if hint in _SCALARS:
        return value
    args = typing.get_args(hint)
    if type(None) in args:
        if value is None:
            return None
        hint = next(a for a in args if a is not type(None))
        args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        return tuple(value) if args[0] in _SCALARS else tuple(_from_plain(args[0], v) for v in value)
    if hint is bytes:
        return bytes.fromhex(value)
    if hint is te.Action:
        return te.Action.from_dict(value)
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = _hints(hint)
        return hint(**{k: _from_plain(hints[k], v) for k, v in value.items()})
    return value


def _hints(cls: Any) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


_HINTS: dict[Any, dict[str, Any]] = {}


def payload_from_dict(d: Mapping[str, Any]) -> Payload:
    """Inverse of :func:`payload_to_dict`."""
    kind = d["kind"]
    if kind in _ENGINE:
        return te.payload_from_dict(d)
    cls = SERVICE_PAYLOADS.get(kind)
    if cls is None:
        raise ValueError(f"unknown event kind {kind!r}")
    return _from_plain(cls, {k: v for k, v in d.items() if k != "kind"})  # type: ignore[no-any-return]


def entry_from_dict(d: Mapping[str, Any]) -> LogEntry:
    """Inverse of :func:`entry_to_dict`."""
    if d["kind"] in _ENGINE:
        return te.Event.from_dict(d)
    return payload_from_dict(d)  # type: ignore[return-value]
