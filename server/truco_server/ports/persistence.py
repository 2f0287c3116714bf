"""What a store keeps across a restart of its backend (:meth:`truco_server.ports.Store.persistence`).

A Redis primary without the append-only file and without RDB snapshots starts empty after a
restart: every match, league, bot account, rating book, webhook and queued job is gone, and
nothing says so. The worker reads each primary's configuration at start-up and reports what
it found (docs/operations.md, "Persistence"); the in-memory store has none by nature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

State = Literal["on", "off", "unknown"]
"""``on``: every node keeps its data across a restart; ``off``: some node keeps nothing;
``unknown``: some node's configuration could not be read (and none was found off)."""


@dataclass(frozen=True, slots=True)
class NodePersistence:
    """One node's persistence (a Redis primary, or the in-memory store)."""

    node: str
    """Which node: ``host:port``, the store's description, ``memory``."""
    aof: bool | None
    """The append-only file is on (``appendonly yes``); ``None``: could not be read."""
    snapshots: str | None
    """The RDB snapshot schedule (``save``; ``""``: none); ``None``: could not be read."""
    problem: str = ""
    """Why something could not be read (``CONFIG`` renamed or refused, no answer)."""

    @property
    def state(self) -> State:
        if self.aof or self.snapshots:
            return "on"
        if self.aof is False and self.snapshots == "":
            return "off"
        return "unknown"


@dataclass(frozen=True, slots=True)
class Persistence:
    """Every node's persistence; the store's :attr:`state` is the worst of them."""

    nodes: tuple[NodePersistence, ...]

    @property
    def state(self) -> State:
        states = {n.state for n in self.nodes}
        if "off" in states:
            return "off"
        if "unknown" in states or not states:
            return "unknown"
        return "on"

    def nodes_in(self, state: State) -> list[str]:
        """The nodes whose persistence is ``state``."""
        return [n.node for n in self.nodes if n.state == state]


NONE = Persistence((NodePersistence("memory", aof=False, snapshots=""),))
"""The in-memory store's: nothing survives the process."""
