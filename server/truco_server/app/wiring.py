"""Builds a worker from its settings: the store's ports, the services over them, the
queue readers, the API objects, and the gRPC and REST faces over those.

``truco serve`` (``truco_cli.serve``) and the embedded server build the worker with
:func:`service_factory`.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from truco_contract.pb import (
    league_service_pb2,
    match_service_pb2,
    matchmaking_service_pb2,
    operator_service_pb2,
)
from truco_match.match import Match
from truco_server.api.auth import Authenticator, KeyRing
from truco_server.api.leagues import LeagueApi
from truco_server.api.matches import MatchApi, StreamTracker
from truco_server.api.matchmaking import MatchmakingApi
from truco_server.api.operators import OperatorApi
from truco_server.app.memory import MemoryTrim
from truco_server.app.persistence import PersistenceReport
from truco_server.core.config import Settings
from truco_server.ports import Store, StoreSettings
from truco_server.services.bots import BotSeats
from truco_server.services.leagues import LeagueService
from truco_server.services.live import ServiceSettings
from truco_server.services.matches import MatchService
from truco_server.services.matchmaking import Matchmaking, Pools
from truco_server.services.operators import Operators
from truco_server.services.quotas import Quotas
from truco_server.services.ratings import RatedMatches, RatingBooks
from truco_server.services.reads import MatchReads
from truco_server.services.relay import Relay
from truco_server.services.scheduler import QueueReader, clock_reader, relay_reader, webhook_reader
from truco_server.services.steps import MatchSteps
from truco_server.services.streams import MatchStreams
from truco_server.services.webhooks import Deliverer, Destinations, parse_schedule
from truco_server.stores import open_store
from truco_server.transports import rest, websocket
from truco_server.transports.grpc.server import Served, WorkerContext

_log = structlog.get_logger("truco_server.wiring")

MATCH_SERVICE = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"]
OPERATOR_SERVICE = operator_service_pb2.DESCRIPTOR.services_by_name["OperatorService"]
LEAGUE_SERVICE = league_service_pb2.DESCRIPTOR.services_by_name["LeagueService"]
MATCHMAKING_SERVICE = matchmaking_service_pb2.DESCRIPTOR.services_by_name["MatchmakingService"]


@dataclass
class Services:
    """A worker's transport-neutral services (what both faces serve)."""

    store: Store
    matches: MatchService
    steps: MatchSteps
    reads: MatchReads
    streams: MatchStreams
    relay: Relay
    operators: Operators
    deliverer: Deliverer
    leagues: LeagueService
    ratings: RatingBooks
    matchmaking: Matchmaking
    quotas: Quotas
    bots: BotSeats

    def readers(self, tick: float) -> list[QueueReader]:
        """The readers of the clock, relay, webhook, league and matchmaking queues."""
        queues = self.store.queues
        return [
            clock_reader(self.steps, queues, tick=tick),
            relay_reader(self.operators.relay, queues, tick=tick),
            webhook_reader(self.deliverer, queues, tick=tick),
            self.leagues.job.reader(tick=tick),
            self.matchmaking.reader(tick=tick),
        ]


def store_settings(s: Settings) -> StoreSettings:
    return StoreSettings(
        max_events=s.event_log_max_len,
        retention_seconds=s.finished_match_ttl_seconds,
        retry_seconds=s.redis_retry_seconds,
        wait_replicas=s.redis_wait_replicas,
        wait_timeout_ms=s.redis_wait_timeout_ms,
    )


def build_services(
    s: Settings,
    stopping: asyncio.Event,
    store: Store | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> Services:
    """The services of a worker over ``store`` (else the one ``s.redis_url`` names); ``clock``:
    the services' time (seconds since the epoch; tests pass their own)."""
    if store is None:
        store = open_store(s.redis_url, store_settings(s))
    destinations = Destinations(s.webhook_allow)
    deliverer = Deliverer(
        store.operators,
        store.queues,
        destinations,
        schedule=parse_schedule(s.webhook_retry_schedule),
        timeout=s.webhook_timeout_seconds,
    )
    operators = Operators(
        store.operators,
        deliverer,
        destinations,
        webhooks_per_operator=s.webhooks_per_operator,
        heartbeat_seconds=s.heartbeat_interval_seconds,
        stopping=stopping,
    )
    wanted = operators.wanted if store.matches.appends_feed else None
    relay = Relay(operators.relay, store.queues, clock=clock, wanted=wanted)
    matches = MatchService(
        store.matches,
        relay,
        settings=ServiceSettings(
            heartbeat_seconds=s.heartbeat_interval_seconds,
            queue_size=s.subscriber_queue_size,
            idle_timeout_ms=s.idle_timeout_seconds * 1000,
            bot_think_ms=s.bot_think_ms,
        ),
        clock=clock,
    )
    quotas = Quotas(s, store.quotas)
    quotas.is_live = matches.is_live
    matches.on_end.append(quotas.ended)
    bots = BotSeats(matches, processes=s.bot_processes, cpu_ms=s.bot_cpu_ms)
    steps = MatchSteps(matches, quotas, bots)
    streams = MatchStreams(matches, stopping, max_open=s.max_streams_per_worker)
    reads = MatchReads(matches, streams)
    leagues = LeagueService(
        store.documents,
        store.queues,
        matches,
        steps,
        reads,
        heartbeat_seconds=s.heartbeat_interval_seconds,
        stopping=stopping,
        publish=operators.publish,
    )
    operators.listen(leagues.job.listens, leagues.job.on_events, leagues.job.concerns)
    ratings, matchmaking = _matchmaking(s, store, matches, steps, operators, stopping, clock)
    return Services(
        store,
        matches,
        steps,
        reads,
        streams,
        relay,
        operators,
        deliverer,
        leagues,
        ratings,
        matchmaking,
        quotas,
        bots,
    )


def _matchmaking(
    s: Settings,
    store: Store,
    matches: MatchService,
    steps: MatchSteps,
    operators: Operators,
    stopping: asyncio.Event,
    clock: Callable[[], float],
) -> tuple[RatingBooks, Matchmaking]:
    """The rating books (every rated match's result goes to them) and the matchmaking pools."""
    ratings = RatingBooks(store.documents)

    async def load(match_id: str) -> Match:
        return await matches.load(match_id, fresh=True)

    rated = RatedMatches(ratings, load)
    operators.listen(rated.listens, rated.on_events, rated.concerns)
    matchmaking = Matchmaking(
        Pools(store.documents, matches.settings.idle_timeout_ms),
        store.tickets,
        store.queues,
        ratings,
        steps.create_match,
        operators.publish,
        heartbeat_seconds=s.heartbeat_interval_seconds,
        stopping=stopping,
        clock=clock,
    )
    return ratings, matchmaking


def _reload_on_sighup(ctx: WorkerContext, keys: KeyRing) -> None:
    """SIGHUP re-reads the operator keys file at once (the worker's loop runs the reload; only
    in the main thread, where a signal handler can be set)."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, keys.reload_now)

    def remove() -> None:
        loop.remove_signal_handler(signal.SIGHUP)

    ctx.add_cleanup(remove)


def service_factory(ctx: WorkerContext) -> Served:
    """The worker's services over gRPC; the same API objects also serve REST/JSON and the
    player connection over WebSocket on ``settings.http_port``."""
    s = ctx.settings
    svc = build_services(s, ctx.streams.shutdown_event)
    ctx.add_cleanup(svc.store.close)
    ctx.add_cleanup(svc.relay.close)  # before the store closes (cleanups run in reverse)
    ctx.add_readiness(svc.store.ping)
    persistence = PersistenceReport(svc.store, ctx.health_details, acknowledged=s.ephemeral_store_ok)
    ctx.add_startup(persistence.start)
    ctx.add_cleanup(persistence.stop)
    ctx.add_cleanup(svc.bots.close)  # after the readers stopped (cleanups run in reverse)
    for reader in svc.readers(s.scheduler_tick_seconds):
        ctx.add_startup(reader.start)
        ctx.add_cleanup(reader.stop)
    ctx.add_cleanup(svc.deliverer.close)
    ctx.add_cleanup(svc.matchmaking.close)
    ctx.add_cleanup(svc.streams.close)
    auth = Authenticator(s)
    if auth.open:
        _log.warning(
            "no operator API keys configured (TRUCO_API_KEYS): every operator call is the "
            "operator 'public' (a match is still read and played only with its seat and "
            "spectator tokens); for development only"
        )
    if auth.keys.path is not None:
        ctx.add_startup(lambda: _reload_on_sighup(ctx, auth.keys))
    ctx.add_cleanup(svc.quotas.close)
    trim = MemoryTrim(ctx.streams, s.memory_trim_after_streams)
    ctx.add_startup(trim.start)
    ctx.add_cleanup(trim.stop)
    served = apis(svc, auth, ctx.streams, svc.quotas)
    websocket.attach(rest.attach(ctx, served), served, s)
    return served


def apis(
    svc: Services, auth: Authenticator, tracker: StreamTracker | None = None, quotas: Quotas | None = None
) -> Served:
    """Each gRPC service of a worker with the API object that serves it (both faces)."""
    tickets = MatchmakingApi(svc.matchmaking, auth, tracker)  # also on the player connection
    matches = MatchApi(svc.matches, svc.steps, svc.reads, svc.streams, auth, tracker, quotas, tickets)
    return [
        (MATCH_SERVICE, matches),
        (OPERATOR_SERVICE, OperatorApi(svc.operators, auth, tracker)),
        (LEAGUE_SERVICE, LeagueApi(svc.leagues, auth, tracker)),
        (MATCHMAKING_SERVICE, tickets),
    ]
