"""A refused call's log line says who was refused and why: the ``rpc finished`` (gRPC) and
``http request`` (REST) lines carry the typed ``reason`` and the ``operator`` the call acted
for (the key's name, or the owner of the match a seat credential belongs to)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import grpc
import pytest

from tests.e2e.client import MS, Stub, bearer, create, rich
from truco_contract.pb import action_pb2, match_pb2

SECRET = "acme-secret-1"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """``truco serve`` (in-memory store, the key ``acme``) as a child process: its stdout is
    the log a collector would read (the process's own logging configuration, as deployed)."""
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    env["TRUCO_API_KEYS"] = f"acme={SECRET}"
    cmd = [
        sys.executable, "-m", "truco_cli.main", "serve", "--grpc-port", "0", "--http-port", "0",
        "--metrics-port", "0", "--host", "127.0.0.1", "--log-level", "info",
    ]  # fmt: skip
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e, env=env)
    try:
        deadline = time.monotonic() + 60
        while "store: " not in err.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("truco serve did not start: " + err.read_text(errors="replace"))
            time.sleep(0.05)
        banner = err.read_text()
        grpc_address = banner.split("gRPC listening on ", 1)[1].split()[0]
        rest = banner.split("REST/JSON listening on ", 1)[1].split()[0]
        yield grpc_address, rest, out
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _lines(out: Path, event: str) -> list[dict[str, object]]:
    return [line for line in map(json.loads, out.read_text().splitlines()) if line["event"] == event]


async def test_refusals_are_logged_with_reason_and_operator_over_grpc_and_rest(
    served: tuple[str, str, Path],
) -> None:
    grpc_address, rest, out = served
    async with grpc.aio.insecure_channel(grpc_address) as channel:
        stub = Stub(channel)
        match = await create(stub, api_key=SECRET)
        # a seat credential: the operator is the match's owner
        stale = MS.SubmitActionRequest(
            match_id=match.match_id, action=action_pb2.Action(fold=action_pb2.Fold()), expected_version=1
        )
        with pytest.raises(grpc.aio.AioRpcError) as grpc_refusal:
            await stub.SubmitAction(stale, metadata=bearer(match.tokens[0]), timeout=10)
        # an operator key: the operator is the key's name
        bad_rules = MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="no-such-preset"))
        with pytest.raises(grpc.aio.AioRpcError) as rules_refusal:
            await stub.CreateMatch(bad_rules, metadata=bearer(SECRET), timeout=10)
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{rest}/v1/matches/{match.match_id}/actions",
            json={"action": {"fold": {}}, "expectedVersion": 1},
            headers={"Authorization": f"Bearer {match.tokens[0]}"},
        ) as resp,
    ):
        rest_reason = (await resp.json())["details"][0]["reason"]
        assert resp.status == 409

    deadline = time.monotonic() + 10  # the lines are written as the calls end
    while len(_lines(out, "http request")) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = _lines(out, "rpc finished")
    submit = [line for line in finished if line["grpc_method"] == "truco.v1.MatchService/SubmitAction"]
    assert len(submit) == 1
    assert submit[0]["reason"] == rich(grpc_refusal.value).reason == "STALE_VERSION"
    assert submit[0]["operator"] == "acme"
    assert submit[0]["grpc_code"] == "ABORTED"
    created = [line for line in finished if line["grpc_method"] == "truco.v1.MatchService/CreateMatch"]
    refused = [line for line in created if line.get("reason")]
    assert [(line["reason"], line["operator"]) for line in refused] == [
        (rich(rules_refusal.value).reason, "acme")
    ]
    http = [line for line in _lines(out, "http request") if line["status"] == 409]
    assert [(line["reason"], line["operator"]) for line in http] == [(rest_reason, "acme")]
    assert rest_reason == "STALE_VERSION"
    # credentials never reach a line
    text = out.read_text()
    assert SECRET not in text and match.tokens[0] not in text
