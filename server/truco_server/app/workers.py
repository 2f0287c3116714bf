"""``truco serve --workers N``: N worker processes behind the same ports, one ``/metrics``.

A worker is one event loop, so one core; the workers are stateless (every match lives in
Redis), so N of them on one host serve the same matches. The parent started here does no
serving itself:

* it starts N ``truco serve --workers 1`` children with ``TRUCO_REUSE_PORT=1``, so each
  binds the same gRPC and REST ports with ``SO_REUSEPORT`` and the kernel spreads new
  connections over them (a port given as 0 is chosen once, here, for all);
* the children write their Prometheus metrics in multiprocess mode
  (``PROMETHEUS_MULTIPROC_DIR``, a private temporary directory) and the parent serves the
  aggregate on the metrics port (counters and histograms summed; the stream gauge summed
  over the live workers);
* it prints the usual "listening" lines (on stderr) once every child is ready; the children's
  JSON log lines go straight to the shared stdout;
* on SIGTERM or SIGINT it sends SIGTERM to every child (each shuts down gracefully: health
  NOT_SERVING, drain, streams ended UNAVAILABLE), waits for them, SIGKILLs any that outlive
  the grace, removes the metrics directory and exits: one clean shutdown;
* SIGHUP is passed on to every child (each re-reads ``TRUCO_API_KEYS_FILE``), and so is
  SIGUSR1 (each writes a heap snapshot when traced; docs/operations.md, "Memory");
* a child that dies is started again; a child is killed with the parent (``PR_SET_PDEATHSIG``
  on Linux), so killing the parent never leaves workers behind.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import IO

from truco_server.core.config import Settings
from truco_server.core.processes import die_with_parent

READY = "gRPC listening on "
START_TIMEOUT_S = 120.0


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class _Child:
    index: int
    proc: subprocess.Popen[str]
    ready: threading.Event
    address: str = ""


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class WorkerGroup:
    """The parent of ``N`` workers; :meth:`run` until a signal (see the module docstring)."""

    def __init__(
        self, settings: Settings, argv: Sequence[str], out: Callable[[str], None] | None = None
    ) -> None:
        self.n = settings.effective_workers
        host = settings.host
        self.settings = replace(
            settings,
            grpc_port=settings.grpc_port or _free_port(host),
            http_port=settings.http_port or _free_port(host),
        )
        self.argv = list(argv)
        self.out = out if out is not None else _to_stderr
        self.dir = tempfile.mkdtemp(prefix="truco-metrics-")
        self.children: list[_Child] = []
        self._stop = threading.Event()
        self._metrics: tuple[object, threading.Thread] | None = None

    # ---------------------------------------------------------------------------- children
    def _command(self) -> list[str]:
        s = self.settings
        # the children take the parent's flags; these later ones win
        return [
            sys.executable, "-m", "truco_cli.main", "serve", *self.argv,
            "--workers", "1", "--grpc-port", str(s.grpc_port), "--http-port", str(s.http_port),
            "--metrics-port", "0",
        ]  # fmt: skip

    def _spawn(self, index: int) -> _Child:
        env = {**os.environ, "TRUCO_REUSE_PORT": "1", "PROMETHEUS_MULTIPROC_DIR": self.dir}
        env["TRUCO_WORKER_INDEX"] = str(index)
        proc = subprocess.Popen(
            self._command(),
            stderr=subprocess.PIPE,  # its banner (read here); its JSON logs go straight to stdout
            env=env,
            text=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()) if sys.platform == "linux" else None,
        )
        child = _Child(index, proc, threading.Event())
        threading.Thread(target=self._pump, args=(child,), daemon=True).start()
        return child

    def _pump(self, child: _Child) -> None:
        """Read a child's stderr: its listening line marks it ready, the rest of its banner is
        dropped (the group prints one for all), anything else is passed on to stderr."""
        stream: IO[str] | None = child.proc.stderr
        for line in stream or ():
            if line.startswith(READY) and not child.ready.is_set():
                child.address = line[len(READY) :].strip()
                child.ready.set()
                continue
            if not line.startswith(("REST/JSON listening", "metrics ", "build: ", "store: ")):
                sys.stderr.write(line)
                sys.stderr.flush()

    # ------------------------------------------------------------------------------ metrics
    def _start_metrics(self) -> None:
        port = self.settings.metrics_port
        if port <= 0:
            return
        from prometheus_client import CollectorRegistry, start_http_server
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.dir)  # type: ignore[no-untyped-call]
        server, thread = start_http_server(port, addr=self.settings.host, registry=registry)
        self._metrics = (server, thread)

    def _stop_metrics(self) -> None:
        if self._metrics is not None:
            server, thread = self._metrics
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]
            thread.join(timeout=5)
            self._metrics = None

    # ---------------------------------------------------------------------------------- run
    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; returns the exit status."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self._stop.set())
        for passed in (signal.SIGHUP, signal.SIGUSR1):  # key reload; heap snapshot
            signal.signal(passed, lambda sig, _frame: self._signal_children(signal.Signals(sig)))
        try:
            self.children = [self._spawn(i) for i in range(self.n)]
            deadline = time.monotonic() + START_TIMEOUT_S
            for child in self.children:
                while not child.ready.wait(0.1):
                    if child.proc.poll() is not None or time.monotonic() > deadline or self._stop.is_set():
                        print(f"truco serve: worker {child.index} did not start", file=sys.stderr)
                        return 1
            self._start_metrics()
            self._announce()
            while not self._stop.wait(0.2):
                for i, child in enumerate(self.children):
                    if child.proc.poll() is not None:
                        self._dead(child)
                        print(
                            f"truco serve: worker {child.index} (pid {child.proc.pid}) exited with "
                            f"{child.proc.returncode}; starting it again",
                            file=sys.stderr,
                            flush=True,
                        )
                        self.children[i] = self._spawn(child.index)
            return 0
        finally:
            self._shutdown()

    def _signal_children(self, sig: signal.Signals) -> None:
        for child in self.children:
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(sig)

    def _announce(self) -> None:
        from truco_server.core.build import describe

        s = self.settings
        host = s.host if ":" not in s.host else f"[{s.host}]"
        pids = ", ".join(str(c.proc.pid) for c in self.children)
        self.out(
            "\n".join(
                [
                    f"{READY}{self.children[0].address}",
                    f"REST/JSON listening on http://{host}:{s.http_port} (OpenAPI /openapi.json, "
                    "reference page /play)",
                    f"metrics on :{s.metrics_port} (all workers)" if s.metrics_port else "metrics disabled",
                    f"build: {describe()}",
                    f"store: {s.store_description}",
                    f"workers: {self.n} (pids {pids}; SO_REUSEPORT)",
                ]
            )
        )

    def _dead(self, child: _Child) -> None:
        from prometheus_client import multiprocess

        with contextlib.suppress(Exception):
            multiprocess.mark_process_dead(child.proc.pid, self.dir)  # type: ignore[no-untyped-call]

    def _shutdown(self) -> None:
        for child in self.children:
            if child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.proc.pid, signal.SIGTERM)
        s = self.settings
        deadline = time.monotonic() + s.shutdown_drain_seconds + s.shutdown_grace_seconds + 10.0
        for child in self.children:
            try:
                child.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.proc.pid, signal.SIGKILL)
                child.proc.wait(5)
            self._dead(child)
        self._stop_metrics()
        shutil.rmtree(self.dir, ignore_errors=True)
