"""Builds the worker's MatchService servicer: store from settings, service, gRPC adapter.

``truco serve`` (``truco_cli.serve``) and the embedded server build the worker with
:func:`servicer_factory`.
"""

from __future__ import annotations

from truco_server import rest
from truco_server.api.auth import Authenticator
from truco_server.api.wire import MatchApi
from truco_server.grpc_server import WorkerContext
from truco_server.grpc_service import GrpcMatchService
from truco_server.scheduler import Scheduler
from truco_server.service import MatchService, ServiceDefaults
from truco_server.storage import StoreSettings, open_store


def build_service(ctx: WorkerContext) -> MatchService:
    """The transport-neutral service of a worker (shared by the gRPC and REST faces)."""
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
    service = MatchService(
        store,
        heartbeat_seconds=s.heartbeat_interval_seconds,
        stopping=ctx.streams.shutdown_event,
        queue_size=s.subscriber_queue_size,
        defaults=ServiceDefaults(idle_timeout_ms=s.idle_timeout_seconds * 1000),
    )
    scheduler = Scheduler(service, store, tick=s.scheduler_tick_seconds)
    ctx.add_startup(scheduler.start)
    ctx.add_cleanup(scheduler.stop)
    return service


def servicer_factory(ctx: WorkerContext) -> GrpcMatchService:
    """The gRPC servicer; the API layer under it also serves REST/JSON on
    `settings.http_port`."""
    api = MatchApi(build_service(ctx), Authenticator(ctx.settings), ctx.streams)
    rest.attach(ctx, api)
    return GrpcMatchService(api)
