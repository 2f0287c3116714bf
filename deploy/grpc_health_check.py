"""Exit 0 when a Truco worker's gRPC health service reports SERVING, 1 otherwise.

The container image's HEALTHCHECK (deploy/Dockerfile) runs it; it also works by hand::

    python deploy/grpc_health_check.py                      # 127.0.0.1:$TRUCO_GRPC_PORT (50051)
    python deploy/grpc_health_check.py 127.0.0.1:50052
    python deploy/grpc_health_check.py 127.0.0.1:50051 truco.v1.MatchService

It asks the standard ``grpc.health.v1.Health/Check`` for the service ``""`` (the whole
server) unless another service name is given, the same question Kubernetes' native gRPC
probe asks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

TIMEOUT_SECONDS = 3.0


def default_address() -> str:
    """Loopback on the worker's configured gRPC port (what a container healthcheck wants)."""
    port = os.environ.get("TRUCO_GRPC_PORT") or "50051"
    return f"127.0.0.1:{port}"


def check(address: str, service: str = "", timeout: float = TIMEOUT_SECONDS) -> tuple[bool, str]:
    """(serving?, status name or gRPC error code) for `service` at `address`."""
    # A health check talks to the worker directly, never through an HTTP proxy from the environment.
    with grpc.insecure_channel(address, options=[("grpc.enable_http_proxy", 0)]) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)  # the type stubs list no methods
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            return False, code.name if code is not None else type(exc).__name__
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return reply.status == health_pb2.HealthCheckResponse.SERVING, status


def main(argv: Sequence[str]) -> int:
    address = argv[0] if argv else default_address()
    service = argv[1] if len(argv) > 1 else ""
    serving, status = check(address, service)
    print(f"{address} {service or '(server)'}: {status}", file=sys.stdout if serving else sys.stderr)
    return 0 if serving else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
