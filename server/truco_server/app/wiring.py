"""Builds a worker's services from its settings: the store, the match service, the operator
side (event streams, webhooks), the queue readers, and the gRPC and REST faces over them.

``truco serve`` (``truco_cli.serve``) and the embedded server build the worker with
:func:`servicer_factory`.
"""

from __future__ import annotations

import asyncio
import signal
import threading

import structlog

from truco_contract.pb import (
    league_service_pb2,
    league_service_pb2_grpc,
    operator_service_pb2,
    operator_service_pb2_grpc,
)
from truco_server.api.auth import Authenticator, KeyRing
from truco_server.api.leagues import LeagueApi
from truco_server.api.matches import MatchApi
from truco_server.api.operators import OperatorApi
from truco_server.services.leagues import LeagueService
from truco_server.services.matches import MatchService, ServiceDefaults
from truco_server.services.operators import Operators
from truco_server.services.quotas import Quotas
from truco_server.services.scheduler import clock_reader, relay_reader, webhook_reader
from truco_server.services.webhooks import Deliverer, Destinations, parse_schedule
from truco_server.stores import StoreSettings, open_store
from truco_server.transports import rest
from truco_server.transports.grpc.server import Servicers, WorkerContext
from truco_server.transports.grpc.servicers import GrpcLeagueService, GrpcMatchService, GrpcOperatorService

_log = structlog.get_logger("truco_server.wiring")

OPERATOR_SERVICE = operator_service_pb2.DESCRIPTOR.services_by_name["OperatorService"]
LEAGUE_SERVICE = league_service_pb2.DESCRIPTOR.services_by_name["LeagueService"]


def build_services(ctx: WorkerContext) -> tuple[MatchService, Operators, LeagueService]:
    """The transport-neutral services of a worker (shared by the gRPC and REST faces), with
    the readers of the clock, webhook and league queues started and stopped with the worker."""
    s = ctx.settings
    store = open_store(
        s.redis_url,
        StoreSettings(
            max_events=s.event_log_max_len,
            retention_seconds=s.finished_match_ttl_seconds,
            retry_seconds=s.redis_retry_seconds,
            wait_replicas=s.redis_wait_replicas,
            wait_timeout_ms=s.redis_wait_timeout_ms,
        ),
    )
    ctx.add_cleanup(store.close)
    ctx.add_readiness(store.ping)
    service = MatchService(
        store,
        heartbeat_seconds=s.heartbeat_interval_seconds,
        stopping=ctx.streams.shutdown_event,
        queue_size=s.subscriber_queue_size,
        defaults=ServiceDefaults(idle_timeout_ms=s.idle_timeout_seconds * 1000),
        state_with_rules=s.state_with_rules,
    )
    destinations = Destinations(s.webhook_allow)
    deliverer = Deliverer(
        store,
        destinations,
        schedule=parse_schedule(s.webhook_retry_schedule),
        timeout=s.webhook_timeout_seconds,
    )
    operators = Operators(
        store,
        deliverer,
        destinations,
        webhooks_per_operator=s.webhooks_per_operator,
        heartbeat_seconds=s.heartbeat_interval_seconds,
        stopping=ctx.streams.shutdown_event,
    )
    service.relay = operators.relay
    leagues = LeagueService(
        store, service, heartbeat_seconds=s.heartbeat_interval_seconds, stopping=ctx.streams.shutdown_event
    )
    operators.listeners.append(leagues.on_events)
    for reader in (
        clock_reader(service, store, tick=s.scheduler_tick_seconds),
        relay_reader(operators.relay, store, tick=s.scheduler_tick_seconds),
        webhook_reader(deliverer, store, tick=s.scheduler_tick_seconds),
        leagues.reader(tick=s.scheduler_tick_seconds),
    ):
        ctx.add_startup(reader.start)
        ctx.add_cleanup(reader.stop)
    ctx.add_cleanup(deliverer.close)
    return service, operators, leagues


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


def servicer_factory(ctx: WorkerContext) -> Servicers:
    """The gRPC servicers; the API layer under them also serves REST/JSON on
    `settings.http_port`."""
    service, operators, leagues = build_services(ctx)
    auth = Authenticator(ctx.settings)
    if auth.open:
        _log.warning(
            "no operator API keys configured (TRUCO_API_KEYS): every operator call is the "
            "operator 'public'; for development only"
        )
    if auth.keys.path is not None:
        ctx.add_startup(lambda: _reload_on_sighup(ctx, auth.keys))
    api = MatchApi(service, auth, ctx.streams, Quotas(ctx.settings))
    operator_api = OperatorApi(operators, auth, ctx.streams)
    league_api = LeagueApi(leagues, auth, ctx.streams)
    rest.attach(ctx, api, [(OPERATOR_SERVICE, operator_api), (LEAGUE_SERVICE, league_api)])
    return Servicers(
        GrpcMatchService(api),
        [
            (
                OPERATOR_SERVICE.full_name,
                operator_service_pb2_grpc.add_OperatorServiceServicer_to_server,
                GrpcOperatorService(operator_api),
            ),
            (
                LEAGUE_SERVICE.full_name,
                league_service_pb2_grpc.add_LeagueServiceServicer_to_server,
                GrpcLeagueService(league_api),
            ),
        ],
    )
