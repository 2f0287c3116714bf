"""A small bounded mapping that forgets the least recently used entry first."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """``get`` marks an entry as recently used; ``put`` evicts beyond ``size`` entries.

    Used for the worker's per-match caches (decoded events, views, their protos): values
    derived from a match at a given version never change, so an entry is never stale; the
    bound only caps memory."""

    __slots__ = ("_data", "size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        data = self._data
        if key in data:
            data.move_to_end(key)
        data[key] = value  # a new key goes to the end
        if len(data) > self.size:
            data.popitem(last=False)
        return value

    def pop(self, key: K) -> V | None:
        return self._data.pop(key, None)

    def oldest(self) -> tuple[K, V] | None:
        """The least recently used entry (not marked as used), or None when empty."""
        data = self._data
        if not data:
            return None
        key = next(iter(data))
        return key, data[key]

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data
