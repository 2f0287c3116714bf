"""The stored forms: the state blob (plain JSON) leaves the rule set to the match's metadata, the metadata
and the events are deflated with preset dictionaries that never change, and what is written
reads back the same."""

from __future__ import annotations

import hashlib
import random
import zlib

import orjson
import pytest

import truco_engine as te
from tests.service.conftest import services
from truco_engine.cards import DECKS
from truco_match import fairness, table
from truco_match.events import MatchRevealed, RevealedDeal, entry_to_dict, payload_to_dict
from truco_match.lifecycle import Life, Lifecycle
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.services import compact
from truco_server.services.stored import canonical, entry_bytes, entry_of, meta_of, state_bytes, state_of


def test_the_blob_leaves_the_rules_to_the_metadata() -> None:
    rules = te.get_rules("argentine", players=4)
    state = te.new_match(rules)
    te.deal(state, list(rules.deck_cards))
    life = Life(joined=[True] * 4, started=True)
    blob = state_bytes(state, life)
    assert "rules" not in orjson.loads(blob)["s"]
    back, back_life = state_of(blob, rules)
    assert back == state and back.rules is rules and back_life == life
    with_rules = orjson.dumps({"s": state.to_dict(), "l": life.to_dict()})
    assert len(blob) < len(with_rules)


def test_a_state_stored_deflated_reads_back_the_same() -> None:
    """Stores written before the state was kept as plain JSON hold its zlib form."""
    rules = te.get_rules("paulista", players=2)
    state = te.new_match(rules)
    te.deal(state, list(rules.deck_cards))
    life = Life(joined=[True] * 2, started=True)
    old = zlib.compress(orjson.dumps({"s": state.to_dict(rules=False), "l": life.to_dict()}), 1)
    back, back_life = state_of(old, rules)
    assert back == state and back_life == life
    assert state_of(state_bytes(state, life), rules)[0] == back


async def test_the_metadata_is_a_fifth_of_its_zlib_form() -> None:
    svc = services()
    for preset in ("paulista-2p", "argentine", "mineiro", "uruguayan-4p", "valencian", "gaucho"):
        created = await svc.steps.create_match(Operator("acme"), T.CreateMatchRequest(preset=preset))
        snap = await svc.store.matches.load(created.match.match_id)
        assert snap is not None
        meta = meta_of(snap.meta)
        plain = zlib.compress(canonical(meta.to_dict()), 9)
        assert snap.meta[:1] == compact.META_TAG, preset
        assert len(snap.meta) < 200 and len(plain) > 600, (preset, len(snap.meta), len(plain))
        assert meta.match_id == created.match.match_id and meta.owner == "acme"
    await svc.store.close()


def test_the_dictionaries_never_change() -> None:
    """They are part of the stored format: a new one gets a new tag byte (compact's docstring)."""
    assert (
        hashlib.sha256(compact.META_DICT_V1).hexdigest()
        == "2ee9d20a074e7c0b11f42f06c10a31dd4907b6d8631fbb5adeaffc4439dcc3b8"
    )
    assert (
        hashlib.sha256(compact.META_DICT_V2).hexdigest()
        == "1eafd7d26eb2ab7c3ac5f52c701b4017dd69f175caa5d25649b6f3ff841049ce"
    )
    assert (
        hashlib.sha256(compact.EVENT_DICT_V2).hexdigest()
        == "0537c9ef448ae7b967f1428c3c199b15e39c089df4ffe4b2d45938fd9cf420a5"
    )
    event = b'{"card":"3e","face_down":false,"kind":"card_played","seat":0,"trick_index":0}'
    packed = compact.pack_event(compact.deflate_event(event), 336696)
    assert compact.unpack_event(packed) == (event, 336696)
    assert len(packed) < len(event) // 4


@pytest.mark.parametrize("ms", [0, 1, 127, 128, 16_383, 16_384, 86_400_000, 10**12, -1, -86_400_000])
def test_an_event_keeps_its_commit_time_beside_its_deflated_json(ms: int) -> None:
    """The time is outside the deflated bytes, so those of a repeated event are the same at
    any time; a negative one (a worker whose clock is behind the creator's) reads back too."""
    entry = te.Event(te.TrickEnded(trick_index=1, winner_seat=0, winner_team=0, tied=False))
    packed = entry_bytes(entry, ms)
    assert packed[:1] == compact.EVENT_TAG
    assert packed.endswith(entry_bytes(entry, 5)[2:])  # the tag and a one-byte time
    assert entry_of(packed) == (entry, ms)


def test_events_stored_in_the_forms_written_before_still_read() -> None:
    """Plain JSON with the time inside it, and ``\\x02``: the same deflate of that JSON."""
    raw = b'{"kind":"folded","seat":1,"t":818845,"team":1}'
    co = zlib.compressobj(9, zlib.DEFLATED, -12, 4, zlib.Z_DEFAULT_STRATEGY, compact.EVENT_DICT_V2)
    for blob in (raw, b"\x02" + co.compress(raw) + co.flush()):
        assert compact.unpack_event(blob) == (raw, None)
        assert entry_of(blob) == (te.Event(te.Folded(seat=1, team=1)), 818845)


@pytest.mark.parametrize("preset", ["paulista", "argentine", "uruguayo", "truc"])
def test_every_event_of_a_random_match_is_stored_as_written_afresh_and_reads_back(preset: str) -> None:
    """The deflated bytes kept per distinct event are those a fresh deflate writes."""
    rules = te.get_rules(preset)
    rng = random.Random(preset)
    setup = table.Setup(rules=rules, seed=rng.randbytes(32), lifecycle=Lifecycle())
    step = table.start(setup, table.seats_of(rules, []), b"entropy", 0)
    seen = 0
    for _ in range(2):  # the second match repeats many of the first's events: kept bytes
        while True:
            for entry in step.entries:
                ms = rng.randrange(0, 10**7)
                packed = entry_bytes(entry, ms)
                fresh = compact.pack_event(compact.deflate_event(canonical(entry_to_dict(entry))), ms)
                assert packed == fresh
                assert entry_of(packed) == (entry, ms)
                seen += 1
            if te.is_over(step.state):
                break
            seat = te.to_act(step.state)[0]
            action = rng.choice(te.legal_actions(step.state, seat))
            step = table.act(setup, step.state, step.life, seat, action, 0)
        step = table.start(setup, table.seats_of(rules, []), b"again", 0)
    assert seen > 100


def test_a_match_revealed_is_deflated_and_reads_back_the_same() -> None:
    """Every deal of a long match: more than ``LARGE_EVENT`` bytes of JSON, deflated at the
    large events' level, and decoded by the same reader as every other event."""
    setup_seed = bytes(range(32))
    cards = tuple(DECKS["spanish40"])
    deals = tuple(
        RevealedDeal(
            cards=tuple(fairness.deck_for_hand(setup_seed, k, cards)),
            salt=fairness.salt_for_hand(setup_seed, k),
            commitment="c" * 64,
        )
        for k in range(1, 31)
    )
    reveal = MatchRevealed(seed=setup_seed, deals=deals, mixed_seed=setup_seed[::-1])
    raw = canonical(payload_to_dict(reveal))
    assert len(raw) > compact.LARGE_EVENT
    packed = entry_bytes(reveal, 1234567)
    assert packed[:1] == compact.EVENT_TAG and len(packed) < len(raw) * 0.45, (len(packed), len(raw))
    assert compact.unpack_event(packed) == (raw, 1234567)
    assert entry_of(packed) == (reveal, 1234567)


async def test_metadata_written_with_the_first_dictionary_still_loads() -> None:
    """Builds before the house-rule fields wrote tag ``\\x01`` with ``META_DICT_V1``."""
    svc = services()
    created = await svc.steps.create_match(Operator("acme"), T.CreateMatchRequest(preset="argentine"))
    snap = await svc.store.matches.load(created.match.match_id)
    assert snap is not None
    raw = compact.unpack_meta(snap.meta)
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zdict=compact.META_DICT_V1)
    old = compact.META_TAG_V1 + c.compress(raw) + c.flush()
    assert compact.unpack_meta(old) == raw and meta_of(old) == meta_of(snap.meta)
    await svc.store.close()
