"""The Redis key layout (docs/storage.md, "Redis key layout"): every key name the adapter
uses, in one place. The part in ``{...}`` (the hash tag) decides a key's slot on a Redis
Cluster: keys with the same tag are in the same slot, so one script may touch them all.

* a match: ``truco:{<match_id>}:<part>`` (one slot per match: its scripts and reads);
* an operator: ``truco:{op:<owner>}:...`` (its stream, webhooks, deliveries, document index);
* the owner index of matches: ``owner_index_shards`` sorted sets per owner, each its own tag;
* a sharded queue: ``truco:{q:<name>:<k>}<suffix>`` (:class:`ShardedQueue`);
* a document: ``truco:{lg:<kind>:<id>}:doc``; a bot's assignments: ``truco:{bot:<id>}:...``;
* a matchmaking pool: ``truco:{mm:<pool key>}:...`` (:class:`PoolKeys`: its tickets, line,
  players and formations in one slot, so forming a table is one script).
* a quota counter: ``truco:{quota:<key>}`` (a rate or a set of leases, :mod:`.quotas`).

This is the layout the store it replaces wrote: data written by it is read as it is.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from truco_engine._fast import fast_init

__all__ = ["Keys", "MatchKeys", "OperatorKeys", "PoolKeys", "ShardedQueue"]


@fast_init
@dataclass(frozen=True, slots=True)
class MatchKeys:
    """The keys of one match, all in slot ``{match_id}``."""

    match: str
    """The hash: version, state, meta, status, owner, created_at, updated_at, sort_key,
    summary, head (the token of the last commit)."""
    events: str
    """The stream: entry id ``<version>-0``, field ``e``."""
    requests: str
    """The hash of the match's idempotency records (field = request id)."""
    record: str
    """The list of the match's record steps (one per commit that has one)."""
    presence: str
    """The hash of the last time each seat was seen (field = seat, value = ms)."""
    outbox: str
    """The list of the match's operator events not relayed yet."""
    relay: str
    """The lock of the relay moving the outbox to the operator's stream."""
    live: str
    """The sharded pub/sub channel of the match's doorbells (Redis Cluster)."""

    def script_keys(self) -> list[str]:
        """The keys of the commit script, in its order."""
        return [self.match, self.events, self.requests, self.record, self.outbox]


@fast_init
@dataclass(frozen=True, slots=True)
class OperatorKeys:
    """The keys of one operator, all in slot ``{op:<owner>}``."""

    base: str
    events: str
    """The stream of the operator's events."""
    webhooks: str
    """The hash of its webhooks (field = webhook id)."""

    def deliveries(self, webhook_id: str) -> str:
        """The hash of a webhook's delivery states (field = delivery id)."""
        return f"{self.base}:wh:{webhook_id}:deliveries"

    def delivery_order(self, webhook_id: str) -> str:
        """The sorted set of a webhook's deliveries by event time (for listing, trimming)."""
        return f"{self.base}:wh:{webhook_id}:order"

    def documents(self, kind: str) -> str:
        """The operator's index of documents of ``kind`` (leagues, bots), by creation time."""
        return f"{self.base}:docs:{kind}"


@dataclass(frozen=True, slots=True)
class PoolKeys:
    """The keys of one matchmaking pool, all in slot ``{mm:<pool key>}``."""

    base: str
    waiting: str
    """The sorted set of waiting tickets by creation time (ms)."""
    expiry: str
    """The sorted set of waiting tickets by expiry time (ms)."""
    players: str
    """The hash of the players with a live ticket (field = player id, value = ticket id)."""
    formations: str
    """The hash of pending formations (field = formation id, value = its data)."""
    pending: str
    """The sorted set of pending formations by formation time (ms)."""

    def ticket(self, ticket_id: str) -> str:
        """A ticket's hash: ``state``, ``data``, ``players`` (newline-separated),
        ``formation``, ``result``; it expires ``retention_seconds`` after it ends."""
        return f"{self.base}:t:{ticket_id}"


@dataclass(frozen=True, slots=True)
class ShardedQueue:
    """The keys of one sharded queue: ``name`` (``clock``, ``relay``, ``webhook``,
    ``league``), ``shards`` fixed shards, each with its own hash tag ``q:<name>:<k>`` -- so a
    claim script touches one slot and no key carries the whole deployment's queue. An item
    belongs to shard ``CRC-32(item) mod shards``: everything about one match goes to one
    shard, in order. Changing the shard count moves items to other shards (docs/storage.md,
    "Sharded queues")."""

    name: str
    shards: int
    prefix: str = "truco"

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise ValueError("a sharded queue needs at least one shard")
        if not self.name or any(c in self.name for c in "{}:"):
            raise ValueError("a queue name is non-empty, without '{', '}' or ':'")

    def tag(self, shard: int) -> str:
        """The hash tag of shard ``shard``: ``q:<name>:<shard>``."""
        if not 0 <= shard < self.shards:
            raise ValueError(f"shard must be 0..{self.shards - 1}")
        return f"q:{self.name}:{shard}"

    def key(self, shard: int, suffix: str = "") -> str:
        """A key of shard ``shard``, e.g. ``key(3, ":due")`` -> ``truco:{q:clock:3}:due``."""
        return f"{self.prefix}:{{{self.tag(shard)}}}{suffix}"

    def shard_of(self, item: str) -> int:
        """The shard of ``item``: CRC-32 of its UTF-8 bytes modulo the shard count (stable
        across processes, versions and machines)."""
        return zlib.crc32(item.encode()) % self.shards

    def key_for(self, item: str, suffix: str = "") -> str:
        """``key(shard_of(item), suffix)``."""
        return self.key(self.shard_of(item), suffix)

    def all_shards(self) -> list[int]:
        """Every shard, 0 .. S-1."""
        return list(range(self.shards))

    def shards_for(self, reader: int, readers: int) -> list[int]:
        """The shards reader ``reader`` of ``readers`` takes when they share them out (round
        robin: every shard has exactly one reader)."""
        if not 0 <= reader < readers:
            raise ValueError("reader must be 0..readers-1")
        return [k for k in range(self.shards) if k % readers == reader]


class Keys:
    """Every key name of the adapter, under ``prefix``."""

    def __init__(self, prefix: str = "truco", *, queue_shards: int = 16, owner_index_shards: int = 8) -> None:
        self.prefix = prefix
        self.queue_shards = queue_shards
        self.owner_index_shards = owner_index_shards
        self._queues: dict[str, ShardedQueue] = {}

    def match(self, match_id: str) -> MatchKeys:
        base = f"{self.prefix}:{{{match_id}}}"
        return MatchKeys(
            match=f"{base}:match",
            events=f"{base}:events",
            requests=f"{base}:req",
            record=f"{base}:record",
            presence=f"{base}:presence",
            outbox=f"{base}:outbox",
            relay=f"{base}:relay",
            live=f"{base}:live",
        )

    def events(self, match_id: str) -> str:
        return f"{self.prefix}:{{{match_id}}}:events"

    def live(self, match_id: str) -> str:
        return f"{self.prefix}:{{{match_id}}}:live"

    def operator(self, owner: str) -> OperatorKeys:
        base = f"{self.prefix}:{{op:{owner}}}"
        return OperatorKeys(base=base, events=f"{base}:events", webhooks=f"{base}:webhooks")

    def queue(self, name: str) -> ShardedQueue:
        """The layout of the sharded queue ``name``."""
        q = self._queues.get(name)
        if q is None:
            q = self._queues[name] = ShardedQueue(name, self.queue_shards, self.prefix)
        return q

    def owner_index(self, owner: str, shard: int = 0) -> str:
        """Shard ``shard`` of the owner's index (shard 0 is the key of the one-set layout)."""
        if shard == 0:
            return f"{self.prefix}:owner:{{{owner}}}:matches"
        return f"{self.prefix}:owner:{{{owner}@{shard}}}:matches@{shard}"

    def owner_indexes(self, owner: str) -> list[str]:
        return [self.owner_index(owner, k) for k in range(self.owner_index_shards)]

    def owner_index_for(self, owner: str, match_id: str) -> str:
        """The index shard a match is listed in: CRC-32 of its id modulo the shard count."""
        return self.owner_index(owner, zlib.crc32(match_id.encode()) % self.owner_index_shards)

    def document(self, kind: str, doc_id: str) -> str:
        """A document's hash (fields ``v`` = version, ``d`` = data), in a slot of its own."""
        return f"{self.prefix}:{{lg:{kind}:{doc_id}}}:doc"

    def assignments(self, bot_id: str) -> str:
        return f"{self.prefix}:{{bot:{bot_id}}}:assignments"

    def pool(self, key: str) -> PoolKeys:
        base = f"{self.prefix}:{{mm:{key}}}"
        return PoolKeys(
            base=base,
            waiting=f"{base}:waiting",
            expiry=f"{base}:expiry",
            players=f"{base}:players",
            formations=f"{base}:formations",
            pending=f"{base}:pending",
        )

    def quota(self, key: str) -> str:
        """A quota counter (:mod:`.quotas`): a rate or a set of leases, in a slot of its own."""
        return f"{self.prefix}:{{quota:{key}}}"
