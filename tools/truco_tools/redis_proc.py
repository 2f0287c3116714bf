"""Start and stop a real ``redis-server`` on a free loopback port.

Used by ``truco bench service`` and by the test suite (the ``redis_url`` fixture in
``tests/conftest.py``, end-to-end tests that need their own server, e.g. to kill it)::

    proc = start_redis()
    try:
        ... proc.url ...
    finally:
        proc.stop()
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass

import redis

MISSING_MESSAGE = (
    "redis-server is not installed or not on PATH; the storage tests need a real Redis. "
    "Install it (Debian: `apt-get install -y redis-server`) or run `make test`, which "
    "installs it when run as root."
)


class RedisServerMissing(RuntimeError):
    """``redis-server`` is not on PATH."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the caller must cope with a lost race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class RedisProcess:
    """A running ``redis-server`` started by :func:`start_redis`."""

    proc: subprocess.Popen[bytes]
    host: str
    port: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=5)

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
        """SIGKILL the server (failure tests)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def redis_server_path() -> str:
    path = shutil.which("redis-server")
    if path is None:
        raise RedisServerMissing(MISSING_MESSAGE)
    return path


def start_redis(
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    extra_args: tuple[str, ...] = (),
    startup_timeout: float = 10.0,
    attempts: int = 5,
) -> RedisProcess:
    """Start ``redis-server`` without persistence and wait until it answers PING.

    With ``port=None`` a free port is picked, retrying with another one if the server
    could not bind it.
    """
    binary = redis_server_path()
    last_error = "unknown"
    for _ in range(attempts if port is None else 1):
        p = port if port is not None else free_port(host)
        cmd = [
            binary,
            "--port", str(p),
            "--bind", host,
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--protected-mode", "no",
            *extra_args,
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        rp = RedisProcess(proc=proc, host=host, port=p)
        deadline = time.monotonic() + startup_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                last_error = f"redis-server exited with {proc.returncode}: {out[-2000:]}"
                break
            try:
                with rp.client() as c:
                    if c.ping():
                        if proc.stdout is not None:
                            proc.stdout.close()  # do not let an unread pipe fill up
                            proc.stdout = None
                        return rp
            except redis.ConnectionError:
                time.sleep(0.02)
        else:
            rp.stop()
            last_error = f"redis-server did not answer PING within {startup_timeout}s"
    raise RuntimeError(f"could not start redis-server: {last_error}")
