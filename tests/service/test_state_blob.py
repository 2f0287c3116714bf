"""The stored state blob: the rule set lives in the match's metadata only, and a blob written
by an earlier build (with the rules inside the state) still loads and plays on. The metadata
is deflated with a preset dictionary; the zlib form of earlier builds still loads."""

from __future__ import annotations

import hashlib
import random
import zlib

import orjson
import redis.asyncio as aioredis

import truco_engine as te
from truco_match.events import MatchStatus
from truco_match.lifecycle import Life
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.services import meta_codec
from truco_server.services.matches import MatchService
from truco_server.services.stored import Meta, decode_state, encode_state
from truco_server.stores import MemoryMatchStore, RedisMatchStore

from .test_service import act, cred, play_out


def _earlier_blob(state: te.MatchState, life: Life) -> bytes:
    """The state blob as builds before this one wrote it: the engine's whole state mapping,
    its rule set included."""
    return zlib.compress(orjson.dumps({"s": state.to_dict(), "l": life.to_dict()}), 1)


def test_the_blob_leaves_the_rules_to_the_metadata() -> None:
    rules = te.get_rules("argentine", players=4)
    state = te.new_match(rules)
    te.deal(state, list(rules.deck_cards))
    life = Life(joined=[True] * 4, started=True)
    blob = encode_state(state, life)
    assert "rules" not in orjson.loads(zlib.decompress(blob))["s"]
    back, _ = decode_state(blob, rules)
    assert back == state and back.rules is rules
    old = _earlier_blob(state, life)
    assert len(blob) < len(old)
    assert decode_state(old, rules)[0] == state


async def test_a_match_stored_by_an_earlier_build_plays_on(clean_redis_url: str) -> None:
    store = RedisMatchStore.from_url(clean_redis_url)
    r = aioredis.from_url(clean_redis_url)
    try:
        first = MatchService(store)
        created = await first.create_match(Operator("acme"), T.CreateMatchRequest(preset="paulista-2p"))
        mid = created.match.match_id
        rng = random.Random(3)
        await play_out(first, mid, created.seat_tokens, rng, limit=6)
        key = store.keys_for(mid).match
        raw_meta, raw_state = await r.hmget(key, ["meta", "state"])
        rules = te.RuleSet.from_dict(Meta.from_bytes(raw_meta).rules)
        state, life = decode_state(raw_state, rules)
        assert state.actions > 0
        before = await first.get_match(cred(created.seat_tokens[0]), T.GetMatchRequest(mid))
        await r.hset(key, "state", _earlier_blob(state, life))  # as an earlier build left it
        old_meta = zlib.compress(meta_codec.unpack(raw_meta), 9)  # its metadata: zlib alone
        await r.hset(key, "meta", old_meta)

        later = MatchService(store)  # a worker that never saw the match: it loads the old blob
        seen = await later.get_match(cred(created.seat_tokens[0]), T.GetMatchRequest(mid))
        assert seen.view == before.view
        view = seen.view
        while view.match_state is MatchStatus.ACTIVE:
            seat = view.observation.awaited[0]
            view = (await later.get_match(cred(created.seat_tokens[seat]), T.GetMatchRequest(mid))).view
            action = rng.choice(view.observation.legal_actions)
            res = await act(later, mid, created.seat_tokens[seat], action, expected_version=view.version)
            view = res.view
        done = await later.get_match(cred(created.spectator_token), T.GetMatchRequest(mid))
        assert done.match.state is MatchStatus.FINISHED
        raw_state = await r.hget(key, "state")  # rewritten the new way by the later commits
        assert "rules" not in orjson.loads(zlib.decompress(raw_state))["s"]
        assert decode_state(raw_state, rules)[0].phase == "over"
    finally:
        await r.aclose()
        await store.close()


async def test_state_with_rules_writes_what_an_earlier_build_reads(clean_redis_url: str) -> None:
    """During a rolling update from a build up to 0.2.0 (``TRUCO_STATE_WITH_RULES``), every
    stored state carries its rule set, which is how an earlier build reads it."""
    store = RedisMatchStore.from_url(clean_redis_url)
    r = aioredis.from_url(clean_redis_url)
    try:
        svc = MatchService(store, state_with_rules=True)
        created = await svc.create_match(Operator("acme"), T.CreateMatchRequest(preset="paulista-2p"))
        mid = created.match.match_id
        await play_out(svc, mid, created.seat_tokens, random.Random(5), limit=4)
        raw_state, raw_meta = await r.hmget(store.keys_for(mid).match, ["state", "meta"])
        d = orjson.loads(zlib.decompress(raw_state))
        state = te.MatchState.from_dict(d["s"])  # an earlier build's read: the rules from the state
        assert state.actions > 0
        assert state.rules == te.get_rules("paulista", players=2)
        meta = orjson.loads(zlib.decompress(raw_meta))  # and its read of the metadata: zlib alone
        assert meta["match_id"] == mid
    finally:
        await r.aclose()
        await store.close()


async def test_the_metadata_is_a_fifth_of_its_zlib_form_and_either_form_loads() -> None:
    store = MemoryMatchStore()
    svc = MatchService(store)
    for preset in ("paulista-2p", "argentine", "mineiro", "uruguayan-4p", "valencian", "gaucho"):
        created = await svc.create_match(Operator("acme"), T.CreateMatchRequest(preset=preset))
        snap = await store.load(created.match.match_id)
        assert snap is not None
        meta = Meta.from_bytes(snap.meta)
        plain = meta.to_bytes(plain=True)
        assert snap.meta[:1] == meta_codec.TAG_V2, preset
        assert len(snap.meta) < 200 and len(plain) > 600, (preset, len(snap.meta), len(plain))
        assert Meta.from_bytes(plain) == meta == Meta.from_bytes(meta.to_bytes())


def test_the_metadata_dictionary_never_changes() -> None:
    """It is part of the stored format: a new one gets a new tag byte (meta_codec's docstring)."""
    assert (
        hashlib.sha256(meta_codec.META_DICT_V1).hexdigest()
        == "2ee9d20a074e7c0b11f42f06c10a31dd4907b6d8631fbb5adeaffc4439dcc3b8"
    )
    assert (
        hashlib.sha256(meta_codec.META_DICT_V2).hexdigest()
        == "1eafd7d26eb2ab7c3ac5f52c701b4017dd69f175caa5d25649b6f3ff841049ce"
    )


async def test_metadata_written_with_the_first_dictionary_still_loads() -> None:
    """Builds before the house-rule fields wrote tag ``\\x01`` with ``META_DICT_V1``."""
    store = MemoryMatchStore()
    svc = MatchService(store)
    created = await svc.create_match(Operator("acme"), T.CreateMatchRequest(preset="argentine"))
    snap = await store.load(created.match.match_id)
    assert snap is not None
    raw = meta_codec.unpack(snap.meta)
    c = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zdict=meta_codec.META_DICT_V1)
    old = meta_codec.TAG_V1 + c.compress(raw) + c.flush()
    assert meta_codec.unpack(old) == raw and Meta.from_bytes(old) == Meta.from_bytes(snap.meta)
