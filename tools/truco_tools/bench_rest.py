"""The REST/JSON half of ``truco bench service``: the same random bots over HTTP.

Each match is created with ``POST /v1/matches``; every seat follows its own NDJSON stream
(``GET /v1/matches/{id}:streamObservations``) and acts with ``POST .../actions`` (with
``expectedVersion`` and a ``requestId``) when its stream shows its turn — the same protocol as
the gRPC bots, so the two figures compare the transports on the same worker and Redis.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Coroutine
from typing import Any, Protocol

import aiohttp

from truco_tools.bench_policy import choose, is_card_json


async def play_seats(seats: list[Coroutine[Any, Any, None]]) -> None:
    """Run one match's seat loops together until they end; the first failure cancels the
    others and is raised. Cancelling the caller cancels every seat (none is left behind)."""
    tasks = [asyncio.ensure_future(seat) for seat in seats]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for t in tasks:
            t.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    first = next((o for o in outcomes if isinstance(o, Exception)), None)
    if first is not None:
        raise first


class LoadFigures(Protocol):
    """What the bots report into (``bench_service.Figures``)."""

    actions: int
    errors: int
    matches_finished: int
    submit_ms: list[float]
    delivery_ms: list[float]
    measuring: bool
    seen: int


class RestBots:
    """Random bots playing concurrent matches over REST until ``stop`` is set."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base: str,
        preset: str,
        players: int,
        seed: int,
        think_ms: float,
        figures: LoadFigures,
        stop: asyncio.Event,
        policy: str = "random",
    ) -> None:
        self.http = session
        self.base = base
        self.preset = preset
        self.players = players
        self.seed = seed
        self.think = think_ms / 1000
        self.policy = policy
        """How the bots choose their actions (:mod:`.bench_policy`)."""
        self.fig = figures
        self.stop = stop
        self.live: set[str] = set()

    async def run_slot(self, slot: int) -> None:
        rng = random.Random(f"rest:{self.seed}:{slot}")
        while not self.stop.is_set():
            try:
                await self._one_match(rng)
            except (TimeoutError, aiohttp.ClientError, KeyError, ValueError):
                if self.stop.is_set():
                    return
                self.fig.errors += 1
                await asyncio.sleep(0.05)

    async def _one_match(self, rng: random.Random) -> None:
        body = {"rules": {"preset": self.preset}, "players": self.players}
        async with self.http.post(f"{self.base}/v1/matches", json=body) as resp:
            resp.raise_for_status()
            created = await resp.json()
        mid = created["match"]["matchId"]
        tokens = [c["token"] for c in sorted(created["seatCredentials"], key=lambda c: c.get("seat", 0))]
        sent: dict[int, tuple[float, int]] = {}
        over = asyncio.Event()
        self.live.add(mid)
        try:
            await play_seats([self._seat(mid, tokens, s, rng, sent, over) for s in range(len(tokens))])
            if over.is_set():
                self.fig.matches_finished += int(self.fig.measuring)  # in the window, as the actions
        finally:
            self.live.discard(mid)

    async def _seat(
        self,
        mid: str,
        tokens: list[str],
        seat: int,
        rng: random.Random,
        sent: dict[int, tuple[float, int]],
        over: asyncio.Event,
    ) -> None:
        auth = {"Authorization": f"Bearer {tokens[seat]}"}
        n = 0
        url = f"{self.base}/v1/matches/{mid}:streamObservations"
        async with self.http.get(url, headers=auth, timeout=aiohttp.ClientTimeout(total=None)) as stream:
            stream.raise_for_status()
            async for raw in stream.content:
                if self.stop.is_set():
                    return
                line = raw.strip()
                if not line:
                    continue
                msg: dict[str, Any] = json.loads(line)
                upd = msg.get("update")
                if upd is None:
                    continue
                now = time.perf_counter()
                events = upd.get("events") or []
                if events:
                    got = sent.get(int(events[0]["version"]) - 1)
                    if got is not None and got[1] != seat and self.fig.measuring:
                        self.fig.delivery_ms.append((now - got[0]) * 1000)
                obs = upd["observation"]
                if obs.get("matchState") != "MATCH_STATE_ACTIVE":
                    over.set()
                    return
                acting = obs.get("awaited") or []
                legal = obs.get("legalActions") or []
                if not acting or acting[0] != seat or not legal:
                    continue
                action = choose(rng, legal, self.policy, is_card_json)
                if self.think > 0:
                    await asyncio.sleep(rng.expovariate(1.0 / self.think))
                version = int(obs["version"])
                t0 = time.perf_counter()
                sent[version] = (t0, seat)
                body = {"requestId": f"{seat}-{n}", "expectedVersion": str(version), "action": action}
                status = await self._submit(f"{self.base}/v1/matches/{mid}/actions", body, auth)
                if status in (400, 409):  # a stale view: the stream brings the new one
                    self.fig.errors += 1
                    continue
                n += 1
                self.fig.seen += 1
                if self.fig.measuring:
                    self.fig.actions += 1
                    self.fig.submit_ms.append((time.perf_counter() - t0) * 1000)

    async def _submit(self, url: str, body: dict[str, Any], auth: dict[str, str]) -> int:
        """POST an action; a dropped keep-alive connection is retried with the same
        ``requestId`` (the service applies it once). Returns the HTTP status."""
        for attempt in range(3):
            try:
                async with self.http.post(url, json=body, headers=auth) as resp:
                    await resp.read()
                    if resp.status not in (400, 409):
                        resp.raise_for_status()
                    return resp.status
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover
