"""A small bounded mapping that forgets the least recently used entry first."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """``get`` marks an entry as recently used; ``put`` evicts beyond ``size`` entries.

    Used for the worker's per-match caches (decoded events, views, their protos): values
    derived from a match at a given version never change, so an entry is never stale; the
    bound only caps memory.

    With ``idle`` (seconds), an entry not used for that long is forgotten as well: each
    ``put`` drops up to two such entries from the least recently used end. A cache whose
    keys keep coming (a match id, a seat credential) then holds what was used lately, not
    the last ``size`` keys ever seen, which a busy worker would take hours to reach and so
    keep growing all that time."""

    __slots__ = ("_clock", "_data", "_used", "idle", "size")

    def __init__(
        self, size: int, *, idle: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        if idle is not None and idle <= 0:
            raise ValueError("idle must be positive")
        self.size = size
        self.idle = idle
        self._clock = clock
        self._data: OrderedDict[K, V] = OrderedDict()
        self._used: dict[K, float] = {}
        """When each entry was last used (only with ``idle``)."""

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
            if self.idle is not None:
                self._used[key] = self._clock()
        return value

    def put(self, key: K, value: V) -> V:
        data = self._data
        if key in data:
            data.move_to_end(key)
        data[key] = value  # a new key goes to the end
        if self.idle is not None:
            self._used[key] = now = self._clock()
            self._forget_idle(now - self.idle)
        if len(data) > self.size:
            old, _ = data.popitem(last=False)
            self._used.pop(old, None)
        return value

    def _forget_idle(self, before: float) -> None:
        """Drop up to two entries last used before ``before`` (the oldest first)."""
        data, used = self._data, self._used
        for _ in range(2):
            oldest = next(iter(data))
            if used[oldest] > before:
                return
            del data[oldest], used[oldest]

    def pop(self, key: K) -> V | None:
        self._used.pop(key, None)
        return self._data.pop(key, None)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data
