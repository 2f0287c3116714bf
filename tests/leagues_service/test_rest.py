"""``truco.v1.LeagueService`` over REST/JSON (the same API layer as gRPC): a league, a bot
account and its lobby stream as NDJSON, the typed errors as JSON bodies, per operator."""

from __future__ import annotations

import json

import aiohttp

from tests.rest.conftest import ACME_KEY, Served, served  # noqa: F401  (the fixture)
from tests.rest.helpers import bearer, call


async def test_a_league_over_rest(served: Served) -> None:  # noqa: F811
    base = served.base
    async with aiohttp.ClientSession() as http:
        status, created = await call(
            http, "POST", f"{base}/v1/bots", {"name": "rb", "maxConcurrent": 1}, ACME_KEY
        )
        assert status == 200, created
        bot = created["bot"]
        assert bot["botId"].startswith("bot_") and bot["token"].startswith("tb1.")
        body = {
            "name": "rest cup",
            "format": "single_elimination",
            "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
            "entrants": [{"entrantId": bot["botId"]}, {"entrantId": "alice"}],
            "requestId": "cup-1",
        }
        status, league = await call(http, "POST", f"{base}/v1/leagues", body, ACME_KEY)
        assert status == 200, league
        lid = league["league"]["leagueId"]
        assert league["league"]["state"] == "LEAGUE_STATE_REGISTRATION"
        assert [e["seed"] for e in league["league"]["entrants"]] == [1, 2]
        status, again = await call(http, "POST", f"{base}/v1/leagues", body, ACME_KEY)
        assert again["league"]["leagueId"] == lid  # the request id
        status, started = await call(http, "POST", f"{base}/v1/leagues/{lid}:start", {}, ACME_KEY)
        assert status == 200 and started["league"]["state"] == "LEAGUE_STATE_RUNNING"
        url = f"{base}/v1/bots/{bot['botId']}/assignments:stream"
        headers = {**bearer(bot["token"]), "Accept": "application/x-ndjson"}
        async with http.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=30)) as resp:
            assert resp.status == 200 and resp.content_type == "application/x-ndjson"
            async for raw in resp.content:
                message = json.loads(raw)
                if "assignment" in message:
                    assignment = message["assignment"]
                    break
        assert assignment["leagueId"] == lid and assignment["token"].startswith("tc1.")
        status, pairings = await call(http, "GET", f"{base}/v1/leagues/{lid}/pairings", None, ACME_KEY)
        (pairing,) = pairings["pairings"]
        (table,) = pairing["tables"]
        assert table["matchId"] == assignment["matchId"]
        seats = {s["playerId"]: s.get("token", "") for s in table["seats"]}
        assert seats[bot["botId"]] == "" and seats["alice"].startswith("tc1.")  # the bot's comes by the lobby
        status, standings = await call(http, "GET", f"{base}/v1/leagues/{lid}/standings", None, ACME_KEY)
        assert status == 200 and len(standings["standings"]) == 2
        # errors: typed, as JSON
        status, err = await call(http, "GET", f"{base}/v1/leagues/{lid}", None)
        assert status == 401
        status, err = await call(
            http, "POST", f"{base}/v1/leagues", {**body, "format": "ladder", "requestId": ""}, ACME_KEY
        )
        assert status == 400 and "unknown format" in err["message"]
        status, err = await call(http, "POST", f"{base}/v1/leagues/{lid}:start", {}, ACME_KEY)
        assert status == 400, err  # FAILED_PRECONDITION
        assert err["details"][0]["reason"] == "LEAGUE_STATE"
        status, err = await call(http, "GET", f"{base}/v1/leagues/lgnothere", None, ACME_KEY)
        assert status == 404
        async with http.get(url, headers={**bearer(bot["token"] + "x")}) as resp:
            assert resp.status == 401
