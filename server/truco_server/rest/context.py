"""A ``grpc.aio.ServicerContext`` stand-in, so REST calls run the gRPC servicer unchanged.

The REST face does not re-implement any RPC: it builds the request message, calls the same
``GrpcMatchService`` method the gRPC server calls, with a :class:`RestServicerContext` whose
metadata comes from the HTTP headers. When the servicer ends the call with an error
(``context.abort_with_status`` via ``grpc_errors.map_service_errors``) the context raises
:class:`RestAbort` carrying the very ``google.rpc.Status`` gRPC would have sent; the HTTP layer
answers it with the mapped HTTP status and the Status as JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import grpc
from google.rpc import code_pb2, status_pb2  # type: ignore[import-untyped]

#: HTTP status for each canonical code (google/rpc/code.proto, "HTTP Mapping").
HTTP_STATUS: dict[int, int] = {
    code_pb2.OK: 200,
    code_pb2.CANCELLED: 499,
    code_pb2.UNKNOWN: 500,
    code_pb2.INVALID_ARGUMENT: 400,
    code_pb2.DEADLINE_EXCEEDED: 504,
    code_pb2.NOT_FOUND: 404,
    code_pb2.ALREADY_EXISTS: 409,
    code_pb2.PERMISSION_DENIED: 403,
    code_pb2.UNAUTHENTICATED: 401,
    code_pb2.RESOURCE_EXHAUSTED: 429,
    code_pb2.FAILED_PRECONDITION: 400,
    code_pb2.ABORTED: 409,
    code_pb2.OUT_OF_RANGE: 400,
    code_pb2.UNIMPLEMENTED: 501,
    code_pb2.INTERNAL: 500,
    code_pb2.UNAVAILABLE: 503,
    code_pb2.DATA_LOSS: 500,
}

_DETAILS_KEY = "grpc-status-details-bin"


def http_status(code: int) -> int:
    """HTTP status for a canonical (gRPC) code; unknown codes are 500."""
    return HTTP_STATUS.get(code, 500)


class RestAbort(grpc.aio.AbortError):
    """The servicer ended the call with ``status`` (a ``google.rpc.Status``)."""

    def __init__(self, status: status_pb2.Status) -> None:
        super().__init__(status.message)
        self.status = status

    @property
    def http_status(self) -> int:
        return http_status(self.status.code)


def _code_number(code: Any) -> int:
    if isinstance(code, grpc.StatusCode):
        return int(code.value[0])
    return int(code)


class RestServicerContext:
    """The parts of ``grpc.aio.ServicerContext`` the servicers use.

    ``metadata`` are lower-case (key, value) pairs, as gRPC presents HTTP/2 headers.
    """

    def __init__(self, metadata: Sequence[tuple[str, str]], peer: str = "") -> None:
        self._metadata = tuple(metadata)
        self._peer = peer
        self._code: Any = None
        self._details: str | None = None
        self._trailing: tuple[tuple[str, str | bytes], ...] = ()

    # -- what handlers read
    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer(self) -> str:
        return self._peer

    def time_remaining(self) -> float | None:
        return None

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return False

    # -- what handlers set
    def set_code(self, code: Any) -> None:
        self._code = code

    def code(self) -> Any:
        return self._code

    def set_details(self, details: str) -> None:
        self._details = details

    def details(self) -> str | None:
        return self._details

    def set_trailing_metadata(self, metadata: Sequence[tuple[str, str | bytes]]) -> None:
        self._trailing = tuple(metadata)

    async def send_initial_metadata(self, metadata: Sequence[tuple[str, str | bytes]]) -> None:
        return None

    # -- ending the call with an error
    async def abort(
        self, code: Any, details: str = "", trailing_metadata: Sequence[tuple[str, str | bytes]] = ()
    ) -> NoReturn:
        raise RestAbort(self._status(code, details, trailing_metadata))

    async def abort_with_status(self, status: grpc.Status) -> NoReturn:
        raise RestAbort(self._status(status.code, status.details, status.trailing_metadata or ()))

    @staticmethod
    def _status(
        code: Any, details: str, trailing_metadata: Sequence[tuple[str, str | bytes]]
    ) -> status_pb2.Status:
        for key, value in trailing_metadata:
            if key == _DETAILS_KEY and isinstance(value, bytes):
                return status_pb2.Status.FromString(value)
        return status_pb2.Status(code=_code_number(code), message=details or "")

    def unset_error(self) -> bool:
        """True when the handler set a non-OK code without aborting (generated base classes)."""
        return self._code is not None and _code_number(self._code) != 0

    def status_from_code(self) -> status_pb2.Status:
        return status_pb2.Status(code=_code_number(self._code), message=self._details or "")
