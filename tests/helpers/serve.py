"""``truco serve`` as a child process with its two output streams kept apart, as a process
manager runs it: stdout (JSON log lines) and stderr (the banner, errors) in two files."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from truco_tools.redis_proc import STARTUP_TIMEOUT

_GRPC = re.compile(r"gRPC listening on (\S+)")
_REST = re.compile(r"REST/JSON listening on (\S+)")


def listening(output: str) -> tuple[str, str] | None:
    """The gRPC address and the REST base URL that ``truco serve``'s banner in ``output`` names
    (``None`` until the banner is whole: it ends with its ``store:`` line). A test serves on
    port 0 and reads the ports here: a port picked free beforehand can be taken before the
    server binds it -- by the server's own first connection to Redis, whose local port the
    kernel draws from the same range."""
    if "store: " not in output:
        return None
    grpc, rest = _GRPC.search(output), _REST.search(output)
    if grpc is None or rest is None:
        return None
    return grpc.group(1), rest.group(1)


@dataclass(frozen=True)
class Served:
    proc: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path
    grpc_address: str
    rest_url: str


@contextmanager
def serve_apart(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = STARTUP_TIMEOUT
) -> Iterator[Served]:
    """Start ``truco serve`` (free loopback ports, info logs, plus ``args``; the environment
    without ``TRUCO_*`` and ``REDIS_URL``, plus ``env``), wait for its banner, stop it with
    SIGTERM at the end (SIGKILL if it lingers)."""
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    environ.update(env or {})
    cmd = [
        sys.executable, "-m", "truco_cli.main", "serve", "--grpc-port", "0", "--http-port", "0",
        "--metrics-port", "0", "--host", "127.0.0.1", "--log-level", "info", *args,
    ]  # fmt: skip
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e, env=environ)
    try:
        deadline = time.monotonic() + timeout
        while (found := listening(err.read_text(errors="replace"))) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("truco serve did not start: " + err.read_text(errors="replace"))
            time.sleep(0.05)
        yield Served(proc, out, err, *found)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
