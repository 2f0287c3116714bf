"""structlog configuration: JSON lines with UTC timestamps and per-call context.

Call `configure_logging(level)` once at start-up. Per-RPC context (`request_id`, `match_id`,
`seat`, `grpc_method`) is bound with structlog's contextvars by the gRPC interceptor;
`bind_operator()` and `bind_seat()` add who is calling once a handler has authenticated the
caller, and `bind_refusal()` the typed reason of a refused call, so the `rpc finished` and
`http request` lines say who was refused and why. Credentials are
never bound or logged.

Records from the standard `logging` module (grpc, redis, asyncio) go through the same
processors, so every line on stdout is one JSON object.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal, TextIO

import structlog
import structlog.tracebacks
from structlog.typing import Processor

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

#: Keys that must never reach a log line, whatever a caller binds.
SECRET_KEYS = frozenset({"authorization", "token", "api_key", "secret", "password"})


def _drop_secrets(_: Any, __: str, event_dict: structlog.typing.EventDict) -> Any:
    for key in SECRET_KEYS.intersection(event_dict):
        event_dict[key] = "***"
    return event_dict


#: Tracebacks as JSON, without local variables: locals can hold credentials or hidden cards.
_exception_renderer = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _drop_secrets,
        structlog.processors.StackInfoRenderer(),
    ]


class _CurrentStream:
    """Writes to whatever `sys.stdout` (or `sys.stderr`) is when a line is written.

    Holding the stream object found at configuration time breaks when it is later replaced
    and closed (a test runner's capture, a daemonised process): every log call would then
    raise "I/O operation on closed file" inside the code that logged.
    """

    def __init__(self, name: Literal["stdout", "stderr"]) -> None:
        self._name = name

    def _target(self) -> TextIO:
        target: TextIO = getattr(sys, self._name)
        return target

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()


def configure_logging(level: str = "info", stream: TextIO | Literal["stdout", "stderr"] = "stdout") -> None:
    """Configure structlog and the stdlib root logger to write JSON lines to `stream`.

    `"stdout"` and `"stderr"` mean the process's stream at the time each line is written.
    """
    numeric = _LEVELS[level.lower()]
    out: Any = _CurrentStream(stream) if isinstance(stream, str) else stream
    structlog.configure(
        processors=[
            *_shared_processors(),
            _exception_renderer,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *_shared_processors()],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                _exception_renderer,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # grpc's Cython layer logs every event-loop lookup at DEBUG.
    logging.getLogger("grpc").setLevel(max(numeric, logging.INFO))


def get_logger(name: str | None = None) -> Any:
    """A structlog logger; `name` is bound as `logger`."""
    logger = structlog.get_logger()
    return logger.bind(logger=name) if name else logger


def bind_operator(name: str) -> None:
    """Bind the operator a call acts for (its key's name, or the owner of the match a seat
    credential belongs to) to the current call's log context."""
    structlog.contextvars.bind_contextvars(operator=name)


def bind_refusal(reason: str) -> None:
    """Bind the typed reason (``ErrorInfo.reason``) a call is refused with, for its
    ``rpc finished`` / ``http request`` line."""
    structlog.contextvars.bind_contextvars(reason=reason)


def bind_seat(seat: int | None) -> None:
    """Bind the authenticated seat (None: spectator) to the current call's log context."""
    structlog.contextvars.bind_contextvars(seat="spectator" if seat is None else seat)
