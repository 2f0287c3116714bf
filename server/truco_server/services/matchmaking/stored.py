"""The bytes the matchmaking service stores through the tickets port: a ticket's data, a
formation's data, a matched ticket's result (compact JSON), and the ticket a caller sees."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from truco_match.matchmaking import Table, Ticket, TicketPlayer, TicketSpec, TicketState, Waiting
from truco_match.operator_events import TicketSeat
from truco_server.ports.tickets import StoredTicket


@dataclass(frozen=True, slots=True)
class TicketData:
    """What a ticket holds from its creation on."""

    players: tuple[TicketPlayer, ...]
    properties: Mapping[str, str]
    rating: float
    created_ms: int
    expires_ms: int
    fingerprint: str
    """What it was created with (a retried ``request_id`` must ask for the same)."""


def fingerprint(spec: TicketSpec) -> str:
    body = orjson.dumps([[p.player_id, p.display_name] for p in spec.players], option=orjson.OPT_SORT_KEYS)
    body += orjson.dumps(dict(spec.properties), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(body).hexdigest()[:32]


def data_bytes(d: TicketData) -> bytes:
    return orjson.dumps(
        {
            "p": [[p.player_id, p.display_name] for p in d.players],
            "q": dict(d.properties),
            "r": d.rating,
            "c": d.created_ms,
            "x": d.expires_ms,
            "h": d.fingerprint,
        }
    )


def data_of(raw: bytes) -> TicketData:
    d = orjson.loads(raw)
    return TicketData(
        players=tuple(TicketPlayer(p, n) for p, n in d["p"]),
        properties=d["q"],
        rating=float(d["r"]),
        created_ms=int(d["c"]),
        expires_ms=int(d["x"]),
        fingerprint=d["h"],
    )


def waiting_of(stored: StoredTicket) -> Waiting:
    d = data_of(stored.data)
    return Waiting(
        ticket_id=stored.ticket_id,
        players=tuple(p.player_id for p in d.players),
        rating=d.rating,
        created=d.created_ms / 1000,
        properties=d.properties,
    )


def formation_bytes(table: Table, names: Mapping[str, str], created_ms: Mapping[str, int]) -> bytes:
    """A formed table: per seat its ticket, player and display name; when each ticket was
    made."""
    return orjson.dumps({"s": [[t, p, names.get(p) or p] for t, p in table.seats], "c": dict(created_ms)})


def formation_of(raw: bytes) -> tuple[list[tuple[str, str, str]], dict[str, int]]:
    """``(ticket_id, player_id, display_name)`` per seat of a formation, and when each of its
    tickets was made (ms since the epoch)."""
    d = orjson.loads(raw)
    return [(t, p, n) for t, p, n in d["s"]], {t: int(c) for t, c in d["c"].items()}


def result_bytes(match_id: str, seats: Sequence[TicketSeat], matched_ms: int) -> bytes:
    return orjson.dumps(
        {"m": match_id, "s": [[s.player_id, s.seat, s.token] for s in seats], "t": matched_ms}
    )


def ticket_of(pool_id: str, stored: StoredTicket) -> Ticket:
    """The ticket a caller sees."""
    d = data_of(stored.data)
    match_id, matched_at = "", None
    seats: tuple[TicketSeat, ...] = ()
    if stored.result:
        r: dict[str, Any] = orjson.loads(stored.result)
        match_id = r["m"]
        seats = tuple(TicketSeat(player_id=p, seat=s, token=t) for p, s, t in r["s"])
        matched_at = r["t"] / 1000
    return Ticket(
        ticket_id=stored.ticket_id,
        pool_id=pool_id,
        state=TicketState(stored.state),
        players=d.players,
        properties=d.properties,
        rating=d.rating,
        created=d.created_ms / 1000,
        expires=d.expires_ms / 1000,
        match_id=match_id,
        seats=seats,
        matched_at=matched_at,
    )
