"""The operators' pools: each one document (kind ``pool``, id its storage key), listed in its
operator's index. A pool never changes once made, so a worker keeps the ones it has read."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import orjson

from truco_match.create import MatchSpec, SpecError
from truco_match.lifecycle import Lifecycle
from truco_match.matchmaking import BotFill, Pool, PoolSpec, RatingWindow, check_pool, pool_key
from truco_server.core import errors as E
from truco_server.core.caller import Operator
from truco_server.core.lru import Lru
from truco_server.ports.documents import Documents
from truco_server.services.steps import spec_error

POOL = "pool"
"""Document kind of a pool (and of the operator's index of them)."""
MAX_POOLS = 100
"""Pools an operator may have."""


@dataclass(frozen=True, slots=True)
class StoredPool:
    """A pool as stored: who owns it, when it was made, its secret (the ticket credentials'
    key) and the pool itself."""

    owner: str
    created_at: float
    secret: str
    pool: Pool

    @property
    def key(self) -> str:
        return pool_key(self.owner, self.pool.pool_id)


class PoolNotFound(E.ServiceError):
    default_code = E.Code.NOT_FOUND
    default_reason = "POOL_NOT_FOUND"  # type: ignore[assignment]


def _spec_to_dict(spec: PoolSpec) -> dict[str, Any]:
    m = spec.match
    w = spec.window
    b = spec.bot_fill
    return {
        "pool_id": spec.pool_id,
        "preset": m.preset,
        "overrides": dict(m.overrides),
        "players": m.players,
        "labels": dict(m.labels),
        "lifecycle": m.lifecycle.to_dict(),
        "rated": m.rated,
        "window": None if w is None else [w.initial_width, w.widen_per_second, w.max_width],
        "ttl": spec.ticket_ttl_ms,
        "bots": None if b is None else [b.after_ms, b.level, b.partners],
    }


def _spec_from_dict(d: dict[str, Any]) -> PoolSpec:
    match = MatchSpec(
        preset=d["preset"],
        overrides=d["overrides"],
        players=d["players"],
        labels=d["labels"],
        lifecycle=Lifecycle.from_dict(d["lifecycle"]),
        rated=d["rated"],
    )
    w, b = d["window"], d.get("bots")  # pools made before bot fill have no "bots"
    return PoolSpec(
        d["pool_id"],
        match,
        None if w is None else RatingWindow(*w),
        d["ttl"],
        None if b is None else BotFill(*b),
    )


class Pools:
    """Every operator's pools (see the module docstring)."""

    def __init__(self, documents: Documents, default_idle_timeout_ms: int) -> None:
        self.documents = documents
        self.idle_timeout_ms = default_idle_timeout_ms
        self._known: Lru[str, StoredPool] = Lru(4096)

    def check(self, spec: PoolSpec) -> Pool:
        try:
            return check_pool(spec, self.idle_timeout_ms)
        except SpecError as exc:
            raise spec_error(exc) from None

    async def create(self, operator: Operator, spec: PoolSpec) -> StoredPool:
        """Make a pool; the same definition again returns it, another is ALREADY_EXISTS."""
        pool = self.check(spec)
        key = pool_key(operator.name, spec.pool_id)
        wanted = _spec_to_dict(spec)
        found = await self._load(key)
        if found is None:
            if len(await self.documents.index(operator.name, POOL, MAX_POOLS)) >= MAX_POOLS:
                raise E.ResourceExhausted(f"an operator has at most {MAX_POOLS} pools")
            made = StoredPool(operator.name, time.time(), secrets.token_hex(32), pool)
            doc = {"owner": made.owner, "created_at": made.created_at, "secret": made.secret, "spec": wanted}
            if await self.documents.put(POOL, key, 0, orjson.dumps(doc)):
                await self.documents.index_add(
                    operator.name, POOL, spec.pool_id, round(made.created_at * 1000)
                )
                return made
            found = await self._load(key)  # made meanwhile by another call
            assert found is not None
        if _spec_to_dict(found.pool.spec) != wanted:
            raise E.ServiceError(
                f"pool {spec.pool_id!r} exists with another definition",
                code=E.Code.ALREADY_EXISTS,
                reason="POOL_EXISTS",
            )
        await self.documents.index_add(operator.name, POOL, spec.pool_id, round(found.created_at * 1000))
        return found

    async def get(self, owner: str, pool_id: str) -> StoredPool:
        found = await self._load(pool_key(owner, pool_id)) if len(pool_id) <= 40 else None
        if found is None or found.owner != owner:
            raise PoolNotFound(f"no pool {pool_id[:40]!r}")
        return found

    async def by_key(self, key: str) -> StoredPool | None:
        return await self._load(key)

    async def list(self, operator: Operator) -> list[StoredPool]:
        ids = await self.documents.index(operator.name, POOL, MAX_POOLS)
        found = [await self._load(pool_key(operator.name, i)) for i in ids]
        return [p for p in found if p is not None]

    async def _load(self, key: str) -> StoredPool | None:
        known = self._known.get(key)
        if known is not None:
            return known
        got = await self.documents.get(POOL, key)
        if got is None:
            return None
        d = orjson.loads(got[1])
        spec = _spec_from_dict(d["spec"])
        stored = StoredPool(d["owner"], d["created_at"], d["secret"], check_pool(spec, self.idle_timeout_ms))
        self._known.put(key, stored)
        return stored
