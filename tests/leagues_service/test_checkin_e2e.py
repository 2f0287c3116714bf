"""The check-in window over the API, end to end: two ``truco serve`` workers on one real
``redis-server``; entrants check in over REST and gRPC with the operator's key or their bot
account's own credential; at the start time the one that did not is withdrawn
(``no_check_in``, an ``entrant.withdrawn`` event) and round 1 is paired without it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests

from tests.leagues_service.test_control import league_events, round_paired, wait_for
from tests.leagues_service.workers import make_bots, two_workers
from truco_client.errors import TrucoApiError
from truco_client.leagues import LeagueClient


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _check_in(base: str, lid: str, entrant: str, token: str = "") -> tuple[int, Any]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    resp = requests.post(
        f"{base}/v1/leagues/{lid}/entrants/{entrant}:checkIn", json={}, headers=headers, timeout=30
    )
    return resp.status_code, resp.json()


def test_who_does_not_check_in_is_withdrawn_at_the_start(clean_redis_url: str, tmp_path: Path) -> None:
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 4)
        late = bots[3].bot_id
        # a check-in window needs a start time
        no_start = requests.post(
            f"{b.http}/v1/leagues",
            json={"name": "x", "format": "swiss", "rounds": 2, "rules": {"preset": "argentine"},
                  "schedule": {"checkIn": "60s"}},
            timeout=30,
        )  # fmt: skip
        assert no_start.status_code == 400 and "schedule.check_in" in no_start.text, no_start.text
        start = time.time() + 8
        body = {
            "name": "checked", "format": "swiss", "rounds": 2,
            "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
            "settings": {"joinWindow": "60s"},
            "entrants": [{"entrantId": x.bot_id} for x in bots] + [{"entrantId": "carla"}],
            "schedule": {"startTime": _rfc3339(start), "checkIn": "30s"},
        }  # fmt: skip
        resp = requests.post(f"{b.http}/v1/leagues", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        league = resp.json()["league"]
        assert league["schedule"]["checkIn"] == "30s"
        lid = league["leagueId"]
        # a bot checks itself in with its own credential (REST), another over gRPC
        status, got = _check_in(b.http, lid, bots[0].bot_id, bots[0].token)
        assert status == 200 and got["entrant"]["checkedIn"] is True, got
        with LeagueClient(a.address, api_key=bots[1].token) as bot_client:
            assert bot_client.check_in(lid, bots[1].bot_id).checked_in
            with pytest.raises(TrucoApiError) as denied:  # not the entrant it plays for
                bot_client.check_in(lid, late)
            assert denied.value.code == grpc.StatusCode.PERMISSION_DENIED
        # the operator checks in the others it chooses (REST and gRPC); twice is fine
        assert _check_in(b.http, lid, bots[2].bot_id)[0] == 200
        assert ops.check_in(lid, "carla").checked_in and ops.check_in(lid, "carla").checked_in
        assert _check_in(b.http, lid, "nobody")[0] == 404
        # nobody calls StartLeague: it starts at its start time, without the late bot
        wait_for(round_paired(ops, lid, 1), timeout=90)
        events = league_events(b.address, lid, lambda got: "round.paired" in [e.type for e in got])
        status, closed = _check_in(b.http, lid, late, bots[3].token)
        assert status == 400 and "check-in closed" in closed["message"], closed
        after = ops.get_league(lid)
        round_one = list(ops.pairings(lid, 1).pairings)
    entrants = {e.entrant_id: e for e in after.entrants}
    assert entrants[late].withdrawn and entrants[late].withdrawn_reason == "no_check_in"
    assert not entrants[late].checked_in
    assert all(e.checked_in and not e.withdrawn for k, e in entrants.items() if k != late)
    types = [(e.type, e.labels.get("entrant", "")) for e in events]
    assert types[:3] == [("entrant.withdrawn", late), ("league.started", ""), ("round.paired", "")]
    assert events[0].labels["reason"] == "no_check_in" and events[1].labels["entrants"] == "4"
    assert events[1].time.ToNanoseconds() / 1e9 >= start - 0.001
    seated = sorted(x for p in round_one for x in (p.first, p.second) if x)
    assert seated == sorted([bots[0].bot_id, bots[1].bot_id, bots[2].bot_id, "carla"])
    assert all(p.second for p in round_one)  # four left: no bye


def test_check_in_outside_a_window(clean_redis_url: str, tmp_path: Path) -> None:
    """Not open yet, and a league without a window: FAILED_PRECONDITION saying so."""
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        later = ops.create_league(
            "later", "round_robin", entrants=["ana", "bea"], start_time=time.time() + 3600, check_in=60
        )
        assert later.schedule.check_in.ToSeconds() == 60
        with pytest.raises(TrucoApiError) as err:
            ops.check_in(later.league_id, "ana")
        assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION and "opens" in str(err.value)
        plain = ops.create_league("plain", "round_robin", entrants=["ana", "bea"])
        status, got = _check_in(b.http, plain.league_id, "ana")
        assert status == 400 and "no check-in window" in got["message"], got
