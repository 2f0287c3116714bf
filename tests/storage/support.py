"""Helpers of the storage suites: matches to create, commits to play, subscriptions to read."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from truco_server.ports import Store
from truco_server.ports.matches import (
    Batch,
    Commit,
    CommitResult,
    LogTrimmed,
    MatchIndexEntry,
    NewMatch,
    Subscription,
)

OWNER = "tenant-a"


def entry(match_id: str, created_at: float = 1_700_000_000.0, **kw: Any) -> MatchIndexEntry:
    fields: dict[str, Any] = {"owner": OWNER, "status": "waiting", "summary": b"sum"}
    fields.update(kw)
    return MatchIndexEntry(match_id=match_id, created_at=created_at, **fields)


async def new_match(store: Store, match_id: str = "m1", n_events: int = 2, **kw: Any) -> int:
    """Create ``match_id`` with ``n_events`` events (``init-1``...); ``kw`` goes to the index
    entry, except ``wake``, ``outbox`` and ``relay``, which go to :class:`NewMatch`."""
    extra = {k: kw.pop(k) for k in ("wake", "outbox", "relay") if k in kw}
    events = [f"init-{i + 1}".encode() for i in range(n_events)]
    return await store.matches.create(NewMatch(entry(match_id, **kw), b"meta", b"state-0", events, **extra))


def step(match_id: str, version: int, **kw: Any) -> Commit:
    """A commit of one event ``ev-<v>`` on ``version`` (request id ``req-<v>``)."""
    fields: dict[str, Any] = {
        "state": f"state-{version + 1}".encode(),
        "events": [f"ev-{version + 1}".encode()],
        "request_id": f"req-{version + 1}",
        "reply": f"reply-{version + 1}".encode(),
    }
    fields.update(kw)
    return Commit(match_id, version, **fields)


async def play(store: Store, match_id: str, start: int, n: int) -> int:
    """Commit ``n`` single-event actions from version ``start``; the version reached."""
    version = start
    for _ in range(n):
        res: CommitResult = await store.matches.commit(step(match_id, version))
        version = res.version
    return version


async def collect(sub: Subscription, until: int, timeout: float = 5.0) -> list[int]:
    """The versions a subscription delivers until it reaches ``until``."""
    versions: list[int] = []

    async def run() -> None:
        while sub.last_version < until:
            got = await sub.next(timeout)
            assert isinstance(got, Batch), got
            versions.extend(v for v, _ in got.events)

    await asyncio.wait_for(run(), timeout)
    return versions


class Follower:
    """Reads one subscription in a task: every version delivered, and each gap reported (a
    LogTrimmed, answered as the service does: resume from the stored version)."""

    def __init__(self, store: Store, sub: Any) -> None:
        self.store = store
        self.sub = sub
        self.versions: list[int] = []
        self.payloads: dict[int, bytes] = {}
        self.gaps: list[tuple[int, int]] = []
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            got = await self.sub.next(60.0)
            if got is None:
                continue
            if isinstance(got, LogTrimmed):
                snap = await self.store.matches.load(self.sub.match_id)
                assert snap is not None
                self.gaps.append((self.sub.last_version, snap.version))
                self.versions.append(-1)  # marks where the snapshot came
                self.sub.resume_from(snap.version)
                continue
            for v, payload in got.events:
                self.versions.append(v)
                self.payloads[v] = payload

    async def wait_for(self, version: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while self.sub.last_version < version:
            assert not self.task.done(), self.task
            assert time.monotonic() < deadline, (self.sub.match_id, self.sub.last_version, version)
            await asyncio.sleep(0.02)

    def contiguous_runs(self) -> list[list[int]]:
        """The delivered versions split at each reported gap; each run must be contiguous."""
        runs: list[list[int]] = [[]]
        for v in self.versions:
            if v == -1:
                runs.append([])
            else:
                runs[-1].append(v)
        return runs

    def assert_contiguous_or_reported(self, start: int) -> None:
        runs = self.contiguous_runs()
        first = runs[0]
        assert first == list(range(start + 1, start + 1 + len(first))), first[:10]
        for (_, resumed), run in zip(self.gaps, runs[1:], strict=True):
            assert run == list(range(resumed + 1, resumed + 1 + len(run))), run[:10]

    async def close(self) -> None:
        self.sub.close()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
