"""Finding 6: the REST face reads a request one way only. An integer is ASCII digits (no other
script's digits, no fraction, no exponent); a body's path variable (``matchId``) equals the
path's or is absent; a name occurs once per JSON object; a body is declared JSON or not
declared. Each refusal is 400 INVALID_ARGUMENT naming what was wrong, and changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.rest.conftest import ACME_KEY, RestWorker
from tests.rest.helpers import bearer, call, create_match

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


def _field(body: dict[str, Any]) -> list[str]:
    return [v["field"] for d in body["details"] for v in d.get("fieldViolations", ())]


async def test_integers_are_ascii_digits(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    for size in ("%D9%A3", "%EF%BC%92", "1e3", "3.0", "+3", " 3"):
        status, body = await call(http, "GET", f"{base}/v1/matches?page_size={size}", token=ACME_KEY)
        assert status == 400 and body["code"] == 3, (size, body)
        assert _field(body) == ["page_size"], body
    status, body = await call(http, "GET", f"{base}/v1/matches?page_size=3", token=ACME_KEY)
    assert status == 200, body
    for players in (2.0, 2e0, "\u0662", True):
        status, body = await call(http, "POST", f"{base}/v1/matches", {"players": players}, ACME_KEY)
        assert status == 400 and _field(body) == ["players"], (players, body)
    status, body = await call(http, "POST", f"{base}/v1/matches", {"players": "2"}, ACME_KEY)
    assert status == 200, body


async def test_the_body_match_id_is_the_paths_or_absent(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    m = await create_match(http, base, ACME_KEY)
    mid = m["match"]["matchId"]
    url = f"{base}/v1/matches/{mid}:cancel"
    for spelling in ("matchId", "match_id"):
        status, body = await call(http, "POST", url, {spelling: "m-someone-else"}, ACME_KEY)
        assert status == 400 and _field(body) == ["match_id"] and "differs" in body["message"], body
    status, body = await call(http, "GET", f"{base}/v1/matches/{mid}", token=ACME_KEY)
    assert body["match"]["state"] == "MATCH_STATE_ACTIVE"  # nothing changed
    status, body = await call(http, "POST", url, {"matchId": mid, "reason": "same id"}, ACME_KEY)
    assert status == 200 and body["match"]["state"] == "MATCH_STATE_CANCELLED", body


async def test_a_name_occurs_once_per_object(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    for raw in (b'{"players": 2, "players": 4}', b'{"rules": {"preset": "argentine", "preset": "x"}}'):
        headers = {**bearer(ACME_KEY), "Content-Type": "application/json"}
        async with http.post(f"{base}/v1/matches", data=raw, headers=headers) as resp:
            body = await resp.json()
            assert resp.status == 400 and "occurs twice" in body["message"], body


async def test_a_body_is_declared_json_or_not_declared(rest_worker: RestWorker) -> None:
    http, base = rest_worker.http, rest_worker.base
    raw = json.dumps({"rules": {"preset": "argentine"}}).encode()
    for kind in ("text/plain", "application/x-www-form-urlencoded", "application/octet-stream", "text/xml"):
        headers = {**bearer(ACME_KEY), "Content-Type": kind}
        async with http.post(f"{base}/v1/matches", data=raw, headers=headers) as resp:
            body = await resp.json()
            assert resp.status == 400 and _field(body) == ["Content-Type"], (kind, body)
    for kind in ("application/json", "application/json; charset=utf-8", "application/problem+json"):
        headers = {**bearer(ACME_KEY), "Content-Type": kind}
        async with http.post(f"{base}/v1/matches", data=raw, headers=headers) as resp:
            assert resp.status == 200, (kind, await resp.text())
    # no Content-Type at all (aiohttp adds one to bytes, so skip its default)
    async with http.post(
        f"{base}/v1/matches", data=raw, headers=bearer(ACME_KEY), skip_auto_headers=["Content-Type"]
    ) as resp:
        assert resp.status == 200, await resp.text()
