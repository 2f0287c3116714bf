"""A match's record while it is on, from a real worker: a seat's record shows its own
face-down cards and hides the other seats'; a spectator's (and the owner's) stops at the
spectator delay; neither has a seed or a deck, so ``truco verify`` refuses it until the end,
and then passes on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truco_cli.main import main
from truco_client import Action, CreatedMatch, TrucoClient, write_record
from truco_contract import record_file
from truco_match.events import MatchStatus

pytestmark = pytest.mark.timeout(120)

DELAY = 3


def act(client: TrucoClient, m: CreatedMatch, choose_face_down: bool) -> tuple[int, Action]:
    """The awaited seat plays: a face-down card when allowed (and wanted), else a face-up
    card, else its first legal action (accepting the hand of eleven)."""
    obs = client.get_match(m.match_id, token=m.seat_tokens[0]).observation
    seat = obs.whose_turn
    assert seat is not None
    mine = client.get_match(m.match_id, token=m.seat_tokens[seat]).observation
    plays = [a for a in mine.legal_actions if a.kind == "play"]
    down = [a for a in plays if a.face_down]
    up = [a for a in plays if not a.face_down]
    action = (down if choose_face_down and down else up or list(mine.legal_actions))[0]
    client.submit_action(m.match_id, action, token=m.seat_tokens[seat], expected_version=mine.version)
    return seat, action


def test_records_during_the_match_show_only_what_the_caller_may_see(
    client: TrucoClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    m = client.create_match("paulista", players=2, spectator_delay=DELAY)
    assert m.match.lifecycle.spectator_delay == DELAY
    face_down = {0: 0, 1: 0}
    actions = 0
    while min(face_down.values()) < 2 or actions < 12:
        seat, action = act(client, m, choose_face_down=True)
        actions += 1
        face_down[seat] += action.face_down
        assert actions < 200, "no face-down plays"
    assert client.get_match(m.match_id).match.state is MatchStatus.ACTIVE

    by = {
        0: client.get_match_record(m.match_id, token=m.seat_tokens[0]),
        1: client.get_match_record(m.match_id, token=m.seat_tokens[1]),
        None: client.get_match_record(m.match_id, token=m.spectator_token),
    }
    owner = client.get_match_record(m.match_id)  # the operator's key: the spectator's view
    assert record_file.record_to_json(owner) == record_file.record_to_json(by[None])
    for rec in by.values():
        assert rec.reveal is None and rec.match.state is MatchStatus.ACTIVE

    # Seats see the whole match so far; the spectator DELAY actions late.
    seat_steps = by[0].steps
    assert sum(s.action is not None for s in seat_steps) == actions
    assert by[1].steps[-1].version == seat_steps[-1].version == client.get_match(m.match_id).match.version
    spectator_actions = [s for s in by[None].steps if s.action is not None]
    assert len(spectator_actions) == actions - DELAY
    seen = client.get_match(m.match_id, token=m.spectator_token).observation
    assert by[None].steps[-1].version == seen.version < seat_steps[-1].version
    assert by[None].hands == tuple(h for h in by[0].hands if h.version <= seen.version)

    # Finish the match: the full record tells what each face-down card was.
    while not client.get_match(m.match_id).observation.is_over:
        act(client, m, choose_face_down=False)
    full = client.get_match_record(m.match_id, token=m.seat_tokens[0])
    assert full.reveal is not None
    steps = {s.version: s for s in full.steps}
    hidden = dict.fromkeys(by, 0)
    for viewer, rec in by.items():
        for st in rec.steps:
            truth = steps[st.version]
            a, real = st.action, truth.action
            if real is None or not real.face_down:
                assert st == truth
                continue
            assert a is not None
            if viewer == truth.seat:
                assert a == real  # one's own face-down card
            else:
                hidden[viewer] += 1
                assert (a.kind, a.card, a.face_down) == ("play", None, True)
                assert (st.seat, st.time, st.cause) == (truth.seat, truth.time, truth.cause)
        # ... and nowhere in the exported file: the face-down steps carry no card code
        data = json.loads(record_file.record_to_json(rec))
        for st in data["steps"]:
            play = st.get("action", {}).get("playCard")
            if play and play.get("faceDown") and st["seat"] != viewer:
                assert play.get("card", "") == ""
    # each seat's record hides the other's (two or more), the spectator's some of both
    assert hidden[0] >= 2 and hidden[1] >= 2 and hidden[None] >= 1, hidden

    # truco verify refuses a record fetched during the match, in one line; passes at the end.
    during = tmp_path / "during.json"
    write_record(by[0], during)
    assert main(["verify", str(during)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("truco verify: FAILED record format: the match is still active")
    assert "\n" not in err
    after = tmp_path / "after.json"
    write_record(client.get_match_record(m.match_id, token=m.spectator_token), after)
    assert main(["verify", "-q", str(after)]) == 0
    assert record_file.record_to_json(
        record_file.record_from_json(after.read_text())
    ) == record_file.record_to_json(full)


def test_a_discard_is_hidden_from_the_other_seats_until_the_end(client: TrucoClient) -> None:
    """Carancho: the mano discards one of four cards; only he sees which, until the end."""
    m = client.create_match("carancho")
    obs = client.get_match(m.match_id, token=m.seat_tokens[0]).observation
    seat = obs.whose_turn
    assert seat is not None
    mine = client.get_match(m.match_id, token=m.seat_tokens[seat]).observation
    discard = mine.legal("discard")[0]
    client.submit_action(m.match_id, discard, token=m.seat_tokens[seat])
    for viewer in range(3):
        step = client.get_match_record(m.match_id, token=m.seat_tokens[viewer]).steps[-1]
        assert step.seat == seat and step.action is not None and step.action.kind == "discard"
        assert step.action.card == (discard.card if viewer == seat else None)
    spectator = client.get_match_record(m.match_id, token=m.spectator_token).steps[-1]
    assert spectator.action is not None and spectator.action.card is None
    client.cancel_match(m.match_id, "seen enough")
    after = client.get_match_record(m.match_id, token=m.seat_tokens[(seat + 1) % 3])
    shown = next(s for s in after.steps if s.action is not None)
    assert shown.action == discard
