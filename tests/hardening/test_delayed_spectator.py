"""Finding 7: a spectator kept some actions behind learns nothing of the live match from
GetMatch or GetMatchRecord -- the match's version, its last update time and what was public
are those of the moment it sees, not the live ones. A seat still sees the match as it is."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tests.e2e.client import act, bearer, create, get
from truco_contract.pb import match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_contract.pb import match_service_pb2_grpc as MSG

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]
DELAY = 3


async def test_a_delayed_spectator_sees_the_match_as_it_was(worker: Any) -> None:
    async with grpc.aio.insecure_channel(worker.grpc_address) as ch:
        stub = MSG.MatchServiceStub(ch)
        settings = match_pb2.MatchSettings(spectator_delay_actions=DELAY)
        m = await create(stub, "paulista", 2, settings=settings)
        seen_before = await get(stub, m.match_id, m.spectator)
        for _ in range(DELAY + 3):
            view = await get(stub, m.match_id, m.tokens[0])
            seat = view.observation.awaited[0]
            mine = await get(stub, m.match_id, m.tokens[seat])
            plays = [a for a in mine.observation.legal_actions if a.WhichOneof("action") == "play_card"]
            await act(stub, m.match_id, m.tokens[seat], plays[0])
        live = await get(stub, m.match_id, m.tokens[0])  # a seat sees the live match
        spectator = await get(stub, m.match_id, m.spectator)
        behind = spectator.observation.version
        assert behind < live.match.version
        assert spectator.match.version == behind  # was the live version
        record = await stub.GetMatchRecord(
            MS.GetMatchRecordRequest(match_id=m.match_id), metadata=bearer(m.spectator)
        )
        assert record.record.match.version == behind  # was the live version
        last_seen = record.record.steps[-1]
        assert last_seen.version == behind
        # the time the spectator's moment was reached, not the live match's last update
        assert spectator.match.update_time == last_seen.time == record.record.match.update_time
        assert seen_before.match.update_time.ToNanoseconds() < last_seen.time.ToNanoseconds()
        assert live.match.update_time.ToNanoseconds() >= last_seen.time.ToNanoseconds()
