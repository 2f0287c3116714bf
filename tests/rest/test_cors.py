"""CORS: a browser page on another origin may call the REST face when its origin is listed.

A real worker (gRPC + HTTP) on a real redis-server, configured with ``cors_origins``; the
requests are the ones a browser sends (preflight ``OPTIONS``, then the call with ``Origin``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.rest.conftest import ACME_KEY, worker_settings
from tests.rest.helpers import create_match
from truco_server.app.wiring import service_factory
from truco_server.core.config import ConfigError, parse_cors_origins, parse_settings
from truco_server.transports.grpc.server import Worker

APP = "https://app.example"
EVIL = "https://evil.example"
ServedCors = tuple[str, aiohttp.ClientSession]


async def _worker(redis_url: str, origins: tuple[str, ...]) -> AsyncIterator[ServedCors]:
    worker = Worker(worker_settings(redis_url, cors_origins=origins), service_factory)
    await worker.start()
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30, sock_read=10))
    try:
        yield f"http://127.0.0.1:{worker.http_port}", session
    finally:
        await session.close()
        await worker.stop()


@pytest.fixture
async def cors_worker(clean_redis_url: str) -> AsyncIterator[ServedCors]:
    async for pair in _worker(clean_redis_url, (APP, "http://localhost:5173")):
        yield pair


@pytest.fixture
async def plain_worker(clean_redis_url: str) -> AsyncIterator[ServedCors]:
    async for pair in _worker(clean_redis_url, ()):
        yield pair


def _preflight(method: str, headers: str) -> dict[str, str]:
    return {"Origin": APP, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers}


def test_the_setting_parses_origins_and_rejects_anything_else() -> None:
    assert parse_cors_origins("") == ()
    assert parse_cors_origins(" https://App.Example , http://localhost:5173,https://app.example") == (
        "https://app.example",
        "http://localhost:5173",
    )
    assert parse_cors_origins("*") == ("*",)
    assert parse_cors_origins("http://[::1]:8080") == ("http://[::1]:8080",)
    for bad in ("app.example", "https://app.example/", "https://app.example/path", "ftp://x.example"):
        with pytest.raises(ValueError):
            parse_cors_origins(bad)
    assert parse_settings([], {"TRUCO_CORS_ORIGINS": APP}).cors_origins == (APP,)
    assert parse_settings(["--cors-origins", "*"], {}).cors_origins == ("*",)
    with pytest.raises(ConfigError, match="TRUCO_CORS_ORIGINS"):
        parse_settings([], {"TRUCO_CORS_ORIGINS": "https://app.example/"})


async def test_preflight_from_an_allowed_origin(cors_worker: ServedCors) -> None:
    base, http = cors_worker
    async with http.options(
        f"{base}/v1/matches/m1/actions", headers=_preflight("POST", "authorization, content-type")
    ) as resp:
        assert resp.status == 204
        assert resp.headers["Access-Control-Allow-Origin"] == APP
        methods = {m.strip() for m in resp.headers["Access-Control-Allow-Methods"].split(",")}
        assert {"GET", "POST", "DELETE"} <= methods
        allowed = {h.strip() for h in resp.headers["Access-Control-Allow-Headers"].split(",")}
        assert {"authorization", "content-type", "x-api-key", "last-event-id"} <= allowed
        assert "Origin" in resp.headers["Vary"]
        assert "Access-Control-Allow-Credentials" not in resp.headers  # bearer headers, no cookies


async def test_preflight_from_another_origin_is_refused(cors_worker: ServedCors) -> None:
    base, http = cors_worker
    headers = {**_preflight("POST", "authorization"), "Origin": EVIL}
    async with http.options(f"{base}/v1/matches", headers=headers) as resp:
        assert resp.status == 403
        assert "Access-Control-Allow-Origin" not in resp.headers
        assert EVIL in await resp.text()


async def test_calls_errors_and_streams_carry_the_origin(cors_worker: ServedCors) -> None:
    base, http = cors_worker
    origin = {"Origin": APP}
    body = {"requestId": str(uuid.uuid4()), "rules": {"preset": "paulista"}}
    async with http.post(
        f"{base}/v1/matches", json=body, headers={**origin, "Authorization": f"Bearer {ACME_KEY}"}
    ) as resp:
        assert resp.status == 200
        assert resp.headers["Access-Control-Allow-Origin"] == APP
        created = await resp.json()
    # An error answer is readable by the page too (its JSON Status, WWW-Authenticate exposed).
    async with http.get(f"{base}/v1/matches/{created['match']['matchId']}", headers=origin) as resp:
        assert resp.status == 401
        assert resp.headers["Access-Control-Allow-Origin"] == APP
        assert "www-authenticate" in resp.headers["Access-Control-Expose-Headers"]
        assert (await resp.json())["code"] == 16
    # A stream gets the header before its first byte.
    token = created["seatCredentials"][0]["token"]
    async with http.get(
        f"{base}/v1/matches/{created['match']['matchId']}:streamObservations",
        headers={**origin, "Authorization": f"Bearer {token}", "Accept": "text/event-stream"},
    ) as resp:
        assert resp.status == 200
        assert resp.headers["Access-Control-Allow-Origin"] == APP
        first = await resp.content.readline()
        assert first.startswith(b"retry:")
    # Another origin gets the answer (the server does not hide it) but no permission to read it.
    async with http.get(f"{base}/openapi.json", headers={"Origin": EVIL}) as resp:
        assert resp.status == 200
        assert "Access-Control-Allow-Origin" not in resp.headers


async def test_any_origin_with_star(clean_redis_url: str) -> None:
    async for base, http in _worker(clean_redis_url, ("*",)):
        headers = {**_preflight("POST", "authorization"), "Origin": EVIL}
        async with http.options(f"{base}/v1/matches", headers=headers) as resp:
            assert resp.status == 204
            assert resp.headers["Access-Control-Allow-Origin"] == "*"
        created = await create_match(http, base, ACME_KEY, "paulista")
        assert created["match"]["matchId"]


async def test_cors_is_off_by_default(plain_worker: ServedCors) -> None:
    base, http = plain_worker
    async with http.options(f"{base}/v1/matches", headers=_preflight("POST", "authorization")) as resp:
        assert resp.status == 405
        assert "Access-Control-Allow-Origin" not in resp.headers
    async with http.get(f"{base}/openapi.json", headers={"Origin": APP}) as resp:
        assert resp.status == 200
        assert "Access-Control-Allow-Origin" not in resp.headers
