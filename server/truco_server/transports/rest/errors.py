"""The REST face's error answers: a ``google.rpc.Status`` as its HTTP status, JSON body and
headers (google/rpc/code.proto, "HTTP Mapping")."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]

from truco_server.core.logging import bind_refusal
from truco_server.transports.rest.routes import message_to_json

__all__ = ["HTTP_STATUS", "dumps", "error_response", "http_status", "retry_after_seconds", "status_json"]


def dumps(obj: Any) -> str:
    """Compact JSON, UTF-8 unescaped. orjson: 7 against 52 µs of ``json.dumps`` for a stream
    message in a loop; numbers may be spelt differently (``1e-7`` for ``1e-07``, same value)."""
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


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


def http_status(code: int) -> int:
    """HTTP status for a canonical (gRPC) code; unknown codes are 500."""
    return HTTP_STATUS.get(code, 500)


def status_json(status: status_pb2.Status) -> dict[str, Any]:
    """The JSON error body (protobuf JSON mapping of ``google.rpc.Status``)."""
    return message_to_json(status)


def retry_after_seconds(status: status_pb2.Status) -> int | None:
    """The whole seconds of the status's ``google.rpc.RetryInfo`` (rounded up), or ``None``."""
    for detail in status.details:
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            millis: int = info.retry_delay.ToMilliseconds()
            return max(1, -(-millis // 1000))
    return None


def error_response(status: status_pb2.Status) -> web.Response:
    """The HTTP answer of an error: the JSON Status, its HTTP status, and ``Retry-After``
    (from the status's ``RetryInfo``; 1 s for any other 503)."""
    code = http_status(status.code)
    if status.details and status.details[0].Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
        info = error_details_pb2.ErrorInfo()
        status.details[0].Unpack(info)
        bind_refusal(info.reason)
    headers = {"Cache-Control": "no-store"}
    retry_after = retry_after_seconds(status)
    if code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="truco"'
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    elif code == 503:
        headers["Retry-After"] = "1"
    return web.json_response(status_json(status), status=code, headers=headers, dumps=dumps)
