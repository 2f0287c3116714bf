"""Matchmaking: pools (``truco.v1.Pool``) and tickets (``truco.v1.Ticket``), both ways."""

from __future__ import annotations

from google.protobuf import struct_pb2

from truco_contract.codec.errors import DecodeError
from truco_contract.codec.matches import match_spec_from_proto, settings_to_proto
from truco_contract.codec.scalars import duration, ms_of, seconds_of, timestamp
from truco_contract.pb import match_pb2, match_service_pb2, matchmaking_service_pb2, operator_service_pb2
from truco_match.create import DEFAULT_TAKEOVER_LEVEL
from truco_match.matchmaking import (
    DEFAULT_TICKET_TTL_MS,
    BotFill,
    Pool,
    PoolSpec,
    RatingWindow,
    Ticket,
    TicketPlayer,
    TicketSpec,
    TicketState,
)
from truco_match.operator_events import TicketSeat

pb = matchmaking_service_pb2

_STATES = {
    TicketState.WAITING: pb.TICKET_STATE_WAITING,
    TicketState.FORMING: pb.TICKET_STATE_WAITING,
    TicketState.MATCHED: pb.TICKET_STATE_MATCHED,
    TicketState.CANCELLED: pb.TICKET_STATE_CANCELLED,
    TicketState.EXPIRED: pb.TICKET_STATE_EXPIRED,
}
_STATE_OF = {
    pb.TICKET_STATE_WAITING: TicketState.WAITING,
    pb.TICKET_STATE_MATCHED: TicketState.MATCHED,
    pb.TICKET_STATE_CANCELLED: TicketState.CANCELLED,
    pb.TICKET_STATE_EXPIRED: TicketState.EXPIRED,
}


def pool_spec_from_proto(m: matchmaking_service_pb2.Pool, where: str = "pool") -> PoolSpec:
    """What a ``Pool`` asks for (its output-only fields ignored); values are range-checked
    when the pool is made (:func:`truco_match.matchmaking.check_pool`)."""
    template = match_service_pb2.CreateMatchRequest(rules=m.rules, players=m.players, settings=m.settings)
    if m.ticket_ttl.seconds < 0 or m.ticket_ttl.nanos < 0:
        raise DecodeError(f"{where}.ticket_ttl", "must not be negative")
    window = None
    if m.HasField("rating_window"):
        w = m.rating_window
        window = RatingWindow(w.initial_width, w.widen_per_second, w.max_width)
    ttl = ms_of(m.ticket_ttl) if m.HasField("ticket_ttl") else DEFAULT_TICKET_TTL_MS
    bots = None
    if m.HasField("bot_fill_after"):
        if m.bot_fill_after.seconds < 0 or m.bot_fill_after.nanos < 0:
            raise DecodeError(f"{where}.bot_fill_after", "must not be negative")
        level = m.bot_fill_level or DEFAULT_TAKEOVER_LEVEL
        bots = BotFill(ms_of(m.bot_fill_after), level, m.bot_fill_partners)
    elif m.bot_fill_level or m.bot_fill_partners:
        raise DecodeError(f"{where}.bot_fill_after", "required with bot_fill_level or bot_fill_partners")
    return PoolSpec(
        pool_id=m.pool_id,
        match=match_spec_from_proto(template),
        window=window,
        ticket_ttl_ms=ttl,
        bot_fill=bots,
    )


def pool_to_proto(pool: Pool, created_at: float, waiting: int = 0) -> matchmaking_service_pb2.Pool:
    spec = pool.spec
    rules = match_pb2.RuleSet(preset=pool.rules.name)
    if spec.match.overrides:
        overrides = struct_pb2.Struct()
        overrides.update(dict(spec.match.overrides))
        rules.overrides.CopyFrom(overrides)
    m = pb.Pool(
        pool_id=spec.pool_id,
        rules=rules,
        players=pool.players,
        settings=settings_to_proto(spec.match.labels, spec.match.lifecycle, spec.match.rated),
        ticket_ttl=duration(spec.ticket_ttl_ms),
        create_time=timestamp(created_at),
        rating_family=pool.family,
        waiting=waiting,
    )
    if spec.bot_fill is not None:
        m.bot_fill_after.CopyFrom(duration(spec.bot_fill.after_ms))
        m.bot_fill_level = spec.bot_fill.level
        m.bot_fill_partners = spec.bot_fill.partners
    if spec.window is not None:
        w = spec.window
        m.rating_window.CopyFrom(
            pb.RatingWindow(
                initial_width=w.initial_width, widen_per_second=w.widen_per_second, max_width=w.max_width
            )
        )
    return m


def ticket_spec_from_proto(m: matchmaking_service_pb2.CreateTicketRequest) -> TicketSpec:
    """The players and properties a ``CreateTicketRequest`` asks for (checked by the pool)."""
    return TicketSpec(
        players=tuple(TicketPlayer(p.player_id, p.display_name) for p in m.players),
        properties=dict(m.properties),
    )


def ticket_to_proto(t: Ticket) -> matchmaking_service_pb2.Ticket:
    m = pb.Ticket(
        ticket_id=t.ticket_id,
        pool_id=t.pool_id,
        state=_STATES[t.state],
        players=[pb.TicketPlayer(player_id=p.player_id, display_name=p.display_name) for p in t.players],
        properties=dict(t.properties),
        rating=t.rating,
        create_time=timestamp(t.created),
        expire_time=timestamp(t.expires),
        match_id=t.match_id,
        seats=[
            operator_service_pb2.TicketSeat(player_id=s.player_id, seat=s.seat, token=s.token)
            for s in t.seats
        ],
    )
    if t.matched_at is not None:
        m.match_time.CopyFrom(timestamp(t.matched_at))
    return m


def ticket_from_proto(m: matchmaking_service_pb2.Ticket, where: str = "ticket") -> Ticket:
    """Inverse of :func:`ticket_to_proto` (a forming ticket reads as waiting)."""
    state = _STATE_OF.get(m.state)
    if state is None:
        raise DecodeError(f"{where}.state", f"unknown ticket state {m.state}")
    return Ticket(
        ticket_id=m.ticket_id,
        pool_id=m.pool_id,
        state=state,
        players=tuple(TicketPlayer(p.player_id, p.display_name) for p in m.players),
        properties=dict(m.properties),
        rating=m.rating,
        created=seconds_of(m.create_time),
        expires=seconds_of(m.expire_time),
        match_id=m.match_id,
        seats=tuple(TicketSeat(player_id=s.player_id, seat=s.seat, token=s.token) for s in m.seats),
        matched_at=seconds_of(m.match_time) if m.HasField("match_time") else None,
    )
