"""The in-memory :class:`~truco_server.ports.operators.OperatorFeed`: the outboxes live in the
matches (:class:`~.matches.StoredMatch`), each operator's stream, webhooks and delivery log
here. A blocking :meth:`MemoryOperatorFeed.read` waits on an event set by every append."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from truco_server.ports.settings import StoreSettings
from truco_server.stores.memory.matches import MemoryMatchLog

__all__ = ["MemoryOperatorFeed"]


@dataclass(slots=True)
class _Operator:
    events: list[tuple[int, bytes]] = field(default_factory=list)
    """(sequence number, event); the cursor of number n is ``"n-0"``."""
    next: int = 1
    webhooks: dict[str, bytes] = field(default_factory=dict)
    deliveries: dict[str, dict[str, tuple[int, bytes]]] = field(default_factory=dict)
    """webhook id -> delivery id -> (event time ms, state)"""
    appended: asyncio.Event | None = None
    """Set by the next append (created by a waiting read)."""


def _number(cursor: str) -> int:
    return int((cursor or "0-0").split("-")[0])


class MemoryOperatorFeed:
    """Outboxes, operator streams and webhooks held in this process."""

    def __init__(self, settings: StoreSettings, matches: MemoryMatchLog) -> None:
        self.settings = settings
        self._matches = matches
        self._operators: dict[str, _Operator] = {}
        matches.operator_sink = self._append

    def _operator(self, owner: str) -> _Operator:
        return self._operators.setdefault(owner, _Operator())

    # -- outboxes -----------------------------------------------------------------------

    async def outbox_take(
        self, match_ids: Sequence[str], token: str, lease: int, limit: int
    ) -> list[list[bytes] | None]:
        return [self._take(match_id, token, lease, limit) for match_id in match_ids]

    def _take(self, match_id: str, token: str, lease: int, limit: int) -> list[bytes] | None:
        m = self._matches.get(match_id)
        if m is None:
            return []
        now = self._matches.clock()
        if m.relay is not None and m.relay[1] > now:
            return None
        if not m.outbox:
            return []
        m.relay = (token, now + lease / 1000)
        return m.outbox[:limit]

    async def outbox_done(self, done: Sequence[tuple[str, int]], token: str) -> list[bool]:
        out = []
        for match_id, count in done:
            m = self._matches.get(match_id)
            if m is None or m.relay is None or m.relay[0] != token:
                out.append(False)
                continue
            del m.outbox[:count]
            m.relay = None
            out.append(True)
        return out

    # -- operator streams -----------------------------------------------------------------

    async def append(self, owner: str, events: Sequence[bytes]) -> list[str]:
        return self._append(owner, events)

    def _append(self, owner: str, events: Sequence[bytes]) -> list[str]:
        op = self._operator(owner)
        cursors = []
        for raw in events:
            op.events.append((op.next, raw))
            cursors.append(f"{op.next}-0")
            op.next += 1
        del op.events[: max(0, len(op.events) - self.settings.operator_events_max_len)]
        if op.appended is not None:
            op.appended.set()
            op.appended = None
        return cursors

    async def read(self, owner: str, after: str, limit: int, block: float = 0.0) -> list[tuple[str, bytes]]:
        start = _number(after)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + block
        while True:
            op = self._operators.get(owner)
            got = [] if op is None else [(f"{n}-0", raw) for n, raw in op.events if n > start][:limit]
            remaining = deadline - loop.time()
            if got or remaining <= 0:
                return got
            op = self._operator(owner)
            if op.appended is None:
                op.appended = asyncio.Event()
            try:
                async with asyncio.timeout(remaining):
                    await op.appended.wait()
            except TimeoutError:
                return []

    async def last(self, owner: str) -> str:
        op = self._operators.get(owner)
        return f"{op.events[-1][0]}-0" if op is not None and op.events else "0-0"

    # -- webhooks and their deliveries ----------------------------------------------------

    async def webhook_put(self, owner: str, webhook_id: str, data: bytes, limit: int) -> bool:
        hooks = self._operator(owner).webhooks
        if webhook_id not in hooks and len(hooks) >= limit:
            return False
        hooks[webhook_id] = data
        return True

    async def webhook_get(self, owner: str, webhook_id: str) -> bytes | None:
        return self._operator(owner).webhooks.get(webhook_id)

    async def webhook_list(self, owner: str) -> dict[str, bytes]:
        return dict(self._operator(owner).webhooks)

    async def webhook_delete(self, owner: str, webhook_id: str) -> bool:
        op = self._operator(owner)
        op.deliveries.pop(webhook_id, None)
        return op.webhooks.pop(webhook_id, None) is not None

    async def delivery_log_put(
        self, owner: str, webhook_id: str, delivery_id: str, data: bytes, time_ms: int, keep: int
    ) -> bool:
        op = self._operator(owner)
        if webhook_id not in op.webhooks:
            op.deliveries.pop(webhook_id, None)
            return False
        log = op.deliveries.setdefault(webhook_id, {})
        t = log[delivery_id][0] if delivery_id in log else time_ms
        log[delivery_id] = (t, data)
        if len(log) > keep:
            for old in sorted(log, key=lambda d: log[d][0])[: len(log) - keep]:
                del log[old]
        return True

    async def delivery_log(self, owner: str, webhook_id: str, limit: int) -> list[bytes]:
        log = self._operator(owner).deliveries.get(webhook_id, {})
        newest = sorted(log.values(), key=lambda v: v[0], reverse=True)[:limit]
        return [raw for _, raw in newest]
