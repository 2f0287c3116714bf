"""REST/JSON (+ SSE and NDJSON streams) face of the worker, generated from the proto.

``attach(ctx, api)`` is what the worker wiring calls: it starts the HTTP listener on
``settings.http_port`` (0: a free port) once the worker starts, and stops it gracefully when
the worker stops. See :mod:`truco_server.transports.rest.app` and docs/rest.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.descriptor import ServiceDescriptor

from truco_server.transports.rest.app import (
    EVENT_STREAM,
    HTTP_STATUS,
    NDJSON,
    RestFace,
    http_status,
    reference_page,
)
from truco_server.transports.rest.openapi import build_openapi
from truco_server.transports.rest.routes import Route, routes_of


def attach(ctx: Any, served: Sequence[tuple[ServiceDescriptor, object]]) -> RestFace:
    """Serve the API over HTTP too, in the worker that owns ``ctx`` (a WorkerContext).

    The listener starts with the worker (``ctx.add_startup``) on ``settings.host`` and
    ``settings.http_port``; the bound port is published as ``ctx.http_port``. It stops in the
    worker's cleanup phase: listener closed, in-flight requests given the shutdown grace,
    streams already ended with UNAVAILABLE by the service layer. ``GET /healthz`` answers the
    worker's health and its details (``ctx.serving``, ``ctx.health_details``).
    """
    settings = ctx.settings
    face = RestFace(
        served, cors_origins=settings.cors_origins, health=lambda: (ctx.serving, ctx.health_details)
    )

    async def start() -> None:
        ctx.http_port = await face.start(
            settings.host,
            settings.http_port,
            shutdown_timeout=settings.shutdown_grace_seconds,
            reuse_port=settings.reuse_port,
        )

    ctx.add_startup(start)
    ctx.add_cleanup(face.stop)
    return face


__all__ = [
    "EVENT_STREAM",
    "HTTP_STATUS",
    "NDJSON",
    "RestFace",
    "Route",
    "attach",
    "build_openapi",
    "http_status",
    "reference_page",
    "routes_of",
]
