"""The player connection's JoinMatch is sent again after a retryable failure (a busy server's
DEADLINE_EXCEEDED, UNAVAILABLE), up to JOIN_ATTEMPTS times: a seat whose join answer was slow
used to give up at once and forfeit when its join window closed (seen in the league campaign
on a loaded machine). Joining again with the same seed is a no-op on the server
(tests/service: a second join changes nothing), so the retry is safe."""

from __future__ import annotations

import grpc
import pytest

from truco_client import connection
from truco_client.connection import Seat
from truco_client.errors import IllegalAction, TrucoApiError, Unavailable


def flaky_seat(failures: list[TrucoApiError]) -> tuple[Seat, list[bytes]]:
    seat = Seat.__new__(Seat)
    sent: list[bytes] = []

    async def once(client_seed: bytes) -> None:
        sent.append(client_seed)
        if failures:
            raise failures.pop(0)

    seat._join_once = once  # type: ignore[method-assign]
    return seat, sent


@pytest.fixture(autouse=True)
def quick_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "JOIN_FIRST_PAUSE", 0.001)
    monkeypatch.setattr(connection, "JOIN_MAX_PAUSE", 0.004)


async def test_a_join_that_times_out_is_sent_again_with_the_same_seed() -> None:
    seat, sent = flaky_seat(
        [
            Unavailable(grpc.StatusCode.DEADLINE_EXCEEDED, "slow"),
            Unavailable(grpc.StatusCode.UNAVAILABLE, "restarting"),
        ]
    )
    await seat.join(b"seed")
    assert sent == [b"seed"] * 3


async def test_a_refused_join_is_not_sent_again() -> None:
    seat, sent = flaky_seat([IllegalAction(grpc.StatusCode.FAILED_PRECONDITION, "the window closed")])
    with pytest.raises(IllegalAction):
        await seat.join(b"seed")
    assert sent == [b"seed"]


async def test_it_gives_up_after_join_attempts() -> None:
    failures: list[TrucoApiError] = [
        Unavailable(grpc.StatusCode.DEADLINE_EXCEEDED, "slow") for _ in range(connection.JOIN_ATTEMPTS + 2)
    ]
    seat, sent = flaky_seat(failures)
    with pytest.raises(Unavailable):
        await seat.join()
    assert len(sent) == connection.JOIN_ATTEMPTS
