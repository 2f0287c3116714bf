"""The SDK's credential rule is the same on every call, and its enums round-trip."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from truco_client import AsyncTrucoClient, TrucoClient
from truco_match.events import MatchStatus
from truco_server.app.embedded import EmbeddedServer
from truco_server.app.wiring import MATCH_SERVICE as SERVICE
from truco_server.transports.rest.openapi import build_openapi
from truco_server.transports.rest.routes import SSE_ERROR_EVENT, routes_of

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def keyed_server() -> Iterator[EmbeddedServer]:
    """An in-memory worker with one operator key (so a call without a credential is refused)."""
    from truco_server.core.config import parse_api_keys

    srv = EmbeddedServer(api_keys=parse_api_keys("acme=acme-secret")).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_stream_falls_back_to_the_api_key_like_get_match(keyed_server: EmbeddedServer) -> None:
    with TrucoClient(keyed_server.address, api_key="acme-secret") as ops:
        m = ops.create_match("paulista", players=2)
        view = ops.get_match(m.match_id)  # no token: the client's API key
        first = next(iter(ops.stream(m.match_id)))  # the same rule: the owner's spectator view
        assert first.observation.seat is None
        assert first.observation.version >= 1
        assert view.match.match_id == m.match_id


async def test_async_stream_falls_back_to_the_api_key(keyed_server: EmbeddedServer) -> None:
    async with AsyncTrucoClient(keyed_server.address, api_key="acme-secret") as ops:
        m = await ops.create_match("paulista", players=2)
        async for upd in ops.stream(m.match_id):
            assert upd.observation.seat is None
            break
        await ops.get_match(m.match_id)


@pytest.mark.parametrize("target", ["cancelled", "active"])
def test_iter_matches_takes_the_state_match_state_reports(keyed_server: EmbeddedServer, target: str) -> None:
    with TrucoClient(keyed_server.address, api_key="acme-secret") as ops:
        m = ops.create_match("paulista", players=2)
        if target == "cancelled":
            ops.cancel_match(m.match_id, "test")
        state = ops.get_match(m.match_id).match.state
        assert isinstance(state, MatchStatus) and state == target
        # The value read back is accepted as the filter, as the enum or as its text.
        assert m.match_id in {x.match_id for x in ops.iter_matches(state=state)}
        assert m.match_id in {x.match_id for x in ops.iter_matches(state=str(state))}
        other = "active" if target == "cancelled" else "cancelled"
        assert m.match_id not in {x.match_id for x in ops.iter_matches(state=other)}


def test_cancelling_a_cancelled_match_returns_it(keyed_server: EmbeddedServer) -> None:
    with TrucoClient(keyed_server.address, api_key="acme-secret") as ops:
        m = ops.create_match("paulista", players=2)
        first = ops.cancel_match(m.match_id, "once")
        again = ops.cancel_match(m.match_id, "twice")
        assert first.state == again.state == MatchStatus.CANCELLED


def test_openapi_names_the_sse_error_event_the_server_sends() -> None:
    text = str(build_openapi(routes_of(SERVICE), title="t", version="v"))
    assert f"event: {SSE_ERROR_EVENT}" in text
    assert "event: error`" not in text
