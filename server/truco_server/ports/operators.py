"""What operators are told of their matches: each match's outbox (the operator events its
commits left to relay), each operator's event stream, webhooks and their delivery log.
Contract suite: ``tests/storage/test_operator_feed.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class OperatorFeed(Protocol):
    """Outboxes, operator streams, webhooks (see the module docstring)."""

    async def outbox_take(
        self, match_ids: Sequence[str], token: str, lease: int, limit: int
    ) -> list[list[bytes] | None]:
        """For each match, the first ``limit`` events its commits left to relay, locked for
        ``token`` for ``lease`` ms, or ``None`` when another relay holds the lock; in one round
        trip where the adapter can."""
        ...

    async def outbox_done(self, done: Sequence[tuple[str, int]], token: str) -> list[bool]:
        """For each ``(match_id, count)`` taken with ``token``: drop the first ``count`` events
        and the lock if ``token`` still holds it; what each answered."""
        ...

    async def append(self, owner: str, events: Sequence[bytes]) -> list[str]:
        """Append to the owner's stream (capped at ``operator_events_max_len``); the cursors."""
        ...

    async def read(self, owner: str, after: str, limit: int, block: float = 0.0) -> list[tuple[str, bytes]]:
        """Up to ``limit`` (cursor, event) after cursor ``after`` (``""``: from the oldest
        kept), waiting up to ``block`` seconds for one."""
        ...

    async def last(self, owner: str) -> str:
        """The cursor of the owner's newest event (``"0-0"`` when none)."""
        ...

    async def webhook_put(self, owner: str, webhook_id: str, data: bytes, limit: int) -> bool:
        """Store a webhook; ``False`` when the owner already has ``limit`` others."""
        ...

    async def webhook_get(self, owner: str, webhook_id: str) -> bytes | None: ...

    async def webhook_list(self, owner: str) -> dict[str, bytes]: ...

    async def webhook_delete(self, owner: str, webhook_id: str) -> bool:
        """Remove a webhook and its delivery log; ``False`` when there was no webhook (a
        delivery log it left behind is removed all the same)."""
        ...

    async def delivery_log_put(
        self, owner: str, webhook_id: str, delivery_id: str, data: bytes, time_ms: int, keep: int
    ) -> bool:
        """Record the state of a delivery (the newest ``keep`` per webhook are kept), if the
        webhook is registered, in one atomic step. ``False`` when it is not (deleted, or lost
        with a Redis restarted without persistence): nothing recorded, and whatever delivery
        log it left is removed."""
        ...

    async def delivery_log(self, owner: str, webhook_id: str, limit: int) -> list[bytes]:
        """The newest ``limit`` delivery states of a webhook, newest first."""
        ...
