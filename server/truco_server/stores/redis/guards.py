"""Writes made only while the documents they belong to exist (``requires`` of
:mod:`truco_server.ports.documents`): a league's rating, a bot's assignment, a league's match.

* One server or a Sentinel group's primary: the write's script runs as :func:`.scripts.guarded`
  -- the required documents' keys are checked in the same script, and the commands that
  must precede the script (a match's listing row and wakeups) run inside it, after the check:
  one atomic step, so a league lost between a worker's read and its write (a Redis that
  restarted empty) gets nothing written back, whatever the timing.
* A Redis Cluster: a script touches one slot, and each document has a slot of its own, so
  the required keys are read just before the write (one round trip): a document lost in the
  moment between that read and the write is not seen. A cluster loses data a node at a time
  (a primary restarted empty with no replica to take over), so the check still catches work
  that outlived its league by more than that moment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from truco_server.ports.documents import DocRef
from truco_server.ports.errors import ParentMissing
from truco_server.stores.redis.batch import ScriptBatcher, ScriptCall
from truco_server.stores.redis.connection import RedisConnection
from truco_server.stores.redis.keys import Keys
from truco_server.stores.redis.scripts import GONE, guarded

__all__ = ["Guards"]


class Guards:
    """Runs script calls that require documents (see the module docstring)."""

    def __init__(self, conn: RedisConnection, keys: Keys, batcher: ScriptBatcher) -> None:
        self._conn = conn
        self._keys = keys
        self._batcher = batcher

    async def call(self, call: ScriptCall, requires: Sequence[DocRef]) -> Any:
        """``call``'s reply, if every document of ``requires`` exists; else
        :class:`ParentMissing` and nothing written (``call.before`` included)."""
        if not requires:
            return await self._batcher.call(call)
        required = [self._keys.document(r.kind, r.doc_id) for r in requires]
        if self._conn.kind == "cluster":
            await self._check(requires, required)
            return await self._batcher.call(call)
        reply = await self._batcher.call(_folded(call, required))
        if isinstance(reply, list) and reply and reply[0] == GONE:
            raise ParentMissing(requires[int(reply[1]) - 1])
        return reply

    async def _check(self, requires: Sequence[DocRef], required: list[str]) -> None:
        """On a cluster: raise ParentMissing for the first required document missing."""

        async def go() -> Any:
            self._conn.stats.add(1, len(required))
            pipe = self._conn.client.pipeline()
            for key in required:
                pipe.exists(key)
            return await pipe.execute()

        found = await self._conn.run("guard", go)
        for ref, n in zip(requires, found, strict=True):
            if not int(n):
                raise ParentMissing(ref)


def _folded(call: ScriptCall, required: list[str]) -> ScriptCall:
    """``call`` as its guarded script: the required keys after its own, its preceding
    commands moved into the script (after the check), the guard's arguments after its own."""
    at = len(call.args) + 1
    section: list[Any] = [len(required), len(call.before)]
    for command in call.before:
        section += [len(command), *command]
    return ScriptCall(
        guarded(call.script),
        [*call.keys, *required],
        [*call.args, *section, at],
        call.operation,
        durable=call.durable,
    )
