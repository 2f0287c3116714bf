"""The SDK waits at least the delay a store fault's RetryInfo asks for before it retries."""

from __future__ import annotations

import random

from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from truco_client._core import RetryPolicy, server_retry_delay


class _Failed:
    def __init__(self, delay_ms: int | None) -> None:
        status = status_pb2.Status(code=14, message="store unavailable")
        if delay_ms is not None:
            packed = any_pb2.Any()
            info = error_details_pb2.RetryInfo()
            info.retry_delay.FromMilliseconds(delay_ms)
            packed.Pack(info)
            status.details.append(packed)
        self._md = (("grpc-status-details-bin", status.SerializeToString()),)

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return self._md


def test_the_server_retry_delay_is_a_floor_of_the_backoff() -> None:
    policy = RetryPolicy(initial_backoff=0.1, max_backoff=3.0)
    rng = random.Random(1)
    assert server_retry_delay(_Failed(1500)) == 1.5
    assert server_retry_delay(_Failed(None)) == 0.0 and server_retry_delay(object()) == 0.0
    assert policy.backoff(1, rng, _Failed(1500)) >= 1.5
    assert policy.backoff(1, rng, _Failed(None)) <= 0.1
    assert policy.backoff(1, rng, _Failed(60_000)) == 3.0  # never beyond the policy's cap
