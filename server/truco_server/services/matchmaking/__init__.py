"""Matchmaking (docs/matchmaking.md): the operators' pools (:mod:`.pools`), tickets and their
streams (:mod:`.service`, :mod:`.watch`), and the pass over a pool that forms tables and
creates their matches (:mod:`.tables`), run by any worker from the matchmaking queue. Who may
sit with whom is :mod:`truco_match.matchmaking`'s; the tickets' store is
:mod:`truco_server.ports.tickets`."""

from truco_server.services.matchmaking.pools import POOL, PoolNotFound, Pools, StoredPool
from truco_server.services.matchmaking.service import Matchmaking, TicketNotFound
from truco_server.services.matchmaking.tables import PoolPass
from truco_server.services.matchmaking.watch import TicketWatch

__all__ = [
    "POOL",
    "Matchmaking",
    "PoolNotFound",
    "PoolPass",
    "Pools",
    "StoredPool",
    "TicketNotFound",
    "TicketWatch",
]
