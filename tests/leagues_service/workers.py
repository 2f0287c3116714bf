"""Two ``truco serve`` workers on one real ``redis-server``, and bots in the lobby."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.serve import listening
from truco_bots import get_bot
from truco_client import TrucoClient
from truco_client.leagues import LeagueClient, run_lobby
from truco_contract.pb import league_service_pb2


@dataclass
class Serve:
    proc: subprocess.Popen[bytes]
    address: str
    log: Path
    http: str = ""
    """The REST base URL (``http://127.0.0.1:<port>``), when it serves REST."""

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def start_serve(redis_url: str, log: Path, *, rest: bool = False) -> Serve:
    """A worker on free loopback ports (port 0, read from its banner:
    :func:`tests.helpers.serve.listening`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    env.update({"TRUCO_HEARTBEAT_INTERVAL_SECONDS": "1", "TRUCO_SCHEDULER_TICK_SECONDS": "0.1"})
    cmd = [
        sys.executable, "-m", "truco_cli.main", "serve",
        "--redis", redis_url, "--grpc-port", "0", "--metrics-port", "0",
        "--http-port", "0", "--host", "127.0.0.1", "--log-level", "warning",
        "--workers", "1",  # one worker process: the one a test kills
    ]  # fmt: skip
    out = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    out.close()
    deadline = time.monotonic() + 120  # a cap: it waits for the log line (slow on a loaded machine)
    while (found := listening(log.read_text(errors="replace"))) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            raise AssertionError("truco serve did not start: " + log.read_text())
        time.sleep(0.05)
    return Serve(proc, found[0], log, found[1] if rest else "")


@contextmanager
def two_workers(redis_url: str, tmp: Path, *, rest: bool = False) -> Iterator[list[Serve]]:
    workers: list[Serve] = []
    try:
        for i in range(2):
            workers.append(start_serve(redis_url, tmp / f"serve{i}.log", rest=rest))
        yield workers
    finally:
        for w in workers:
            w.kill()


@dataclass
class Lobby:
    """Bot accounts, each running the lobby on a thread (built-in ``rules`` bots)."""

    bots: list[league_service_pb2.BotAccount]
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    played: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def start(self, targets: Sequence[str], max_concurrent: int = 0) -> None:
        bot_class = get_bot("rules")

        def run(bot: league_service_pb2.BotAccount) -> None:
            try:
                self.played[bot.bot_id] = run_lobby(
                    list(targets), bot.bot_id, bot.token, bot_class, max_concurrent=max_concurrent,
                    stop=self.stop, log=lambda m: None,
                )  # fmt: skip
            except Exception as exc:
                self.errors.append(f"{bot.bot_id}: {exc!r}")

        for b in self.bots:
            t = threading.Thread(target=run, args=(b,), daemon=True)
            t.start()
            self.threads.append(t)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(15)


def make_bots(client: LeagueClient, n: int, max_concurrent: int = 1) -> list[league_service_pb2.BotAccount]:
    return [client.create_bot(f"rules bot {i}", max_concurrent) for i in range(n)]


def every_match(address: str) -> list[str]:
    """The ids of every match of the (open-mode) operator."""
    with TrucoClient(address) as c:
        return [m.match_id for m in c.iter_matches()]
