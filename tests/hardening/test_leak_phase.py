"""The campaign's leak phase plays every match to its end as a well-behaved client does: a
stream whose connection the worker's maximum age cut is reopened from the last version it
showed, and an action refused because the match moved past the observation it was chosen from
is followed by a fresh read of the match, not by giving the match up. (The long leak phase
once gave up 5 matches of 2,500 on FAILED_PRECONDITION: one of their streams had been cut,
and the player went on choosing from that stream's last observation.)"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import truco_server.transports.grpc.server as grpc_server
from tests.e2e.conftest import WorkerFactory
from truco_contract.pb import match_service_pb2_grpc
from truco_tools.campaign.leaks import cases, run_leaks

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]
MATCHES = 12


def _short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker closes an aged connection 0.2 s after its GOAWAY instead of 10 s: streams
    open then are cut (UNAVAILABLE) while their matches are played."""
    real = grpc_server.server_options

    def options(settings: Any) -> list[tuple[str, int]]:
        return [(k, 200 if k == "grpc.max_connection_age_grace_ms" else v) for k, v in real(settings)]

    monkeypatch.setattr(grpc_server, "server_options", options)


async def test_streams_cut_by_the_connection_age_are_reopened_and_every_match_ends(
    make_worker: WorkerFactory, clean_redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _short_grace(monkeypatch)
    async with make_worker(max_connection_age_seconds=0.5) as w:
        result = await run_leaks(clean_redis_url, w.grpc_address, MATCHES)
    assert not result.errors, result.errors[:3]
    assert not result.leaks, result.leaks[:3]
    assert result.matches == MATCHES
    assert result.reopened["UNAVAILABLE"] > 0  # the connections were cut while matches went on


async def test_an_action_refused_as_stale_is_followed_by_a_fresh_read(
    make_worker: WorkerFactory, clean_redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = match_service_pb2_grpc.MatchServiceStub
    sent: Counter[str] = Counter()

    class Stale(real):  # type: ignore[misc, valid-type]
        """Every third action of each match goes with the version before the one the player
        saw. (Counted per match: with one count for all matches, three matches left playing in
        lockstep give one of them every third action of the run, all stale.)"""

        def __init__(self, channel: Any) -> None:
            super().__init__(channel)
            submit = self.SubmitAction

            def stale(req: Any, **kw: Any) -> Any:
                sent[req.match_id] += 1
                if sent[req.match_id] % 3 == 0 and req.expected_version > 0:
                    req.expected_version -= 1
                return submit(req, **kw)

            self.SubmitAction = stale

    monkeypatch.setattr(match_service_pb2_grpc, "MatchServiceStub", Stale)
    async with make_worker() as w:
        result = await run_leaks(clean_redis_url, w.grpc_address, len(cases()[:MATCHES]))
    assert not result.errors, result.errors[:3]
    assert result.matches == MATCHES
    assert result.refused["ABORTED"] > 0
    assert result.actions > 0
