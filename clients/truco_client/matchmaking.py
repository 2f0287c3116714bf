"""Matchmaking pools, tickets and players' ratings (``truco.v1.MatchmakingService``).

Operator side (an app's backend)::

    from truco_client.matchmaking import MatchmakingClient

    with MatchmakingClient("127.0.0.1:50051", api_key="secret") as mm:
        mm.create_pool("quick", preset="paulista", players=2, rated=True,
                       rating_window=(5, 1, 50))
        made = mm.create_ticket("quick", [("ana", "Ana")])
        # hand made.ticket_token to Ana's app; or wait here:
        ticket = mm.wait_matched("quick", made.ticket.ticket_id, timeout=60)
        print(ticket.match_id, [(s.player_id, s.seat) for s in ticket.seats])

Player side, with the ticket's own credential (``tk1...``, it reads, follows and cancels that
ticket only)::

    with MatchmakingClient("127.0.0.1:50051", api_key=ticket_token) as mine:
        ticket = mine.wait_matched("quick", ticket_id, timeout=600)
        seat_token = ticket.seats[0].token

Messages are the contract's protos (``truco.v1.Pool``, ``Ticket``...); docs/matchmaking.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import grpc

from truco_client._core import CONNECT_TIMEOUT, RetryPolicy, metadata, new_request_id
from truco_client._unary import ServiceChannel
from truco_client.errors import from_rpc_error
from truco_contract.pb import match_pb2, matchmaking_service_pb2, matchmaking_service_pb2_grpc

pb = matchmaking_service_pb2

PlayerLike = str | tuple[str, str]
"""A ticket's player: its id, or ``(player id, display name)``."""
WAITING = pb.TICKET_STATE_WAITING
MATCHED = pb.TICKET_STATE_MATCHED


def _player(p: PlayerLike) -> matchmaking_service_pb2.TicketPlayer:
    if isinstance(p, str):
        return pb.TicketPlayer(player_id=p)
    return pb.TicketPlayer(player_id=p[0], display_name=p[1])


def state_name(state: int) -> str:
    """``waiting``, ``matched``, ``cancelled``, ``expired`` for a ``TicketState``."""
    return pb.TicketState.Name(state).removeprefix("TICKET_STATE_").lower()  # type: ignore[arg-type]


class MatchmakingClient:
    """Blocking client of ``truco.v1.MatchmakingService``. ``api_key`` is the operator's key,
    or a ticket's token for the calls a ticket holder may make (get, follow, cancel). Unary
    calls are retried on UNAVAILABLE (a ticket with a stable request id, so a retry never
    queues it twice)."""

    def __init__(
        self,
        target: str = "127.0.0.1:50051",
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        connect_timeout: float | None = CONNECT_TIMEOUT,
    ) -> None:
        self._rpc = ServiceChannel(
            target,
            matchmaking_service_pb2_grpc.MatchmakingServiceStub,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            credentials=credentials,
            connect_timeout=connect_timeout,
        )
        self.target = target
        self.api_key = api_key
        self.timeout = timeout
        self.retry = self._rpc.retry
        self._stub = self._rpc.stub
        self._call = self._rpc.call

    def close(self) -> None:
        self._rpc.close()

    def __enter__(self) -> MatchmakingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ pools
    def create_pool(
        self,
        pool_id: str,
        *,
        preset: str = "paulista",
        players: int = 2,
        overrides: Mapping[str, Any] | None = None,
        rated: bool = False,
        rating_window: tuple[float, float, float] | None = None,
        ticket_ttl: float | None = None,
        settings: match_pb2.MatchSettings | None = None,
        bot_fill_after: float | None = None,
        bot_fill_level: int = 0,
        bot_fill_partners: bool = False,
    ) -> matchmaking_service_pb2.Pool:
        """A pool (the same definition again returns it; another is ``ALREADY_EXISTS``).
        ``rating_window``: ``(initial_width, widen_per_second, max_width)``; ``ticket_ttl``
        in seconds; ``settings``: the matches' settings (a time control...), ``rated`` set on
        them. ``bot_fill_after`` (seconds): a ticket waiting that long gets the server's bots
        (``bot_fill_level``, 1 to 6; 0: the server's default) in the other seats, as its
        partners too with ``bot_fill_partners`` (docs/matchmaking.md)."""
        rules = match_pb2.RuleSet(preset=preset)
        if overrides:
            rules.overrides.update(dict(overrides))
        made = match_pb2.MatchSettings()
        if settings is not None:
            made.CopyFrom(settings)
        made.rated = made.rated or rated
        pool = pb.Pool(pool_id=pool_id, rules=rules, players=players, settings=made)
        if rating_window is not None:
            initial, widen, most = rating_window
            pool.rating_window.CopyFrom(
                pb.RatingWindow(initial_width=initial, widen_per_second=widen, max_width=most)
            )
        if ticket_ttl is not None:
            pool.ticket_ttl.FromNanoseconds(round(ticket_ttl * 1e9))
        if bot_fill_after is not None:
            pool.bot_fill_after.FromNanoseconds(round(bot_fill_after * 1e9))
            pool.bot_fill_level = bot_fill_level
            pool.bot_fill_partners = bot_fill_partners
        return self._call("CreatePool", pb.CreatePoolRequest(pool=pool)).pool  # type: ignore[no-any-return]

    def get_pool(self, pool_id: str) -> matchmaking_service_pb2.Pool:
        return self._call("GetPool", pb.GetPoolRequest(pool_id=pool_id)).pool  # type: ignore[no-any-return]

    def list_pools(self) -> list[matchmaking_service_pb2.Pool]:
        return list(self._call("ListPools", pb.ListPoolsRequest()).pools)

    # ------------------------------------------------------------------ tickets
    def create_ticket(
        self,
        pool_id: str,
        players: Sequence[PlayerLike],
        *,
        properties: Mapping[str, str] | None = None,
        request_id: str | None = None,
    ) -> matchmaking_service_pb2.CreateTicketResponse:
        """Queue a player (the first of ``players``) and his party (the rest, seated as his
        partners); the answer has the ticket and its token."""
        req = pb.CreateTicketRequest(
            pool_id=pool_id,
            request_id=request_id or new_request_id(),
            players=[_player(p) for p in players],
            properties=dict(properties or {}),
        )
        return self._call("CreateTicket", req)  # type: ignore[no-any-return]

    def get_ticket(self, pool_id: str, ticket_id: str) -> matchmaking_service_pb2.Ticket:
        req = pb.GetTicketRequest(pool_id=pool_id, ticket_id=ticket_id)
        return self._call("GetTicket", req).ticket  # type: ignore[no-any-return]

    def cancel_ticket(self, pool_id: str, ticket_id: str) -> matchmaking_service_pb2.Ticket:
        req = pb.CancelTicketRequest(pool_id=pool_id, ticket_id=ticket_id)
        return self._call("CancelTicket", req).ticket  # type: ignore[no-any-return]

    def follow_ticket(
        self, pool_id: str, ticket_id: str, *, timeout: float | None = None
    ) -> Iterator[matchmaking_service_pb2.Ticket]:
        """The ticket now, then each change, until it is matched, cancelled or expired (the
        stream's last message). Heartbeats are skipped. ``timeout`` bounds the whole stream."""
        req = pb.StreamTicketRequest(pool_id=pool_id, ticket_id=ticket_id)
        call = self._stub.StreamTicket(req, timeout=timeout, metadata=metadata(self.api_key))
        try:
            for msg in call:
                if msg.HasField("ticket"):
                    yield msg.ticket
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        finally:
            call.cancel()

    def wait_matched(self, pool_id: str, ticket_id: str, *, timeout: float) -> matchmaking_service_pb2.Ticket:
        """The ticket once it is no longer waiting (matched: its seats and their tokens; or
        cancelled, expired), following its stream for at most ``timeout`` seconds."""
        last = None
        for last in self.follow_ticket(pool_id, ticket_id, timeout=timeout):
            if last.state != WAITING:
                return last
        if last is None:
            raise RuntimeError("the ticket stream ended without a message")
        return last

    # ------------------------------------------------------------------ ratings
    def player_rating(self, player_id: str, family: str) -> matchmaking_service_pb2.PlayerRating:
        """A player's rating in a rule family (``paulista-2p``...): the prior when unrated."""
        req = pb.GetPlayerRatingRequest(player_id=player_id, family=family)
        return self._call("GetPlayerRating", req).rating  # type: ignore[no-any-return]
