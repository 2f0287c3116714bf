"""Shared pieces of the hardening tests: the details of a failed gRPC call, a worker on a
Redis the test owns (so it may pause, kill and restart it by pid)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from tests.e2e.conftest import e2e_settings, running_worker
from truco_server.transports.grpc.server import Worker


@dataclass
class Details:
    code: grpc.StatusCode
    message: str
    reason: str | None
    retry_ms: int | None
    quota: list[str]
    fields: list[str]


def details(err: grpc.aio.AioRpcError) -> Details:
    """The code, ErrorInfo reason, RetryInfo delay, QuotaFailure subjects and BadRequest fields."""
    status: status_pb2.Status | None = None
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
    reason = retry = None
    quota: list[str] = []
    fields: list[str] = []
    for d in status.details if status is not None else ():
        if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            d.Unpack(info)
            reason = info.reason
        elif d.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            ri = error_details_pb2.RetryInfo()
            d.Unpack(ri)
            retry = ri.retry_delay.ToMilliseconds()
        elif d.Is(error_details_pb2.QuotaFailure.DESCRIPTOR):
            qf = error_details_pb2.QuotaFailure()
            d.Unpack(qf)
            quota = [v.subject for v in qf.violations]
        elif d.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            br = error_details_pb2.BadRequest()
            d.Unpack(br)
            fields = [v.field for v in br.field_violations]
    return Details(err.code(), err.details() or "", reason, retry, quota, fields)


@asynccontextmanager
async def worker_on(redis_url: str, **overrides: Any) -> AsyncIterator[Worker]:
    async with running_worker(e2e_settings(redis_url, **overrides)) as w:
        yield w


async def relays_settled(redis: Any, timeout: float = 10.0) -> None:
    """Wait until the worker has relayed every operator event of its commits so far: no relay
    holds a match's lock and the relay queue holds no safety net (the relay releases each one
    when it is done). A relay runs ``RELAY_GATHER_SECONDS`` after its commit, so a test that
    compares the keys before and after a refused call waits for it first."""
    deadline = asyncio.get_running_loop().time() + timeout
    while await redis.keys("truco:{q:relay:*") or await redis.keys("truco:*:relay"):
        assert asyncio.get_running_loop().time() < deadline, "the relay did not finish"
        await asyncio.sleep(0.01)
