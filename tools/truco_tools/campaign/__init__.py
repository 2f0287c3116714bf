"""The hardening campaign: load, chaos and fuzz against real workers on a real Redis, all on
loopback, bounded in count and time, stopping by itself; its figures become
``docs/reliability.md``.

``truco campaign --short`` (the test suite runs it, ``tests/hardening/test_campaign.py``) or
``truco campaign --long`` (the documented form; ``--out docs/reliability.md`` rewrites the
page). Phases (:mod:`.chaos`, :mod:`.fuzz`):

* **load and chaos**: ``truco serve`` worker processes on one ``redis-server`` with an
  append-only file; random bots (:class:`truco_tools.cluster_load.ClusterBots`) play many
  matches at once, each seat on its own stream, acting through random workers with request
  ids, while the chaos schedule SIGKILLs and restarts workers, restarts Redis (reloading the
  append-only file), pauses it (SIGSTOP) for seconds, and loses its data (SIGKILL, files
  removed, started empty). Checked: no lost or doubled action (every acknowledged action's
  request id is in the match's idempotency record with the version it was answered with, and
  no two acknowledged actions share a version), every stream contiguous or ending in a typed
  error, every match played to its end. A data loss takes the matches in progress with it:
  their clients get NOT_FOUND, create them again with the same request id (the same match
  id, a new incarnation), and the acknowledgements of the lost incarnation are set aside
  (counted, not checked); the new incarnation must come with a new deal commitment (a worker
  that served the lost one must not hand it out again). Worker and
  Redis memory are sampled every second.
* **leaks**: the oracle of :mod:`.leaks` over whole random matches of every preset and table
  size, with a viewer that comes back from version 0 late in each (served from the record).
* **fuzz**: random, malformed and adversarial requests over gRPC (raw bytes too) and REST
  (JSON) to every RPC of one worker; nothing may answer INTERNAL/UNKNOWN (or HTTP 5xx), and a
  rejected request must leave a watched match's version and Redis's key count unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """How much a campaign does."""

    name: str
    workers: int
    concurrency: int
    """Matches played at once."""
    soak_seconds: float
    """Load without faults (the memory series)."""
    chaos_seconds: float
    """Load with the faults below spread over it."""
    worker_kills: int
    redis_restarts: int
    redis_pauses: int
    pause_seconds: float
    redis_losses: int
    """Redis SIGKILLed and started again with its files removed: every match gone."""
    fuzz_inputs: int
    """Per transport."""
    leak_matches: int
    """Random matches the leak oracle watches (presets and table sizes in turn), each played
    to its end."""


SHORT = Profile("short", workers=2, concurrency=8, soak_seconds=10, chaos_seconds=30, worker_kills=2,
                redis_restarts=1, redis_pauses=1, pause_seconds=3, redis_losses=1, fuzz_inputs=1500,
                leak_matches=80)  # fmt: skip
LONG = Profile("long", workers=3, concurrency=24, soak_seconds=600, chaos_seconds=300, worker_kills=24,
               redis_restarts=6, redis_pauses=6, pause_seconds=5, redis_losses=3,
               fuzz_inputs=12000, leak_matches=2500)  # fmt: skip
