"""``truco queue ...`` and the SDK's :class:`~truco_client.matchmaking.MatchmakingClient`
against an in-memory worker: a rated pool, two players queued (one waits for the match), the
ticket token reads and follows its own ticket, the matched seat tokens play, the ratings
moved; a cancelled ticket's wait ends without a match; mistakes are one line."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.cli.test_errors import Done, one_line_error, run_main
from truco_client import TrucoClient
from truco_client.matchmaking import MATCHED, MatchmakingClient
from truco_engine import Action
from truco_server.app.embedded import EmbeddedServer
from truco_server.core.config import parse_api_keys

pytestmark = pytest.mark.timeout(120)
KEY = "ops-secret"


@pytest.fixture
def server() -> Iterator[EmbeddedServer]:
    srv = EmbeddedServer(api_keys=parse_api_keys(f"ops={KEY}")).start()
    try:
        yield srv
    finally:
        srv.stop()


def queue(capsys: pytest.CaptureFixture[str], server: EmbeddedServer, *argv: str, key: str = KEY) -> Done:
    return run_main(capsys, "queue", *argv, "--server", server.address, "--api-key", key)


def test_queue_two_players_play_and_their_ratings_move(
    server: EmbeddedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    made = queue(capsys, server, "pool", "create", "quick", "--rated", "--window", "5,1,50")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["ratingFamily"] == "paulista-2p"
    listed = queue(capsys, server, "pool", "list")
    assert listed.stdout.startswith("quick: paulista, 2 players"), listed.stdout
    ana = queue(capsys, server, "join", "quick", "ana", "--name", "Ana")
    assert ana.returncode == 0, ana.stderr
    ana_ticket = json.loads(ana.stdout)
    ticket_id, token = ana_ticket["ticket"]["ticketId"], ana_ticket["ticketToken"]
    assert token.startswith("tk1.") and ana_ticket["ticket"]["state"] == "TICKET_STATE_WAITING"
    bia = queue(capsys, server, "join", "quick", "bia", "--name", "Bia", "--wait", "30")
    assert bia.returncode == 0, bia.stderr
    bia_ticket = json.loads(bia.stdout)
    assert bia_ticket["state"] == "TICKET_STATE_MATCHED"
    # the ticket's own token reads and follows that ticket
    waited = queue(capsys, server, "wait", "quick", ticket_id, "--within", "30", key=token)
    assert waited.returncode == 0, waited.stderr
    seen = json.loads(waited.stdout)
    assert seen["matchId"] == bia_ticket["matchId"] and seen["seats"][0]["playerId"] == "ana"
    status = queue(capsys, server, "status", "quick", ticket_id, key=token)
    assert json.loads(status.stdout)["state"] == "TICKET_STATE_MATCHED"
    # the seat credential plays: Ana resigns, both are rated
    with TrucoClient(server.address) as c:
        c.submit_action(seen["matchId"], Action("resign"), token=seen["seats"][0]["token"])
    with MatchmakingClient(server.address, api_key=KEY) as mm:
        assert mm.player_rating("bia", "paulista-2p").games == 1
    rating = queue(capsys, server, "rating", "ana", "paulista-2p")
    assert rating.stdout.startswith("ana paulista-2p: mu ") and rating.stdout.strip().endswith("games 1")


def test_a_cancelled_ticket_ends_its_wait_and_mistakes_are_one_line(
    server: EmbeddedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with MatchmakingClient(server.address, api_key=KEY) as mm:
        mm.create_pool("four", players=4)
        made = mm.create_ticket("four", [("caio", "Caio"), "duda"], request_id="caio-1")
        again = mm.create_ticket("four", [("caio", "Caio"), "duda"], request_id="caio-1")
        assert again.ticket.ticket_id == made.ticket.ticket_id  # a retry: the same ticket
        assert [p.player_id for p in made.ticket.players] == ["caio", "duda"]
    tid, token = made.ticket.ticket_id, made.ticket_token
    cancelled = queue(capsys, server, "cancel", "four", tid, key=token)
    assert json.loads(cancelled.stdout)["state"] == "TICKET_STATE_CANCELLED"
    with MatchmakingClient(server.address, api_key=token) as mine:
        assert mine.wait_matched("four", tid, timeout=10).state != MATCHED
    one_line_error(queue(capsys, server, "wait", "four", tid, key=token), "the ticket is cancelled")
    one_line_error(queue(capsys, server, "pool", "create", "x", "--window", "5,1"), "--window takes")
    one_line_error(queue(capsys, server, "join", "nope", "ana"), "truco queue join: NOT_FOUND")
    one_line_error(queue(capsys, server, "status", "four", tid, key="tk1.bad"), "truco queue status:")


def test_a_bot_fill_pool_seats_a_lone_player_against_the_servers_bot(
    server: EmbeddedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--bot-fill-after``: a lone player's ``join --wait`` ends matched (a real, short wait:
    the stream says when), the other seat a server bot of the pool's level."""
    made = queue(capsys, server, "pool", "create", "solo", "--bot-fill-after", "1", "--bot-fill-level", "1")
    assert made.returncode == 0, made.stderr
    pool = json.loads(made.stdout)
    assert (pool["botFillAfter"], pool["botFillLevel"], pool["botFillPartners"]) == ("1s", 1, False)
    joined = queue(capsys, server, "join", "solo", "ana", "--wait", "60")
    assert joined.returncode == 0, joined.stderr
    ticket = json.loads(joined.stdout)
    assert ticket["state"] == "TICKET_STATE_MATCHED" and [s["playerId"] for s in ticket["seats"]] == ["ana"]
    with TrucoClient(server.address, api_key=KEY) as c:
        match = c.get_match(ticket["matchId"]).match
    assert [(s.player_id, s.bot_level) for s in match.seats] == [("ana", 0), ("", 1)]
    one_line_error(queue(capsys, server, "pool", "create", "x", "--bot-fill-after", "0.5"), "bot_fill_after")
