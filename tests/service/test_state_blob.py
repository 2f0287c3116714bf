"""The stored forms: the state blob (plain JSON) leaves the rule set to the match's metadata, the metadata
and the events are deflated with preset dictionaries that never change, and what is written
reads back the same."""

from __future__ import annotations

import hashlib
import zlib

import orjson

import truco_engine as te
from tests.service.conftest import services
from truco_engine.cards import DECKS
from truco_match import fairness
from truco_match.events import MatchRevealed, RevealedDeal, payload_to_dict
from truco_match.lifecycle import Life
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
    event = b'{"card":"3e","face_down":false,"kind":"card_played","seat":0,"t":336696,"trick_index":0}'
    assert compact.unpack_event(compact.pack_event(event)) == event
    assert len(compact.pack_event(event)) < len(event) // 4


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
    raw = canonical({**payload_to_dict(reveal), "t": 1234567})
    assert len(raw) > compact.LARGE_EVENT
    packed = entry_bytes(reveal, 1234567)
    assert packed[:1] == b"\x02" and len(packed) < len(raw) * 0.45, (len(packed), len(raw))
    assert compact.unpack_event(packed) == raw
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
