"""What every store adapter is tuned by (from the worker's settings)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Tunables shared by every adapter."""

    max_events: int = 64
    """Events kept per match (a resume from further back gets a snapshot): 64 are the last
    25-30 actions, several hands (docs/storage.md)."""
    retention_seconds: int = 7 * 24 * 3600
    """Time to live of every key of a match once it reaches a terminal status."""
    request_ttl_seconds: int = 24 * 3600
    """How long a ``request_id`` and its reply are remembered for idempotent retries."""
    terminal_statuses: frozenset[str] = field(
        default_factory=lambda: frozenset({"finished", "cancelled", "aborted"})
    )
    """Statuses that start the retention countdown."""
    queue_shards: int = 16
    """Shards of each sharded queue, each its own Redis slot (docs/storage.md)."""
    operator_events_max_len: int = 10_000
    """Events kept per operator stream (a resume from further back starts at the oldest kept)."""
    retry_seconds: float = 10.0
    """Redis: how long an operation is retried through faults before ``StoreUnavailable``."""
    wait_replicas: int = 0
    """Redis: ``WAIT`` for this many replicas after each commit and create (0: do not wait)."""
    wait_timeout_ms: int = 100
    """Redis: the ``WAIT`` timeout (a commit that times out is still answered and counted)."""
    owner_index_shards: int = 8
    """Redis: sorted sets an owner's listing is split into (docs/storage.md, "Listing")."""

    def __post_init__(self) -> None:
        if self.max_events < 1:
            raise ValueError("max_events must be at least 1")
        if self.retention_seconds < 1 or self.request_ttl_seconds < 1:
            raise ValueError("retention_seconds and request_ttl_seconds must be positive")
        if not self.retry_seconds > 0:
            raise ValueError("retry_seconds must be positive")
        if self.wait_replicas < 0 or self.wait_timeout_ms < 1:
            raise ValueError("wait_replicas must be >= 0 and wait_timeout_ms >= 1")
        if self.owner_index_shards < 1:
            raise ValueError("owner_index_shards must be at least 1")
