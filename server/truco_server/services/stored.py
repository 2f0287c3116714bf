"""What the match service writes to its store, and how it reads it back.

* the metadata -- :class:`truco_match.match.Meta`, written once at creation (compact JSON:
  :mod:`.compact`);
* the state -- the engine's state and the match's lifecycle state, replaced by every commit
  (plain JSON, not deflated: :func:`state_bytes`; the rule set is left out, the metadata has
  it);
* the log -- one entry per event (its commit time and canonical JSON, compact);
* the record -- one entry per commit (:mod:`truco_match.records`);
* the listing row -- what ``ListMatches`` shows without loading the match;
* the idempotency record of an action -- who acted, what, and how many events it wrote.
"""

from __future__ import annotations

import functools
import hashlib
import zlib
from collections.abc import Mapping
from typing import Any

import orjson

import truco_engine as te
from truco_match.events import (
    ClientSeed,
    DealSource,
    Fairness,
    LogEntry,
    MatchStatus,
    entry_from_dict,
    entry_to_dict,
    seat_from_dict,
    seat_to_dict,
)
from truco_match.lifecycle import Life, Lifecycle
from truco_match.match import Match, Meta
from truco_match.matches import MatchInfo, MatchResult
from truco_server.ports.matches import MatchIndexEntry, Snapshot
from truco_server.services import compact


def canonical(obj: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the bytes of ``json.dumps(obj, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)`` for the trees the service writes (action
    fingerprints are compared across workers and versions)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


# ------------------------------------------------------------------------------ a match
def meta_bytes(meta: Meta) -> bytes:
    return compact.pack_meta(canonical(meta.to_dict()))


def meta_of(raw: bytes) -> Meta:
    return Meta.from_dict(orjson.loads(compact.unpack_meta(raw)))


def state_bytes(state: te.MatchState, life: Life) -> bytes:
    """The stored state: its JSON without the rule set (the metadata holds it). Not deflated:
    a match's state is stored once and replaced by every commit, so deflating it (about 860
    bytes to 470) would save little space for a cost paid by every commit."""
    return orjson.dumps({"s": state.to_dict(rules=False), "l": life.to_dict()})


def state_of(raw: bytes, rules: te.RuleSet) -> tuple[te.MatchState, Life]:
    """The state and lifecycle of a stored state (JSON, or the zlib form written before)."""
    d = orjson.loads(raw if raw[:1] == b"{" else zlib.decompress(raw))
    return te.MatchState.from_dict(d["s"], rules), Life.from_dict(d["l"])


def match_of(snap: Snapshot, known: Match | None = None) -> Match:
    """The match a snapshot holds; ``known``: a match already decoded, reused whole when it is
    the one the snapshot stores (the same bytes at the same version: what this worker loaded
    or committed last, with what is derived from it), else its metadata, setup and seats when
    those are the same."""
    if known is not None and known.memo.get("meta bytes") == snap.meta:
        if known.memo.get("stored") == _stored_key(snap.version, snap.state, snap.status, snap.updated_at):
            return known
        meta, setup, seats = known.meta, known.setup, known.seats
    else:
        meta = meta_of(snap.meta)
        seats = meta.seat_infos()
        setup = meta.setup(seats)
    state, life = state_of(snap.state, setup.rules)
    match = Match(meta, setup, state, life, snap.version, MatchStatus(snap.status), snap.updated_at, seats)
    match.memo["meta bytes"] = snap.meta
    match.memo["stored"] = _stored_key(snap.version, snap.state, snap.status, snap.updated_at)
    return match


def committed(match: Match, state: bytes, before: Match) -> None:
    """Mark ``match`` as stored with ``state`` by a commit from ``before`` (its metadata's
    bytes are ``before``'s), so that a load of that version reuses it (:func:`match_of`)."""
    meta = before.memo.get("meta bytes")
    if meta is not None:
        match.memo["meta bytes"] = meta
        match.memo["stored"] = _stored_key(match.version, state, match.status.value, match.updated_at)


def _stored_key(version: int, state: bytes, status: str, updated_at: float) -> tuple[int, bytes, str, float]:
    return version, state, status, updated_at


# --------------------------------------------------------------------------------- log
def entry_bytes(entry: LogEntry, ms: int) -> bytes:
    """The stored form of a log entry committed ``ms`` after the match's creation. An engine
    event that comes again (all but a hand's start and deal: a card played, a trick's end, a
    score, a call) is deflated once per distinct event, at most 4,096 kept: a move's events
    are mostly ones seen before."""
    repeats = _repeats(entry)
    deflated = _DEFLATED.get(entry) if repeats else None
    if deflated is None:
        deflated = compact.deflate_event(canonical(entry_to_dict(entry)))
        if repeats:
            _keep(_DEFLATED, entry, deflated)
    return compact.pack_event(deflated, ms)


def entry_of(raw: bytes) -> tuple[LogEntry, int]:
    """A stored log entry and its commit time (ms after the match's creation). An engine
    event that comes again is decoded once per distinct event, at most 4,096 kept (a worker
    decodes the events other workers commit to the matches its streams follow)."""
    parts = compact.split_event(raw)
    if parts is None:  # a form written before: the time is in the JSON
        d = orjson.loads(compact.unpack_event(raw)[0])
        t = d.pop("t", 0)
        return entry_from_dict(d), int(t)
    deflated, ms = parts
    entry = _INFLATED.get(deflated)
    if entry is None:
        entry = entry_from_dict(orjson.loads(compact.inflate_event(deflated)))
        if _repeats(entry):
            _keep(_INFLATED, deflated, entry)
    return entry, ms


def _repeats(entry: LogEntry) -> bool:
    """Whether ``entry`` is an event that comes again: an engine event but a hand's start,
    which names its deck's commitment, and a deal, a seat's three cards."""
    return isinstance(entry, te.Event) and entry.payload.kind not in _UNIQUE


_UNIQUE = frozenset({te.EventKind.HAND_STARTED, te.EventKind.CARDS_DEALT})
_DEFLATED: dict[LogEntry, bytes] = {}
_INFLATED: dict[bytes, LogEntry] = {}


def _keep(kept: dict[Any, Any], key: Any, value: Any) -> None:
    """Keep ``value`` under ``key`` in a cache of at most 4,096 entries (emptied when full:
    what a worker meets again comes back within a few moves)."""
    if len(kept) >= 4096:
        kept.clear()
    kept[key] = value


# ---------------------------------------------------------------------- idempotency
def action_fingerprint(action: te.Action) -> str:
    """Short digest of an action: tells a retry from a reused ``request_id`` (kept per
    distinct action, at most 4,096: a match offers a few hundred)."""
    key = (action.kind, action.card, action.face_down, action.slot)
    made = _FINGERPRINTS.get(key)
    if made is None:
        made = hashlib.sha256(canonical(action.to_dict())).hexdigest()[:12]
        _keep(_FINGERPRINTS, key, made)
    return made


_FINGERPRINTS: dict[tuple[str, str | None, bool, int | None], str] = {}


def create_fingerprint(request: Mapping[str, Any]) -> str:
    """Short digest of what a CreateMatch asked for: tells a retry from a reused
    ``request_id`` with another body."""
    return hashlib.sha256(canonical(dict(request))).hexdigest()[:16]


def action_reply(seat: int, fingerprint: str, count: int) -> bytes:
    """The idempotency record of an accepted action, ``<seat>:<fingerprint>:<event count>``:
    enough to rebuild the first result (its events are versions ``version - count + 1 ..
    version``, read again from the log)."""
    return b"%d:%s:%d" % (seat, fingerprint.encode(), count)


def action_reply_of(reply: bytes) -> tuple[int, str, int]:
    seat, fingerprint, count = reply.decode().split(":")
    return int(seat), fingerprint, int(count)


# --------------------------------------------------------------------------- listing
def rules_summary(rules: te.RuleSet) -> tuple[str, dict[str, Any]]:
    """A rule set as its preset and the fields that differ from it."""
    preset, diff = _summary(rules)
    return preset, {k: list(v) if type(v) is list else v for k, v in diff}


@functools.lru_cache(maxsize=256)
def _summary(rules: te.RuleSet) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """:func:`rules_summary`, remembered (a rule set is immutable, and a worker lists the same
    few again and again); the caller copies the lists."""
    base = te.PRESETS.get(rules.name)
    full = rules.to_dict()
    if base is None:
        return "", tuple(full.items())
    ref = base.to_dict()
    return rules.name, tuple((k, v) for k, v in full.items() if ref[k] != v)


def rules_from_summary(preset: str, diff: Mapping[str, Any]) -> te.RuleSet:
    base = te.PRESETS.get(preset)
    return te.RuleSet.from_dict(diff) if base is None else base.replace(**diff)


def listing(info: MatchInfo) -> bytes:
    """The match's row in its owner's listing: everything ``ListMatches`` shows that does not
    change with every action (rewritten when the seeds change and when the match ends)."""
    preset, diff = rules_summary(info.rules)
    row: dict[str, Any] = {
        "p": preset,
        "r": diff,
        "s": [seat_to_dict(s) for s in info.seats],
        "l": dict(info.labels),
        "c": info.lifecycle.to_dict(),
    }
    if info.fairness is not None:
        row["f"] = _fairness_to_dict(info.fairness)
    if info.result is not None:
        r = info.result
        row["x"] = [r.winner_team, list(r.scores), list(r.games_won)]
    if info.rated:
        row["R"] = 1
    return zlib.compress(canonical(row), 6)


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
        fairness=_fairness_from_dict(row["f"]) if "f" in row else None,
        rated=bool(row.get("R")),
    )


def _fairness_to_dict(f: Fairness) -> dict[str, Any]:
    return {
        "d": f.deal_source.value,
        "h": f.seed_hash,
        "o": f.operator_decks,
        "c": [[c.seat, c.seed.hex()] for c in f.client_seeds],
    }


def _fairness_from_dict(d: Mapping[str, Any]) -> Fairness:
    return Fairness(
        deal_source=DealSource(d["d"]),
        seed_hash=d["h"],
        operator_decks=d["o"],
        client_seeds=tuple(ClientSeed(seat=s, seed=bytes.fromhex(h)) for s, h in d["c"]),
    )
