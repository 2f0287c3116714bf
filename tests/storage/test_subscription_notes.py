"""A subscriber that does not read pins at most a few commits' notes.

A local commit's note holds the whole match after it (states, views, encodings). A stream that
is never read keeps its subscription's queue full, and every queued batch kept its note: one
such stream pinned up to 256 versions of its match. Only the first
:data:`~truco_server.stores.subscription.NOTES_KEPT` queued batches keep their notes; the
others keep their events, which are delivered all the same."""

from __future__ import annotations

import gc
import weakref

import pytest

from tests.storage.support import collect, new_match, step
from truco_server.ports.matches import Batch
from truco_server.stores import MemoryStore
from truco_server.stores.subscription import NOTES_KEPT

pytestmark = pytest.mark.asyncio
COMMITS = 40


class Note:
    """A stand-in for a commit's note (weakly referenceable, held by nothing else)."""


async def test_a_subscriber_that_does_not_read_pins_at_most_a_few_notes() -> None:
    store = MemoryStore()
    version = await new_match(store, "m1")
    sub = store.matches.subscribe("m1", version, queue_size=256)
    assert await sub.next(0.01) is None  # caught up; from now on commits are offered to it
    alive: list[weakref.ref[Note]] = []
    for i in range(COMMITS):
        note = Note()
        alive.append(weakref.ref(note))
        await store.matches.commit(step("m1", version + i, note=note))
        del note
    gc.collect()
    assert sum(1 for r in alive if r() is not None) <= NOTES_KEPT
    got = await sub.next(0.01)  # the first batches still come with their notes
    assert isinstance(got, Batch) and got.note is not None and got.note is alive[0]()
    rest = await collect(sub, version + COMMITS)
    assert rest == list(range(version + 2, version + COMMITS + 1))  # every event, in order
    sub.close()
