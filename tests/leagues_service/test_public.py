"""A league's public view (``GetPublicLeague``, ``GET /v1/public/leagues/{public_id}``) over
REST on a ``truco serve`` worker with a real ``redis-server``: a Swiss and a single
elimination with a match for third place are played to the end (their matches ended by
AdjudicateMatch), and the view, read with no credential, is compared with the operator's
``GetStandings`` and ``ListPairings``; nothing of the operator's is in it. Also: the ETag and
304, an unknown id's 404, the same view over gRPC without metadata, and a league stored
before public ids getting one from its operator's GetLeague (in process, both stores)."""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest
import requests

from tests.leagues_service.conftest import OPERATOR, Stack, spec
from tests.rest.conftest import ACME_KEY, Served, served  # noqa: F401  (the fixture)
from truco_client.leagues import LeagueClient
from truco_contract.pb import league_service_pb2 as lpb
from truco_contract.pb import league_service_pb2_grpc
from truco_server.services.leagues.documents import LEAGUE, StoredLeague, load_league, save_league
from truco_server.services.leagues.errors import LeagueNotFound
from truco_server.services.leagues.public import public_id_of

pytestmark = pytest.mark.timeout(180)

AUTH = {"Authorization": f"Bearer {ACME_KEY}"}
SWISS = [  # entrant ids the operator keeps to itself; display names are public
    ("op-secret-id-ana", "Ana"),
    ("op-secret-id-bea", "Bea"),
    ("op-secret-id-cas", "Cas"),
    ("op-secret-id-dan", "Dan"),
    ("op-secret-id-eli", ""),  # no display name: shown by seed
]


def wait_for(what: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return got


def op(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    resp = requests.request(method, base + path, json=body, headers=AUTH, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def public(base: str, public_id: str, headers: dict[str, str] | None = None) -> requests.Response:
    return requests.get(f"{base}/v1/public/leagues/{public_id}", headers=headers or {}, timeout=30)


def create(base: str, name: str, fmt: str, entrants: list[tuple[str, str]], **more: Any) -> dict[str, Any]:
    body = {
        "name": name,
        "format": fmt,
        "rules": {"preset": "argentine", "overrides": {"target_points": 3}},
        "entrants": [{"entrantId": e, "displayName": n} for e, n in entrants],
        **more,
    }
    league: dict[str, Any] = op(base, "POST", "/v1/leagues", body)["league"]
    return league


def play_to_the_end(base: str, lid: str) -> None:
    """End every match as it is created (the first entrant of each pairing wins) until the
    league is finished."""
    while op(base, "GET", f"/v1/leagues/{lid}")["league"]["state"] != "LEAGUE_STATE_FINISHED":
        open_tables = [
            (p, t)
            for p in op(base, "GET", f"/v1/leagues/{lid}/pairings").get("pairings", [])
            for t in p.get("tables", [])
            if t.get("matchId") and not t.get("done")
        ]
        for p, t in open_tables:
            team = 0 if t["sides"][0] == p["first"] else 1
            resp = requests.post(
                f"{base}/v1/matches/{t['matchId']}:adjudicate",
                json={"winnerTeam": team, "reason": "the test"},
                headers=AUTH,
                timeout=30,
            )
            assert resp.status_code in (200, 400), resp.text  # 400: over already (a retry)
        time.sleep(0.05)


def by_seed(league: dict[str, Any]) -> dict[str, int]:
    return {e["entrantId"]: e["seed"] for e in league["entrants"]}


def check_against_the_operator_view(base: str, lid: str, view: dict[str, Any]) -> dict[str, Any]:
    """The view's standings and pairings are GetStandings' and ListPairings', by seed."""
    league = op(base, "GET", f"/v1/leagues/{lid}")["league"]
    seeds = by_seed(league)
    standings = op(base, "GET", f"/v1/leagues/{lid}/standings")
    assert view["tieBreaks"] == standings["tieBreaks"]
    expected = [
        {"seed": seeds[s["entrantId"]]} | {k: v for k, v in s.items() if k != "entrantId"}
        for s in standings["standings"]
    ]
    assert view["standings"] == expected
    pairings = op(base, "GET", f"/v1/leagues/{lid}/pairings")["pairings"]
    assert len(view["pairings"]) == len(pairings)
    for mine, theirs in zip(view["pairings"], pairings, strict=True):
        assert (mine["round"], mine["table"], mine.get("label", "")) == (
            theirs["round"],
            theirs["table"],
            theirs.get("label", ""),
        )
        assert mine["first"] == seeds[theirs["first"]]
        assert mine.get("second", 0) == (seeds[theirs["second"]] if theirs.get("second") else 0)
        r = theirs["result"]
        assert {k: v for k, v in mine["result"].items() if v} == {
            k: v
            for k, v in {
                "winner": seeds[r["winner"]] if r.get("winner") else 0,
                "firstPoints": r.get("firstPoints", 0),
                "secondPoints": r.get("secondPoints", 0),
                "forfeit": r.get("forfeit", False),
            }.items()
            if v
        }
    names = {e["seed"]: e.get("displayName", "") for e in view["entrants"]}
    assert names == {e["seed"]: e.get("displayName", "") for e in league["entrants"]}
    assert (view["name"], view["format"], view["state"]) == (
        league["name"],
        league["format"],
        league["state"],
    )
    assert (view["currentRound"], view["totalRounds"]) == (league["currentRound"], league["totalRounds"])
    return league


def check_nothing_private(text: str, league: dict[str, Any], pairings: list[dict[str, Any]]) -> None:
    """None of the operator's data is in the view's text."""
    private = {ACME_KEY, "acme", league["leagueId"], "leagueId", "entrantId", "matchId", "token"}
    private |= {e["entrantId"] for e in league["entrants"]}
    for p in pairings:
        for t in p.get("tables", []):
            private |= {t["matchId"], t["spectatorToken"]}
            private |= {s["token"] for s in t["seats"] if s.get("token")}
    assert all(private), private
    leaked = sorted(s for s in private if s in text)
    assert not leaked, leaked
    for prefix in ("tc1.", "tb1.", "ts1.", "bot_"):
        assert prefix not in text, prefix


def test_the_public_view_of_a_swiss_and_a_knockout(served: Served) -> None:  # noqa: F811
    base = served.base
    swiss = create(base, "Friday swiss", "swiss", SWISS, rounds=3)
    ko = create(base, "Cup", "single_elimination", [*SWISS, ("op-secret-id-fay", "Fay")], thirdPlace=True)
    for lg in (swiss, ko):
        assert len(lg["publicId"]) == 22 and lg["publicId"] != lg["leagueId"]
        before = public(base, lg["publicId"])  # readable before the start
        assert before.status_code == 200 and before.json()["league"]["state"] == "LEAGUE_STATE_REGISTRATION"
        op(base, "POST", f"/v1/leagues/{lg['leagueId']}:start", {})
    assert swiss["publicId"] != ko["publicId"]
    for lg in (swiss, ko):
        play_to_the_end(base, lg["leagueId"])
        resp = public(base, lg["publicId"])  # no credential at all
        assert resp.status_code == 200, resp.text
        view = resp.json()["league"]
        assert view["publicId"] == lg["publicId"] and view["state"] == "LEAGUE_STATE_FINISHED"
        league = check_against_the_operator_view(base, lg["leagueId"], view)
        pairings = op(base, "GET", f"/v1/leagues/{lg['leagueId']}/pairings")["pairings"]
        check_nothing_private(resp.text, league, pairings)
        # cacheable: a strong ETag; the same ETag is answered 304 with no body
        etag = resp.headers["ETag"]
        assert etag.startswith('"') and resp.headers["Cache-Control"] == "public, no-cache"
        assert resp.headers["Access-Control-Allow-Origin"] == "*"
        again = public(base, lg["publicId"], {"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["ETag"] == etag
        assert public(base, lg["publicId"], {"If-None-Match": '"other"'}).status_code == 200
    ko_view = public(base, ko["publicId"]).json()["league"]
    labels = [p["label"] for p in ko_view["pairings"] if p.get("second")]
    assert "3P" in labels and any(lab.startswith("W3.") for lab in labels), labels
    assert ko_view["thirdPlace"] is True
    swiss_view = public(base, swiss["publicId"]).json()["league"]
    assert any(not p.get("second") for p in swiss_view["pairings"])  # five entrants: byes


def test_a_result_changes_the_etag_and_unknown_ids_are_404(served: Served) -> None:  # noqa: F811
    base = served.base
    lg = create(base, "small", "round_robin", SWISS[:2])
    first = public(base, lg["publicId"])
    op(base, "POST", f"/v1/leagues/{lg['leagueId']}:start", {})
    play_to_the_end(base, lg["leagueId"])
    after = public(base, lg["publicId"], {"If-None-Match": first.headers["ETag"]})
    assert after.status_code == 200 and after.headers["ETag"] != first.headers["ETag"]
    assert int(after.json()["league"]["version"]) > int(first.json()["league"]["version"])
    # unknown, malformed, or the league id itself: 404 with the usual JSON error
    for wrong in (
        "A" * 22,
        lg["publicId"][:-1] + ("A" if lg["publicId"][-1] != "A" else "B"),
        "x",
        lg["leagueId"],
    ):
        resp = public(base, wrong)
        assert resp.status_code == 404, (wrong, resp.text)
        assert resp.json()["details"][0]["reason"] == "LEAGUE_NOT_FOUND"
        assert lg["leagueId"] not in resp.text or wrong == lg["leagueId"]
    # an operator's key does not open it either: the public id is what reads it
    assert public(base, "B" * 22, AUTH).status_code == 404
    # over gRPC, with no metadata at all
    with grpc.insecure_channel(served.grpc_address) as channel:
        stub = league_service_pb2_grpc.LeagueServiceStub(channel)
        got = stub.GetPublicLeague(lpb.GetPublicLeagueRequest(public_id=lg["publicId"]), timeout=10)
        assert got.league.name == "small" and [e.display_name for e in got.league.entrants] == ["Ana", "Bea"]
        with pytest.raises(grpc.RpcError) as missing:
            stub.GetPublicLeague(lpb.GetPublicLeagueRequest(public_id="C" * 22), timeout=10)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    # the SDK, with no key
    with LeagueClient(served.grpc_address) as anyone:
        assert anyone.public_league(lg["publicId"]) == got.league
    # the page: no credential, framed by any site (this page only), nothing from elsewhere
    page = requests.get(f"{base}/leagues/{lg['publicId']}", timeout=30)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    csp = page.headers["Content-Security-Policy"]
    assert "frame-ancestors *" in csp and "default-src 'self'" in csp, csp
    assert (
        "frame-ancestors" not in requests.get(f"{base}/play", timeout=30).headers["Content-Security-Policy"]
    )
    # the openapi document says the route takes no credential
    doc = requests.get(f"{base}/openapi.json", timeout=30).json()
    assert doc["paths"]["/v1/public/leagues/{public_id}"]["get"]["security"] == []


async def test_a_league_stored_before_public_ids_gets_one_from_its_operators_get(any_stack: Stack) -> None:
    leagues = any_stack.leagues
    made = await leagues.create_league(OPERATOR, spec("round_robin", 4))
    assert (await leagues.public_view(made.public_id))[1].league_id == made.league_id
    # a league as stored before public ids: none in its head, no index entry
    old = dataclasses.replace(made, league_id="lgstoredbefore", deal_key=secrets.token_hex(32), public_id="")
    assert await save_league(leagues.documents, StoredLeague(0, old, {}))
    await leagues.documents.index_add(OPERATOR.name, LEAGUE, old.league_id, 1)
    would_be = public_id_of(old)
    with pytest.raises(LeagueNotFound):
        await leagues.public_view(would_be)
    assert (await leagues.pairings(OPERATOR, old.league_id, 0))[0].public_id == ""  # other reads leave it
    got = await leagues.get_league(OPERATOR, old.league_id)
    assert got.public_id == would_be  # derived from the league's secret
    assert (await leagues.public_view(would_be))[1].league_id == old.league_id
    stored = await load_league(leagues.documents, old.league_id)
    assert stored is not None and stored.doc.public_id == would_be  # kept
    assert (await leagues.get_league(OPERATOR, old.league_id)).public_id == would_be  # and stable
    assert (await leagues.public_view(made.public_id))[1].league_id == made.league_id


def test_the_view_is_json_of_the_proto() -> None:
    """The wire message holds no field for an id, a credential or the operator."""
    names = {f.name for m in (lpb.PublicLeague, lpb.PublicEntrant, lpb.PublicPairing, lpb.PublicResult,
                              lpb.PublicStanding) for f in m.DESCRIPTOR.fields}  # fmt: skip
    assert not {n for n in names if n.endswith(("_id", "token")) and n != "public_id"}, names
    assert "owner" not in names and "members" not in names
    json.dumps(sorted(names))
