"""Fixtures of the record tests: a real worker on the session's real ``redis-server`` whose
event log keeps only 16 events, and one whole match played on it by four bots that join with
their own client seeds (the creator gives one too), exported as a record file."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from truco_client import Action, Bot, CreatedMatch, Observation, TrucoClient, write_record
from truco_client.runner import run_bot
from truco_match.records import MatchRecord
from truco_server.app.embedded import EmbeddedServer
from truco_server.core.config import ApiKey

API_KEY = "ops-secret"
LOG_RETENTION = 16
"""``event_log_max_len`` of the worker: far below a whole match's events."""


class SteadyBot(Bot):
    """Random legal actions that never raise the stake, fold or decline unless nothing else is
    legal: every hand is worth its least, so a match to 12 lasts many hands whatever the deals.
    Random raises ended a match in 1 to 4 hands, too short for these tests, in ten tries out of
    ten on a loaded machine (with paulista's truco out of turn, a seat that is not awaited has
    the call as its only legal action: the match is created without it, ``OVERRIDES``)."""

    SHORTENING = frozenset({"fold", "truco", "decline"})

    def choose(self, observation: Observation) -> Action:
        legal = [a for a in observation.legal_actions if a.kind not in self.SHORTENING]
        return self.rng.choice(legal or list(observation.legal_actions))


OVERRIDES = {"truco_out_of_turn": False}
"""Paulista's one change for these matches: a truco only on the caller's turn."""


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[EmbeddedServer]:
    """A worker (gRPC on a free loopback port) with an operator key and a 16-event log."""
    srv = EmbeddedServer(
        redis_url=redis_url,
        event_log_max_len=LOG_RETENTION,
        api_keys=(ApiKey(name="ops", secret=API_KEY),),
        heartbeat_interval_seconds=1.0,
    ).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def client(server: EmbeddedServer) -> Iterator[TrucoClient]:
    with TrucoClient(server.address, api_key=API_KEY, timeout=10.0) as c:
        yield c


@dataclass(frozen=True)
class Played:
    """A finished match and its exported record."""

    created: CreatedMatch
    record: MatchRecord
    """As seat 0 got it after the end."""
    path: Path
    """The export file."""
    seat_seeds: tuple[bytes | None, ...]
    """What each seat's runner joined with (``None``: 32 random bytes of its own)."""


def play_to_end(client: TrucoClient, m: CreatedMatch, seeds: tuple[bytes | None, ...], seed: int) -> None:
    """One bot runner per seat (each joins the match itself), until the match ends."""
    errors: list[BaseException] = []

    def run(seat: int) -> None:
        try:
            run_bot(
                SteadyBot(seed=seed * 10 + seat),
                None,
                m.match_id,
                m.seat_tokens[seat],
                client=client,
                client_seed=seeds[seat],
                log=lambda _msg: None,
            )
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,), daemon=True) for s in range(len(m.seat_tokens))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a bot did not finish"


@pytest.fixture(scope="module")
def played(server: EmbeddedServer, tmp_path_factory: pytest.TempPathFactory) -> Played:
    """Paulista for four (truco on one's turn only) with a join window: three seats join with
    a client seed (two chosen here, one random), one without; the creator gives one. The first
    deal sequence whose match lasts five hands or more, and more than four times the log's
    retention in versions (what the tests read beyond the log), is kept."""
    seeds: tuple[bytes | None, ...] = (b"seat zero's seed", b"seat one's seed", None, b"")
    with TrucoClient(server.address, api_key=API_KEY, timeout=10.0) as client:
        ended: list[tuple[int, object, object]] = []
        for attempt in range(10):
            m = client.create_match(
                "paulista", players=4, overrides=OVERRIDES, join_window=60, client_seed=b"the creator's seed"
            )
            play_to_end(client, m, seeds, attempt)
            record = client.get_match_record(m.match_id, token=m.seat_tokens[0])
            if len(record.hands) >= 5 and record.match.version > 4 * LOG_RETENTION:
                break
            ended.append((len(record.hands), record.match.version, record.match.state))
        else:
            raise AssertionError(f"no match of 5 hands and 65 versions: (hands, version, state) {ended}")
    path = tmp_path_factory.mktemp("record") / "match.json"
    write_record(record, path)
    return Played(m, record, path, seeds)
