"""What the service writes to its store, and how it reads it back.

* :class:`Meta` — written once at creation: rules, seats, the seed and the credential key
  (secrets: server-only), the lifecycle settings, the labels.
* the state blob — the engine's state and the match's lifecycle state (:func:`encode_state`),
  replaced on every commit;
* the log — one blob per event (:func:`pack_entry`: canonical JSON with the commit time,
  compressed by :mod:`.event_codec`);
* the record — one entry per commit (:mod:`truco_match.records`);
* the listing row — what ``ListMatches`` shows without loading the match (:func:`listing`).
"""

from __future__ import annotations

import functools
import hashlib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

import truco_engine as te
from truco_match import table
from truco_match.credentials import issue
from truco_match.events import (
    ClientSeed,
    DealSource,
    Fairness,
    LogEntry,
    MatchStatus,
    SeatInfo,
    entry_from_dict,
    entry_to_dict,
    seat_from_dict,
    seat_to_dict,
)
from truco_match.lifecycle import Life, Lifecycle
from truco_match.matches import MatchInfo, MatchResult
from truco_server.ports.store import MatchIndexEntry
from truco_server.services import event_codec, meta_codec


def canonical(obj: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the same bytes as ``json.dumps(obj,
    sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` for the str/int/bool/None
    trees the service writes (action fingerprints are compared across workers and
    versions, so the bytes must not depend on the encoder)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


@functools.lru_cache(maxsize=4096)
def _incarnation(cred_key: str) -> str:
    """:attr:`Meta.incarnation` of a credential key (asked for several times per action, by
    every stream that follows the match: kept for the matches in play)."""
    return hashlib.sha256(cred_key.encode()).hexdigest()[:16]


@dataclass
class Meta:
    """Written once at creation; holds secrets (seed, credential key): server-only."""

    match_id: str
    owner: str
    created_at: float
    rules: dict[str, Any]
    seats: list[dict[str, Any]]
    seed: str
    """The server's (or the creator's) seed, hex."""
    cred_key: str
    deck_orders: list[list[str]]
    first_dealer: int | None
    labels: dict[str, str] = field(default_factory=dict)
    lifecycle: dict[str, Any] = field(default_factory=dict)
    source: str = DealSource.SERVER_SEED.value
    request_fingerprint: str = ""
    """What CreateMatch was asked for (:func:`create_fingerprint`), to tell a retry of the
    same ``request_id`` from a reuse with another body; empty for matches made before."""
    format: int = 3

    @property
    def incarnation(self) -> str:
        """Which creation of ``match_id`` this is: a match id comes back when a request id is
        reused after its match expired (or a store lost it), its incarnation never (it is
        derived from the random credential key). Every per-worker cache of match data is
        keyed or checked by it."""
        return _incarnation(self.cred_key)

    def to_bytes(self, *, plain: bool = False) -> bytes:
        """Canonical JSON deflated with a preset dictionary (:mod:`.meta_codec`: a fifth of
        zlib's size; it is kept in Redis for the match's whole life); ``plain``: zlib alone,
        the form builds up to 0.2.0 read (``TRUCO_STATE_WITH_RULES``)."""
        return meta_codec.pack(canonical(self.__dict__), plain=plain)

    @classmethod
    def from_bytes(cls, raw: bytes) -> Meta:
        """Either stored form."""
        return cls(**orjson.loads(meta_codec.unpack(raw)))

    def setup(self) -> table.Setup:
        return table.Setup(
            rules=te.RuleSet.from_dict(self.rules),
            seed=bytes.fromhex(self.seed),
            deck_orders=tuple(tuple(d) for d in self.deck_orders),
            source=DealSource(self.source),
            lifecycle=Lifecycle.from_dict(self.lifecycle),
            first_dealer=self.first_dealer,
        )

    def seat_infos(self) -> tuple[SeatInfo, ...]:
        return tuple(seat_from_dict(s) for s in self.seats)

    def token(self, viewer: int, generation: int = 0) -> str:
        """The credential of ``viewer`` at ``generation`` (``Life.credential``)."""
        return issue(self.match_id, self.cred_key, viewer, generation)

    def at(self, now: float) -> int:
        """``now`` (seconds since the epoch) as the match's time: ms since its creation."""
        return max(0, round((now - self.created_at) * 1000))

    def epoch_ms(self, ms: int) -> int:
        """A match time (ms since creation) as ms since the epoch."""
        return round(self.created_at * 1000) + ms


def seats_to_dicts(seats: tuple[SeatInfo, ...]) -> list[dict[str, Any]]:
    return [seat_to_dict(s) for s in seats]


@dataclass
class Loaded:
    """A match as this worker last saw it."""

    meta: Meta
    setup: table.Setup
    state: te.MatchState
    life: Life
    version: int
    status: MatchStatus
    updated_at: float
    meta_bytes: bytes = b""
    """The stored metadata this was read from (two loads of one incarnation share it)."""

    @property
    def rules(self) -> te.RuleSet:
        return self.setup.rules

    @property
    def match_id(self) -> str:
        return self.meta.match_id


def encode_state(state: te.MatchState, life: Life, *, with_rules: bool = False) -> bytes:
    """The state blob: JSON (keys in the engine's order: the blob is never compared, only
    decoded) and zlib level 1: written on every action, so it is on the hot path; level 6 and
    sorted keys cost twice the CPU for 3 % fewer bytes. The rule set is left out: the match's
    :class:`Meta` holds it, written once (with it, the blob cost twice as much to build);
    ``with_rules`` puts it in, for builds up to 0.2.0 (``TRUCO_STATE_WITH_RULES``)."""
    return zlib.compress(orjson.dumps({"s": state.to_dict(rules=with_rules), "l": life.to_dict()}), 1)


def decode_state(raw: bytes, rules: te.RuleSet) -> tuple[te.MatchState, Life]:
    """Inverse of :func:`encode_state`; ``rules`` are the match's (from its :class:`Meta`).
    A blob written by an earlier build carries its own copy of the same rules, which is not
    read."""
    d = orjson.loads(zlib.decompress(raw))
    return te.MatchState.from_dict(d["s"], rules), Life.from_dict(d["l"])


def pack_entry(entry: LogEntry, ms: int) -> bytes:
    """The stored form of a log entry committed ``ms`` milliseconds after the match's
    creation (canonical JSON, compressed: :mod:`.event_codec`)."""
    d = entry_to_dict(entry)
    d["t"] = ms
    return event_codec.pack(canonical(d))


def unpack_entry(raw: bytes) -> tuple[LogEntry, int]:
    """A stored log entry and its commit time (ms after the match's creation)."""
    d = orjson.loads(event_codec.unpack(raw))
    ms = d.pop("t", 0)
    return entry_from_dict(d), int(ms)


def action_fingerprint(action: te.Action) -> str:
    """Short digest of an action: tells a retry from a reused ``request_id``."""
    return hashlib.sha256(canonical(action.to_dict())).hexdigest()[:12]


def create_fingerprint(request: Mapping[str, Any]) -> str:
    """Short digest of what a CreateMatch asked for (rules, seats, seed, decks, settings):
    tells a retry from a ``request_id`` reused with another body."""
    return hashlib.sha256(canonical(dict(request))).hexdigest()[:16]


def compact_reply(seat: int, fingerprint: str, count: int) -> bytes:
    """The idempotency record of an accepted action: ``<seat>:<fingerprint>:<event count>``.

    It holds only what is needed to rebuild the first result: who acted, what (the
    fingerprint of the action) and how many events it committed (the store keeps the
    version after the commit, so they are ``version - count + 1 .. version``); the events
    are re-read from the log on a retry."""
    return b"%d:%s:%d" % (seat, fingerprint.encode(), count)


# ---------------------------------------------------------------------------- matches
def rules_summary(rules: te.RuleSet) -> tuple[str, dict[str, Any]]:
    """A rule set as its preset and the fields that differ from it (a few bytes for a
    listing; :func:`rules_from_summary` rebuilds it)."""
    base = te.PRESETS.get(rules.name)
    full = rules.to_dict()
    if base is None:
        return "", full
    ref = base.to_dict()
    return rules.name, {k: v for k, v in full.items() if ref[k] != v}


def rules_from_summary(preset: str, diff: Mapping[str, Any]) -> te.RuleSet:
    base = te.PRESETS.get(preset)
    return te.RuleSet.from_dict(diff) if base is None else base.replace(**diff)


def result_of(state: te.MatchState, status: MatchStatus) -> MatchResult | None:
    if status is not MatchStatus.FINISHED or state.winner is None:
        return None
    return MatchResult(winner_team=state.winner, scores=tuple(state.scores), games_won=tuple(state.games))


def info_of(loaded: Loaded) -> MatchInfo:
    """The public description of a loaded match."""
    m = loaded.meta
    return MatchInfo(
        match_id=m.match_id,
        state=loaded.status,
        rules=loaded.rules,
        seats=m.seat_infos(),
        version=loaded.version,
        created_at=m.created_at,
        updated_at=loaded.updated_at,
        labels=dict(m.labels),
        result=result_of(loaded.state, loaded.status),
        lifecycle=loaded.setup.lifecycle,
        fairness=loaded.setup.fairness(loaded.life),
    )


def listing(info: MatchInfo) -> bytes:
    """The match's row in its owner's listing: everything ``ListMatches`` shows that does not
    change with every action (rewritten when the seeds change and when the match ends)."""
    preset, diff = rules_summary(info.rules)
    row: dict[str, Any] = {
        "p": preset,
        "r": diff,
        "s": seats_to_dicts(info.seats),
        "l": dict(info.labels),
        "c": info.lifecycle.to_dict(),
    }
    if info.fairness is not None:
        row["f"] = fairness_to_dict(info.fairness)
    if info.result is not None:
        r = info.result
        row["x"] = [r.winner_team, list(r.scores), list(r.games_won)]
    return zlib.compress(canonical(row), 6)


def fairness_to_dict(f: Fairness) -> dict[str, Any]:
    return {
        "d": f.deal_source.value,
        "h": f.seed_hash,
        "o": f.operator_decks,
        "c": [[c.seat, c.seed.hex()] for c in f.client_seeds],
    }


def fairness_from_dict(d: Mapping[str, Any]) -> Fairness:
    return Fairness(
        deal_source=DealSource(d["d"]),
        seed_hash=d["h"],
        operator_decks=d["o"],
        client_seeds=tuple(ClientSeed(seat=s, seed=bytes.fromhex(h)) for s, h in d["c"]),
    )


def listed(entry: MatchIndexEntry) -> MatchInfo:
    """A listing row as a match's description, without loading the match."""
    row = orjson.loads(zlib.decompress(entry.summary))
    result = None
    if "x" in row:
        winner, scores, games = row["x"]
        result = MatchResult(winner_team=winner, scores=tuple(scores), games_won=tuple(games))
    return MatchInfo(
        match_id=entry.match_id,
        state=MatchStatus(entry.status),
        rules=rules_from_summary(row["p"], row["r"]),
        seats=tuple(seat_from_dict(s) for s in row["s"]),
        version=entry.version,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
        labels=row["l"],
        result=result,
        lifecycle=Lifecycle.from_dict(row.get("c", {})),
        fairness=fairness_from_dict(row["f"]) if "f" in row else None,
    )
