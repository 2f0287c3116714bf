"""The gRPC worker: server construction, health, reflection, metrics endpoint, shutdown.

Embedding (tests, `truco serve`)::

    worker = Worker(settings, service_factory)
    await worker.start()            # binds; worker.grpc_port is the real port (0 -> free port)
    ...
    await worker.stop()             # graceful: NOT_SERVING, drain, end streams, stop(grace)

``service_factory(ctx: WorkerContext)`` returns the gRPC services to serve, each with the API
object whose methods serve it (or an awaitable of that list): their handlers are derived from
the descriptors (:mod:`.servicers`). It gets the settings, the ``StreamRegistry`` whose
shutdown event ends the streams promptly, and ``add_cleanup()`` to close what it opened (the
store) when the worker stops. Without a factory (tests of the worker itself) every RPC answers
UNIMPLEMENTED; ``truco serve`` uses :func:`truco_server.app.wiring.service_factory`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import grpc
import structlog
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from truco_contract.pb import match_service_pb2
from truco_server.api import limits
from truco_server.core import diagnostics, metrics
from truco_server.core.config import Settings
from truco_server.core.errors import ShuttingDown
from truco_server.transports.grpc.servicers import Registry, method_handlers

_log = structlog.get_logger("truco_server.worker")

MATCH_SERVICE_NAME: Final = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"].full_name

T = TypeVar("T")


class _HeartbeatDue:
    """Sentinel type returned by `StreamRegistry.next` when the timeout elapsed."""

    def __repr__(self) -> str:
        return "HEARTBEAT_DUE"


HEARTBEAT_DUE: Final = _HeartbeatDue()


class StreamRegistry:
    """Open streams of this worker, and the shutdown signal they watch.

    `track()` wraps a stream's lifetime (so shutdown can wait for streams to end);
    `next()` waits for the next item, a heartbeat timeout, or shutdown (-> `ShuttingDown`,
    which `map_service_errors` turns into UNAVAILABLE). A service layer that runs its own
    wait loop can watch `shutdown_event` instead (e.g. pass it as
    `truco_server.services.matches.MatchService(stopping=...)`).

    The `truco_stream_subscribers` gauge is not touched here: the service layer owns it
    (it counts REST/SSE streams too).
    """

    def __init__(self) -> None:
        self._shutdown = asyncio.Event()
        self._active = 0
        self.closed = 0
        """Streams that ended since the worker started."""
        self.cut = 0
        """Those of them that did not run to their end: cancelled (a client that left, or
        never read) or failed. What they held is what the memory release gives back
        (:mod:`truco_server.app.memory` counts these)."""
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def shutting_down(self) -> bool:
        return self._shutdown.is_set()

    @property
    def active(self) -> int:
        return self._active

    def begin_shutdown(self) -> None:
        """Tell every tracked stream to end (they raise `ShuttingDown` from `next()`)."""
        self._shutdown.set()

    async def wait_shutdown(self) -> None:
        await self._shutdown.wait()

    @property
    def shutdown_event(self) -> asyncio.Event:
        """Set when shutdown begins (step 3 of `Worker.stop`). Do not set it yourself."""
        return self._shutdown

    @contextlib.asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        """Count a stream for its lifetime; refuse new streams once shutdown began."""
        if self.shutting_down:
            raise ShuttingDown()
        self._active += 1
        self._idle.clear()
        try:
            yield
        except BaseException:
            self.cut += 1
            raise
        finally:
            self._active -= 1
            self.closed += 1
            if self._active == 0:
                self._idle.set()

    async def next(self, awaitable: Awaitable[T], timeout: float | None) -> T | _HeartbeatDue:
        """Result of `awaitable`, or `HEARTBEAT_DUE` after `timeout` seconds.

        Raises `ShuttingDown` as soon as shutdown begins. On timeout or shutdown the
        awaitable is cancelled (safe for `asyncio.Queue.get`).
        """
        if self.shutting_down:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise ShuttingDown()
        item: asyncio.Future[T] = asyncio.ensure_future(awaitable)
        stop: asyncio.Future[Any] = asyncio.ensure_future(self._shutdown.wait())
        waiting: set[asyncio.Future[Any]] = {item, stop}
        try:
            done, _ = await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not item.done():
                item.cancel()
        if item in done:
            return item.result()
        if stop in done:
            raise ShuttingDown()
        return HEARTBEAT_DUE

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no stream is open; False if some still are after `timeout`."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True


Cleanup = Callable[[], Awaitable[None] | None]
ReadinessCheck = Callable[[float], Awaitable[None]]


@dataclass
class WorkerContext:
    """What a servicer factory gets from the worker."""

    settings: Settings
    streams: StreamRegistry
    http_port: int | None = None
    """The bound REST/JSON port, set by the REST face's startup hook (None: no REST face)."""
    serving: bool = True
    """The services' health: ``False`` while a readiness check fails and from shutdown on
    (what ``grpc.health.v1`` answers for them; the REST face's ``/healthz`` too)."""
    health_details: dict[str, Any] = field(default_factory=dict)
    """Facts about the worker's dependencies shown beside its health (REST ``/healthz``), by
    topic, e.g. ``store``: its persistence (:mod:`truco_server.app.persistence`). Readiness
    does not depend on them."""
    _cleanups: list[Cleanup] = field(default_factory=list)
    _startups: list[Cleanup] = field(default_factory=list)
    _readiness: list[ReadinessCheck] = field(default_factory=list)

    def add_readiness(self, check: ReadinessCheck) -> None:
        """Add a readiness check: an async callable taking a timeout in seconds that returns
        when the dependency answers and raises otherwise (``MatchStore.ping``). The worker
        runs every check each ``readiness_interval_seconds``; health is NOT_SERVING while one
        fails and SERVING again when all pass."""
        self._readiness.append(check)

    def add_startup(self, callback: Cleanup) -> None:
        """Run `callback` (sync or async) when the worker starts, right after the gRPC
        server started (e.g. bind another listener). An error stops the worker's start."""
        self._startups.append(callback)

    def add_cleanup(self, callback: Cleanup) -> None:
        """Run `callback` (sync or async) when the worker stops, after the server stopped.

        Callbacks run in reverse registration order; errors are logged, not raised.
        """
        self._cleanups.append(callback)


Served = Sequence[tuple[ServiceDescriptor, object]]
"""What a service factory returns: each gRPC service and the API object whose methods (one per
RPC, of the same name) serve it (:func:`~truco_server.transports.grpc.servicers.method_handlers`)."""

ServiceFactory = Callable[[WorkerContext], "Served | Awaitable[Served]"]


def server_options(settings: Settings) -> list[tuple[str, int]]:
    """Channel arguments of the worker's gRPC server."""
    options = [
        # Two servers must never silently share a port (tests, misconfigured hosts), unless
        # they are the workers of one `truco serve --workers N` (settings.reuse_port).
        ("grpc.so_reuseport", 1 if settings.reuse_port else 0),
        # Server pings idle connections to detect dead peers (e.g. a phone that vanished).
        ("grpc.keepalive_time_ms", 60_000),
        ("grpc.keepalive_timeout_ms", 20_000),
        # Clients may ping every 10 s or slower, also without calls; faster pings get
        # GOAWAY too_many_pings after 2 strikes.
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
        ("grpc.http2.max_ping_strikes", 2),
        # Requests are small; a bigger one is refused (RESOURCE_EXHAUSTED) before it is read.
        ("grpc.max_receive_message_length", limits.MAX_MESSAGE_BYTES),
    ]
    if settings.max_connection_age_seconds > 0:
        options += [
            ("grpc.max_connection_age_ms", int(settings.max_connection_age_seconds * 1000)),
            ("grpc.max_connection_age_grace_ms", 10_000),
        ]
    return options


def _bind_address(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


class Worker:
    """One gRPC worker process: `start()`, then `stop()` (or `wait_for_termination()`)."""

    def __init__(self, settings: Settings, service_factory: ServiceFactory | None = None) -> None:
        self.settings = settings
        self.streams = StreamRegistry()
        self.context = WorkerContext(settings=settings, streams=self.streams)
        self.health = health.aio.HealthServicer()
        self._factory = service_factory
        self._server: grpc.aio.Server | None = None
        self._metrics: metrics.MetricsServer | None = None
        self._grpc_port: int | None = None
        self._stopping: asyncio.Task[None] | None = None
        self._service_names: list[str] = [MATCH_SERVICE_NAME]
        self._ready = True
        self._readiness_task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        """Whether the last readiness checks passed (health SERVING)."""
        return self._ready

    async def _set_health(self, status: Any, *, overall: bool = False) -> None:
        """Set every service's health (readiness); with ``overall`` also the server's ``""``
        (liveness: SERVING from start to shutdown, whatever the store does)."""
        for name in (*self._service_names, *([""] if overall else [])):
            await self.health.set(name, status)

    async def check_readiness(self) -> bool:
        """Run the readiness checks once and set the services' health accordingly
        (``truco.v1.MatchService`` and the others: SERVING when every check passed,
        NOT_SERVING otherwise; the server's ``""`` stays SERVING, so a liveness probe does not
        restart a worker whose store is away); a change is logged once."""
        timeout = self.settings.readiness_interval_seconds
        failure: str | None = None
        for check in self.context._readiness:
            try:
                await check(timeout)
            except Exception as exc:
                failure = f"{type(exc).__name__}: {exc}"[:300]
                break
        ready = failure is None
        if self._stopping is not None:
            return ready  # shutting down: health stays NOT_SERVING
        if ready != self._ready:
            self._ready = self.context.serving = ready
            if ready:
                _log.info("store reachable again; readiness SERVING")
            else:
                _log.warning("store unreachable; readiness NOT_SERVING", error=failure)
            serving = health_pb2.HealthCheckResponse
            await self._set_health(serving.SERVING if ready else serving.NOT_SERVING)
        return ready

    async def _readiness_loop(self) -> None:
        interval = self.settings.readiness_interval_seconds
        while self._stopping is None:  # (a cancellation that asyncio.wait_for swallowed ends it too)
            started = time.monotonic()
            try:
                await self.check_readiness()
            except Exception:  # never let the probe die
                _log.exception("readiness check failed")
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))

    @property
    def grpc_port(self) -> int:
        """The bound gRPC port (the real one when settings.grpc_port is 0)."""
        if self._grpc_port is None:
            raise RuntimeError("worker not started")
        return self._grpc_port

    @property
    def grpc_address(self) -> str:
        """`host:port` clients can dial."""
        return _bind_address(self.settings.host, self.grpc_port)

    @property
    def http_port(self) -> int | None:
        """The REST/JSON port (the real one when settings.http_port is 0), or None when the
        servicer factory attached no REST face."""
        return self.context.http_port

    @property
    def metrics_port(self) -> int | None:
        """The `/metrics` port, or None when disabled."""
        return None if self._metrics is None else self._metrics.port

    async def start(self) -> None:
        """Build the server, bind, start serving and report SERVING."""
        if self._server is not None:
            raise RuntimeError("worker already started")
        settings = self.settings
        made = self._factory(self.context) if self._factory is not None else ()
        if isinstance(made, Awaitable):
            made = await made
        server = grpc.aio.server(
            options=server_options(settings),
            maximum_concurrent_rpcs=settings.max_concurrent_rpcs or None,
        )
        for service, api in made:
            server.add_registered_method_handlers(service.full_name, method_handlers(api, service))
        names = [service.full_name for service, _ in made]
        registry: Any = Registry(server)  # health and reflection, counted like our own RPCs
        health_pb2_grpc.add_HealthServicer_to_server(self.health, registry)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(  # type: ignore[no-untyped-call]
            reflection.aio.ReflectionServicer(
                (*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME)
            ),
            registry,
        )
        self._service_names = names or [MATCH_SERVICE_NAME]
        port = server.add_insecure_port(_bind_address(settings.host, settings.grpc_port))
        if port == 0:
            raise RuntimeError(f"could not bind gRPC on {settings.host}:{settings.grpc_port}")
        self._server, self._grpc_port = server, port
        await server.start()
        try:
            for callback in self.context._startups:
                result = callback()
                if isinstance(result, Awaitable):
                    await result
        except BaseException:
            await server.stop(0)
            self._server = None
            await self._run_cleanups()
            raise
        self._metrics = metrics.start_metrics_server(settings.metrics_port, settings.host)
        await self._set_health(health_pb2.HealthCheckResponse.SERVING, overall=True)
        if self.context._readiness:
            self._readiness_task = asyncio.create_task(self._readiness_loop(), name="readiness")
        _log.info(
            "worker started",
            grpc=self.grpc_address,
            http_port=self.http_port,
            metrics_port=self.metrics_port,
            store=settings.store_description,
        )

    async def stop(self, grace: float | None = None) -> None:
        """Graceful shutdown; safe to call more than once (later calls wait for the first).

        1. health -> NOT_SERVING (permanently), so probes and balancers move away;
        2. wait `shutdown_drain_seconds` (new RPCs are still accepted meanwhile);
        3. end open streams with UNAVAILABLE (SHUTTING_DOWN) and refuse new ones;
        4. `server.stop(grace)`: refuse new RPCs, let in-flight ones finish within `grace`;
        5. run cleanups (reverse order) and close the metrics endpoint.
        """
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop(grace))
        await asyncio.shield(self._stopping)

    async def _stop(self, grace: float | None) -> None:
        grace = self.settings.shutdown_grace_seconds if grace is None else grace
        _log.info("worker stopping", grace_s=grace, open_streams=self.streams.active)
        if self._readiness_task is not None:
            # Cancel it, and wait at most one more round: on Python 3.11 a cancellation that
            # lands while a store ping completes can be swallowed by asyncio.wait_for, and the
            # loop then ends by itself at its next turn (it checks `_stopping`).
            self._readiness_task.cancel()
            await asyncio.wait({self._readiness_task}, timeout=self.settings.readiness_interval_seconds + 2)
            self._readiness_task = None
        self.context.serving = False
        await self.health.enter_graceful_shutdown()
        if self.settings.shutdown_drain_seconds > 0:
            await asyncio.sleep(self.settings.shutdown_drain_seconds)
        self.streams.begin_shutdown()
        if self._server is not None:
            await self.streams.wait_idle(timeout=min(grace, 5.0))
            await self._server.stop(grace)
        await self._run_cleanups()
        if self._metrics is not None:
            await asyncio.to_thread(self._metrics.close)
            self._metrics = None
        _log.info("worker stopped")

    async def _run_cleanups(self) -> None:
        callbacks, self.context._cleanups = list(self.context._cleanups), []
        for callback in reversed(callbacks):
            try:
                result = callback()
                if isinstance(result, Awaitable):
                    await result
            except Exception:
                _log.exception("cleanup failed")

    async def wait_for_termination(self) -> None:
        """Return when the server has stopped. Cancelling the caller is safe."""
        if self._server is not None:
            # Shielded: cancelling grpc's own wait_for_termination() breaks a later stop().
            await asyncio.shield(self._server.wait_for_termination())


async def serve(
    settings: Settings,
    service_factory: ServiceFactory | None = None,
    *,
    on_started: Callable[[Worker], None] | None = None,
) -> None:
    """Run a worker until SIGTERM or SIGINT, then shut down gracefully. The signal handlers
    are in place before the worker says it started (``on_started``): a signal sent as soon as
    the banner shows must not meet the default action (which ends the process at once)."""
    worker = Worker(settings, service_factory)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []

    def remove_handlers() -> None:
        for sig in handled:
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):  # non-Unix event loops
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    with contextlib.suppress(NotImplementedError):  # a heap snapshot (or a warning) on SIGUSR1
        loop.add_signal_handler(signal.SIGUSR1, diagnostics.on_sigusr1, settings.heap_snapshot_dir)
        handled.append(signal.SIGUSR1)
    try:
        await worker.start()
    except BaseException:
        remove_handlers()
        raise
    if settings.gc_tuning:
        _log.info(
            "garbage collector tuned",
            frozen_objects=diagnostics.tune_gc(settings.gc_thresholds),
            thresholds=settings.gc_thresholds,
        )
    if on_started is not None:
        on_started(worker)
    try:
        await stop.wait()
    finally:
        remove_handlers()
        await worker.stop()


__all__ = [
    "HEARTBEAT_DUE",
    "MATCH_SERVICE_NAME",
    "Served",
    "ServiceFactory",
    "StreamRegistry",
    "Worker",
    "WorkerContext",
    "serve",
]
