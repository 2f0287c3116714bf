"""Start and stop a real ``redis-server`` on a free loopback port.

Used by ``truco bench service`` and by the test suite (the ``redis_url`` fixture in
``tests/conftest.py``, end-to-end tests that need their own server, e.g. to kill it), and
by :mod:`truco_tools.redis_cluster`, which builds a Redis Cluster and a Sentinel group out
of these processes::

    proc = start_redis()
    try:
        ... proc.url ...
    finally:
        proc.stop()

Every process is started with ``--daemonize no``, so the :class:`RedisProcess` handle owns
it: it is stopped, killed and restarted by its own pid only. With ``workdir`` the server
keeps its files there (its log ``redis.log``, a cluster node's ``nodes.conf``, an append-only
file, a sentinel's rewritten configuration); without it nothing is written to disk.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis

MISSING_MESSAGE = (
    "redis-server is not installed or not on PATH; the storage tests need a real Redis. "
    "Install it (Debian: `apt-get install -y redis-server`) or run `make test`, which "
    "installs it when run as root."
)

STARTUP_TIMEOUT = 180.0
"""Seconds a started worker or benchmark server gets to say it is ready before a test or a
benchmark gives up. Only a guard against a hang (a process that exits is seen at once), and
generous: on a loaded 2-core machine a worker's start takes many times its idle second."""

#: The log file of a process started with a ``workdir``.
LOG_NAME = "redis.log"


class RedisServerMissing(RuntimeError):
    """``redis-server`` is not on PATH."""


_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 20000
"""The lowest port :func:`free_port` picks (above the usual services' ports)."""


def _ephemeral_low() -> int:
    """The first port of the kernel's range for the local ports of outgoing connections
    (32768 when it cannot be read: Linux's default)."""
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago, below the kernel's range for the local ports of
    outgoing connections: a port the kernel hands out (``bind`` to port 0) is in that range,
    and a connection made before the caller's process binds it (a worker connecting to Redis
    first) can take it as its local port. Below the range only another process picking the
    same port can, which the caller must still cope with."""
    low = _ephemeral_low()
    rng = random.SystemRandom()
    for _ in range(64 if low - _LOWEST >= 1000 else 0):
        port = rng.randrange(_LOWEST, low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # no room below the range
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class RedisProcess:
    """A running ``redis-server`` (or sentinel) started by :func:`start_redis`.

    ``command`` is the argument vector it was started with; :meth:`restart` starts it again
    with the same one (same port, same directory), e.g. after :meth:`kill`.
    """

    proc: subprocess.Popen[bytes]
    host: str
    port: int
    command: tuple[str, ...] = ()
    workdir: Path | None = None
    startup_timeout: float = 10.0
    #: Arguments added by the last :meth:`restart` (e.g. ``--replicaof``).
    restart_args: tuple[str, ...] = field(default=())

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def log_path(self) -> Path | None:
        return None if self.workdir is None else self.workdir / LOG_NAME

    def running(self) -> bool:
        return self.proc.poll() is None

    def client(self, *, socket_timeout: float = 5.0) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=socket_timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate exactly this process (by its pid), then kill it if it lingers."""
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the server (failure tests): no shutdown, no final save."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def lose_data(self) -> None:
        """SIGKILL the server, remove its data files (append-only file, snapshot: everything
        in its directory but its log) and start it again, empty: a data loss."""
        if self.workdir is None:
            raise RuntimeError("lose_data needs a server started with a workdir")
        self.kill()
        for path in self.workdir.iterdir():
            if path.name == LOG_NAME:
                continue
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        self.restart()

    def restart(self, extra_args: Sequence[str] = ()) -> None:
        """Start the stopped or killed server again with its command (plus ``extra_args``)
        on the same port and directory, and wait until it answers PING."""
        if self.running():
            raise RuntimeError(f"redis-server pid {self.pid} on port {self.port} is still running")
        self.restart_args = tuple(extra_args)
        self.proc = _spawn([*self.command, *self.restart_args], self.workdir)
        error = _wait_answering(self)
        if error is not None:
            raise RuntimeError(f"could not restart redis-server on port {self.port}: {error}")

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the server's log (empty without a workdir)."""
        path = self.log_path
        if path is None or not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def redis_server_path() -> str:
    path = shutil.which("redis-server")
    if path is None:
        raise RedisServerMissing(MISSING_MESSAGE)
    return path


def _spawn(cmd: Sequence[str], workdir: Path | None) -> subprocess.Popen[bytes]:
    if workdir is None:  # no log file: read start-up errors from the pipe
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return subprocess.Popen(
        cmd, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )


def _wait_answering(rp: RedisProcess) -> str | None:
    """Wait until the server answers PING; None, or why it did not."""
    proc = rp.proc
    deadline = time.monotonic() + rp.startup_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else rp.log_tail()
            return f"redis-server exited with {proc.returncode}: {out[-2000:]}"
        try:
            with rp.client() as c:
                if c.ping():
                    if proc.stdout is not None:
                        proc.stdout.close()  # do not let an unread pipe fill up
                        proc.stdout = None
                    return None
        except redis.ConnectionError:
            time.sleep(0.02)
    rp.stop()
    return f"redis-server did not answer PING within {rp.startup_timeout}s"


def start_redis(
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    extra_args: tuple[str, ...] = (),
    startup_timeout: float = 10.0,
    attempts: int = 5,
    workdir: Path | None = None,
    config_file: Path | None = None,
    appendonly: bool = False,
) -> RedisProcess:
    """Start ``redis-server`` without persistence and wait until it answers PING.

    With ``port=None`` a free port is picked, retrying with another one if the server
    could not bind it. ``workdir`` (an existing directory the caller owns) holds the
    server's files and its log; ``config_file`` is read first (a sentinel needs one it can
    rewrite; pass ``--sentinel`` in ``extra_args``); ``appendonly`` turns on the
    append-only file (``appendfsync everysec``) in ``workdir``, so a restarted server
    reloads its data.
    """
    if appendonly and workdir is None:
        raise ValueError("appendonly needs a workdir")
    binary = redis_server_path()
    files: list[str] = []
    if workdir is not None:
        files = ["--dir", str(workdir), "--logfile", LOG_NAME]
    persistence = (
        ["--appendonly", "yes", "--appendfsync", "everysec"] if appendonly else ["--appendonly", "no"]
    )
    last_error = "unknown"
    for _ in range(attempts if port is None else 1):
        p = port if port is not None else free_port(host)
        cmd = [
            binary,
            *([str(config_file)] if config_file is not None else []),
            "--port", str(p),
            "--bind", host,
            "--save", "",
            *persistence,
            "--daemonize", "no",
            "--protected-mode", "no",
            *files,
            *extra_args,
        ]  # fmt: skip
        rp = RedisProcess(
            proc=_spawn(cmd, workdir),
            host=host,
            port=p,
            command=tuple(cmd),
            workdir=workdir,
            startup_timeout=startup_timeout,
        )
        error = _wait_answering(rp)
        if error is None:
            return rp
        last_error = error
    raise RuntimeError(f"could not start redis-server: {last_error}")
