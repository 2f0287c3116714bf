"""Fixtures of the player-connection tests: real workers (the end-to-end suite's) on the
session's real ``redis-server`` (flushed per test)."""

from __future__ import annotations

from tests.e2e.conftest import make_worker, worker

__all__ = ["make_worker", "worker"]
