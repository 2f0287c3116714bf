"""The reference page (/play) in Debian's headless chromium, driven by playwright-core.

A person's view: the page creates a match, opens the SSE stream, the other seats are the
page's in-page random bots, and the test clicks seat 0's legal action buttons until the
match is over; then the screenshot must show a rendered page (many distinct colors), and the
server must agree the match finished. Missing chromium or node is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.rest.conftest import ACME_KEY, Served
from tests.rest.png import color_histogram

pytestmark = pytest.mark.timeout(300)

BROWSER_DIR = Path(__file__).resolve().parent / "browser"
CHROMIUM = os.environ.get("TRUCO_TEST_CHROMIUM", "/usr/bin/chromium")


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


def test_reference_page_plays_a_full_match_in_chromium(served: Served, tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does)",
            pytrace=False,
        )
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed", pytrace=False)
    _playwright_core()
    shot = tmp_path / "play.png"
    env = {
        **os.environ,
        "BASE": served.base,
        "SCREENSHOT": str(shot),
        "PRESET": "paulista",
        "CHROMIUM": CHROMIUM,
        "BUDGET_MS": "150000",
        "API_KEY": ACME_KEY,
    }
    done = subprocess.run(
        [node, "play_match.mjs"], cwd=BROWSER_DIR, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["problems"] == [], summary
    assert summary["clicks"] >= 1, summary
    assert summary["status"].startswith("Match over"), summary

    # The server agrees: the match the page created is finished.
    req = urllib.request.Request(
        f"{served.base}/v1/matches/{summary['matchId']}", headers={"Authorization": f"Bearer {ACME_KEY}"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        match = json.load(resp)["match"]
    assert match["state"] == "MATCH_STATE_FINISHED"

    # The screenshot shows a rendered page, not a blank one.
    colors = color_histogram(shot.read_bytes())
    total = sum(colors.values())
    assert len(colors) >= 200, f"only {len(colors)} distinct colors"
    assert colors.most_common(1)[0][1] < 0.8 * total, "one color covers most of the page"
