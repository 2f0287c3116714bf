"""An in-process match server on a free loopback port, on a background thread (for ``truco
play`` and ``truco demo``, examples and tests); in-memory store unless given a Redis URL.

    with EmbeddedServer() as server:
        client = TrucoClient(server.address)
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from truco_server.app.wiring import service_factory
from truco_server.core.config import Settings
from truco_server.core.logging import configure_logging
from truco_server.transports.grpc.server import Worker


class EmbeddedServer:
    """A gRPC worker (in-memory store, or ``redis_url``) running on a background thread."""

    def __init__(self, redis_url: str | None = None, *, quiet: bool = True, **settings: Any) -> None:
        self._settings = {
            "redis_url": redis_url,
            "grpc_port": 0,
            "metrics_port": 0,
            "http_port": 0,
            **settings,
        }
        self.quiet = quiet
        """Send the server's logs (warnings and errors only) to stderr instead of stdout."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._worker: Any = None
        self.address = ""

    def start(self) -> EmbeddedServer:
        if self.quiet:
            configure_logging("error", stream="stderr")

        ready = threading.Event()
        errors: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                fields = set(Settings.__dataclass_fields__)
                self._worker = Worker(
                    Settings(**{k: v for k, v in self._settings.items() if k in fields}), service_factory
                )
                loop.run_until_complete(self._worker.start())
                self.address = self._worker.grpc_address
            except BaseException as exc:
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=main, name="truco-embedded-server", daemon=True)
        self._thread.start()
        ready.wait(30)
        if errors:
            raise errors[0]
        if not self.address:
            raise RuntimeError("the embedded server did not start")
        return self

    def stop(self, grace: float = 0.5) -> None:
        loop = self._loop
        if loop is None or self._worker is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self._worker.stop(grace), loop)
        try:
            fut.result(timeout=grace + 15)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._loop = None
            self._worker = None

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
