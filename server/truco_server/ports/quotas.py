"""Quota counters every worker shares: rates (a generic cell rate algorithm per key) and
bounded sets of holders (leases that expire unless renewed). A worker asks them before the
work a quota guards, so a credential spread over any number of workers gets its quota once.
Contract suite: ``tests/storage/test_quota_counters.py``.

Keys are chosen by the caller (:mod:`truco_server.services.quotas`: a quota's name and a
digest of the credential, never a secret); an adapter keeps each key in a slot of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from truco_engine._fast import fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class RateCharge:
    """One spending of a rate, as :meth:`QuotaCounters.take` would make it, that a commit makes
    in its own atomic step instead (:attr:`truco_server.ports.matches.MatchLog.charges`): the
    commit is refused, nothing written, when the rate has not ``cost`` left, and the rate is
    spent only when the commit writes."""

    key: str
    per_second: float
    burst: float
    cost: float = 1.0


class QuotaCounters(Protocol):
    """Rates and leases shared by every worker of a store (see the module docstring)."""

    async def take(self, key: str, per_second: float, burst: float, cost: float = 1.0) -> float:
        """Spend ``cost`` of ``key``'s allowance -- ``per_second`` coming back each second, at
        most ``burst`` saved up -- in one atomic step: ``0.0`` when granted, else the seconds
        until it would be (nothing is spent then). A key unused until its allowance is full
        again holds nothing in the store."""
        ...

    async def hold(self, key: str, holder: str, limit: int, ttl_ms: int) -> int:
        """Add ``holder`` to ``key``'s holders for ``ttl_ms`` if fewer than ``limit`` others hold
        it (an expired holder is no longer counted; a holder already there is renewed): ``0``
        when held, else how many hold it."""
        ...

    async def renew(self, key: str, holders: Sequence[str], ttl_ms: int) -> None:
        """Extend the holders of ``key`` that still hold it by ``ttl_ms`` from now."""
        ...

    async def release(self, key: str, holder: str) -> None:
        """Remove ``holder`` from ``key``'s holders (nothing when it is not there)."""
        ...

    async def holders(self, key: str) -> list[str]:
        """The current (unexpired) holders of ``key``."""
        ...
