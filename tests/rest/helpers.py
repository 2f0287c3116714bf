"""HTTP helpers for the REST tests: JSON calls, an SSE reader, an NDJSON reader."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    body: Any = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    h = dict(headers or {})
    if token:
        h.update(bearer(token))
    async with http.request(method, url, json=body, headers=h) as resp:
        text = await resp.text()
        assert resp.content_type == "application/json", (resp.status, resp.content_type, text[:200])
        return resp.status, json.loads(text)


@dataclass
class SseEvent:
    event: str
    data: Any
    id: str | None


async def sse_events(resp: aiohttp.ClientResponse) -> AsyncIterator[SseEvent]:
    """Parse a text/event-stream body (fields event, data, id; comments and retry skipped)."""
    event, data, event_id = "message", [], None
    async for raw in resp.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if data:
                yield SseEvent(event, json.loads("\n".join(data)), event_id)
            event, data, event_id = "message", [], None
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            event_id = value


async def ndjson_lines(resp: aiohttp.ClientResponse) -> AsyncIterator[Any]:
    async for raw in resp.content:
        if raw.strip():
            yield json.loads(raw)


async def create_match(
    http: aiohttp.ClientSession, base: str, key: str, preset: str = "argentine", **extra: Any
) -> dict[str, Any]:
    body = {"requestId": str(uuid.uuid4()), "rules": {"preset": preset}, **extra}
    status, created = await call(http, "POST", f"{base}/v1/matches", body, key)
    assert status == 200, created
    return created


async def act_once(
    http: aiohttp.ClientSession, base: str, match_id: str, tokens: list[str], rng: random.Random
) -> tuple[int, dict[str, Any]] | None:
    """One random legal action by some acting seat; None when the match is over."""
    status, got = await call(http, "GET", f"{base}/v1/matches/{match_id}", token=tokens[0])
    assert status == 200, got
    obs = got["observation"]
    if got["match"]["state"] != "MATCH_STATE_ACTIVE":
        return None
    seat = rng.choice(obs["awaited"])
    status, mine = await call(http, "GET", f"{base}/v1/matches/{match_id}", token=tokens[seat])
    assert status == 200, mine
    legal = mine["observation"]["legalActions"]
    assert legal, mine["observation"]
    body = {
        "requestId": str(uuid.uuid4()),
        "expectedVersion": mine["observation"]["version"],
        "action": rng.choice(legal),
    }
    status, result = await call(http, "POST", f"{base}/v1/matches/{match_id}/actions", body, tokens[seat])
    assert status == 200, result
    return seat, result
