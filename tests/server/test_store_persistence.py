"""A worker tells at start-up whether its store keeps its data across a restart
(docs/operations.md, "Persistence"): one structured log line, the ``store`` detail of
``GET /healthz`` and the gauge ``truco_store_persistence``. ``truco serve`` as a child
process on a ``redis-server`` of the test's own: without the append-only file or snapshots
(a warning naming what a restart loses and how to turn it on), with the append-only file
(no warning), acknowledged with ``TRUCO_EPHEMERAL_STORE_OK`` (info), with ``CONFIG``
renamed (could not be checked; the worker serves all the same), and on the in-memory store
(the same line). Then a running worker's report follows a change of the configuration."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.serve import serve_apart
from truco_server.app.persistence import PersistenceReport
from truco_server.core import metrics
from truco_server.stores.redis import open_redis
from truco_tools.redis_proc import RedisProcess, free_port, start_redis

pytestmark = pytest.mark.timeout(300)

EVENTS = ("store has no persistence", "store persistence on", "store persistence could not be checked")


def persistence_lines(stdout: Path, timeout: float = 30) -> list[dict[str, Any]]:
    """The worker's persistence line(s), once the first is written (it checks after start)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [json.loads(x) for x in stdout.read_text().splitlines() if x.startswith("{")]
        found = [x for x in lines if x.get("event") in EVENTS]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def gauge(metrics_url: str) -> float:
    _, text = get(metrics_url)
    (line,) = [x for x in text.splitlines() if x.startswith("truco_store_persistence")]
    return float(line.split()[-1])


@pytest.fixture
def redis_servers() -> Iterator[list[RedisProcess]]:
    started: list[RedisProcess] = []
    yield started
    for proc in started:
        proc.stop()


@pytest.mark.parametrize(
    ("case", "event", "level", "state", "value"),
    [
        ("none", "store has no persistence", "warning", "off", 0),
        ("aof", "store persistence on", "info", "on", 1),
        ("acknowledged", "store has no persistence", "info", "off", 0),
        ("config renamed", "store persistence could not be checked", "info", "unknown", -1),
        ("memory", "store has no persistence", "warning", "off", 0),
    ],
)
def test_a_worker_says_at_start_whether_its_store_keeps_its_data(
    tmp_path: Path,
    redis_servers: list[RedisProcess],
    case: str,
    event: str,
    level: str,
    state: str,
    value: int,
) -> None:
    args: list[str] = []
    env: dict[str, str] = {}
    if case != "memory":
        options: dict[str, Any] = {}
        if case == "aof":
            (tmp_path / "redis").mkdir()
            options = {"workdir": tmp_path / "redis", "appendonly": True}
        if case == "config renamed":
            options = {"extra_args": ("--rename-command", "CONFIG", "")}
        redis_servers.append(start_redis(**options))
        args = ["--redis", redis_servers[-1].url, "--workers", "1"]
    if case == "acknowledged":
        env["TRUCO_EPHEMERAL_STORE_OK"] = "1"
    metrics_port = free_port()
    with serve_apart(tmp_path, *args, "--metrics-port", str(metrics_port), env=env) as served:
        lines = persistence_lines(served.stdout)
        status, body = get(f"{served.rest_url}/healthz")
        value_seen = gauge(f"http://127.0.0.1:{metrics_port}/metrics")
    assert [x["event"] for x in lines] == [event], lines  # one line
    (line,) = lines
    assert line["level"] == level and line["persistence"] == state
    assert not [x for x in lines if x["level"] == "warning"] or case in ("none", "memory")
    if state == "off":
        assert line["nodes"] == (
            ["memory"] if case == "memory" else [f"redis standalone {redis_servers[0].address}"]
        )
        assert "league" in line["lost_on_restart"] and "rating book" in line["lost_on_restart"]
        assert ("REDIS_URL" if case == "memory" else "appendonly yes") in line["fix"]
        assert line["acknowledged"] is (case == "acknowledged")
        assert ("acknowledge" in line) is (case != "acknowledged")  # how to silence it, until it is
    if state == "unknown":
        assert "CONFIG GET refused" in json.dumps(line["nodes"])
    assert status == 200  # the worker serves whatever its store's persistence
    detail = json.loads(body)
    assert detail["status"] == "SERVING"
    assert detail["store"]["persistence"] == state
    assert detail["store"]["ephemeral_ok"] is (case == "acknowledged")
    assert value_seen == value


@pytest.mark.asyncio
async def test_a_running_worker_follows_a_change_of_its_stores_configuration(tmp_path: Path) -> None:
    """``CONFIG SET appendonly yes`` on a running Redis: the next check reports it (the
    gauge, the health details)."""
    proc = start_redis(workdir=tmp_path)  # its append-only file goes there
    store = open_redis(proc.url)
    details: dict[str, Any] = {}
    report = PersistenceReport(store, details, every=0.05)
    try:
        await report.start()
        while report.last is None:
            await asyncio.sleep(0.01)
        assert details["store"]["persistence"] == "off"
        assert metrics.REGISTRY.get_sample_value("truco_store_persistence") == 0
        assert "appendonly yes" in details["store"]["fix"]
        with proc.client() as client:
            client.config_set("appendonly", "yes")
        deadline = time.monotonic() + 30
        while details["store"]["persistence"] != "on":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert metrics.REGISTRY.get_sample_value("truco_store_persistence") == 1
        assert "fix" not in details["store"]
    finally:
        await report.stop()
        await store.close()
        proc.stop()
