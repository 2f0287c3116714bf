"""An owner's listing on Redis (docs/storage.md, "Listing").

The owner index is split into ``owner_index_shards`` sorted sets (all scores 0, members
``<created ms, 15 digits>:<match_id>``), each its own hash tag, so one big operator is not
one hot key. A listing reads every shard below the page token with ``ZREVRANGEBYLEX`` (one
pipeline; on a cluster redis-py splits it by node), merges them newest first, reads the rows
of the batch with one pipelined ``HMGET`` per match, filters by status and pages.

A create writes its index member before its script, so a created match is always listed;
a listing skips (and removes) members whose match hash is missing -- expired, or a create
that failed -- once older than a grace period (a create between its two steps is not
unlisted), and members that belong to another creation of the same id.
"""

from __future__ import annotations

import heapq
import itertools
import time
from typing import Any

from truco_server.ports.matches import MatchIndexEntry
from truco_server.stores.paging import check_page_size, decode_page_token, encode_page_token
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.replies import as_bytes, as_str

__all__ = ["list_matches"]

INDEX_GRACE_MS = 60_000
"""An index member without its match hash is removed only when older than this."""

_ROW = ["sort_key", "status", "owner", "created_at", "summary", "version", "updated_at"]


def _created_ms(member: bytes | str) -> int:
    head = as_str(member).split(":", 1)[0]
    return int(head) if head.isdigit() else 0


async def list_matches(
    conn: RedisConnection, keys: Keys, owner: str, status: str | None, page_size: int, page_token: str | None
) -> tuple[list[MatchIndexEntry], str | None]:
    """One page of the owner's matches, newest first (see the module docstring)."""
    check_page_size(page_size)
    upper = "+" if not page_token else "(" + decode_page_token(owner, page_token)
    found = await conn.run("list_matches", lambda: _walk(conn, keys, owner, status, page_size, upper))
    if len(found) > page_size:
        page = found[:page_size]
        return page, encode_page_token(owner, page[-1].sort_key)
    return found, None


async def _walk(
    conn: RedisConnection, keys: Keys, owner: str, status: str | None, page_size: int, upper: str
) -> list[MatchIndexEntry]:
    """Up to ``page_size + 1`` rows below ``upper``, walking every index shard in batches."""
    shards = keys.owner_indexes(owner)
    found: list[MatchIndexEntry] = []
    batch = page_size + 1 if status is None else max(page_size + 1, 50)
    while len(found) <= page_size:
        pipe = conn.client.pipeline(transaction=False)
        for key in shards:
            pipe.zrevrangebylex(key, upper, "-", start=0, num=batch)
        conn.stats.add(1, len(shards))
        per_shard: list[list[bytes]] = await pipe.execute()
        merged = heapq.merge(
            *([(as_bytes(m), k) for m in members] for k, members in enumerate(per_shard)), reverse=True
        )
        members = list(itertools.islice(merged, batch))
        if not members:
            break
        await _rows(conn, keys, shards, members, status, found, page_size)
        if all(len(m) < batch for m in per_shard) and len(members) == sum(map(len, per_shard)):
            break  # every shard is exhausted below `upper`
        upper = "(" + as_str(members[-1][0])
    return found


async def _rows(
    conn: RedisConnection,
    keys: Keys,
    shards: list[str],
    members: list[tuple[bytes, int]],
    status: str | None,
    found: list[MatchIndexEntry],
    page_size: int,
) -> None:
    """Read the rows of ``members``; add those of ``status`` to ``found`` (up to one more
    than a page); remove the members that no longer have a match."""
    pipe = conn.client.pipeline(transaction=False)
    for member, _k in members:
        pipe.hmget(keys.match(as_str(member).split(":", 1)[1]).match, _ROW)
    conn.stats.add(1, len(members))
    rows: list[list[Any]] = await pipe.execute()
    now_ms = time.time() * 1000
    stale: dict[int, list[bytes]] = {}
    for (member, k), (sort_key, st, own, created, summary, version, updated) in zip(
        members, rows, strict=True
    ):
        if as_str(sort_key) != as_str(member):
            if sort_key is not None or _created_ms(member) < now_ms - INDEX_GRACE_MS:
                stale.setdefault(k, []).append(member)  # expired, or a failed duplicate create
            continue  # else maybe a create between its ZADD and its script
        entry = MatchIndexEntry(
            match_id=as_str(member).split(":", 1)[1],
            owner=as_str(own),
            status=as_str(st),
            created_at=float(as_str(created)),
            summary=as_bytes(summary),
            version=int(version or 0),
            updated_at=float(as_str(updated) or as_str(created)),
        )
        if status is None or entry.status == status:
            found.append(entry)
            if len(found) > page_size:
                break
    for k, gone in stale.items():
        conn.stats.add(1, 1)
        await conn.client.zrem(shards[k], *gone)
