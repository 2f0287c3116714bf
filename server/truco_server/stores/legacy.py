"""The four ports over a store of the old single protocol (transitional)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from truco_server.ports.matches import Batch, Commit, CommitResult, LogTrimmed, NewMatch, SubscriptionClosed
from truco_server.ports.queues import Claim


class _Sub:
    def __init__(self, old: Any) -> None:
        self._old = old
        self._it = old.__aiter__()
        self._pending: asyncio.Future[Any] | None = None
        self._closed = False
        self._closer = asyncio.get_running_loop().create_future()

    @property
    def last_version(self) -> int:
        return int(self._old.last_version)

    def resume_from(self, version: int) -> None:
        self._old.resume_from(version)

    async def next(self, timeout: float) -> Batch | LogTrimmed | None:
        if self._closed:
            raise SubscriptionClosed()
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._it.__anext__())
        done, _ = await asyncio.wait(
            {self._pending, self._closer}, timeout=timeout, return_when="FIRST_COMPLETED"
        )
        if self._closed:
            raise SubscriptionClosed()
        if self._pending not in done:
            return None
        got, self._pending = self._pending.result(), None
        return got if isinstance(got, LogTrimmed) else Batch(got)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._closer.done():
            self._closer.set_result(None)
        if self._pending is not None:
            self._pending.cancel()
        self._closing = asyncio.ensure_future(self._old.aclose())


class _Matches:
    def __init__(self, old: Any) -> None:
        self.old = old
        self.settings = old.settings

    async def create(self, new: NewMatch) -> int:
        return int(
            await self.old.create(
                new.match_id, new.meta, new.state, list(new.events), new.index,
                wake=new.wake, outbox=new.outbox, relay=new.relay,
            )
        )  # fmt: skip

    async def load(self, match_id: str) -> Any:
        return await self.old.load(match_id)

    async def commit(self, c: Commit) -> CommitResult:
        res: CommitResult = await self.old.commit(
            c.match_id, expected_version=c.expected_version, state=c.state, events=list(c.events),
            request_id=c.request_id, reply=c.reply, status=c.status, updated_at=c.updated_at,
            summary=c.summary, record=c.record, wake=c.wake, outbox=c.outbox, relay=c.relay,
        )  # fmt: skip
        return res

    async def lookup_request(self, match_id: str, request_id: str) -> Any:
        return await self.old.lookup_request(match_id, request_id)

    async def read_events(self, match_id: str, after_version: int, limit: int) -> Any:
        return await self.old.read_events(match_id, after_version, limit)

    async def read_record(self, match_id: str) -> Any:
        return await self.old.read_record(match_id)

    def subscribe(self, match_id: str, after_version: int, *, queue_size: int = 256) -> Any:
        return _Sub(self.old.subscribe(match_id, after_version, queue_size=queue_size))

    async def list_matches(
        self, owner: str, status: str | None, page_size: int, page_token: str | None
    ) -> Any:
        return await self.old.list_matches(owner, status, page_size, page_token)

    async def touch(self, match_id: str, seat: int, now: int) -> None:
        await self.old.touch(match_id, seat, now)

    async def presence(self, match_id: str) -> Any:
        return await self.old.presence(match_id)


class _Queues:
    def __init__(self, old: Any) -> None:
        self.old = old

    def shards(self, queue: str) -> int:
        return int(self.old.queue_shards(queue))

    async def add(
        self, queue: str, item: str, due: int, data: bytes = b"", *, only_new: bool = False
    ) -> bool:
        return bool(await self.old.queue_add(queue, item, due, data, only_new=only_new))

    async def due(self, queue: str, now: int) -> list[int]:
        return list(await self.old.queue_due(queue, now))

    async def claim(self, queue: str, shard: int, now: int, lease: int, limit: int) -> list[Claim]:
        return list(await self.old.queue_claim(queue, shard, now, lease, limit))

    async def finish(
        self, queue: str, item: str, lease: int, due: int | None, data: bytes = b"", *, owned: bool = False
    ) -> bool:
        return bool(await self.old.queue_finish(queue, item, lease, due, data, owned=owned))

    async def release(self, queue: str, items: Sequence[tuple[str, bytes]]) -> list[bool]:
        return list(await self.old.queue_release_many(queue, items))


class _Operators:
    def __init__(self, old: Any) -> None:
        self.old = old

    async def outbox_take(self, match_ids: Sequence[str], token: str, lease: int, limit: int) -> Any:
        return await self.old.outbox_take_many(match_ids, token, lease, limit)

    async def outbox_done(self, done: Sequence[tuple[str, int]], token: str) -> Any:
        return await self.old.outbox_done_many(done, token)

    async def append(self, owner: str, events: Sequence[bytes]) -> Any:
        return await self.old.operator_append(owner, events)

    async def read(self, owner: str, after: str, limit: int, block: float = 0.0) -> Any:
        return await self.old.operator_read(owner, after, limit, block)

    async def last(self, owner: str) -> Any:
        return await self.old.operator_last(owner)

    async def webhook_put(self, owner: str, webhook_id: str, data: bytes, limit: int) -> Any:
        return await self.old.webhook_put(owner, webhook_id, data, limit)

    async def webhook_get(self, owner: str, webhook_id: str) -> Any:
        return await self.old.webhook_get(owner, webhook_id)

    async def webhook_list(self, owner: str) -> Any:
        return await self.old.webhook_list(owner)

    async def webhook_delete(self, owner: str, webhook_id: str) -> Any:
        return await self.old.webhook_delete(owner, webhook_id)

    async def delivery_log_put(
        self, owner: str, webhook_id: str, delivery_id: str, data: bytes, time_ms: int, keep: int
    ) -> None:
        await self.old.delivery_log_put(owner, webhook_id, delivery_id, data, time_ms, keep)

    async def delivery_log(self, owner: str, webhook_id: str, limit: int) -> Any:
        return await self.old.delivery_log(owner, webhook_id, limit)


class _Documents:
    def __init__(self, old: Any) -> None:
        self.old = old

    async def get(self, kind: str, doc_id: str) -> Any:
        return await self.old.doc_get(kind, doc_id)

    async def put(self, kind: str, doc_id: str, expected_version: int, data: bytes) -> Any:
        return await self.old.doc_put(kind, doc_id, expected_version, data)

    async def index_add(self, owner: str, kind: str, doc_id: str, time_ms: int) -> None:
        await self.old.doc_index_add(owner, kind, doc_id, time_ms)

    async def index(self, owner: str, kind: str, limit: int) -> Any:
        return await self.old.doc_index(owner, kind, limit)

    async def assignment_put(self, bot_id: str, match_id: str, data: bytes) -> None:
        await self.old.assignment_put(bot_id, match_id, data)

    async def assignment_delete(self, bot_id: str, match_id: str) -> Any:
        return await self.old.assignment_delete(bot_id, match_id)

    async def assignments(self, bot_id: str) -> Any:
        return await self.old.assignments(bot_id)


class LegacyStore:
    """One old store as the four ports."""

    def __init__(self, old: Any, description: str) -> None:
        self.old = old
        self.matches = _Matches(old)
        self.queues = _Queues(old)
        self.operators = _Operators(old)
        self.documents = _Documents(old)
        self.description = description

    @property
    def stats(self) -> Any:
        return getattr(self.old, "stats", None)

    async def ping(self, timeout: float) -> None:
        await self.old.ping(timeout)

    async def close(self) -> None:
        await self.old.close()
