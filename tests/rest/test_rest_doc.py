"""docs/rest.md says what the REST face is: its route table lists exactly the routes of the
worker's ``/openapi.json`` (method, path and RPC), and its casing rule holds for a real answer
(message fields in lowerCamelCase, the keys of Structs and maps as they were given).

The worker is built in-process (``rest_worker``: every service the worker serves, as it wires
them) and asked for its document over HTTP, so a route added to any service and not to the
doc, or a row left in the doc for a route that went away, fails here."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.rest.conftest import ACME_KEY, REPO, RestWorker
from tests.rest.helpers import create_match

pytestmark = pytest.mark.timeout(60)

DOC = REPO / "docs" / "rest.md"
MARKER = "<!-- the route table: tests/rest/test_rest_doc.py compares it with /openapi.json -->"
ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) (/[^`]*)` \| (\w+) \|")


def documented_routes() -> dict[tuple[str, str], str]:
    """(method, path) -> RPC, from the table right after the marker."""
    lines = DOC.read_text().splitlines()
    assert lines.count(MARKER) == 1, f"{DOC.name}: the marker must appear once"
    table = []
    for line in lines[lines.index(MARKER) + 1 :]:
        if not line.startswith("|"):
            break
        table.append(line)
    rows = [ROW.match(line) for line in table[2:]]  # after the header and its rule
    assert all(rows), [line for line, row in zip(table[2:], rows, strict=True) if row is None]
    routes = {(r.group(1), r.group(2)): r.group(3) for r in rows if r is not None}
    assert len(routes) == len(rows), "a route is listed twice"
    return routes


async def served_routes(rest_worker: RestWorker) -> dict[tuple[str, str], str]:
    async with rest_worker.http.get(f"{rest_worker.base}/openapi.json") as resp:
        assert resp.status == 200
        doc = await resp.json()
    return {
        (verb.upper(), path): op["operationId"]
        for path, item in doc["paths"].items()
        for verb, op in item.items()
    }


async def test_the_route_table_lists_every_route_of_openapi_and_no_other(rest_worker: RestWorker) -> None:
    served = await served_routes(rest_worker)
    documented = documented_routes()
    assert len(served) >= 30  # MatchService, OperatorService and LeagueService
    missing = sorted(set(served) - set(documented))
    extra = sorted(set(documented) - set(served))
    assert not missing, f"routes of /openapi.json missing from {DOC.name}: {missing}"
    assert not extra, f"rows of {DOC.name} that /openapi.json does not have: {extra}"
    wrong = {route: (documented[route], rpc) for route, rpc in served.items() if documented[route] != rpc}
    assert not wrong, f"(documented RPC, served RPC): {wrong}"


def _keys(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every (path, key) of a JSON value, the Structs' and maps' own keys left out."""
    out: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            out.append((path, key))
            if key not in ("effectiveRules", "overrides", "labels", "revealed"):
                out.extend(_keys(inner, f"{path}.{key}"))
    elif isinstance(value, list):
        for inner in value:
            out.extend(_keys(inner, path))
    return out


async def test_the_casing_rule_of_the_doc_holds(rest_worker: RestWorker) -> None:
    created = await create_match(
        rest_worker.http,
        rest_worker.base,
        ACME_KEY,
        rules={"preset": "argentine", "overrides": {"target_points": 30}},
        settings={"labels": {"tournament_round": "r1"}},
    )
    snake = [f"{p}.{k}" for p, k in _keys(created) if "_" in k]
    assert not snake, f"message fields not in lowerCamelCase: {snake}"
    match = created["match"]
    assert "effectiveRules" in match and "effective_rules" not in match
    rules = match["effectiveRules"]
    assert (
        rules["target_points"] == 30 and "truco_ladder" in rules
    )  # a Struct's keys: as the engine names them
    assert "targetPoints" not in rules
    assert match["settings"]["labels"] == {"tournament_round": "r1"}  # a map's keys: as given
