"""The documents' contract (truco_server.ports.documents): versioned documents replaced by
compare-and-set, their indexes, bot assignments; every test runs on every adapter -- memory,
one Redis server, a Redis Cluster and a Sentinel group."""

from __future__ import annotations

import asyncio

import pytest

from truco_server.ports import Store
from truco_server.ports.documents import DocRef
from truco_server.ports.errors import ParentMissing

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def test_a_document_is_created_once_and_replaced_by_compare_and_set(store: Store) -> None:
    docs = store.documents
    assert await docs.get("league", "l1") is None
    assert not await docs.put("league", "l1", 1, b"no such version")  # nothing to replace
    assert await docs.get("league", "l1") is None
    assert await docs.put("league", "l1", 0, b"v1")
    assert not await docs.put("league", "l1", 0, b"created twice")
    assert await docs.get("league", "l1") == (1, b"v1")
    assert await docs.put("league", "l1", 1, b"v2")
    assert not await docs.put("league", "l1", 1, b"stale")  # the version moved on
    assert await docs.get("league", "l1") == (2, b"v2")
    assert await docs.get("bot", "l1") is None  # another kind, another document
    blob = bytes(range(256))
    assert await docs.put("ratings", "op/paulista", 0, blob)
    assert await docs.get("ratings", "op/paulista") == (1, blob)


async def test_concurrent_writers_of_one_version_have_one_winner(two_workers: tuple[Store, Store]) -> None:
    a, b = two_workers
    assert await a.documents.put("league", "l1", 0, b"v1")
    wins = await asyncio.gather(
        *(w.documents.put("league", "l1", 1, b"%d" % i) for i, w in enumerate([a, b] * 5))
    )
    assert wins.count(True) == 1
    version, data = await b.documents.get("league", "l1") or (0, b"")
    assert version == 2 and data == b"%d" % wins.index(True)


async def test_an_index_lists_an_owners_documents_newest_first(store: Store) -> None:
    docs = store.documents
    await docs.index_add("op", "league", "old", 1000)
    await docs.index_add("op", "league", "new", 3000)
    await docs.index_add("op", "league", "mid", 2000)
    await docs.index_add("op", "league", "old", 9000)  # listed once, at its first time
    await docs.index_add("op", "bot", "b1", 5000)
    await docs.index_add("other", "league", "theirs", 5000)
    assert await docs.index("op", "league", 10) == ["new", "mid", "old"]
    assert await docs.index("op", "league", 2) == ["new", "mid"]
    assert await docs.index("op", "bot", 10) == ["b1"]
    assert await docs.index("nobody", "league", 10) == []


async def test_a_bots_assignments(store: Store) -> None:
    docs = store.documents
    assert await docs.assignments("b1") == {}
    await docs.assignment_put("b1", "m1", b"seat 0")
    await docs.assignment_put("b1", "m2", b"seat 1")
    await docs.assignment_put("b1", "m1", b"seat 0, again")  # replaced
    await docs.assignment_put("b2", "m1", b"seat 1")
    assert await docs.assignments("b1") == {"m1": b"seat 0, again", "m2": b"seat 1"}
    assert await docs.assignment_delete("b1", "m1")
    assert not await docs.assignment_delete("b1", "m1")
    assert await docs.assignments("b1") == {"m2": b"seat 1"}
    assert await docs.assignments("b2") == {"m1": b"seat 1"}


async def test_a_write_that_requires_a_missing_document_writes_nothing(store: Store) -> None:
    """A rating book requires its league, an assignment its league and its bot account: with
    one of them missing (a league lost with a Redis restarted without persistence) the write
    is refused whole, on every adapter; with them there, it is made."""
    docs = store.documents
    league, bot = DocRef("league", "l1"), DocRef("bot", "bot_1")
    with pytest.raises(ParentMissing) as refused:
        await docs.put("ratings", "op/argentine-2p", 0, b"book", requires=[league])
    assert refused.value.ref == league
    assert await docs.get("ratings", "op/argentine-2p") is None
    assert await docs.put("league", "l1", 0, b"league")
    with pytest.raises(ParentMissing) as refused:
        await docs.assignment_put("bot_1", "m1", b"seat 0", requires=[league, bot])
    assert refused.value.ref == bot  # the first one missing is named
    assert await docs.assignments("bot_1") == {}
    assert await docs.put("bot", "bot_1", 0, b"bot")
    await docs.assignment_put("bot_1", "m1", b"seat 0", requires=[league, bot])
    assert await docs.put("ratings", "op/argentine-2p", 0, b"book", requires=[league])
    assert not await docs.put("ratings", "op/argentine-2p", 0, b"stale", requires=[league])  # still a CAS
    assert await docs.get("ratings", "op/argentine-2p") == (1, b"book")
    assert await docs.assignments("bot_1") == {"m1": b"seat 0"}
