"""The reference page (/play) in Debian's headless chromium, driven by playwright-core.

A person's view, at a desktop's width (1280 px) and a phone's (390 px, mobile viewport):

- create: the page creates a match with the operator key typed into its create form, the
  other seats are the page's in-page random bots, the test clicks seat 0's buttons to the end;
- join and spectate: a match created over REST beforehand, with names for its seats; one page
  joins seat 0 through the join form, another joins seat 1 with a ``#match=..&seat=..`` link,
  a third watches through the spectate form; the test plays both seats to the end;
- against the computer: at a phone's width, the page creates a two-seat match whose other
  seat the server's bot plays at level 1; the test clicks seat 0's buttons to the end;
- invite, in another language: in a browser whose language is Portuguese, a page creates a
  match with names, the other seat for other people; seat 1 comes by its invite link and
  switches its page to Spanish; both seats are played to the end.

Every page must fit its viewport (no horizontal scrolling), log sentences (in its language)
rather than ``key=value`` text, raise no script error, and the spectator must never see a card
in hand or an action button; the server must agree the match finished; screenshots must show a
rendered page. What a person at a real table sees is checked too: the cards of every hand
shown that beat every plain card (manilhas, the River Plate top cards) are marked, exactly
those, as the rules engine ranks them; seats go by the names given at creation, one-seat teams
included; invite links are offered only for seats other people play; and a page in Portuguese
or Spanish has a word for everything and no English string of its own left. Missing chromium
or node is a failure, not a skip.

The screenshots in docs/images/ come from this test:
``TRUCO_SCREENSHOTS=docs/images .venv/bin/python -m pytest tests/rest/test_browser.py``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

import truco_engine as te
from tests.rest.conftest import ACME_KEY, REPO, Served
from tests.rest.png import color_histogram
from truco_engine.ranking import MANILHA_BASE, strength_table

pytestmark = pytest.mark.timeout(300)

BROWSER_DIR = Path(__file__).resolve().parent / "browser"
CHROMIUM = os.environ.get("TRUCO_TEST_CHROMIUM", "/usr/bin/chromium")
VIEWPORTS = {"desktop": (1280, 900, False), "phone": (390, 844, True)}


def _playwright_core() -> None:
    """Install playwright-core (and only it: it never downloads a browser) if missing."""
    if (BROWSER_DIR / "node_modules" / "playwright-core" / "package.json").exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed: the browser test needs Node.js and npm", pytrace=False)
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
        cwd=BROWSER_DIR,
        check=True,
        timeout=240,
    )


def _node() -> str:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does)",
            pytrace=False,
        )
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed", pytrace=False)
    _playwright_core()
    return node


def _rest(served: Served, method: str, path: str, token: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{served.base}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def _drive(served: Served, tmp_path: Path, mode: str, viewport: str, **extra: str) -> dict[str, Any]:
    node = _node()
    width, height, mobile = VIEWPORTS[viewport]
    env = {
        **os.environ,
        "BASE": served.base,
        "SHOT_DIR": str(tmp_path),
        "MODE": mode,
        "WIDTH": str(width),
        "HEIGHT": str(height),
        "MOBILE": "1" if mobile else "0",
        "PRESET": "paulista",
        "CHROMIUM": CHROMIUM,
        "BUDGET_MS": "150000",
        "API_KEY": ACME_KEY,
        **extra,
    }
    done = subprocess.run(
        [node, "play_match.mjs"], cwd=BROWSER_DIR, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["problems"] == [], summary
    assert summary["clicks"] >= 1, summary

    # The server agrees: the match is finished.
    match = _rest(served, "GET", f"/v1/matches/{summary['matchId']}", ACME_KEY)["match"]
    assert match["state"] == "MATCH_STATE_FINISHED"

    # The screenshots show a rendered page, not a blank one.
    assert summary["shots"], summary
    for shot in summary["shots"]:
        colors = color_histogram(Path(shot).read_bytes())
        total = sum(colors.values())
        assert len(colors) >= 100, f"{shot}: only {len(colors)} distinct colors"
        assert colors.most_common(1)[0][1] < 0.8 * total, f"{shot}: one color covers most of the page"
    keep = os.environ.get("TRUCO_SCREENSHOTS")
    if keep:
        target = REPO / keep
        target.mkdir(parents=True, exist_ok=True)
        for shot in summary["shots"]:
            shutil.copy(shot, target / f"play-{viewport}-{Path(shot).name.split('-', 2)[-1]}")
    return summary


def check_marks(summary: dict[str, Any], preset: str, players: int, word: str) -> int:
    """Every card the seat pages showed in the hand row (the seat's own and those revealed to
    it) is marked exactly when the engine ranks it above every plain card that hand (manilhas,
    top cards), with ``word``, and the legend is there exactly when a card is marked (a
    revealed manilha beside an unmarked hand once left it out); the number of marked cards
    seen."""
    rules = te.get_rules(preset, players=players)
    assert summary["marks"], "no hand was seen"
    marked = 0
    for snap in summary["marks"]:
        table = strength_table(rules, snap["turnUp"] or None)
        for card, mark in snap["cards"]:
            top = table[card] >= MANILHA_BASE
            assert mark == (word if top else None), (card, snap)
            marked += top
        assert ("★" in snap["legend"]) == any(m for _, m in snap["cards"]), snap
    return marked


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_create_a_match_and_play_it_against_the_in_page_bots(
    served: Served, tmp_path: Path, viewport: str
) -> None:
    summary = _drive(served, tmp_path, "create", viewport)
    assert summary["status"]["creator"].startswith("Match over"), summary
    check_marks(summary, "paulista", 4, "manilha")
    assert summary["invites"]["creator"] == ["invite-spectators"], summary  # the bots' seats get no link
    for label in summary["teams"]["creator"]:  # two a side, by name (the default "Seat N")
        assert re.fullmatch(r"Team (\d) \(Seat \d & Seat \d\): \d+", label), label


def test_play_over_the_websocket_at_390_px_and_resume_after_a_cut(served: Served, tmp_path: Path) -> None:
    """/play at a phone's width plays a whole two-seat match over its WebSocket against the
    in-page bot; its socket is closed under it mid-hand, and the page reconnects and resumes:
    its log shows every event from the first it showed to the match's last, each once."""
    summary = _drive(served, tmp_path, "create", "phone", PLAYERS="2", CUT="1")
    assert summary["status"]["creator"].startswith("Match over"), summary
    assert summary["transport"] == "websocket", summary
    assert summary["cut"] is not None, summary  # the socket was cut mid-hand ...
    assert summary["connects"] >= 2, summary  # ... and opened again
    versions = summary["versions"]
    assert versions == list(range(versions[0], versions[0] + len(versions))), versions  # none lost or doubled
    assert versions[0] <= summary["cut"]["version"] < versions[-1], summary  # events before and after the cut
    match = _rest(served, "GET", f"/v1/matches/{summary['matchId']}", ACME_KEY)["match"]
    assert versions[-1] == int(match["version"]) == summary["lastVersion"], (versions[-1], match["version"])


def test_play_against_the_computer_at_level_1_on_a_phone(served: Served, tmp_path: Path) -> None:
    """The page's "the computer" option: the server's bot (level 1) plays the other seat of a
    two-seat paulista match; seat 0 is clicked to the end of the match at 390 px."""
    summary = _drive(served, tmp_path, "create", "phone", OTHERS="computer", LEVEL="1", PLAYERS="2")
    assert summary["status"]["creator"].startswith("Match over"), summary
    match = _rest(served, "GET", f"/v1/matches/{summary['matchId']}", ACME_KEY)["match"]
    seats = match["seats"]
    assert [s.get("botLevel", 0) for s in seats] == [0, 1], seats
    assert summary["invites"]["creator"] == ["invite-spectators"], summary  # the computer gets no link
    record = _rest(served, "GET", f"/v1/matches/{summary['matchId']}/record", ACME_KEY)["record"]
    causes = {step.get("cause") for step in record["steps"] if "action" in step}
    assert causes == {"STEP_CAUSE_PLAYER", "STEP_CAUSE_BOT"}, causes


def _match_with_a_manilha_for_seat_0(served: Served) -> dict[str, Any]:
    """A two-seat paulista match, with names, whose first hand gives seat 0 a manilha (a few
    seeds are tried: about half the deals do)."""
    rules = te.get_rules("paulista", players=2)
    for attempt in range(40):
        seed = base64.b64encode(hashlib.sha256(f"browser-marks-{attempt}".encode()).digest()).decode()
        body = {
            "requestId": str(uuid.uuid4()),
            "rules": {"preset": "paulista"},
            "players": 2,
            "seed": seed,
            "seats": [{"displayName": "ana"}, {"displayName": "beto"}],
        }
        created: dict[str, Any] = _rest(served, "POST", "/v1/matches", ACME_KEY, body)
        seat0 = created["seatCredentials"][0]["token"]
        obs = _rest(served, "GET", f"/v1/matches/{created['match']['matchId']}", seat0)["observation"]
        table = strength_table(rules, obs["turnUp"])
        if any(table[c] >= MANILHA_BASE for c in obs["hand"]):
            return created
    raise AssertionError("no deal of 40 gave seat 0 a manilha")


# On a phone only: the flows of these two (joining by token, spectating, invite links and the
# page's languages) do not depend on the width; the desktop layout is played through by the
# creator and quick-match tests, and each of these plays a whole match (30 to 50 s).
@pytest.mark.parametrize("viewport", ["phone"])
def test_join_two_seats_by_token_and_spectate(served: Served, tmp_path: Path, viewport: str) -> None:
    created = _match_with_a_manilha_for_seat_0(served)
    tokens = [c["token"] for c in created["seatCredentials"]]
    summary = _drive(
        served,
        tmp_path,
        "join",
        viewport,
        MATCH_ID=created["match"]["matchId"],
        SEAT0=tokens[0],
        SEAT1=tokens[1],
        SPECTATOR=created["spectatorToken"],
    )
    for page in ("seat0", "seat1", "spectator"):
        assert summary["status"][page].startswith("Match over"), summary
        assert summary["fragmentLeft"][page] == "", summary  # the token is gone from the address bar
    assert summary["status"]["seat0"].endswith(("(you win!)", "(you lose)")), summary
    assert "you" not in summary["status"]["spectator"], summary
    assert check_marks(summary, "paulista", 2, "manilha") >= 1  # seat 0's first hand has one
    assert summary["titles"]["seat0"] == "Seat 0 · ana — you (team 0)", summary
    assert summary["titles"]["seat1"] == "Seat 1 · beto — you (team 1)", summary
    for page in ("seat0", "seat1", "spectator"):
        labels = summary["teams"][page]
        assert [label.split(":")[0] for label in labels] == ["Team 0 (ana)", "Team 1 (beto)"], labels


@pytest.mark.parametrize("viewport", ["phone"])
def test_invite_links_in_portuguese_and_spanish(served: Served, tmp_path: Path, viewport: str) -> None:
    summary = _drive(
        served, tmp_path, "invite", viewport, LOCALE="pt-BR", PRESET="argentine", NAMES="Ana, Beto"
    )
    assert summary["lang"] == {"seat0 (form)": "pt", "seat0": "pt", "seat1": "es"}, summary
    assert summary["status"]["seat0"].startswith("Partida encerrada — a equipe "), summary
    assert summary["status"]["seat0"].endswith(("(você ganhou!)", "(você perdeu)")), summary
    assert summary["status"]["seat1"].startswith("Partida terminada — gana el equipo "), summary
    assert summary["status"]["seat1"].endswith(("(¡ganaste!)", "(perdiste)")), summary
    assert summary["invites"]["seat0"] == ["invite-seat-1", "invite-spectators"], summary
    assert summary["titles"]["seat1"] == "Lugar 1 · Beto — vos (equipo 1)", summary
    assert [label.split(":")[0] for label in summary["teams"]["seat0"]] == [
        "Equipe 0 (Ana)",
        "Equipe 1 (Beto)",
    ]
    assert [label.split(":")[0] for label in summary["teams"]["seat1"]] == [
        "Equipo 0 (Ana)",
        "Equipo 1 (Beto)",
    ]
    check_marks(summary, "argentine", 2, "top")


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_two_pages_press_quick_match_and_play_each_other(
    served: Served, tmp_path: Path, viewport: str
) -> None:
    """Two browser pages press "quick match" in one pool: the server pairs their tickets, each
    page joins its own seat of the one match, and they play it to the end."""
    summary = _drive(served, tmp_path, "quick", viewport)
    assert summary["matchIds"]["ana"] == summary["matchIds"]["bia"] != "", summary
    assert sorted(summary["seats"].values()) == [0, 1], summary
    for page in ("ana", "bia"):
        assert summary["status"][page].startswith("Match over"), summary
        assert summary["status"][page].endswith(("(you win!)", "(you lose)")), summary
    match = _rest(served, "GET", f"/v1/matches/{summary['matchId']}", ACME_KEY)["match"]
    assert match["settings"]["labels"]["pool"] == "quick"
    assert sorted(s["displayName"] for s in match["seats"]) == ["Ana", "Bia"]
    assert all(s["playerId"].startswith("guest-") for s in match["seats"])


def _names(view: dict[str, Any]) -> dict[int, str]:
    """The name the league page shows for each seed (its display name, or "Seed N")."""
    return {e["seed"]: e.get("displayName") or f"Seed {e['seed']}" for e in view["entrants"]}


def _check_page(page: dict[str, Any], view: dict[str, Any]) -> None:
    """The page shows the view's standings and rounds, and nothing in it is wider than the
    phone (the bracket may scroll, in its own box)."""
    names = _names(view)
    assert not page["overflow"] and not page["tableOverflow"], page
    assert page["tableRight"] <= 390, page
    shown = [(s["rank"], s["name"], s["score"]) for s in page["standings"]]
    expected = [(str(s["rank"]), names[s["seed"]], f"{s.get('score', 0):g}") for s in view["standings"]]
    assert shown == expected
    assert all(s["nameVisible"] for s in page["standings"]), page["standings"]
    assert page["title"] == view["name"] and "finished" in page["meta"], page["meta"]
    assert len(page["rounds"]) == len(view["pairings"])
    for line, p in zip(
        sorted(page["rounds"], key=lambda r: (r["round"], r["table"])), view["pairings"], strict=True
    ):
        winner = p["result"].get("winner", 0)
        assert line["won"] == ([names[winner]] if winner and p.get("second") else []) or not p.get("second")
        assert names[p["first"]] in line["who"], (line, p)


def test_the_public_league_page_at_390_px(served: Served, tmp_path: Path) -> None:
    """A finished Swiss (five, with byes) and a finished single elimination of six with a match
    for third place, each on its public page at a phone's width, no credential: the standings
    as GetPublicLeague has them, by display name, every round's results, the knockout's bracket
    (every match, its winner marked); the page framed by another page; and a running league's
    page showing a result recorded while it is open, without a reload."""
    from tests.leagues_service.test_public import SWISS, create, op, play_to_the_end, public

    node = _node()
    base = served.base
    swiss = create(base, "Friday swiss", "swiss", SWISS, rounds=3)
    ko = create(base, "Cup", "single_elimination", [*SWISS, ("op-secret-id-fay", "Fay")], thirdPlace=True)
    live = create(base, "Live", "round_robin", SWISS[:2])
    for lg in (swiss, ko, live):
        op(base, "POST", f"/v1/leagues/{lg['leagueId']}:start", {})
    for lg in (swiss, ko):
        play_to_the_end(base, lg["leagueId"])
    views = {lg["publicId"]: public(base, lg["publicId"]).json()["league"] for lg in (swiss, ko)}
    env = {
        **os.environ,
        "BASE": base,
        "SHOT_DIR": str(tmp_path),
        "WIDTH": "390",
        "HEIGHT": "844",
        "MOBILE": "1",
        "CHROMIUM": CHROMIUM,
        "BUDGET_MS": "60000",
        "PAGES": f"{swiss['publicId']},{ko['publicId']}",
        "LIVE": live["publicId"],
    }
    proc = subprocess.Popen(
        [node, "league_page.mjs"],
        cwd=BROWSER_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())  # the live page is open and rendered
        assert ready.get("ready"), ready.get("problems")
        assert [r["result"] for r in ready["rounds"]] == ["playing"], ready
        (pairing,) = op(base, "GET", f"/v1/leagues/{live['leagueId']}/pairings")["pairings"]
        (table,) = pairing["tables"]
        _rest(served, "POST", f"/v1/matches/{table['matchId']}:adjudicate", ACME_KEY,
              {"winnerTeam": 0 if table["sides"][0] == pairing["first"] else 1})  # fmt: skip
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err[-3000:]
    summary: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert summary["problems"] == [], summary["problems"]
    swiss_page, ko_page = summary["pages"][swiss["publicId"]], summary["pages"][ko["publicId"]]
    for lg, page in ((swiss, swiss_page), (ko, ko_page)):
        _check_page(page, views[lg["publicId"]])
    assert "Seed 5" in [s["name"] for s in swiss_page["standings"]]  # the entrant without a name
    assert not swiss_page["bracketShown"] and ko_page["bracketShown"]
    ko_view, names = views[ko["publicId"]], _names(views[ko["publicId"]])
    played = {p["label"]: p for p in ko_view["pairings"]}
    assert sorted(m["label"] for m in ko_page["bracket"]) == sorted(played)
    assert "3P" in played and {m["group"] for m in ko_page["bracket"]} == {"W", "F"}
    winners = [m["label"] for m in ko_page["bracket"] if m["group"] == "W"]  # by round, then match
    assert winners == sorted(winners, key=lambda label: [int(x) for x in label[1:].split(".")]), winners
    for m in ko_page["bracket"]:
        p = played[m["label"]]
        assert m["sides"] == [names[p["first"]], names[p["second"]] if p.get("second") else "bye"], m
        assert m["won"] == names[p["result"]["winner"]], m
    assert summary["framed"] == len(views[swiss["publicId"]]["standings"])  # embedded in an iframe
    before, after = summary["live"]["before"], summary["live"]["after"]
    assert after["version"] > before["version"]
    (line,) = after["rounds"]
    winner = public(base, live["publicId"]).json()["league"]["pairings"][0]["result"]["winner"]
    assert line["result"] != "playing" and line["won"] == [dict(SWISS)[SWISS[winner - 1][0]]], line
    for shot in summary["shots"]:
        colors = color_histogram(Path(shot).read_bytes())
        assert len(colors) >= 50, f"{shot}: only {len(colors)} distinct colors"
