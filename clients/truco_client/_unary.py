"""The channel of a blocking service client (leagues, matchmaking): one gRPC channel to one
target, its first call waiting until the server accepts a connection, unary calls retried on
the retryable codes."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import grpc

from truco_client._core import CHANNEL_OPTIONS, CONNECT_TIMEOUT, RetryPolicy, metadata
from truco_client.errors import RETRYABLE, ServerUnreachable, from_rpc_error

__all__ = ["ServiceChannel"]


class ServiceChannel:
    """``stub_class``'s stub on one channel to ``target``. The first call waits
    ``connect_timeout`` seconds for the server to accept a connection
    (:class:`~truco_client.errors.ServerUnreachable` otherwise; ``None`` or 0: no wait); a
    call that fails with a retryable code is tried again up to ``retry.attempts`` times, after
    the policy's backoff (at least the delay the server asked for)."""

    def __init__(
        self,
        target: str,
        stub_class: Callable[[grpc.Channel], Any],
        *,
        api_key: str | None,
        timeout: float,
        retry: RetryPolicy | None,
        credentials: grpc.ChannelCredentials | None,
        connect_timeout: float | None = CONNECT_TIMEOUT,
    ) -> None:
        self.target = target
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.connect_timeout = connect_timeout
        self._reached = not connect_timeout
        if credentials is not None:
            self._channel = grpc.secure_channel(target, credentials, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
        self.stub = stub_class(self._channel)
        self._rng = random.Random()

    def close(self) -> None:
        self._channel.close()

    def reach(self) -> None:
        """Wait until the server accepts a connection (once; see the class docstring)."""
        if self._reached or not self.connect_timeout:
            return
        ready = grpc.channel_ready_future(self._channel)
        try:
            ready.result(timeout=self.connect_timeout)
        except grpc.FutureTimeoutError:
            ready.cancel()
            raise ServerUnreachable([self.target], self.connect_timeout) from None
        self._reached = True

    def call(self, method: str, request: Any) -> Any:
        """The unary ``method`` with ``request``, with the client's key and retries; a failure
        is raised as the SDK's typed error."""
        self.reach()
        attempt = 0
        while True:
            attempt += 1
            try:
                return getattr(self.stub, method)(
                    request, timeout=self.timeout, metadata=metadata(self.api_key)
                )
            except grpc.RpcError as err:
                code = err.code() if hasattr(err, "code") else None
                if code not in RETRYABLE or attempt >= self.retry.attempts:
                    raise from_rpc_error(err) from None
                failed = err
            time.sleep(self.retry.backoff(attempt, self._rng, failed))
