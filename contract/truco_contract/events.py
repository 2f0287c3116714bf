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
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import truco_engine as te


class MatchStatus(StrEnum):
    """Lifecycle state of a match."""

    ACTIVE = "active"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class SeatKind(StrEnum):
    """Who occupies a seat (informative: the server treats both alike)."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchCreated:
    """The first event of every match."""

    kind: ClassVar[str] = "match_created"
    preset: str
    players: int
    seats: tuple[SeatInfo, ...]


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


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchRevealed:
    """The seed and every deal, the last event of a match that is over (docs/fairness.md)."""

    kind: ClassVar[str] = "match_revealed"
    seed: bytes
    deals: tuple[RevealedDeal, ...]


ServicePayload = MatchCreated | MatchCancelled | MatchRevealed
"""A payload the service adds to the log (always public)."""

Payload = te.Payload | ServicePayload
"""Any payload of a match's log."""

SERVICE_PAYLOADS: dict[str, type[ServicePayload]] = {
    cls.kind: cls for cls in (MatchCreated, MatchCancelled, MatchRevealed)
}

LogEntry = te.Event | ServicePayload
"""One stored event of a match's log."""


@dataclass(frozen=True, slots=True)
class UnknownPayload:
    """A payload this build does not know (a newer server): only its kind is known."""

    kind: str


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
def redact(entry: LogEntry, seat: int | None) -> Payload:
    """``entry`` as ``seat`` (``None``: a spectator) may see it."""
    if isinstance(entry, te.Event):
        return entry.redact(seat).payload
    return entry


def is_private(entry: LogEntry) -> bool:
    """Whether some viewers see ``entry`` differently from others."""
    return isinstance(entry, te.Event) and entry.private_to is not None


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, bytes):
        return value.hex()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def payload_to_dict(payload: Payload) -> dict[str, Any]:
    """JSON-able mapping of any payload: ``kind`` plus every field (tuples as lists, enums as
    strings, bytes as hex)."""
    if not isinstance(payload, MatchCreated | MatchCancelled | MatchRevealed):
        return te.payload_to_dict(payload)
    d: dict[str, Any] = {"kind": payload.kind}
    for f in dataclasses.fields(payload):
        d[f.name] = _plain(getattr(payload, f.name))
    return d


def seat_to_dict(seat: SeatInfo) -> dict[str, Any]:
    """A seat as plain values (stored in match metadata and listings)."""
    d: dict[str, Any] = _plain(seat)
    return d


def seat_from_dict(d: Mapping[str, Any]) -> SeatInfo:
    """Inverse of :func:`seat_to_dict`."""
    return SeatInfo(seat=d["seat"], team=d["team"], display_name=d["display_name"], kind=SeatKind(d["kind"]))


def entry_to_dict(entry: LogEntry) -> dict[str, Any]:
    """The stored form of a log entry (engine events keep their visibility markers)."""
    return entry.to_dict() if isinstance(entry, te.Event) else payload_to_dict(entry)


_ENGINE = frozenset(k.value for k in te.EventKind)


def entry_from_dict(d: Mapping[str, Any]) -> LogEntry:
    """Inverse of :func:`entry_to_dict`."""
    kind = d["kind"]
    if kind in _ENGINE:
        return te.Event.from_dict(d)
    if kind == MatchCreated.kind:
        seats = tuple(seat_from_dict(s) for s in d["seats"])
        return MatchCreated(preset=d["preset"], players=d["players"], seats=seats)
    if kind == MatchCancelled.kind:
        return MatchCancelled(reason=d["reason"])
    if kind == MatchRevealed.kind:
        deals = tuple(
            RevealedDeal(cards=tuple(x["cards"]), salt=x["salt"], commitment=x["commitment"])
            for x in d["deals"]
        )
        return MatchRevealed(seed=bytes.fromhex(d["seed"]), deals=deals)
    raise ValueError(f"unknown event kind {kind!r}")
