"""The sharded-queue key layout: work that any worker may claim, spread over fixed shards.

Turn-clock deadlines, webhook deliveries and league jobs are queues that every worker
reads and exactly one worker applies each entry of. On Redis Cluster the claim must be one
Lua script (check, move, record -- atomically), so every key one claim touches must be in
one slot; and no single key may carry the whole deployment's queue. Hence ``S`` fixed
shards per queue, each with its own hash tag::

    truco:{q:<name>:<k>}<suffix>        k = 0 .. S-1

All keys of shard ``k`` share the tag ``q:<name>:<k>`` (one slot: a script may touch
``truco:{q:clock:3}:due`` and ``truco:{q:clock:3}:claimed`` together), and the S tags
spread over the cluster's slots like any other keys. An item (a match id, a webhook id,
...) belongs to shard :meth:`ShardedQueue.shard_of` -- CRC-32 of the item modulo ``S`` --
so all entries about one match go to one shard, in order. A reader claims from one
shard at a time; a worker runs one reader per shard (:meth:`ShardedQueue.all_shards`), or a
share of them (:meth:`ShardedQueue.shards_for`) when there are many workers.

Choose ``S`` once per queue: with ``S`` well above the number of primaries (16 or 64)
every primary gets a share. Changing it moves items to other shards: drain the queue
first, or have readers read the shards of both counts until the old ones are empty.

Only the layout lives here; the queues that use it (with their scripts) are built on it.
See ``docs/storage.md``, "Sharded queues".
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = ["ShardedQueue"]


@dataclass(frozen=True, slots=True)
class ShardedQueue:
    """The keys of one sharded queue: ``name`` (e.g. ``clock``, ``webhook``), ``shards``
    fixed shards, under ``prefix``."""

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
        """The shard of ``item`` (a match id, ...): CRC-32 of its UTF-8 bytes modulo the
        shard count -- stable across processes, versions and machines."""
        return zlib.crc32(item.encode()) % self.shards

    def key_for(self, item: str, suffix: str = "") -> str:
        """``key(shard_of(item), suffix)``."""
        return self.key(self.shard_of(item), suffix)

    def all_shards(self) -> list[int]:
        """Every shard, 0 .. S-1 (what one reader per shard iterates over)."""
        return list(range(self.shards))

    def shards_for(self, reader: int, readers: int) -> list[int]:
        """The shards reader ``reader`` of ``readers`` takes when they share them out
        (round robin: every shard has exactly one reader)."""
        if not 0 <= reader < readers:
            raise ValueError("reader must be 0..readers-1")
        return [k for k in range(self.shards) if k % readers == reader]
