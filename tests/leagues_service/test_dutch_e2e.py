"""A Swiss paired by the FIDE Dutch system over the API, on Redis with two workers and bots
from the lobby: created over REST, played to its end, its TRF export replayed round by round
by the pairing library's checker with no difference; the option refused where it does not
apply, over gRPC and REST alike."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import grpc
import pytest
import requests
from caissify_pairings.fpc import check_trf

from tests.leagues_service.workers import Lobby, make_bots, two_workers
from truco_client.errors import TrucoApiError
from truco_client.leagues import LeagueClient

LEAGUE_TIMEOUT = 240.0


def test_a_dutch_swiss_over_rest_and_grpc_replays_under_the_fide_checker(
    clean_redis_url: str, tmp_path: Path
) -> None:
    with two_workers(clean_redis_url, tmp_path, rest=True) as (a, b), LeagueClient(a.address) as ops:
        bots = make_bots(ops, 7)
        lobby = Lobby(bots)
        lobby.start([a.address, b.address])
        try:
            body = {
                "name": "dutch swiss", "format": "swiss", "rounds": 4, "swissPairing": "dutch",
                "rules": {"preset": "paulista-2p", "overrides": {"target_points": 3}},
                "settings": {"joinWindow": "60s"},
                "entrants": [{"entrantId": x.bot_id} for x in bots],
            }  # fmt: skip
            resp = requests.post(f"{b.http}/v1/leagues", json=body, timeout=30)
            assert resp.status_code == 200, resp.text
            lid = resp.json()["league"]["leagueId"]
            assert resp.json()["league"]["swissPairing"] == "dutch"
            ops.start(lid)
            league = ops.wait_finished(lid, LEAGUE_TIMEOUT)
        finally:
            lobby.close()
        assert not lobby.errors
        assert league.swiss_pairing == "dutch"
        pairings = ops.pairings(lid).pairings
        assert Counter(frozenset((p.first, p.second)) for p in pairings if p.second).most_common(1)[0][1] == 1
        assert sorted(Counter(p.first for p in pairings if not p.second).values()) == [1, 1, 1, 1]
        trf = ops.export_trf(lid)
        assert "FIDE Dutch system" in trf
        report = check_trf(trf)
        assert report["summary"]["rounds_checked"] == 4
        assert report["summary"]["total_discrepancies"] == 0, [r["discrepancies"] for r in report["rounds"]]
        # a league of the default pairing says so; the option is refused where it does not apply
        plain = ops.create_league("plain", "swiss", rounds=2, entrants=[x.bot_id for x in bots[:4]])
        assert plain.swiss_pairing == "weighted"
        with pytest.raises(TrucoApiError) as err:
            ops.create_league(
                "rr", "round_robin", entrants=[x.bot_id for x in bots[:4]], swiss_pairing="dutch"
            )
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "only a swiss" in err.value.message
        bad = requests.post(
            f"{b.http}/v1/leagues",
            json={"name": "x", "format": "swiss", "rounds": 2, "swissPairing": "monrad",
                  "rules": {"preset": "paulista-2p"},
                  "entrants": [{"entrantId": x.bot_id} for x in bots[:4]]},
            timeout=30,
        )  # fmt: skip
        assert bad.status_code == 400 and "unknown pairing system" in bad.text
