"""The messages a move sends, written as bytes (``MatchApi.result_bytes`` / ``update_bytes``,
the player connection's ``result_frame`` / ``update_frame``), are the bytes the protobuf
runtime writes for the same message built field by field."""

from __future__ import annotations

import random

import pytest

import truco_engine as te
from truco_contract.pb import event_pb2, match_service_pb2, observation_pb2
from truco_match import table
from truco_match.events import MatchStatus, seat_to_dict
from truco_match.match import Match, Meta, Moment
from truco_server.api.connection import result_frame, update_frame
from truco_server.api.matches import MatchApi, events, observation
from truco_server.core import requests as T

pb = match_service_pb2


def _moves(preset: str, players: int, count: int, seed: int) -> list[tuple[Match, Moment, int]]:
    """``count`` moves of random play: each the match after it, its moment and its actor."""
    rules = te.get_rules(preset, players=players)
    meta = Meta(
        match_id="m1", owner="acme", created_at=0.0, rules=rules.to_dict(),
        seats=[seat_to_dict(s) for s in table.seats_of(rules)], seed=f"{seed:064x}", cred_key="11" * 32,
        deck_orders=[], first_dealer=None,
    )  # fmt: skip
    step = table.start(meta.setup(), meta.seat_infos())
    match = Match(meta, meta.setup(), step.state, step.life, len(step.entries), MatchStatus.ACTIVE, 0.0)
    rng = random.Random(seed)
    out = []
    while len(out) < count and match.active:
        actor = match.life.awaited
        action = rng.choice(match.view(actor, 0.0).observation.legal_actions)
        step = match.act(actor, action, 0.0)
        status = MatchStatus.FINISHED if te.is_over(step.state) else None
        after = match.after(step, match.version + len(step.entries), status, 0.0)
        out.append((after, Moment(after, step.entries, match.version + 1, [0.0] * len(step.entries)), actor))
        match = after
    return out


def _built(version: int, evs: list[bytes], obs: bytes) -> dict[str, object]:
    return {
        "version": version,
        "events": [event_pb2.Event.FromString(e) for e in evs],
        "observation": observation_pb2.Observation.FromString(obs),
    }


@pytest.mark.parametrize(("preset", "players"), [("paulista", 2), ("argentine", 4), ("uruguayan", 2)])
def test_a_result_and_an_update_are_the_runtimes_bytes(preset: str, players: int) -> None:
    moves = _moves(preset, players, 60, seed=7)
    assert len(moves) >= 20
    for after, moment, actor in moves:
        view = after.view(actor, 0.0)
        result = T.SubmitActionResponse(
            after.match_id, actor, after.version, moment.events_for(actor), view, after.rules,
            match=after, moment=moment,
        )  # fmt: skip
        fields = _built(
            after.version,
            events(moment.events_for(actor), moment),
            observation(view, after.rules, actor, after),
        )
        expected = pb.SubmitActionResponse(**fields)  # type: ignore[arg-type]
        assert MatchApi.result_bytes(result) == expected.SerializeToString()
        framed = pb.ConnectResponse(
            result=pb.ConnectActionResult(subscription_id=3, action_id=2**40, response=expected)
        )
        assert result_frame(3, 2**40, MatchApi.result_bytes(result)) == framed.SerializeToString()
        for viewer in range(players):
            for snapshot in (False, True):
                seen = after.view(viewer, 0.0)
                update = T.StreamUpdate(
                    after.version, () if snapshot else moment.events_for(viewer), seen, after.rules,
                    viewer=viewer, match=after, moment=moment, snapshot=snapshot,
                )  # fmt: skip
                fields = _built(
                    after.version,
                    [] if snapshot else events(moment.events_for(viewer), moment),
                    observation(seen, after.rules, viewer, after),
                )
                message = pb.StreamObservationsResponse(
                    update=pb.ObservationUpdate(snapshot=snapshot, **fields)  # type: ignore[arg-type]
                )
                assert MatchApi.update_bytes(update) == message.SerializeToString()
                framed_update = pb.ConnectResponse(
                    update=pb.ConnectUpdate(subscription_id=-1, message=message)
                )
                assert update_frame(-1, MatchApi.update_bytes(update)) == framed_update.SerializeToString()
                parsed = pb.StreamObservationsResponse()
                MatchApi.fill_update(parsed, update)
                assert parsed == message


def test_a_heartbeat_is_a_stream_message_too() -> None:
    after, _moment, _actor = _moves("paulista", 2, 1, seed=1)[0]
    beat = T.StreamUpdate(after.version, (), None, after.rules)
    message = pb.StreamObservationsResponse.FromString(MatchApi.update_bytes(beat))
    assert message.WhichOneof("message") == "heartbeat" and message.heartbeat.version == after.version
    assert message.heartbeat.server_time.seconds > 0
